/**
 * One believable training host for integration, CLI, end-to-end tests and benchmarks: a real OpenSSH server on
 * 127.0.0.1 whose sessions find the `pct`/`docker` test shims on PATH, with containers holding realistic run
 * trees, and bare-host folders for every empty-state case (missing, file, empty, unrecognised, unreadable).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSshd, type SshdOptions, type TestSshd } from './sshd';
import { addDockerContainer, addPctContainer, createShimRoot, ensureWorkspaceMountPoint, installShims, type ShimContainer } from '../shims/shimState';
import {
  HOSTILE_NAMES,
  writeHfRun,
  writeHostileNames,
  writeFlatRun,
  writeStoryRun,
  writeUnrecognised,
} from '../fixtures/generate';
import type { HostConfig } from '../../src/core/types';
import type { Prompter } from '../../src/core/ssh/types';
import { startTcpProxy, type TcpProxy, type TcpProxyOptions } from './tcpProxy';

export interface TestHost {
  sshd: TestSshd;
  /** A temp folder owned by root, readable by the test user. */
  dir: string;
  /** Folders on the bare host, one per empty-state case, plus `runs` (a real run root) and `hostile`. */
  paths: {
    runs: string;
    missing: string;
    file: string;
    empty: string;
    unrecognised: string;
    unreadable: string;
    hostile: string;
    /** One run, `dl-run`, with three 1 GiB (sparse) step folders: big enough for a visible download over OpenSSH. */
    downloads: string;
  };
  unrecognisedNames: string[];
  hostileNames: readonly string[];
  containers: { pct200: ShimContainer; pct201: ShimContainer; trainer: ShimContainer; old: ShimContainer };
  shimRoot: string;
  /** The steps of the story run inside pct:200 (/workspace). */
  storySteps: number[];
  /** A HOME for the client side: .ssh/known_hosts trusting the server, .ssh/config with an alias. */
  clientHome: string;
  knownHostsFile: string;
  sshConfigFile: string;
  /** A host config for this server (key auth), named `name`. */
  hostConfig(name?: string, extra?: Partial<HostConfig>): HostConfig;
  /**
   * A link to this server that the test controls (a rate, a gate, a delay: test/harness/tcpProxy.ts), trusted in
   * `knownHostsFile` like the server itself; `hostConfig` of the result reaches the server through it. Closed by
   * `stop()` if not before.
   */
  throughProxy(options?: TcpProxyOptions): Promise<ProxiedHost>;
  stop(): Promise<void>;
}

/** The test server reached through a proxy of the test's own. */
export interface ProxiedHost {
  proxy: TcpProxy;
  hostConfig(name?: string, extra?: Partial<HostConfig>): HostConfig;
}

