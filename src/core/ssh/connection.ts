/**
 * One SSH connection to a ResolvedHost (through its jump hosts), as an Executor. Each hop is host-key-checked
 * against known_hosts and authenticated like the target; every failure becomes a RemoteRunsError whose kind says
 * which of unreachable / auth-failed / host-key-unknown / host-key-mismatch it was, and whose message names the hop.
 *
 * We create the TCP socket ourselves with TCP_NODELAY: ssh2 never sets it, and without it every small packet
 * waits ~40 ms behind Nagle and delayed ACKs.
 *
 * This folder never imports `vscode`.
 */
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { Client, type ClientChannel, type ConnectConfig, type SFTPWrapper } from 'ssh2';
import { RemoteRunsError } from '../types';
import type { ExecOptions, ExecResult, Executor } from '../remote';
import { Emitter, type Event } from '../util/event';
import { makeAuthHandler, SecretStore, type AuthTrace } from './auth';
import {
  appendKnownHost,
  checkHostKey,
  fingerprintSha256,
  keyTypeOfBlob,
  knownHostsLine,
  knownHostsName,
  knownKeyTypes,
  readKnownHostsFiles,
} from './knownHosts';
import type { Prompter, ResolvedHop, ResolvedHost } from './types';

/** Where the SSH layer reports what it does. Never given a secret. */
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface ConnectOptions {
  prompter: Prompter;
  logger: Logger;
  /** Checked in order; new keys are appended to the first. Default: OpenSSH's user and global files. */
  knownHostsFiles?: string[];
  /** Secrets cache (the pool keeps one, so a reconnect does not ask again). Default: a fresh one. */
  secrets?: SecretStore;
  /** ssh-agent socket. Default: process.env.SSH_AUTH_SOCK. Pass null to never use an agent. */
  agent?: string | null;
  /** Per hop: TCP connect + key exchange + server answers during auth (time spent in prompts excluded). Default 15 s. */
  connectTimeoutMs?: number;
  /** Default 15 s; 0 disables. */
  keepaliveIntervalMs?: number;
  /** Unanswered keepalives before the connection is declared dead. Default 3. */
  keepaliveCountMax?: number;
  signal?: AbortSignal;
}

/** OpenSSH's default UserKnownHostsFile and GlobalKnownHostsFile. */
export function defaultKnownHostsFiles(): string[] {
  const home = os.homedir();
  return [
    path.join(home, '.ssh', 'known_hosts'),
    path.join(home, '.ssh', 'known_hosts2'),
    '/etc/ssh/ssh_known_hosts',
    '/etc/ssh/ssh_known_hosts2',
  ];
}

/** Why a connection closed: `error` is undefined when we closed it ourselves. */
export interface CloseEvent {
  error?: RemoteRunsError;
}

/** Stderr kept per command; stdout is bounded by maxOutputBytes instead. */
const MAX_STDERR_BYTES = 1 << 20;

/**
 * An open, authenticated connection. Create with `SshConnection.connect`. Once closed it stays closed:
 * the pool makes a new one.
 */
export class SshConnection implements Executor {
  private readonly closeEmitter = new Emitter<CloseEvent>();
  /** Fires once, when the connection (or any hop under it) is gone. */
  readonly onDidClose: Event<CloseEvent> = this.closeEmitter.event;
  private closedWith: CloseEvent | undefined;
  private closingOnPurpose = false;
  /** The error a hop reported before closing (e.g. keepalive timeout), to explain the close. */
  private lastError: RemoteRunsError | undefined;
  private readonly channels = new Set<ClientChannel>();
  /** Hops whose client closed, until the close is reported (see hopClosed). */
  private readonly closedHops = new Set<number>();
  private sftpSession: Promise<SFTPWrapper> | undefined;

