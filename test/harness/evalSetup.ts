/**
 * The setup the eval integration suites share: the real test sshd, one connection pool, and an EvalService over
 * it with a throw-away local state folder. Each suite calls `startEvalSetup` in `before` and `stop` in `after`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { EvalService } from '../../src/core/eval/service';
import type { Executor } from '../../src/core/remote';
import type { HostConfig } from '../../src/core/types';
import { startTestHost, ScriptedPrompter, type TestHost } from './testHost';
import { silentLogger } from '../builders/pool';

export interface EvalSetup {
  host: TestHost;
  pool: ConnectionPool;
  evals: EvalService;
  /** The EvalService's localStateDir (local evals live under it). */
  localState: string;
  /** The configured host resolved for the pool (e.g. for a download's TransferSource). */
  resolve(name: string): ReturnType<HostDirectory['resolve']>;
  stop(): Promise<void>;
}

/** Start the test host and an EvalService over a pool to it (`poolOptions` tweak reconnect backoff and the like). */
export async function startEvalSetup(options: { backoffBaseMs?: number } = {}): Promise<EvalSetup> {
  const host = await startTestHost();
  const pool = new ConnectionPool({
    prompter: new ScriptedPrompter(),
    logger: silentLogger,
    knownHostsFiles: [host.knownHostsFile],
    connectTimeoutMs: 5000,
    ...(options.backoffBaseMs !== undefined ? { backoffBaseMs: options.backoffBaseMs } : {}),
  });
  const hosts: HostConfig[] = [host.hostConfig()];
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  const localState = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-eval-local-'));
  const resolve = (name: string): ReturnType<HostDirectory['resolve']> => {
    const config = hosts.find((h) => h.name === name);
    if (!config) throw new Error(`no test host named ${name}`);
    return dir.resolve(config);
  };
  const evals = new EvalService({
    executorFor: (name, { idempotent }): Executor => pool.executor(resolve(name), { idempotent }),
    localStateDir: localState,
  });
  return {
    host,
    pool,
    evals,
    localState,
    resolve,
    async stop() {
      pool.dispose();
      await host.stop();
      fs.rmSync(localState, { recursive: true, force: true });
    },
  };
}
