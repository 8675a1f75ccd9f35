/**
 * A host's connection through the system's OpenSSH client, for hosts whose ssh config asks for what ssh2 cannot do
 * (transport.ts, chooseTransport says which and why). One ControlMaster per host logs in once; every command (exec,
 * the listing, metric tails, eval starts) and every download stream is a `ssh` mux client on its control socket.
 *
 * - **OpenSSH's own semantics.** The master is run as `ssh -F WRAPPER ALIAS`: the wrapper (a file in a 0700
 *   folder of ours) sets only what this transport must own (its control socket, no terminal, no forwardings, strict
 *   host keys) and then Includes the user's ssh config, so certificates, `@cert-authority`, security keys, GSSAPI,
 *   ProxyCommand, Match and the rest mean exactly what they mean to `ssh ALIAS`. The host's settings (user, port,
 *   identity file, jump) are given as `ssh -l/-p/-i/-J` would give them.
 * - **Host keys stay strict.** StrictHostKeyChecking is set per hop from the config as the built-in client reads it
 *   (`no` becomes `accept-new`: a changed key is never accepted), never left to `no`. An unknown key under `ask`
 *   comes to the user's Prompter, as with ssh2.
 * - **The same prompts, once.** ssh's questions (passphrase, password, one-time code, an unknown host key) go
 *   through askpass.ts to the Prompter; the master asks them once per login. Answers are kept in memory by the
 *   pool (`answers`), so a reconnect does not ask again; a second ask for the same thing within one login means the
 *   answer was refused, and the user is asked.
 * - **Nothing outlives its owner.** The master and every mux client are held by the lifeline (util/lifeline.ts):
 *   this process exiting, however it exits, kills them. The mux clients run with `-F /dev/null` and a ProxyCommand of
 *   `false`: if the master is gone they fail, never connecting anywhere by themselves.
 *
 * Not available on Windows (askpass is a Unix socket). Errors from ssh's stderr become the kinds ssh2's failures get
 * (clientErrors.ts, mapOpenSshError).
 *
 * This folder never imports `vscode`.
 */
import type { ChildProcess } from '../../util/processes';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ExecOptions, ExecResult } from '../../remote';
import { RemoteRunsError } from '../../types';
import { Emitter, type Event } from '../../util/event';
import { startPromptAnswerer } from './askpass';
import { OpenSshMaster } from './master';
import { PLAIN, configPath as writePath } from './configText';
import { mapOpenSshError } from '../clientErrors';
import { describeHop } from '../hops';
import { defaultKnownHostsFiles } from '../hostKeyPolicy';
import { fastestOf, RoundTrip } from '../roundTrip';
import type { CloseEvent, Transport } from '../transport';
import type { HostKeyInfo, Logger, Prompter, ResolvedHop, ResolvedHost } from '../types';

export interface OpenSshConnectOptions {
  prompter: Prompter;
  logger: Logger;
  /** As ConnectOptions.knownHostsFiles / knownHostsPinned: used for hops whose ssh config names no known_hosts file. */
  knownHostsFiles?: string[];
  knownHostsPinned?: boolean;
  /** ssh-agent socket: undefined keeps SSH_AUTH_SOCK, null gives ssh none (an IdentityAgent of the config still applies). */
  agent?: string | null;
  connectTimeoutMs?: number;
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** The `ssh` binary. Default `ssh` from PATH. */
  sshPath?: string;
  /** What runs the askpass script: this process's executable (node, or Electron run as node). */
  runtime?: string;
  /** Parent of the connection's 0700 folder. Default the OS temp folder. */
  dir?: string;
  /** Answers given before (by prompt), kept by the pool for a reconnect. Never written anywhere. */
  answers?: Map<string, string>;
  /**
   * `Ciphers` where the user's ssh config sets none (written after it: its own value wins). The pool's OpenSSH-first
   * link asks for what the built-in client and the session it replaces negotiate (session.ts CIPHERS); a host whose
   * config needs OpenSSH keeps ssh's own default.
   */
  ciphers?: string;
  signal?: AbortSignal;
}