  private constructor(
    readonly host: ResolvedHost,
    /** One client per hop, nearest first; the last is the target. */
    private readonly clients: Client[],
    private readonly logger: Logger,
    keepaliveIntervalMs: number,
  ) {
    const hopAt = (i: number): ResolvedHop => (i === clients.length - 1 ? host.target : host.jumps[i]);
    clients.forEach((client, i) => {
      const hop = hopAt(i);
      client.on('error', (e: Error & { level?: string }) => {
        if (this.closingOnPurpose) return; // resets while we hang up are expected
        const timeout = e.level === 'client-timeout';
        const blamed = timeout ? silentHop(clients, i, keepaliveIntervalMs) : i;
        const reason = timeout ? `no answer to keepalives (${e.message})` : (SOCKET_REASONS[(e as NodeJS.ErrnoException).code ?? ''] ?? e.message);
        this.lastError ??= new RemoteRunsError('unreachable', `Connection to ${describeHop(host, blamed)} lost: ${reason}`, { hop: hopAt(blamed).alias });
        logger.warn(`SSH ${hop.alias}: ${e.message}`);
      });
      client.on('close', () => this.hopClosed(i));
    });
  }

  /** Connect through every hop, checking host keys and authenticating each. */
  static async connect(host: ResolvedHost, options: ConnectOptions): Promise<SshConnection> {
    const hops = [...host.jumps, host.target];
    const clients: Client[] = [];
    const ctx: HopContext = {
      prompter: options.prompter,
      logger: options.logger,
      knownHostsFiles: options.knownHostsFiles ?? defaultKnownHostsFiles(),
      secrets: options.secrets ?? new SecretStore(),
      agent: options.agent === null ? undefined : (options.agent ?? process.env.SSH_AUTH_SOCK),
      timeoutMs: options.connectTimeoutMs ?? 15_000,
      keepaliveIntervalMs: options.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: options.keepaliveCountMax ?? 3,
      signal: options.signal,
    };
    try {
      for (let i = 0; i < hops.length; i++) {
        const where = describeHop(host, i);
        throwIfAborted(ctx.signal);
        const sock =
          i === 0 ? await tcpConnect(hops[i], ctx, where) : await forwardThrough(clients[i - 1], hops[i - 1], hops[i], ctx, where);
        clients.push(await openHop(hops[i], sock, ctx, where));
      }
    } catch (e) {
      for (const c of clients.reverse()) c.end();
      throw e;
    }
    options.logger.info(`Connected to ${describeHop(host, hops.length - 1)}`);
    return new SshConnection(host, clients, options.logger, ctx.keepaliveIntervalMs);
  }

  /** True from the moment any hop's client closed (the close event follows a turn later, see hopClosed). */
  get isClosed(): boolean {
    return this.closedWith !== undefined || this.closedHops.size > 0;
  }

  /**
   * The host key each hop presented and was trusted with (known_hosts, or the user's yes), nearest hop first: what
   * a second client (OpenSSH, for a transfer) must find again, pinned, so it trusts no more than this connection did.
   */
  get hostKeys(): Buffer[] {
    return this.clients.map((c) => verifiedHostKey.get(c) ?? Buffer.alloc(0));
  }

  /** Channels open right now (exec, sftp, forwards, shells). */
  get openChannels(): number {
    return this.channels.size;
  }

  private get target(): Client {
    return this.clients[this.clients.length - 1];
  }

