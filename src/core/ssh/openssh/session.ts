/**
 * Bulk bytes through the system's OpenSSH client. ssh2 decrypts each 32 KiB packet in JavaScript: on the test host
 * one ssh2 stream moved 0.6-0.7x of scp's throughput at ~7 CPU s/GiB, where `ssh host cat` moved 1.5x at under
 * 2 (bench/transfer.ts). So a download's bytes, and a long metrics backlog, go through `ssh`, logged in with what the
 * pool already has and trusting exactly what the pool trusted. The pool starts one such session per host and shares
 * it (ConnectionPool.openSsh); its ControlMaster, folder and lifeline are master.ts's.
 *
 * - **No second prompt.** A private agent (agentServer.ts) serves the keys the pool unlocked and the user's own
 *   agent's keys; a password the pool holds is given to ssh's askpass (askpass.ts), for that login's prompt only;
 *   every other question is refused (`BatchMode` where there is no password to give). Keyboard-interactive logins
 *   (one-time codes) are never tried: those hosts keep the ssh2 lanes.
 * - **The same host keys.** A known_hosts written for this transfer holds only the key each hop presented to the
 *   pool's connection, under a `HostKeyAlias`; `StrictHostKeyChecking yes`: a different key is refused.
 * - **Nothing of the user's configuration is read** (`-F` our file): every option that matters is set here, and
 *   the hops are the pool's resolved ones (address, port, user, ProxyJump chain).
 * - **One login per host.** A ControlMaster (in the same 0700 folder) carries every stream as a channel of one
 *   connection. It runs in the foreground as this process's child (no `-f`, no ControlPersist), so its pid is
 *   known, and it exits when the pool ends the session (idle, the host's connection closed, the pool closed).
 * - **Nothing outlives its owner.** A lifeline (a small `sh` in a process group of its own, reading a pipe from this
 *   process) holds the pids of the master and every stream; when the pipe closes (this process exited, was killed
 *   with SIGKILL, or its whole process group was), it kills them all and exits once they are gone. The master's death
 *   ends the TCP connection, so the server's sessions close too. A stream's stdout is a pipe into this process, or
 *   (one stream per file over a short link) the `.part` itself, which the master then writes: the download's lock
 *   names the lifeline, and a process taking the lock over after a crash waits until it has exited (lock.ts).
 *
 * Not available on Windows (the agent is a Unix socket), without an `ssh` binary, or when a hop logs in with neither
 * a key, an agent nor a password the pool holds: `OpenSshSession.start` then rejects with OpenSshUnsupported, and
 * the download uses the ssh2 lanes.
 */
import type { ChildProcess } from '../../util/processes';
import { Spawner } from '../../util/spawner';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ParsedKey } from 'ssh2';
import { startPrivateAgent, type PrivateAgent } from './agentServer';
import { startAskpass, type Askpass } from './askpass';
import { OpenSshMaster } from './master';
import { PLAIN, configPath as writePath } from './configText';
import { keyTypeOfBlob } from '../knownHosts';
import type { SiblingLogin } from '../connection';
import { classifySshFailure } from '../clientErrors';
import type { ResolvedHop } from '../types';
import { RemoteRunsError, isRemoteRunsError } from '../../types';

/** The reading of a session's ssh failures lives with the transport's, in clientErrors.ts (one reader of ssh's stderr). */
export { classifySshFailure };

/** What is needed to reach a host as the pool does. */
export interface OpenSshLogin {
  login: SiblingLogin;
  /** The key each hop presented to the pool's connection, nearest first (SshConnection.hostKeys). */
  hostKeys: Buffer[];
  /** The user's agent socket the pool uses, if any. */
  agent: string | undefined;
}

export interface OpenSshOptions {
  /** The `ssh` binary. Default `ssh` (from PATH). */
  sshPath?: string;
  /** Parent of the session's 0700 folder. Default: the OS temp folder. */
  dir?: string;
  /** What runs the askpass program's script: this process's executable (node, or Electron run as node). */
  runtime?: string;
  signal?: AbortSignal;
  /** Start a process starter beside the master, for `runToFile` (util/spawner.ts). */
  starter?: boolean;
}

