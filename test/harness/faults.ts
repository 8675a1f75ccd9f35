/**
 * Fault injection for the integration suites, on the real test sshd (test/harness/sshd.ts) and test host
 * (test/harness/testHost.ts):
 * - the sshd processes serving THIS process's connections, found by pid through /proc (socket inodes), so a test
 *   kills or freezes its own connection and nobody else's;
 * - a gate in front of the `pct`/`docker` shim: a command that reaches it waits until the test opens it, so
 *   "during the command" is a state the test waits for, not a guess at timing;
 * - a small local filesystem (tmpfs) to fill up;
 * - a new host key for a running sshd (SIGHUP restart on the same port).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { TestSshd } from './sshd';
import { eventually } from './assertKind';
import type { TcpProxy } from './tcpProxy';
import type { DownloadProgress } from '../../src/core/transfer';

/** Direct children of a process, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may itself hold spaces.
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(Number(name));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/** Whether a process still runs (a zombie waiting for its parent counts as gone). */
export function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Bytes a download's `.part` record (`….part.json`) says are written; 0 while there is none. */
export function recordedBytes(recordFile: string): number {
  try {
    const rec = JSON.parse(fs.readFileSync(recordFile, 'utf8')) as { done: [number, number][] };
    return rec.done.reduce((n, [s, e]) => n + (e - s), 0);
  } catch {
    return 0;
  }
}

/** A process and everything under it, parents first. */
export function processTree(pid: number): number[] {
  return [pid, ...childrenOf(pid).flatMap(processTree)];
}

/** Socket inodes a process holds open. */
function socketInodes(pid: number | 'self'): Set<string> {
  const out = new Set<string>();
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out;
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1]);
    } catch {
      // closed while we looked
    }
  }
  return out;
}

interface TcpSocket {
  localPort: number;
  remotePort: number;
  inode: string;
}

/** Every IPv4 TCP socket of the machine (the test servers listen on 127.0.0.1 only). */
function tcpSockets(): TcpSocket[] {
  return fs
    .readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length > 9)
    .map((f) => ({ localPort: parseInt(f[1].split(':')[1], 16), remotePort: parseInt(f[2].split(':')[1], 16), inode: f[9] }));
}

/**
 * The per-connection sshd processes (direct children of the listener) that serve connections opened by this
 * process: the server ends of our TCP sockets to `sshd.port`.
 */
export function serverPidsOf(sshd: TestSshd): number[] {
  const sockets = tcpSockets();
  const ours = socketInodes('self');
  const clientPorts = new Set(sockets.filter((s) => ours.has(s.inode) && s.remotePort === sshd.port).map((s) => s.localPort));
  const serverInodes = new Set(sockets.filter((s) => s.localPort === sshd.port && clientPorts.has(s.remotePort)).map((s) => s.inode));
  return sshd.connectionPids().filter((pid) => [...socketInodes(pid)].some((i) => serverInodes.has(i)));
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, signal);
    } catch {
      // already gone
    }
  }
}

/** SIGKILL the sshd processes serving our connections, with everything they started. Returns how many connections. */
export function killOurConnections(sshd: TestSshd): number {
  const roots = serverPidsOf(sshd);
  signalAll(roots.flatMap(processTree), 'SIGKILL');
  return roots.length;
}

/** Connections frozen by freezeOurConnections. */
export interface Frozen {
  /** How many connections were frozen. */
  readonly count: number;
  /** SIGCONT: let them go on (a server that wakes up finds its client gone, and exits). */
  thaw(): void;
  /** SIGKILL them (works on stopped processes): nothing they were running goes on later. */
  kill(): void;
}

/** SIGSTOP the sshd processes serving our connections and everything they started: the connection goes silent. */
export function freezeOurConnections(sshd: TestSshd): Frozen {
  const roots = serverPidsOf(sshd);
  const pids = roots.flatMap(processTree);
  signalAll(pids, 'SIGSTOP');
  let done = false;
  return {
    count: roots.length,
    thaw: () => {
      if (!done) signalAll(pids, 'SIGCONT');
      done = true;
    },
    kill: () => {
      if (!done) signalAll(pids, 'SIGKILL');
      done = true;
    },
  };
}

/**
 * A gate in front of one shim (`pct` or `docker`) of a test host's bin folder. While armed, every call of the tool
 * leaves a marker and waits until the gate is opened; disarmed, calls pass straight through.
 */
export interface CommandGate {
  /**
   * Calls from now on wait at the gate (a call already past it is not affected): `before` the real tool runs
   * (default), or `after` it ran and wrote its output, before it exits (its answer is not yet complete).
   */
  arm(position?: 'before' | 'after'): void;
  /** Let waiting calls through; later calls pass straight through until armed again. */
  open(): void;
  /** How many calls have reached the gate since it was armed. */
  entered(): number;
  /** Wait until `n` calls reached the gate (a guard against hanging, not a timing assertion). */
  waitEntered(n?: number): Promise<void>;
  /** Put the original tool back. */
  dispose(): void;
}

