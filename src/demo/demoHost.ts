/**
 * The demo training host, whole: keys, the machine's content, the machine itself, the SSH server on loopback, the
 * live trainer and the drafter server (specServer.ts, reached through the SSH server's forwarding as the demo host's
 * 127.0.0.1:30000), plus the files a client needs to reach it (known_hosts, a CLI config with the demo's eval
 * profiles). `npm run demo` and the tests both start it through here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { HostConfig } from '../core/types';
import { ensureDemoKeys, type DemoKeys } from './keys';
import { demoPaths, type DemoPaths } from './paths';
import { DemoMachine, namespaceProblem } from './sandbox';
import { startDemoServer, type DemoForward, type DemoServer } from './server';
import { DEMO_SPEC_HOST, DEMO_SPEC_PORT, newestDrafter, startDemoSpecServer, type DemoSpecServer } from './specServer';
import { demoEvalProfiles } from './evalProfile';
import { PCT_STATE } from './scripts';
import { LiveTrainer } from './trainer';
import { writeDemoTree, type DemoTree } from './tree';

/** The name of the demo host in settings and CLI addresses (`demo/pct:200`). */
export const DEMO_HOST_NAME = 'demo';

export interface DemoHost {
  port: number;
  paths: DemoPaths;
  keys: DemoKeys;
  tree: DemoTree;
  trainer: LiveTrainer;
  machine: DemoMachine;
  server: DemoServer;
  /** The drafter server (SGLang's replies), the demo host's 127.0.0.1:30000. */
  specServer: DemoSpecServer;
  /** The host entry for `remoteRuns.hosts` / the CLI config. */
  hostConfig: HostConfig;
  /** Stop the trainer, the server and the machine (every process in it). Idempotent. */
  stop(): Promise<void>;
}

export interface StartDemoOptions {
  /** The demo's folder (see demoBaseDir). */
  base: string;
  /** Port to listen on; default: the one used last time if free, else any. */
  port?: number;
  /** Real milliseconds per logged line of the live run (default 1000). */
  lineIntervalMs?: number;
  /** Real milliseconds per verify step of the drafter server (default 25; tests may pass 0). */
  specMsPerStep?: number;
  log?: (line: string) => void;
}

export { demoEvalProfile, demoServerEvalProfile, demoEvalProfiles } from './evalProfile';

/** Start everything. Throws with the reason when this machine cannot run the demo (see namespaceProblem). */
export async function startDemoHost(options: StartDemoOptions): Promise<DemoHost> {
  const problem = namespaceProblem();
  if (problem) throw new Error(`The demo host needs Linux user namespaces: ${problem}`);
  const paths = demoPaths(options.base);
  fs.mkdirSync(paths.base, { recursive: true, mode: 0o700 });
  const keys = ensureDemoKeys(paths);
  const tree = writeDemoTree(paths.machine);
  const machine = await DemoMachine.start(paths.machine, paths.mountPoint);
  // The live run's newest checkpoint, as the demo host names it (the server runs on the host, beside the container).
  const drafter = (): ReturnType<typeof newestDrafter> => newestDrafter(tree.live.checkpoints, `${PCT_STATE}/200/rootfs${tree.live.inside}/checkpoints`);
  let specServer: DemoSpecServer | undefined;
  let server: DemoServer | undefined;
  try {
    specServer = await startDemoSpecServer({ drafter, msPerStep: options.specMsPerStep });
    server = await listen(machine, keys, options, [{ host: DEMO_SPEC_HOST, port: DEMO_SPEC_PORT, to: specServer.port }]);
  } catch (e) {
    await specServer?.stop();
    await machine.stop();
    throw e;
  }
  const trainer = new LiveTrainer({
    dir: tree.live.dir,
    intervalMs: options.lineIntervalMs,
    onCheckpoint: (step) => options.log?.(`live run saved checkpoints/step_${step}/checkpoint.pt`),
  });
  trainer.start();

  const hostConfig: HostConfig = { name: DEMO_HOST_NAME, host: '127.0.0.1', port: server.port, user: 'root', identityFile: keys.clientKeyPath };
  fs.writeFileSync(paths.knownHosts, `[127.0.0.1]:${server.port} ${keys.hostPublicLine}\n`);
  // With its known_hosts, so `REMOTE_RUNS_CONFIG=<this file> remote-runs ls demo` needs no other flag (README), and
  // the demo's eval profiles, so `remote-runs eval "demo drafter τ (SGLang)" demo/pct:200/workspace/latest` works too.
  fs.writeFileSync(paths.cliConfig, `${JSON.stringify({ hosts: [hostConfig], knownHostsFiles: [paths.knownHosts], evalProfiles: demoEvalProfiles() }, null, 2)}\n`);
  fs.writeFileSync(path.join(paths.base, 'last-port'), `${server.port}\n`);

  let stopping: Promise<void> | undefined;
  const srv = server;
  const spec = specServer;
  return {
    port: server.port,
    paths,
    keys,
    tree,
    trainer,
    machine,
    server,
    specServer,
    hostConfig,
    stop: () =>
      (stopping ??= (async () => {
        trainer.stop();
        await srv.stop();
        await spec.stop();
        await machine.stop();
      })()),
  };
}

/** Listen on the requested port, else last time's, else any free one. */
async function listen(machine: DemoMachine, keys: DemoKeys, options: StartDemoOptions, forwards: readonly DemoForward[]): Promise<DemoServer> {
  const common = { hostKey: keys.hostPrivate, clientPublicKey: keys.clientPublicLine, machine, log: options.log, forwards };
  if (options.port !== undefined) return startDemoServer({ ...common, port: options.port });
  const last = Number(readOr(path.join(demoPaths(options.base).base, 'last-port'), '').trim());
  if (Number.isInteger(last) && last > 0) {
    try {
      return await startDemoServer({ ...common, port: last });
    } catch {
      // taken: any port will do
    }
  }
  return startDemoServer({ ...common, port: 0 });
}

function readOr(file: string, fallback: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return fallback;
  }
}