/** Why a host cannot use the OpenSSH client (before anything is started). */
export class OpenSshUnsupported extends Error {}

/**
 * Start an OpenSSH session beside a pool's connection, logged in with what that connection holds (`login`: its
 * secrets, its agent) and trusting the host keys it verified. Rejects as OpenSshSession.start does. The pool starts
 * it (ConnectionPool.openSsh): one session per host, shared.
 */
export function startBeside(login: SiblingLogin, hostKeys: Buffer[], options: OpenSshOptions = {}): Promise<OpenSshSession> {
  // The pool's own agent rule (SshConnection.connect): null never uses one, undefined is SSH_AUTH_SOCK.
  const agent = login.settings.agent === null ? undefined : (login.settings.agent ?? process.env.SSH_AUTH_SOCK);
  return OpenSshSession.start({ login, hostKeys, agent }, options);
}

/** Whether a failure to start will not change by itself (no binary, no key login, a refused login): worth remembering. */
export function lastingRefusal(e: unknown): boolean {
  return e instanceof OpenSshUnsupported || (isRemoteRunsError(e) && e.kind === 'auth-failed');
}

/** OpenSSH's names for the cipher ssh2 and scp use on AES-NI machines first, then its usual ones. */
export const CIPHERS = 'aes128-gcm@openssh.com,aes256-gcm@openssh.com,chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr';
/** Time for the master to connect and log in through every hop (a loaded machine, a far jump host). */
const MASTER_TIMEOUT_MS = 60_000;
/** How often the master's control socket is looked for while it logs in. */
const MASTER_POLL_MS = 25;

/** A path as a value of the transfer's config (configText.ts); one that cannot be written leaves OpenSSH out. */
export function configPath(p: string): string {
  return writePath(p, (m) => new OpenSshUnsupported(m));
}

function hostKeyAlgorithms(keyType: string): string {
  return keyType === 'ssh-rsa' ? 'rsa-sha2-512,rsa-sha2-256,ssh-rsa' : keyType;
}

/** The alias of hop i in the generated config (the last hop is the target). */
export function hopAlias(i: number): string {
  return `rr-hop${i}`;
}

/**
 * The ssh_config text for a login: one Host block per hop (ProxyJump to the previous one), then the options every
 * hop shares. Pure, for unit tests; throws OpenSshUnsupported for a value it cannot write safely.
 */