/** Stderr kept per command and of the master (its tail). */
const MAX_STDERR_BYTES = 1 << 20;
const MASTER_TAIL_BYTES = 16 * 1024;
const MASTER_POLL_MS = 20;
/** The host alias the mux clients name: never resolved (-F /dev/null, ProxyCommand false), only shown in ssh's messages. */
const MUX_ALIAS = 'remote-runs-transport';
/** A path as a value of the wrapper config (configText.ts); one that cannot be written is a bad-config. */
function configPath(p: string): string {
  return writePath(p, (m) => new RemoteRunsError('bad-config', m));
}

/**
 * The wrapper config: what the transport owns first (first obtained value wins in ssh_config), per hop its host-key
 * rules, then the user's file, then defaults for what neither set. Pure, for unit tests.
 */
export function buildTransportConfig(
  host: ResolvedHost,
  o: { knownHostsFiles: string[]; knownHostsPinned: boolean; connectTimeoutS: number; keepaliveIntervalS: number; keepaliveCountMax: number; ciphers?: string },
): string {
  const lines = [
    '# Written by Remote Runs: the OpenSSH transport of one host, removed when its connection closes.',
    '# What the transport owns comes first (ssh takes the first value it reads); the user\'s config follows.',
    'Host *',
    '  ControlMaster no',
    '  ControlPath none',
    '  BatchMode no',
    '  RequestTTY no',
    '  EscapeChar none',
    '  PermitLocalCommand no',
    '  ClearAllForwardings yes',
    // The master runs no command of the user's config (-N already skips a RemoteCommand; said here too) and opens no tunnel device.
    '  RemoteCommand none',
    '  Tunnel no',
    '  ForkAfterAuthentication no',
    '  SessionType default',
    '  StdinNull no',
    // Errors are what the transport reads to say what went wrong (mapOpenSshError): a `LogLevel QUIET` of the user's
    // config would leave every failure as "ssh exited without saying why".
    '  LogLevel ERROR',
  ];
  for (const hop of [...host.jumps, host.target]) {
    if (!PLAIN.test(hop.alias)) continue; // a pattern-like alias cannot be a Host line; the `Host *` rule below applies
    lines.push(`Host ${hop.alias}`, `  StrictHostKeyChecking ${hop.strictHostKeyChecking ?? 'ask'}`);
    if (!hop.knownHosts || o.knownHostsPinned) {
      lines.push(`  UserKnownHostsFile ${o.knownHostsFiles.map(configPath).join(' ') || 'none'}`, '  GlobalKnownHostsFile none');
    }
  }
  // Any hop not named above (a jump written as user@host:port): strict, never `no`.
  lines.push('Host *', '  StrictHostKeyChecking ask');
  const file = host.openssh?.configFile;
  if (file !== undefined && fs.existsSync(file)) lines.push('Match all', `  Include ${configPath(file)}`);
  lines.push(
    'Match all',
    `  ConnectTimeout ${o.connectTimeoutS}`,
    `  ServerAliveInterval ${o.keepaliveIntervalS}`,
    `  ServerAliveCountMax ${o.keepaliveCountMax}`,
    ...(o.ciphers !== undefined ? [`  Ciphers ${o.ciphers}`] : []),
  );
  return lines.join('\n') + '\n';
}

/** The master's command line after `ssh`: the host's settings as ssh's own flags, then the alias. */
export function masterArgs(host: ResolvedHost, wrapper: string, control: string): string[] {
  const ov = host.openssh?.overrides ?? {};
  return [
    '-F',
    wrapper,
    '-o',
    'ControlMaster=yes',
    '-o',
    `ControlPath=${control.replace(/%/g, '%%')}`,
    '-o',
    'ControlPersist=no',
    '-N',
    ...(ov.user !== undefined ? ['-l', ov.user] : []),
    ...(ov.port !== undefined ? ['-p', String(ov.port)] : []),
    ...(ov.identityFiles ?? []).flatMap((f) => ['-i', f]),
    ...(ov.proxyJump !== undefined ? ['-J', ov.proxyJump] : []),
    '--',
    host.target.alias,
  ];
}