  /**
   * Run a command line through the remote login shell. Resolves with the exit status, or rejects with
   * RemoteRunsError: `cancelled` (signal, or the connection was closed on purpose), `unreachable` with
   * `detail.dropped` = `before-open` (the command never started) or `after-open` (it may have run), or
   * `protocol` with `detail.channelRefused` (the server would not open another session right now).
   */
  exec(commandLine: string, options: ExecOptions = {}): Promise<ExecResult> {
    const { signal, maxOutputBytes, stdin } = options;
    return new Promise<ExecResult>((resolve, reject) => {
      let settled = false;
      let channel: ClientChannel | undefined;
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let stdoutBytes = 0;
      let stderrBytes = 0;
      let truncated = false;
      let exit: { code: number | null; signal?: string } | undefined;

      const cleanup = (): void => {
        signal?.removeEventListener('abort', onAbort);
        closeSub.dispose();
      };
      const fail = (e: RemoteRunsError): void => {
        if (settled) return;
        settled = true;
        cleanup();
        reject(e);
      };
      const onAbort = (): void => {
        if (channel) stopChannel(channel);
        fail(new RemoteRunsError('cancelled', 'Command cancelled'));
      };
      const closeSub = this.onDidClose((ev) => fail(this.dropError(ev, channel ? 'after-open' : 'before-open')));

      if (signal?.aborted) return onAbort();
      if (this.closedWith) return fail(this.dropError(this.closedWith, 'before-open'));
      signal?.addEventListener('abort', onAbort, { once: true });

      try {
        this.target.exec(commandLine, (err, ch) => {
          if (err) {
            if (this.closedWith) return fail(this.dropError(this.closedWith, 'before-open'));
            // sshd refuses sessions beyond MaxSessions, counting ones we closed but it has not yet reaped.
            return fail(
              new RemoteRunsError('protocol', `The server refused a new channel: ${err.message.replace(/^\(SSH\) /, '')}`, {
                channelRefused: 1,
              }),
            );
          }
          this.track(ch);
          if (settled) {
            // Cancelled while the channel was opening.
            stopChannel(ch);
            return;
          }
          channel = ch;
          ch.on('data', (chunk: Buffer) => {
            if (truncated) return;
            if (maxOutputBytes !== undefined && stdoutBytes + chunk.length >= maxOutputBytes) {
              stdout.push(chunk.subarray(0, maxOutputBytes - stdoutBytes));
              stdoutBytes = maxOutputBytes;
              // At the limit the rest is not wanted: close so the remote side stops producing it.
              truncated = chunk.length > 0;
              if (truncated) ch.close();
              return;
            }
            stdout.push(chunk);
            stdoutBytes += chunk.length;
          });
          ch.stderr.on('data', (chunk: Buffer) => {
            if (stderrBytes >= MAX_STDERR_BYTES) return;
            stderr.push(chunk);
            stderrBytes += chunk.length;
          });
          ch.on('exit', (code: number | null, sig?: string) => {
            exit = typeof code === 'number' ? { code } : { code: null, signal: sig ?? undefined };
          });
          // sshd may send the exit status before the last of the output (when the window is full): the output is
          // whole only if it ended while the connection was up (a dead connection ends every channel at once).
          let endedWhileUp = false;
          ch.on('end', () => {
            endedWhileUp = !this.isClosed;
          });
          ch.on('close', () => {
            if (settled) return;
            if (this.isClosed && !truncated && !(exit && endedWhileUp)) {
              if (this.closedWith) return fail(this.dropError(this.closedWith, 'after-open'));
              return; // a hop closed: the close event, a turn later, fails this with that hop's reason
            }
            settled = true;
            cleanup();
            resolve({
              stdout: Buffer.concat(stdout),
              stderr: Buffer.concat(stderr),
              code: exit?.code ?? null,
              ...(exit?.signal ? { signal: exit.signal } : {}),
              truncated,
            });
          });
          if (stdin !== undefined) ch.end(stdin);
          else ch.end();
        });
      } catch (e) {
        // ssh2 throws "Not connected" synchronously once the socket is gone.
        fail(this.dropError(this.closedWith ?? { error: this.lastError }, 'before-open', e));
      }
    });
  }

  /** The SFTP session of this connection, opened once and reused (it holds one of the server's sessions). */
  sftp(): Promise<SFTPWrapper> {
    if (this.closedWith) return Promise.reject(this.dropError(this.closedWith, 'before-open'));
    this.sftpSession ??= new Promise<SFTPWrapper>((resolve, reject) => {
      this.target.sftp((err, sftp) => {
        if (err) {
          this.sftpSession = undefined;
          return this.afterClose(() => reject(this.isClosed ? this.dropError(this.closedWith ?? { error: this.lastError }, 'before-open') : new RemoteRunsError('protocol', `SFTP unavailable: ${err.message}`)));
        }
        this.channels.add(sftp as unknown as ClientChannel);
        sftp.on('close', () => {
          this.channels.delete(sftp as unknown as ClientChannel);
          this.sftpSession = undefined;
        });
        resolve(sftp);
      });
    });
    return this.sftpSession;
  }