export function buildConfig(
  hops: ResolvedHop[],
  hostKeyTypes: string[],
  files: { knownHosts: string; agent: string | undefined; identities: string[]; control: string },
  /** Per hop, how it logs in: a key (the agent) and/or the password the pool holds (through askpass). Default: keys. */
  auth: readonly { key: boolean; password: boolean }[] = [],
): string {
  const how = (i: number): { key: boolean; password: boolean } => auth[i] ?? { key: true, password: false };
  const anyPassword = hops.some((_, i) => how(i).password);
  const lines: string[] = ['# Written by Remote Runs for one transfer; removed when it ends.'];
  hops.forEach((hop, i) => {
    // Its command line is already expanded for ssh2's use; ssh would expand `%` in it a second time.
    if (hop.proxyCommand) throw new OpenSshUnsupported(`${hop.alias} is reached through a ProxyCommand (${hop.proxyCommand.where})`);
    for (const [what, v] of [
      ['host name', hop.hostname],
      ['user', hop.user],
    ] as const) {
      if (!PLAIN.test(v)) throw new OpenSshUnsupported(`the ${what} of ${hop.alias} (${JSON.stringify(v)}) cannot be written into an ssh_config`);
    }
    const last = i === hops.length - 1;
    lines.push(
      `Host ${hopAlias(i)}`,
      `  HostName ${hop.hostname}`,
      `  Port ${hop.port}`,
      `  User ${hop.user}`,
      `  HostKeyAlias ${hopAlias(i)}`,
      `  HostKeyAlgorithms ${hostKeyAlgorithms(hostKeyTypes[i])}`,
      ...(i > 0 ? [`  ProxyJump ${hopAlias(i - 1)}`] : []),
      // Only the target's connection is shared; a jump hop's ssh must never take the target's master for its own.
      `  ControlPath ${last ? configPath(files.control) : 'none'}`,
      // A hop without a key tries none (no default key file, no passphrase to ask for); one with a password the
      // pool holds may use it after its keys.
      ...(!how(i).key ? ['  PubkeyAuthentication no'] : []),
      ...(how(i).password ? ['  PasswordAuthentication yes', `  PreferredAuthentications ${how(i).key ? 'publickey,password' : 'password'}`] : []),
    );
  });
  lines.push(
    'Host *',
    `  UserKnownHostsFile ${configPath(files.knownHosts)}`,
    '  GlobalKnownHostsFile /dev/null',
    '  StrictHostKeyChecking yes',
    '  UpdateHostKeys no',
    '  CheckHostIP no',
    // With a password to give, ssh must be allowed to ask (our askpass, which answers only that); else never.
    `  BatchMode ${anyPassword ? 'no' : 'yes'}`,
    ...(anyPassword ? ['  NumberOfPasswordPrompts 1'] : []),
    `  IdentityAgent ${files.agent ? configPath(files.agent) : 'none'}`,
    '  IdentitiesOnly yes',
    ...files.identities.map((f) => `  IdentityFile ${configPath(f)}`),
    '  PreferredAuthentications publickey',
    '  PasswordAuthentication no',
    '  KbdInteractiveAuthentication no',
    '  ControlMaster no',
    '  ForwardAgent no',
    '  ForwardX11 no',
    '  ClearAllForwardings yes',
    '  PermitLocalCommand no',
    '  RequestTTY no',
    '  EscapeChar none',
    '  Compression no',
    `  Ciphers ${CIPHERS}`,
    '  ServerAliveInterval 15',
    '  ServerAliveCountMax 3',
    '  ConnectTimeout 15',
    '  LogLevel ERROR',
  );
  return lines.join('\n') + '\n';
}

/** What a download's streams need of an OpenSSH master connection (a transfer's own session, or a host's transport). */
export interface OpenSshStreams {
  /** The lifeline's pid: while it runs, a process of the connection may still write. */
  readonly lifelinePid: number | undefined;
  /**
   * True when a stream may write into the `.part` itself (its stdout a file the master writes): only a master the
   * download can end (a session it holds from the pool and retires after a failed attempt: OpenSshLease.retire; or the
   * host's OpenSSH-first link: ConnectionPool.retireLink), so that nothing writes into the file once the transfer is over.
   */
  readonly directWrites: boolean;
  /** See OpenSshSession.run. */
  run(line: string, stdout?: number, stdoutAt?: number): ChildProcess;
}

/** An OpenSSH login to one host: start remote commands on its shared master connection. */
export class OpenSshSession implements OpenSshStreams {
  readonly directWrites = true;

  /** The lifeline's pid: while it runs, a process of this session may still write. */
  get lifelinePid(): number | undefined {
    return this.master.lifelinePid;
  }

  private disposed = false;
  /** Starts this session's streams without forking this process (see runToFile); absent where it could not start. */
  starter: Spawner | undefined;

  private constructor(
    /** The ControlMaster: folder, lifeline, master process, streams (master.ts). */
    private readonly master: OpenSshMaster,
    private readonly agent: PrivateAgent | undefined,
    private readonly askpass: Askpass | undefined,
    private readonly env: NodeJS.ProcessEnv,
    /** The target's alias in the config. */
    private readonly target: string,
  ) {}

  /** The session's private 0700 folder, for files of its streams (removed with it). */
  get spoolDir(): string {
    return this.master.folder;
  }

  private get configFile(): string {
    return path.join(this.master.folder, 'config');
  }

  private get sshPath(): string {
    return this.master.sshPath;
  }