/** What one ssh prompt asks, read from its text (OpenSSH 9.x: sshconnect.c, sshconnect2.c, sshkey-xmss/ssh-sk). */
export type SshPrompt =
  | { kind: 'passphrase'; key: string }
  | { kind: 'password'; user: string; host: string }
  | { kind: 'host-key'; hostPattern: string; keyType: string; fingerprint: string }
  | { kind: 'other'; text: string };

export function readPrompt(text: string): SshPrompt {
  const pp = /^Enter passphrase for (?:key )?'?(.+?)'?: ?$/m.exec(text);
  if (pp) return { kind: 'passphrase', key: pp[1] };
  const pw = /^(\S+)@(\S+)'s password: ?$/.exec(text);
  if (pw) return { kind: 'password', user: pw[1], host: pw[2] };
  const hk = /The authenticity of host '([^' ]+)[^']*' can't be established\.[\s\S]*?\b(\S+) key fingerprint is (SHA256:[A-Za-z0-9+/=]+)\.[\s\S]*continue connecting/.exec(text);
  if (hk) return { kind: 'host-key', hostPattern: hk[1], keyType: hk[2], fingerprint: hk[3] };
  return { kind: 'other', text };
}

/** `[host]:port` or `host` (port 22), as ssh names a host in its host-key question. */
function splitPattern(p: string): { hostname: string; port: number } {
  const m = /^\[(.+)\]:(\d+)$/.exec(p);
  return m ? { hostname: m[1], port: Number(m[2]) } : { hostname: p, port: 22 };
}

/** An open OpenSSH master connection to one host. Create with `OpenSshConnection.connect`. */
export class OpenSshConnection implements Transport {
  readonly kind = 'openssh' as const;
  private readonly closeEmitter = new Emitter<CloseEvent>();
  readonly onDidClose: Event<CloseEvent> = this.closeEmitter.event;
  private closedWith: CloseEvent | undefined;
  private masterTail = '';
  private readonly roundTrip = new RoundTrip(() => this.measureRoundTrip());

  private constructor(
    readonly host: ResolvedHost,
    /** The ControlMaster: folder, lifeline, master process, mux clients (master.ts). */
    private readonly master: OpenSshMaster,
    private readonly disposeAskpass: () => void,
    private readonly logger: Logger,
    private readonly knownHostsFiles: string[],
  ) {}