  /**
   * A command whose stdout the caller streams (downloads): resolves with the open channel, stdin already ended.
   * The caller reads `data`/`close` and stops it with `stopChannel`. Errors as for `exec`.
   */
  openExec(commandLine: string): Promise<ClientChannel> {
    if (this.closedWith) return Promise.reject(this.dropError(this.closedWith, 'before-open'));
    return new Promise((resolve, reject) => {
      try {
        this.target.exec(commandLine, (err, ch) => {
          if (err) {
            return this.afterClose(() => {
              if (this.isClosed) return reject(this.dropError(this.closedWith ?? { error: this.lastError }, 'before-open'));
              reject(new RemoteRunsError('protocol', `The server refused a new channel: ${err.message.replace(/^\(SSH\) /, '')}`, { channelRefused: 1 }));
            });
          }
          this.track(ch);
          ch.end();
          resolve(ch);
        });
      } catch (e) {
        reject(this.dropError(this.closedWith ?? { error: this.lastError }, 'before-open', e));
      }
    });
  }

  /**
   * Run `decide` once the connection's own close (if one is under way) has been seen. ssh2 fails the channels of a
   * dying connection from inside the socket's close handler, before its client emits 'close': a failure decided at
   * once would look like the server's refusal (`protocol`) instead of the drop it is (`unreachable`, retried).
   */
  private afterClose(decide: () => void): void {
    setImmediate(decide);
  }

  /** A new SFTP session of its own (not the shared one of `sftp()`), for a caller that must be able to close it. */
  openSftp(): Promise<SFTPWrapper> {
    if (this.closedWith) return Promise.reject(this.dropError(this.closedWith, 'before-open'));
    return new Promise((resolve, reject) => {
      try {
        this.target.sftp((err, sftp) => {
          if (err) return this.afterClose(() => reject(this.isClosed ? this.dropError(this.closedWith ?? { error: this.lastError }, 'before-open') : new RemoteRunsError('protocol', `SFTP unavailable: ${err.message}`)));
          this.track(sftp as unknown as ClientChannel);
          resolve(sftp);
        });
      } catch (e) {
        reject(this.dropError(this.closedWith ?? { error: this.lastError }, 'before-open', e));
      }
    });
  }

  /** A TCP stream to host:port opened by the remote side (direct-tcpip), e.g. for a tunnel. */
  forwardOut(host: string, port: number): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      try {
        this.target.forwardOut('127.0.0.1', 0, host, port, (err, ch) => {
          if (err) return reject(new RemoteRunsError('unreachable', `${this.host.target.alias} could not connect to ${host}:${port}: ${err.message}`));
          this.track(ch);
          resolve(ch);
        });
      } catch (e) {
        reject(this.dropError(this.closedWith ?? {}, 'before-open', e));
      }
    });
  }

  /** An interactive shell channel (with a pty when `pty` is given). */
  shell(pty?: { rows: number; cols: number; term?: string }): Promise<ClientChannel> {
    return new Promise((resolve, reject) => {
      const cb = (err: Error | undefined, ch: ClientChannel): void => {
        if (err) return reject(new RemoteRunsError('protocol', `The server refused a shell: ${err.message}`));
        this.track(ch);
        resolve(ch);
      };
      try {
        if (pty) this.target.shell({ rows: pty.rows, cols: pty.cols, term: pty.term ?? 'xterm-256color' }, cb);
        else this.target.shell(false, cb);
      } catch (e) {
        reject(this.dropError(this.closedWith ?? {}, 'before-open', e));
      }
    });
  }

  /** Close on purpose: pending commands reject with `cancelled`. */
  close(): void {
    if (this.closedWith) return;
    this.closingOnPurpose = true;
    for (const c of [...this.clients].reverse()) c.end();
    // Fire now rather than when the server acknowledges: a frozen server may never do so.
    this.markClosed();
    for (const c of this.clients) setTimeout(() => c.destroy(), 1000).unref();
  }

  private track(ch: ClientChannel): void {
    this.channels.add(ch);
    ch.once('close', () => this.channels.delete(ch));
  }

  /**
   * A hop's client closed. A jump host that goes away without an error (its sshd stopped) closes the hops behind it
   * too, and theirs may be the first close event: wait one turn and blame the nearest hop that closed.
   */
  private hopClosed(i: number): void {
    if (this.closedWith) return;
    this.closedHops.add(i);
    if (this.closedHops.size > 1) return;
    setImmediate(() => this.markClosed(Math.min(...this.closedHops)));
  }

  private markClosed(hop = this.clients.length - 1): void {
    if (this.closedWith) return;
    const h = hop === this.clients.length - 1 ? this.host.target : this.host.jumps[hop];
    const error = this.closingOnPurpose
      ? undefined
      : (this.lastError ?? new RemoteRunsError('unreachable', `Connection to ${describeHop(this.host, hop)} lost`, { hop: h.alias }));
    this.closedWith = { error };
    if (error) this.logger.warn(`Connection to ${this.host.target.alias} closed: ${error.message}`);
    // Tear down the other hops too (a dead jump host takes the target with it, and vice versa).
    for (const c of this.clients) c.end();
    this.closeEmitter.fire(this.closedWith);
    this.closeEmitter.dispose();
  }

  private dropError(ev: CloseEvent, dropped: 'before-open' | 'after-open', cause?: unknown): RemoteRunsError {
    if (!ev.error && (this.closingOnPurpose || ev === this.closedWith)) {
      return new RemoteRunsError('cancelled', `Connection to ${this.host.target.alias} was closed`);
    }
    const base = ev.error ?? new RemoteRunsError('unreachable', `Connection to ${this.host.target.alias} lost${cause instanceof Error ? `: ${cause.message}` : ''}`);
    return new RemoteRunsError('unreachable', base.message, { ...base.detail, dropped });
  }
}