  /** Set up the folder, the agent and the master connection; rejects with OpenSshUnsupported or RemoteRunsError. */
  static async start(login: OpenSshLogin, options: OpenSshOptions = {}): Promise<OpenSshSession> {
    if (process.platform === 'win32') throw new OpenSshUnsupported('the OpenSSH client is not used on Windows');
    const hops = [...login.login.host.jumps, login.login.host.target];
    if (login.hostKeys.length !== hops.length || login.hostKeys.some((k) => k.length === 0)) {
      throw new OpenSshUnsupported('the connection has no verified host key for every hop');
    }
    // The private agent relays to the pool's agent only: a hop whose ssh config names another one logs in elsewhere.
    const ownAgent = hops.find((h) => h.identityAgent !== undefined && h.identityAgent !== login.agent);
    if (ownAgent) throw new OpenSshUnsupported(`${ownAgent.alias} uses its own IdentityAgent from the ssh config`);
    const keys: ParsedKey[] = login.login.hops.flatMap((h) => [...h.keys.values()]);
    const upstream = login.agent && hops.some((h) => !h.identitiesOnly) ? login.agent : undefined;
    const auth = hops.map((h, i) => ({
      key: login.login.hops[i].keys.size > 0 || (upstream !== undefined && !h.identitiesOnly),
      password: login.login.hops[i].password !== undefined,
    }));
    const stuck = auth.findIndex((a) => !a.key && !a.password);
    if (stuck >= 0) throw new OpenSshUnsupported(`${hops[stuck].alias} logs in with neither a key, an agent nor a password the connection holds`);

    const master = new OpenSshMaster(options.sshPath ?? 'ssh', options.dir ?? os.tmpdir());
    const folder = master.folder;
    let agent: PrivateAgent | undefined;
    let askpass: Askpass | undefined;
    try {
      const identities: string[] = [];
      if (auth.some((a) => a.key)) {
        agent = await startPrivateAgent({ keys, upstream, dir: folder });
        agent.publicKeys.forEach((line, i) => {
          const f = path.join(folder, `id_${i}.pub`);
          fs.writeFileSync(f, line + '\n', { mode: 0o600 });
          identities.push(f);
        });
      }
      const passwords = hops.flatMap((h, i) => {
        const password = login.login.hops[i].password;
        // OpenSSH names the host in its prompt by HostKeyAlias when one is set (sshconnect2.c, userauth_passwd).
        return password !== undefined ? [{ user: h.user, hostname: hopAlias(i), password }] : [];
      });
      if (passwords.length > 0) askpass = await startAskpass(folder, passwords, options.runtime);
      const types = login.hostKeys.map(keyTypeOfBlob);
      fs.writeFileSync(
        path.join(folder, 'known_hosts'),
        login.hostKeys.map((k, i) => `${hopAlias(i)} ${types[i]} ${k.toString('base64')}\n`).join(''),
        { mode: 0o600 },
      );
      const config = buildConfig(
        hops,
        types,
        { knownHosts: path.join(folder, 'known_hosts'), agent: agent?.socketPath, identities, control: path.join(folder, 'cm') },
        auth,
      );
      fs.writeFileSync(path.join(folder, 'config'), config, { mode: 0o600 });
      const env: NodeJS.ProcessEnv = { ...process.env };
      // No agent but ours; no askpass but ours (which answers only the password prompts of these logins).
      for (const k of ['SSH_AUTH_SOCK', 'SSH_ASKPASS', 'SSH_ASKPASS_REQUIRE', 'DISPLAY']) delete env[k];
      if (askpass) Object.assign(env, askpass.env, { DISPLAY: ':0' }); // DISPLAY: what OpenSSH before 8.4 needs to use askpass
      const session = new OpenSshSession(master, agent, askpass, env, hopAlias(hops.length - 1));
      await session.startMaster(options.signal);
      // (Its requests name files of the folder on a line each, split at white space: a folder without any.)
      if (options.starter && !/\s/.test(folder)) session.starter = new Spawner([session.sshPath, '-F', session.configFile, '-T', '--', session.target], folder, env);
      return session;
    } catch (e) {
      master.end('SIGKILL');
      agent?.dispose();
      askpass?.dispose();
      throw e;
    }
  }