  /** Start the master and wait until it has logged in (its control socket exists). */
  static async connect(host: ResolvedHost, options: OpenSshConnectOptions): Promise<OpenSshConnection> {
    if (process.platform === 'win32') {
      throw new RemoteRunsError('bad-config', `${host.target.alias} needs the OpenSSH client (its ssh config asks for what the built-in client cannot do), which Remote Runs does not use on Windows`);
    }
    const sshPath = options.sshPath ?? 'ssh';
    const poolFiles = options.knownHostsFiles ?? defaultKnownHostsFiles();
    // The files ssh checks for the target, as the wrapper config tells it (its messages name them).
    const knownHostsFiles = host.target.knownHosts && !options.knownHostsPinned ? host.target.knownHosts.files : poolFiles;
    const where = describeHop(host, host.jumps.length);
    // Its owner file lets a later process remove it if this one is killed (sessionFolder.ts).
    const master = new OpenSshMaster(sshPath, options.dir ?? os.tmpdir());
    const folder = master.folder;
    const wrapper = path.join(folder, 'config');
    const control = master.control;
    let askpassDispose = (): void => undefined;
    try {
      fs.writeFileSync(
        wrapper,
        buildTransportConfig(host, {
          knownHostsFiles: poolFiles,
          knownHostsPinned: options.knownHostsPinned ?? false,
          connectTimeoutS: Math.max(1, Math.ceil((options.connectTimeoutMs ?? 15_000) / 1000)),
          keepaliveIntervalS: Math.ceil((options.keepaliveIntervalMs ?? 15_000) / 1000),
          keepaliveCountMax: options.keepaliveCountMax ?? 3,
          ...(options.ciphers !== undefined ? { ciphers: options.ciphers } : {}),
        }),
        { mode: 0o600 },
      );
      let prompting = 0;
      const answers = options.answers ?? new Map<string, string>();
      const askedThisLogin = new Set<string>();
      const answerer = await startPromptAnswerer(
        folder,
        async (text) => {
          prompting++;
          try {
            return await answerPrompt(text, host, options.prompter, answers, askedThisLogin, poolFiles, options.logger);
          } finally {
            prompting--;
          }
        },
        options.runtime,
      );
      askpassDispose = () => answerer.dispose();
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const k of ['SSH_ASKPASS', 'SSH_ASKPASS_REQUIRE', 'DISPLAY']) delete env[k];
      Object.assign(env, answerer.env, { DISPLAY: ':0' }); // DISPLAY: what OpenSSH before 8.4 needs to use askpass
      if (options.agent === null) delete env.SSH_AUTH_SOCK;
      else if (options.agent !== undefined) env.SSH_AUTH_SOCK = options.agent;

      const conn = new OpenSshConnection(host, master, askpassDispose, options.logger, knownHostsFiles);
      const timeoutMs = 4 * (options.connectTimeoutMs ?? 15_000);
      const child = await master
        .start(masterArgs(host, wrapper, control), {
          env,
          stderr: 'pipe',
          onStderr: (d) => {
            conn.masterTail = (conn.masterTail + d.toString('utf8')).slice(-MASTER_TAIL_BYTES);
          },
          timeoutMs,
          pollMs: MASTER_POLL_MS,
          // Time spent in prompts does not count (the user may take a while to type).
          paused: () => prompting > 0,
          signal: options.signal,
          cancelled: () => new RemoteRunsError('cancelled', `Connecting to ${host.target.alias} cancelled`),
          timedOut: () => new RemoteRunsError('unreachable', `OpenSSH did not log in to ${where} within ${timeoutMs / 1000} s`, { hop: host.target.alias, code: 'timeout' }),
          cannotStart: (e) =>
            new RemoteRunsError(
              'bad-config',
              e.code === 'ENOENT'
                ? `${host.target.alias} needs the OpenSSH client (${sshPath}), which is not installed or not on PATH`
                : `Cannot start ${sshPath} for ${host.target.alias}: ${e.message}`,
              { sshPath },
            ),
          exited: () => mapOpenSshError(conn.masterTail, host.target, where, knownHostsFiles),
        })
        .catch((e: unknown) => {
          conn.teardown();
          throw e;
        });
      askedThisLogin.clear();
      child.once('close', (code) => conn.masterGone(code));
      options.logger.info(`Connected to ${where} (OpenSSH)`);
      return conn;
    } catch (e) {
      master.end('SIGTERM');
      askpassDispose();
      throw e;
    }
  }

  get isClosed(): boolean {
    return this.closedWith !== undefined;
  }

  get openChannels(): number {
    return this.master.children.size;
  }

  /** The lifeline's pid: while it runs, a process of this connection may still write (download locks name it). */
  get lifelinePid(): number | undefined {
    return this.master.lifelinePid;
  }

  /** The connection's private 0700 folder, for files of its streams (removed with it). */
  get spoolDir(): string {
    return this.master.folder;
  }

  /**
   * Start a remote command line on the master: a mux client whose stdout is a pipe, or the descriptor `stdout` (a
   * file the master then writes: the mux client hands it over), placed at `stdoutAt` first when given
   * (util/processes.ts stdoutAt). The caller reads its exit and output; it is held by the lifeline until it exits.
   */
  run(line: string, stdout?: number, stdin: 'ignore' | 'pipe' = 'ignore', stdoutAt?: number): ChildProcess {
    if (this.closedWith) throw this.dropError(this.closedWith, 'before-open');
    return this.master.run(
      ['-F', '/dev/null', '-S', this.master.control, '-o', 'ControlMaster=no', '-o', 'ProxyCommand=false', '-o', 'BatchMode=yes', '-T', '--', MUX_ALIAS, line],
      [stdin, stdout ?? 'pipe', 'pipe'],
      undefined,
      stdout !== undefined ? stdoutAt : undefined,
    );
  }

  /**
   * Close (as close()) and resolve once the master has exited, so that nothing it carried still writes into a file
   * a stream handed it (a download's `.part`: ConnectionPool.retireLink).
   */
  async end(): Promise<void> {
    const master = this.master.process;
    this.close();
    if (!master || master.exitCode !== null || master.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        master.kill('SIGKILL');
        resolve();
      }, 5000);
      master.once('close', () => {
        clearTimeout(t);
        resolve();
      });
      if (master.exitCode !== null || master.signalCode !== null) {
        clearTimeout(t);
        resolve();
      }
    });
  }

  /**
   * The link's round trip, measured once per master (roundTrip.ts) without a process on either side's critical path:
   * a mux client asks the master for a local forward from a socket in our folder to port 1 of the remote's
   * loopback (`ssh -O forward -L SOCK:127.0.0.1:1`, answered by the master alone: mux.c
   * mux_master_process_open_fwd); then each probe is a connection to that socket, which the master turns into one
   * `direct-tcpip` channel open (channels.c channel_post_port_listener, port_open_helper) that sshd answers with an
   * open failure as soon as its connect is refused (serverloop.c server_request_direct_tcpip, channels.c
   * channel_connect_to_port, connect_to), or at once where forwarding is off; the master then closes the socket. The time from connect to
   * close is the round trip, plus the master's own turn. Port 1 is tcpmux, which nothing serves; a service there
   * would only see a connection opened and closed. A mux client's start (~5 ms, more on a busy machine) is outside
   * every probe: timed with it, loopback measured anywhere from 0 to 10 ms.
   */
  roundTripMs(signal?: AbortSignal): Promise<number> {
    return this.roundTrip.get(signal);
  }

  private async measureRoundTrip(): Promise<number> {
    const socket = path.join(this.master.folder, 'round-trip');
    const spec = `${socket}:127.0.0.1:1`;
    const mux = (op: 'forward' | 'cancel'): Promise<void> =>
      new Promise((resolve, reject) => {
        if (this.closedWith) return reject(this.dropError(this.closedWith, 'before-open'));
        const child = this.master.run(
          ['-F', '/dev/null', '-S', this.master.control, '-o', 'ControlMaster=no', '-o', 'ProxyCommand=false', '-o', 'BatchMode=yes', '-O', op, '-L', spec, MUX_ALIAS],
          ['ignore', 'ignore', 'pipe'],
        );
        let stderr = '';
        child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-4096)));
        child.once('error', (e: Error) => reject(new RemoteRunsError('unreachable', `Cannot start ${this.master.sshPath}: ${e.message}`, { dropped: 'before-open' })));
        child.once('close', (code: number | null) => {
          if (this.closedWith) return reject(this.dropError(this.closedWith, 'after-open'));
          if (code === 0) return resolve();
          reject(new RemoteRunsError('protocol', `The OpenSSH master of ${this.host.target.alias} refused a local forward to measure the round trip (ssh -O ${op}, exit ${String(code)}): ${stderr.trim() || 'no message'}`));
        });
      });
    const probe = (): Promise<number> =>
      new Promise((resolve, reject) => {
        if (this.closedWith) return reject(this.dropError(this.closedWith, 'before-open'));
        const t0 = performance.now();
        const sock = net.connect(socket);
        sock.on('data', () => undefined);
        sock.once('error', (e) => reject(new RemoteRunsError('protocol', `Round trip probe of ${this.host.target.alias}: ${e.message}`)));
        sock.once('close', (hadError) => {
          if (hadError) return;
          if (this.closedWith) return reject(this.dropError(this.closedWith, 'after-open'));
          resolve(performance.now() - t0);
        });
      });
    await mux('forward');
    try {
      return await fastestOf(probe);
    } finally {
      await mux('cancel').catch(() => undefined); // the master or its folder going takes the forward with it
      fs.rmSync(socket, { force: true });
    }
  }

  /** As SshConnection.exec: resolves with the exit status; `cancelled`, or `unreachable` with `detail.dropped`. */
  exec(commandLine: string, options: ExecOptions = {}): Promise<ExecResult> {
    const { signal, maxOutputBytes, stdin } = options;
    return new Promise<ExecResult>((resolve, reject) => {
      if (signal?.aborted) return reject(new RemoteRunsError('cancelled', 'Command cancelled'));
      if (this.closedWith) return reject(this.dropError(this.closedWith, 'before-open'));
      let child: ChildProcess;
      try {
        child = this.run(commandLine, undefined, stdin !== undefined ? 'pipe' : 'ignore');
      } catch (e) {
        return reject(e);
      }
      let settled = false;
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let stdoutBytes = 0;
      let stderrBytes = 0;
      let truncated = false;
      const finish = (f: () => void): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        f();
      };
      const onAbort = (): void => {
        child.kill('SIGTERM');
        finish(() => reject(new RemoteRunsError('cancelled', 'Command cancelled')));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout?.on('data', (chunk: Buffer) => {
        if (truncated) return;
        if (maxOutputBytes !== undefined && stdoutBytes + chunk.length >= maxOutputBytes) {
          stdout.push(chunk.subarray(0, maxOutputBytes - stdoutBytes));
          stdoutBytes = maxOutputBytes;
          truncated = chunk.length > 0;
          if (truncated) child.kill('SIGTERM');
          return;
        }
        stdout.push(chunk);
        stdoutBytes += chunk.length;
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        if (stderrBytes >= MAX_STDERR_BYTES) return;
        stderr.push(chunk);
        stderrBytes += chunk.length;
      });
      child.stdin?.on('error', () => undefined);
      if (stdin !== undefined) child.stdin?.end(stdin);
      child.once('error', (e) => finish(() => reject(new RemoteRunsError('unreachable', `Cannot start ${this.master.sshPath}: ${e.message}`, { dropped: 'before-open' }))));
      child.once('close', (code, sig) => {
        const err = Buffer.concat(stderr);
        if (truncated) {
          return finish(() => resolve({ stdout: Buffer.concat(stdout), stderr: err, code: code ?? null, truncated: true }));
        }
        // 255 is ssh's own failure when the master is gone or the mux request failed; else the remote command's status.
        if (code === 255 && (this.isClosed || muxFailure(err.toString('utf8')))) {
          const started = !/Control socket connect|mux_client_hello_exchange|mux_client_request_session: (?:read|write)/.test(err.toString('utf8'));
          return finish(() => reject(this.dropError(this.closedWith ?? { error: new RemoteRunsError('unreachable', `Connection to ${this.host.target.alias} lost (OpenSSH: ${err.toString('utf8').trim()})`) }, started ? 'after-open' : 'before-open')));
        }
        finish(() =>
          resolve({
            stdout: Buffer.concat(stdout),
            stderr: err,
            code: code ?? null,
            ...(code === null && sig ? { signal: sig } : {}),
            truncated: false,
          }),
        );
      });
    });
  }

  /** Close on purpose: running commands end, the master logs out, the folder goes. */
  close(): void {
    if (this.closedWith) return;
    this.closedWith = {};
    this.teardown();
    this.closeEmitter.fire(this.closedWith);
    this.closeEmitter.dispose();
  }

  private teardown(): void {
    this.master.end('SIGTERM');
    this.disposeAskpass();
  }

  private masterGone(code: number | null): void {
    if (this.closedWith) return;
    const where = describeHop(this.host, this.host.jumps.length);
    const mapped = mapOpenSshError(this.masterTail, this.host.target, where, this.knownHostsFiles);
    const error =
      mapped.kind === 'unreachable'
        ? mapped
        : new RemoteRunsError('unreachable', `Connection to ${where} lost: ${mapped.message}`, { hop: this.host.target.alias });
    this.closedWith = { error };
    this.logger.warn(`Connection to ${this.host.target.alias} closed (OpenSSH master exited${code !== null ? ` with ${code}` : ''}): ${error.message}`);
    this.teardown();
    this.closeEmitter.fire(this.closedWith);
    this.closeEmitter.dispose();
  }

  private dropError(ev: CloseEvent, dropped: 'before-open' | 'after-open'): RemoteRunsError {
    if (!ev.error) return new RemoteRunsError('cancelled', `Connection to ${this.host.target.alias} was closed`);
    return new RemoteRunsError('unreachable', ev.error.message, { ...ev.error.detail, dropped });
  }
}