/** The ssh2 internals `Channel.signal` uses; see stopChannel for why we call them directly. */
interface ChannelInternals {
  type?: string;
  outgoing?: { id: number; state: string };
  _client?: { _protocol?: { signal(id: number, name: string): void } };
}

/**
 * Stop a running command: send SIGTERM to its process group (sshd's "signal" request does killpg on the session),
 * then close the channel. Closing alone is not enough: sshd keeps a session open until its command exits, and a
 * command that does not write (sleep, a blocked `pct exec`) never notices the closed pipes. ssh2's own
 * `signal()` refuses once stdin is ended, which we do right after starting every command, so go one level down.
 */
export function stopChannel(ch: ClientChannel): void {
  const c = ch as unknown as ChannelInternals;
  try {
    // After EOF ('eof') a channel request is still valid SSH; only a closing channel is not.
    const state = c.outgoing?.state;
    if (c.type === 'session' && (state === 'open' || state === 'eof')) c._client?._protocol?.signal(c.outgoing!.id, 'TERM');
  } catch {
    // channel already closing
  }
  ch.close();
}

interface HopContext {
  prompter: Prompter;
  logger: Logger;
  knownHostsFiles: string[];
  secrets: SecretStore;
  agent: string | undefined;
  timeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
  signal?: AbortSignal;
}

/** "gpu1", "jump host bastion (hop 1 of 2, for gpu1)", or "gpu1 (via bastion)": every message names the hop. */
function describeHop(host: ResolvedHost, i: number): string {
  const hops = [...host.jumps, host.target];
  if (hops.length === 1) return host.target.alias;
  if (i < host.jumps.length) return `jump host ${hops[i].alias} (hop ${i + 1} of ${hops.length}, for ${host.target.alias})`;
  return `${host.target.alias} (via ${host.jumps.map((j) => j.alias).join(', ')})`;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new RemoteRunsError('cancelled', 'Connection attempt cancelled');
}

const SOCKET_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found (DNS)',
  EAI_AGAIN: 'host name lookup failed (DNS)',
};