  private async startMaster(signal?: AbortSignal): Promise<void> {
    const log = path.join(this.master.folder, 'master.log');
    await this.master.start(['-F', this.configFile, '-E', log, '-o', 'ControlMaster=yes', '-o', 'ControlPersist=no', '-N', '--', this.target], {
      env: this.env,
      stderr: 'ignore',
      timeoutMs: MASTER_TIMEOUT_MS,
      pollMs: MASTER_POLL_MS,
      signal,
      cancelled: () => new RemoteRunsError('cancelled', 'Download cancelled'),
      timedOut: () => new RemoteRunsError('unreachable', `OpenSSH did not log in within ${MASTER_TIMEOUT_MS / 1000} s`),
      cannotStart: (e) => (e.code === 'ENOENT' ? new OpenSshUnsupported(`no OpenSSH client at ${this.sshPath}`) : new OpenSshUnsupported(`cannot start ${this.sshPath}: ${e.message}`)),
      exited: (code) => {
        const text = readTail(log);
        return classifySshFailure(text, code ?? 255) ?? new RemoteRunsError('unreachable', `OpenSSH could not connect: ${firstLine(text) || `exit ${code}`}`);
      },
    });
  }

  /**
   * Run one remote command as `run` does, started by the session's process starter (util/spawner.ts: no fork of this
   * process), its stdout appended to `file` (which exists); emits 'spawn' once it runs with the file open.
   */
  runToFile(line: string, file: string): ChildProcess {
    if (this.disposed) throw new RemoteRunsError('cancelled', 'Transfer closed');
    if (!this.starter || this.starter.failed) {
      // No starter (or it died): forked from here, as `run` does; the child has its own copy of the descriptor.
      const fd = fs.openSync(file, 'a');
      try {
        return this.run(line, fd);
      } finally {
        fs.closeSync(fd);
      }
    }
    const child = this.starter.run(line, file);
    this.master.children.add(child as unknown as ChildProcess);
    child.once('close', () => this.master.children.delete(child as unknown as ChildProcess));
    return child as unknown as ChildProcess;
  }

  /**
   * Run one remote command (a shell line, quoted by the caller) on the master connection; stdout and stderr are
   * pipes, or stdout is the descriptor `stdout` (a file the stream writes itself: the master writes into it), placed
   * at `stdoutAt` first when given (util/processes.ts stdoutAt: one of several ranges of a file, at its place).
   */
  run(line: string, stdout?: number, stdoutAt?: number): ChildProcess {
    if (this.disposed) throw new RemoteRunsError('cancelled', 'Transfer closed');
    return this.master.run(['-F', this.configFile, '-T', '--', this.target, line], ['ignore', stdout ?? 'pipe', 'pipe'], this.env, stdout !== undefined ? stdoutAt : undefined);
  }

  /** Stop every stream and the master, remove the agent and the folder. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    for (const c of this.master.children) c.kill('SIGKILL');
    await new Promise<void>((resolve) => {
      const c = this.master.run(['-F', this.configFile, '-O', 'exit', '--', this.target], ['ignore', 'ignore', 'ignore'], this.env);
      const t = setTimeout(() => {
        c.kill('SIGKILL');
        resolve();
      }, 5000);
      c.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      c.once('error', () => {
        clearTimeout(t);
        resolve();
      });
    });
    this.starter?.close();
    this.master.end('SIGKILL');
    this.agent?.dispose();
    this.askpass?.dispose();
  }
}

/** The end of a log file (what ssh wrote with -E), '' if none. */
function readTail(file: string): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-4000);
  } catch {
    return '';
  }
}

function firstLine(text: string): string {
  return text.split('\n').map((l) => l.trim()).find(Boolean) ?? '';
}