/** A mux client's own failure (the master is gone or refused the session), as opposed to the remote command's exit 255. */
function muxFailure(stderr: string): boolean {
  return /Control socket connect|mux_client_|ControlSocket .* already exists|master .*(?:closed|exited)|Connection to \S+ closed by remote host|kex_exchange_identification|Broken pipe/.test(stderr);
}

/** One prompt of ssh, answered from what the pool holds or by asking the user; undefined refuses it. */
async function answerPrompt(
  text: string,
  host: ResolvedHost,
  prompter: Prompter,
  answers: Map<string, string>,
  askedThisLogin: Set<string>,
  knownHostsFiles: string[],
  logger: Logger,
): Promise<string | undefined> {
  const p = readPrompt(text);
  const key = p.kind === 'passphrase' ? `passphrase ${p.key}` : p.kind === 'password' ? `password ${p.user}@${p.host}` : p.kind === 'other' ? `other ${p.text}` : '';
  // Asked again within one login: the answer given was refused. Forget it and ask the user.
  if (key && askedThisLogin.has(key)) answers.delete(key);
  if (key) askedThisLogin.add(key);
  const cached = key ? answers.get(key) : undefined;
  if (cached !== undefined) return cached;
  logger.info(`OpenSSH (${host.target.alias}) asks: ${text.split('\n').filter(Boolean).pop() ?? text}`);
  let answer: string | undefined;
  switch (p.kind) {
    case 'passphrase':
      answer = await prompter.passphrase(p.key);
      break;
    case 'password':
      answer = await prompter.password(p.user, p.host);
      break;
    case 'host-key': {
      const { hostname, port } = splitPattern(p.hostPattern);
      const hop: ResolvedHop = [...host.jumps, host.target].find((h) => h.hostname === hostname && h.port === port) ?? host.target;
      const info: HostKeyInfo = {
        hostPattern: p.hostPattern,
        hostname,
        port,
        keyType: p.keyType,
        fingerprint: p.fingerprint,
        knownHostsFile: hop.knownHosts?.appendTo ?? knownHostsFiles[0] ?? '',
      };
      return (await prompter.confirmHostKey(info)) ? 'yes' : 'no';
    }
    case 'other': {
      const r = await prompter.keyboardInteractive(host.target.user, host.target.alias, 'OpenSSH', '', [{ prompt: p.text, echo: false }]);
      answer = r?.[0];
      break;
    }
  }
  if (answer !== undefined && key) answers.set(key, answer);
  return answer;
}