/** Open the first hop's TCP socket with TCP_NODELAY. */
function tcpConnect(hop: ResolvedHop, ctx: HopContext, where: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: hop.hostname, port: hop.port, noDelay: true });
    const fail = (reason: string, code?: string): void => {
      cleanup();
      sock.destroy();
      reject(
        new RemoteRunsError('unreachable', `Cannot reach ${where} at ${hop.hostname}:${hop.port}: ${reason}`, {
          hop: hop.alias,
          ...(code ? { code } : {}),
        }),
      );
    };
    const onError = (e: NodeJS.ErrnoException): void => fail(SOCKET_REASONS[e.code ?? ''] ?? e.message, e.code);
    const onAbort = (): void => {
      cleanup();
      sock.destroy();
      reject(new RemoteRunsError('cancelled', 'Connection attempt cancelled'));
    };
    const timer = setTimeout(() => fail(`no answer within ${ctx.timeoutMs / 1000} s`, 'ETIMEDOUT'), ctx.timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      sock.off('error', onError);
      ctx.signal?.removeEventListener('abort', onAbort);
    };
    sock.once('error', onError);
    sock.once('connect', () => {
      cleanup();
      resolve(sock);
    });
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Open a direct-tcpip channel from the previous hop to this one (what `ssh -J` does with `-W`). */
function forwardThrough(prev: Client, prevHop: ResolvedHop, hop: ResolvedHop, ctx: HopContext, where: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new RemoteRunsError('unreachable', `Cannot reach ${where}: jump host ${prevHop.alias} did not open a connection to ${hop.hostname}:${hop.port} within ${ctx.timeoutMs / 1000} s`, { hop: hop.alias }));
    }, ctx.timeoutMs);
    prev.forwardOut('127.0.0.1', 0, hop.hostname, hop.port, (err, ch) => {
      clearTimeout(timer);
      if (done) {
        ch?.close();
        return;
      }
      if (err) {
        return reject(
          new RemoteRunsError('unreachable', `Cannot reach ${where}: jump host ${prevHop.alias} could not connect to ${hop.hostname}:${hop.port}: ${err.message.replace(/^\(SSH\) /, '')}`, {
            hop: hop.alias,
          }),
        );
      }
      resolve(ch);
    });
  });
}