export function installGate(binDir: string, tool: 'pct' | 'docker'): CommandGate {
  const real = path.join(binDir, `${tool}.real`);
  const wrapper = path.join(binDir, tool);
  const gateDir = fs.mkdtempSync(path.join(os.tmpdir(), `rr-gate-${tool}-`));
  fs.chmodSync(gateDir, 0o777); // the test user's commands write their markers here
  fs.renameSync(wrapper, real);
  // `exec` keeps the tool's own argv; `$0` of the real one is in the same folder, so it finds shim-root and shim-lib.
  fs.writeFileSync(
    wrapper,
    [
      '#!/bin/sh',
      `g='${gateDir}'`,
      'if [ -e "$g/armed-after" ]; then',
      `  '${real}' "$@"; rc=$?`,
      '  : > "$g/entered.$$"',
      '  while [ ! -e "$g/open" ]; do sleep 0.05; done',
      '  exit $rc',
      'fi',
      'if [ -e "$g/armed" ]; then',
      '  : > "$g/entered.$$"',
      '  while [ ! -e "$g/open" ]; do sleep 0.05; done',
      'fi',
      `exec '${real}' "$@"`,
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  const entered = (): number => fs.readdirSync(gateDir).filter((n) => n.startsWith('entered.')).length;
  const clear = (): void => {
    for (const n of fs.readdirSync(gateDir)) fs.rmSync(path.join(gateDir, n), { force: true });
  };
  return {
    arm: (position = 'before') => {
      clear();
      fs.writeFileSync(path.join(gateDir, position === 'after' ? 'armed-after' : 'armed'), '');
    },
    open: () => {
      fs.rmSync(path.join(gateDir, 'armed'), { force: true });
      fs.rmSync(path.join(gateDir, 'armed-after'), { force: true });
      fs.writeFileSync(path.join(gateDir, 'open'), '');
    },
    entered,
    waitEntered: (n = 1) => eventually(() => entered() >= n, `${n} ${tool} call(s) at the gate`, 30_000),
    dispose: () => {
      fs.renameSync(real, wrapper);
      fs.rmSync(gateDir, { recursive: true, force: true });
    },
  };
}

/** A small filesystem of its own (tmpfs), so a test can fill it up without touching anything else. */
export interface SmallDisk {
  dir: string;
  dispose(): void;
}

/** Mount a tmpfs of `mib` MiB on a fresh temp folder (needs root, as the integration suites run). */
export function smallDisk(mib: number): SmallDisk {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-small-disk-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mib}m,mode=0755`, 'rr-small-disk', dir]);
  return {
    dir,
    dispose: () => {
      execFileSync('umount', ['-l', dir]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Give a running test sshd a new host key of the same type: regenerate its key files and SIGHUP it (sshd re-executes
 * itself on the same port and pid and loads the keys again). Existing connections are not affected. Returns the new
 * public key as `type base64`.
 */
export async function changeHostKey(sshd: TestSshd): Promise<string> {
  // The harness names key files by ssh-keygen type (test/harness/sshd.ts).
  const type = sshd.hostKeyType === 'ssh-rsa' ? 'rsa' : sshd.hostKeyType.startsWith('ecdsa') ? 'ecdsa' : 'ed25519';
  const keyFile = path.join(sshd.dir, `ssh_host_${type}_key`);
  fs.rmSync(keyFile, { force: true });
  fs.rmSync(`${keyFile}.pub`, { force: true });
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'changed', '-f', keyFile], { stdio: 'ignore' });
  const listening = (sshd.log().match(/Server listening on /g) ?? []).length;
  process.kill(sshd.pid, 'SIGHUP');
  await eventually(() => (sshd.log().match(/Server listening on /g) ?? []).length > listening, 'sshd listening again after SIGHUP');
  return fs.readFileSync(`${keyFile}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
}

/** What {@link strikeMidDownload} saw when it struck. */
export interface Strike {
  /** Pass as the download's `onProgress`. */
  onProgress(p: DownloadProgress): void;
  /** Whether it struck. */
  readonly struck: boolean;
  /** Settles when the strike has run (and the gate opened again); await it before checking its effects. */
  readonly done: Promise<void>;
  /** Bytes of the download done when it struck. */
  readonly bytesDoneAt: number;
  /** Bytes the link had carried to the client since the strike was made, when it struck (protocol included). */
  readonly linkBytesAt: number;
}

/**
 * Strike (delete the checkpoint, kill the connection, fill the disk…) while a download through `link` is provably in
 * flight: at the first progress report of the transfer past `fraction` of its bytes, the link's gate is closed (not
 * one more byte reaches the client), the strike runs, and once it has, the gate opens again. `linkBytesAt` below the
 * download's size proves the rest of the file had not left the server side yet (make the strike just before the
 * download, and send nothing else over the link meanwhile); the test asserts that, so a miss says so instead of
 * passing or failing by chance. The link should be rate-limited so that the rest takes seconds.
 */
export function strikeMidDownload(link: TcpProxy, fraction: number, strike: () => void | Promise<void>): Strike {
  let struck = false;
  let bytesDoneAt = 0;
  let linkBytesAt = 0;
  const linkBase = link.bytesDown;
  let settle: (e?: unknown) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => (settle = (e?: unknown) => (e === undefined ? resolve() : reject(e))));
  done.catch(() => undefined); // a failed strike is reported to whoever awaits `done`, never as an unhandled rejection
  return {
    onProgress(p) {
      if (struck || p.phase !== 'transfer' || p.bytesDone <= p.bytesTotal * fraction) return;
      struck = true;
      link.hold();
      bytesDoneAt = p.bytesDone;
      linkBytesAt = link.bytesDown - linkBase;
      let result: void | Promise<void>;
      try {
        result = strike();
      } catch (e) {
        result = Promise.reject(e);
      }
      Promise.resolve(result).then(
        () => {
          link.release();
          settle();
        },
        (e: unknown) => {
          link.release();
          settle(e ?? new Error('the strike failed'));
        },
      );
    },
    get struck() {
      return struck;
    },
    done,
    get bytesDoneAt() {
      return bytesDoneAt;
    },
    get linkBytesAt() {
      return linkBytesAt;
    },
  };
}