export async function startTestHost(options: SshdOptions = {}): Promise<TestHost> {
  ensureWorkspaceMountPoint();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-host-'));
  fs.chmodSync(dir, 0o755);

  const shimRoot = createShimRoot(path.join(dir, 'shim-state'));
  const bin = path.join(dir, 'bin');
  installShims(bin, shimRoot);

  const pct200 = addPctContainer(shimRoot, 200, { name: 'trainer-ct' });
  const storySteps = writeStoryRun(pct200.workspace);
  const pct201 = addPctContainer(shimRoot, 201, { name: 'old-ct', state: 'stopped' });
  writeStoryRun(pct201.workspace, { checkpointBytes: 1024 });
  const trainer = addDockerContainer(shimRoot, 'trainer', { state: 'running', image: 'pytorch/pytorch:2.4.0' });
  writeHfRun(path.join(trainer.workspace, 'hf-run'));
  writeFlatRun(path.join(trainer.workspace, 'flat-run'));
  const old = addDockerContainer(shimRoot, 'old', { state: 'exited', status: 'Exited (0) 2 days ago' });

  const paths = {
    runs: path.join(dir, 'runs'),
    missing: path.join(dir, 'does-not-exist'),
    file: path.join(dir, 'a-file'),
    empty: path.join(dir, 'empty'),
    unrecognised: path.join(dir, 'unrecognised'),
    unreadable: path.join(dir, 'unreadable'),
    hostile: path.join(dir, 'hostile'),
    downloads: path.join(dir, 'downloads'),
  };
  writeStoryRun(path.join(paths.runs, 'story'), { checkpointBytes: 5 * 1024 * 1024 });
  writeFlatRun(path.join(paths.runs, 'flat'));
  fs.writeFileSync(paths.file, 'not a directory\n');
  fs.mkdirSync(paths.empty);
  const unrecognisedNames = writeUnrecognised(paths.unrecognised);
  fs.mkdirSync(paths.unreadable);
  writeStoryRun(path.join(paths.unreadable, 'secret-run'), { checkpointBytes: 1024 });
  const hostileNames = writeHostileNames(paths.hostile);
  writeStoryRun(path.join(paths.downloads, 'dl-run'), { firstStep: 100, lastStep: 300, every: 100, checkpointBytes: 1024 * 1024 * 1024 });
  // Everything readable by the test user, except the one folder that must not be.
  execFileSync('chmod', ['-R', 'a+rX', dir]);
  fs.chmodSync(paths.unreadable, 0o700);

  const sshd = await startSshd({ ...options, extraPath: [bin, ...(options.extraPath ?? [])] });

  const clientHome = path.join(dir, 'client-home');
  fs.mkdirSync(path.join(clientHome, '.ssh'), { recursive: true, mode: 0o700 });
  const knownHostsFile = path.join(clientHome, '.ssh', 'known_hosts');
  fs.writeFileSync(knownHostsFile, `${sshd.knownHostsLine}\n`);
  const sshConfigFile = path.join(clientHome, '.ssh', 'config');
  fs.writeFileSync(
    sshConfigFile,
    `Host testbox\n  HostName 127.0.0.1\n  Port ${sshd.port}\n  User ${sshd.user}\n  IdentityFile ${sshd.clientKeyPath}\n  IdentitiesOnly yes\n`,
  );

  const hostConfig = (name = 'testbox', extra: Partial<HostConfig> = {}, port = sshd.port): HostConfig => ({
    name,
    host: '127.0.0.1',
    port,
    user: sshd.user,
    identityFile: sshd.clientKeyPath,
    ...extra,
  });
  const proxies: TcpProxy[] = [];

  return {
    sshd,
    dir,
    paths,
    unrecognisedNames,
    hostileNames,
    containers: { pct200, pct201, trainer, old },
    shimRoot,
    storySteps,
    clientHome,
    knownHostsFile,
    sshConfigFile,
    hostConfig: (name, extra) => hostConfig(name, extra),
    throughProxy: async (options) => {
      const proxy = await startTcpProxy(sshd.port, options);
      proxies.push(proxy);
      fs.appendFileSync(knownHostsFile, `${sshd.knownHostsLine.replace(/^\[127\.0\.0\.1\]:\d+ /, `[127.0.0.1]:${proxy.port} `)}\n`);
      return { proxy, hostConfig: (name, extra) => hostConfig(name, extra, proxy.port) };
    },
    stop: async () => {
      await Promise.all(proxies.map((p) => p.close()));
      await sshd.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { HOSTILE_NAMES };

/** A prompter for tests: answers from a script, records what was asked, never shows a secret anywhere. */
export class ScriptedPrompter implements Prompter {
  readonly asked: string[] = [];
  constructor(private readonly answers: { trustHostKey?: boolean; passphrase?: string; password?: string } = {}) {}
  async confirmHostKey(): Promise<boolean> {
    this.asked.push('hostKey');
    return this.answers.trustHostKey ?? false;
  }
  async passphrase(): Promise<string | undefined> {
    this.asked.push('passphrase');
    return this.answers.passphrase;
  }
  async password(): Promise<string | undefined> {
    this.asked.push('password');
    return this.answers.password;
  }
  async keyboardInteractive(): Promise<string[] | undefined> {
    this.asked.push('keyboardInteractive');
    return undefined;
  }
}