/** A timer that does not run while a person is answering a prompt. */
class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private paused = 0;
  private stopped = false;

  constructor(
    private readonly ms: number,
    private readonly onFire: () => void,
  ) {
    this.start();
  }

  private start(): void {
    if (this.ms > 0 && !this.stopped) this.timer = setTimeout(() => this.onFire(), this.ms);
  }

  /** Run `work` with the watchdog paused; it restarts from zero afterwards. */
  async pausedFor<T>(work: () => Promise<T>): Promise<T> {
    if (this.paused++ === 0) clearTimeout(this.timer);
    try {
      return await work();
    } finally {
      if (--this.paused === 0) this.start();
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** The prompter, with the handshake watchdog paused while each question is open. */
function pausingPrompter(p: Prompter, wd: Watchdog): Prompter {
  return {
    confirmHostKey: (info) => wd.pausedFor(() => p.confirmHostKey(info)),
    passphrase: (keyPath) => wd.pausedFor(() => p.passphrase(keyPath)),
    password: (user, host) => wd.pausedFor(() => p.password(user, host)),
    keyboardInteractive: (user, host, name, instructions, prompts) =>
      wd.pausedFor(() => p.keyboardInteractive(user, host, name, instructions, prompts)),
  };
}

/** ssh2's host key algorithm names for a known_hosts key type. */
function algorithmsForKeyType(keyType: string): string[] {
  return keyType === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [keyType];
}

const DEFAULT_HOST_KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

/** Key exchange, host key check and authentication for one hop over an already open stream. */
async function openHop(hop: ResolvedHop, sock: Duplex, ctx: HopContext, where: string): Promise<Client> {
  const knownFiles = await readKnownHostsFiles(ctx.knownHostsFiles);
  // Like OpenSSH, ask first for the key types we already know for this host, so a server with several host
  // keys presents the one known_hosts can vouch for rather than an "unknown" one.
  const preferred = knownKeyTypes(knownFiles, hop.hostname, hop.port)
    .flatMap(algorithmsForKeyType)
    .filter((a) => DEFAULT_HOST_KEY_ALGORITHMS.includes(a));
  const serverHostKey = [...new Set([...preferred, ...DEFAULT_HOST_KEY_ALGORITHMS])];

  const client = new Client();
  return new Promise<Client>((resolve, reject) => {
    let failure: RemoteRunsError | undefined;
    let done = false;
    const finish = (err?: RemoteRunsError): void => {
      if (done) return;
      done = true;
      watchdog.stop();
      ctx.signal?.removeEventListener('abort', onAbort);
      client.off('ready', onReady);
      client.off('close', onClose);
      if (err) {
        client.destroy();
        reject(err);
      } else {
        countDataAsAlive(client, sock, ctx.keepaliveIntervalMs);
        resolve(client);
      }
    };
    const watchdog = new Watchdog(ctx.timeoutMs, () => {
      failure ??= new RemoteRunsError('unreachable', `Cannot reach ${where}: no answer within ${ctx.timeoutMs / 1000} s during the SSH handshake`, {
        hop: hop.alias,
      });
      finish(failure);
    });
    const onAbort = (): void => finish(new RemoteRunsError('cancelled', 'Connection attempt cancelled'));
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    const prompter = pausingPrompter(ctx.prompter, watchdog);
    const { handler, trace } = makeAuthHandler({ hop, prompter, logger: ctx.logger, secrets: ctx.secrets.for(hop), agent: ctx.agent });

    const hostVerifier = (key: Buffer, verify: (ok: boolean) => void): void => {
      verifyHostKey(hop, key, ctx, prompter, where).then(
        () => {
          verifiedHostKey.set(client, key);
          verify(true);
        },
        (e: unknown) => {
          failure ??= e instanceof RemoteRunsError ? e : new RemoteRunsError('host-key-unknown', `Host key check for ${where} failed: ${String(e)}`);
          verify(false);
        },
      );
    };
    const onReady = (): void => finish();
    const onClose = (): void =>
      finish(failure ?? new RemoteRunsError('unreachable', `Cannot reach ${where}: the connection closed during the SSH handshake`, { hop: hop.alias }));
    client.on('error', (e: Error & { level?: string }) => {
      failure ??= mapClientError(e, hop, trace, where);
      finish(failure);
    });
    client.once('ready', onReady);
    client.once('close', onClose);

    const config: ConnectConfig = {
      sock: sock as ConnectConfig['sock'],
      username: hop.user,
      hostVerifier,
      authHandler: handler,
      readyTimeout: 0, // our Watchdog instead: ssh2's would also count the time a person spends typing
      keepaliveInterval: ctx.keepaliveIntervalMs,
      keepaliveCountMax: ctx.keepaliveCountMax,
      algorithms: { serverHostKey: serverHostKey as NonNullable<ConnectConfig['algorithms']>['serverHostKey'] },
    };
    try {
      client.connect(config);
    } catch (e) {
      finish(new RemoteRunsError('protocol', `Cannot connect to ${where}: ${e instanceof Error ? e.message : String(e)}`));
    }
  });
}

/**
 * ssh2 counts only answers to its keepalive pings, so a connection busy streaming a big listing or a download on a
 * loaded machine (each answer queued behind megabytes of data) is declared dead while data keeps arriving. OpenSSH's
 * ServerAliveInterval takes any packet from the server as a sign of life: do the same, by restarting ssh2's
 * keepalive timer when bytes arrive (at most every half interval). A frozen server sends nothing: still caught.
 */
function countDataAsAlive(client: Client, sock: Duplex, intervalMs: number): void {
  const reset = (client as unknown as { _resetKA?: () => void })._resetKA;
  const seen = { at: Date.now() };
  lastHeard.set(client, seen);
  if (intervalMs <= 0 || typeof reset !== 'function') return;
  const every = intervalMs / 2;
  let last = Date.now();
  // Attached after ssh2 resumed the socket (on ready), so this listener does not change how the socket flows.
  sock.on('data', () => {
    const now = (seen.at = Date.now());
    if (now - last < every) return;
    last = now;
    reset();
  });
}

/** The host key each hop's client presented and we trusted (known_hosts or the user's yes). */
const verifiedHostKey = new WeakMap<Client, Buffer>();

/** When each hop's client last received bytes (keepalive answers included). */
const lastHeard = new WeakMap<Client, { at: number }>();

/**
 * The hop to blame when hop `i` stopped answering keepalives: the nearest one that has been silent as long. A frozen
 * jump host silences every hop behind it too, and which of their keepalives runs out first is chance.
 */
function silentHop(clients: Client[], i: number, intervalMs: number): number {
  const now = Date.now();
  for (let j = 0; j < i; j++) {
    const heard = lastHeard.get(clients[j])?.at;
    if (heard !== undefined && now - heard > 1.5 * intervalMs) return j;
  }
  return i;
}

/** known_hosts decision for one presented host key; resolves when trusted, rejects with the reason otherwise. */
async function verifyHostKey(hop: ResolvedHop, key: Buffer, ctx: HopContext, prompter: Prompter, where: string): Promise<void> {
  const keyType = keyTypeOfBlob(key);
  const fingerprint = fingerprintSha256(key);
  // Read again: another connection may have just added this host.
  const files = await readKnownHostsFiles(ctx.knownHostsFiles);
  const r = checkHostKey(files, hop.hostname, hop.port, keyType, key);
  const name = knownHostsName(hop.hostname, hop.port);
  switch (r.status) {
    case 'match':
      return;
    case 'revoked':
      throw new RemoteRunsError(
        'host-key-mismatch',
        `The ${keyType} host key of ${where} (${fingerprint}) is marked @revoked in ${r.file} line ${r.line}; refusing to connect.`,
        { hop: hop.alias, file: r.file, line: r.line, fingerprint, keyType },
      );
    case 'mismatch':
      throw new RemoteRunsError(
        'host-key-mismatch',
        `The ${keyType} host key of ${where} has changed (now ${fingerprint}); the known key is in ${r.file} line ${r.line}. ` +
          `Someone could be intercepting the connection, or the host was reinstalled. If you trust the new key, remove that line ` +
          `(ssh-keygen -R '${name}' -f '${r.file}').`,
        { hop: hop.alias, file: r.file, line: r.line, fingerprint, keyType },
      );
    case 'unknown': {
      if (r.otherTypes.length > 0) {
        ctx.logger.warn(
          `${where} presents a ${keyType} key not in known_hosts, but keys of other types are known for it: ` +
            r.otherTypes.map((o) => `${o.keyType} at ${o.file}:${o.line}`).join(', '),
        );
      }
      const file = ctx.knownHostsFiles[0];
      const trusted = await prompter.confirmHostKey({ hostPattern: name, hostname: hop.hostname, port: hop.port, keyType, fingerprint, knownHostsFile: file });
      if (!trusted) {
        throw new RemoteRunsError('host-key-unknown', `The host key of ${where} (${keyType} ${fingerprint}) is not in known_hosts and was not accepted.`, {
          hop: hop.alias,
          fingerprint,
          keyType,
          file,
        });
      }
      await appendKnownHost(file, knownHostsLine(hop.hostname, hop.port, keyType, key));
      ctx.logger.info(`Added ${name} ${keyType} ${fingerprint} to ${file}`);
      return;
    }
  }
}

/** ssh2 reports failures as Errors with a `level`; turn them into our kinds. */
function mapClientError(e: Error & { level?: string; code?: string }, hop: ResolvedHop, trace: AuthTrace | undefined, where: string): RemoteRunsError {
  switch (e.level) {
    case 'client-authentication': {
      const accepts = trace?.serverMethods.length ? ` The server accepts: ${trace.serverMethods.join(', ')}.` : '';
      const tried = trace ? ` Tried: ${trace.tried.filter((t) => t !== 'none').join(', ') || 'nothing usable'}.` : '';
      return new RemoteRunsError('auth-failed', `Authentication as ${hop.user} on ${where} failed.${accepts}${tried}`, {
        hop: hop.alias,
        user: hop.user,
        ...(trace ? { tried: trace.tried, serverMethods: trace.serverMethods } : {}),
      });
    }
    case 'client-timeout':
      return new RemoteRunsError('unreachable', `${where} stopped answering (${e.message})`, { hop: hop.alias, code: 'timeout' });
    case 'client-socket': {
      const reason = SOCKET_REASONS[e.code ?? ''] ?? e.message;
      return new RemoteRunsError('unreachable', `Connection to ${where} failed: ${reason}`, { hop: hop.alias, ...(e.code ? { code: e.code } : {}) });
    }
    case 'handshake':
      return new RemoteRunsError('protocol', `SSH handshake with ${where} failed: ${e.message}`, { hop: hop.alias });
    default:
      return new RemoteRunsError('unreachable', `Connection to ${where} failed: ${e.message}`, { hop: hop.alias });
  }
}
