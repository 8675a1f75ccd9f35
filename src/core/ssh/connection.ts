/**
 * One SSH connection to a ResolvedHost (through its jump hosts), as an Executor: the channels it offers (exec,
 * sftp, streamed commands, forwards, shells) and how it reports its end. Each hop is dialled by hops.ts,
 * host-key-checked by hostKeyPolicy.ts and authenticated by auth.ts; every failure becomes a RemoteRunsError whose
 * kind says which of unreachable / auth-failed / host-key-unknown / host-key-mismatch it was, and whose message
 * names the hop.
 *
 * This folder never imports `vscode`.
 */
import type { ClientChannel, Client, ParsedKey, SFTPWrapper } from 'ssh2';
import { RemoteRunsError } from '../types';
import type { ExecOptions, ExecResult, Executor } from '../remote';
import { Emitter, type Event } from '../util/event';
import { SecretStore } from './auth';
import { stopChannel } from './channels';
import { socketReason } from './clientErrors';
import type { OpenHop } from './handshake';
import { defaultKnownHostsFiles } from './hostKeyPolicy';
import { describeHop, dialHops, type HopContext } from './hops';
import { silentHop } from './keepalive';
import { fastestOf, RoundTrip } from './roundTrip';
import type { CloseEvent, Transport } from './transport';
import type { Logger, Prompter, ResolvedHop, ResolvedHost } from './types';

/**
 * What a login beside a pool's connection (a transfer worker's sibling, an OpenSSH session) needs to log in as that
 * connection did, never asking anyone: the connect settings and, per hop (jumps first, target last), the secrets the
 * connection already holds. Made by ConnectionPool.siblingLogin; in memory only, never logged.
 */
export interface SiblingLogin {
  host: ResolvedHost;
  settings: Omit<ConnectOptions, 'prompter' | 'logger' | 'secrets' | 'signal'>;
  hops: { password: string | undefined; keys: ReadonlyMap<string, ParsedKey> }[];
}

export interface ConnectOptions {
  prompter: Prompter;
  logger: Logger;
  /** Checked in order; new keys are appended to the first. Default: OpenSSH's user and global files. */
  knownHostsFiles?: string[];
  /**
   * True when knownHostsFiles were named by the user for this run (like `ssh -o UserKnownHostsFile=`): they then win
   * over a UserKnownHostsFile/GlobalKnownHostsFile of the ssh config. Otherwise the config's files, where set, win.
   */
  knownHostsPinned?: boolean;
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

export type { CloseEvent } from './transport';

/** The bind address of the forward the round-trip probe cancels: never one that was asked for. */
const ROUND_TRIP_PROBE_ADDRESS = 'remote-runs.round-trip-probe';

/** Stderr kept per command; stdout is bounded by maxOutputBytes instead. */
const MAX_STDERR_BYTES = 1 << 20;

/**
 * An open, authenticated connection. Create with `SshConnection.connect`. Once closed it stays closed:
 * the pool makes a new one.
 */
export class SshConnection implements Executor, Transport {
  readonly kind = 'ssh2' as const;
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
  private readonly roundTrip = new RoundTrip(() => fastestOf(() => this.probeRoundTrip()));

  /** One client per hop, nearest first; the last is the target. */
  private readonly clients: Client[];
  private readonly trustedHostKeys: Buffer[];

  private constructor(
    readonly host: ResolvedHost,
    hops: OpenHop[],
    private readonly logger: Logger,
    keepaliveIntervalMs: number,
  ) {
    const clients = (this.clients = hops.map((h) => h.client));
    this.trustedHostKeys = hops.map((h) => h.hostKey);
    const hopAt = (i: number): ResolvedHop => (i === clients.length - 1 ? host.target : host.jumps[i]);
    clients.forEach((client, i) => {
      const hop = hopAt(i);
      client.on('error', (e: Error & { level?: string }) => {
        if (this.closingOnPurpose) return; // resets while we hang up are expected
        const timeout = e.level === 'client-timeout';
        const blamed = timeout ? silentHop(clients, i, keepaliveIntervalMs) : i;
        const reason = timeout ? `no answer to keepalives (${e.message})` : socketReason((e as NodeJS.ErrnoException).code, e.message);
        this.lastError ??= new RemoteRunsError('unreachable', `Connection to ${describeHop(host, blamed)} lost: ${reason}`, { hop: hopAt(blamed).alias });
        logger.warn(`SSH ${hop.alias}: ${e.message}`);
      });
      client.on('close', () => this.hopClosed(i));
    });
  }

  /** Connect through every hop, checking host keys and authenticating each. */
  static async connect(host: ResolvedHost, options: ConnectOptions): Promise<SshConnection> {
    const ctx: HopContext = {
      prompter: options.prompter,
      logger: options.logger,
      knownHostsFiles: options.knownHostsFiles ?? defaultKnownHostsFiles(),
      knownHostsPinned: options.knownHostsPinned ?? false,
      secrets: options.secrets ?? new SecretStore(),
      agent: options.agent === null ? undefined : (options.agent ?? process.env.SSH_AUTH_SOCK),
      timeoutMs: options.connectTimeoutMs ?? 15_000,
      keepaliveIntervalMs: options.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: options.keepaliveCountMax ?? 3,
      signal: options.signal,
    };
    const hops = await dialHops(host, ctx);
    options.logger.info(`Connected to ${describeHop(host, hops.length - 1)}`);
    return new SshConnection(host, hops, options.logger, ctx.keepaliveIntervalMs);
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
    return [...this.trustedHostKeys];
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
    const { signal, maxOutputBytes, stdin, onStdout } = options;
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
              const kept = chunk.subarray(0, maxOutputBytes - stdoutBytes);
              stdout.push(kept);
              onStdout?.(kept);
              stdoutBytes = maxOutputBytes;
              // At the limit the rest is not wanted: close so the remote side stops producing it.
              truncated = chunk.length > 0;
              if (truncated) ch.close();
              return;
            }
            stdout.push(chunk);
            onStdout?.(chunk);
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
          // `openFailure`: the reason code of the refusal (RFC 4254 5.1: 1 administratively prohibited, 2 connect failed),
          // which ssh2 puts on the error as `reason`.
          if (err) return reject(new RemoteRunsError('unreachable', `${this.host.target.alias} could not connect to ${host}:${port}: ${err.message}`, { openFailure: (err as { reason?: number | string }).reason ?? '' }));
          this.track(ch);
          resolve(ch);
        });
      } catch (e) {
        reject(this.dropError(this.closedWith ?? {}, 'before-open', e));
      }
    });
  }

  /**
   * The link's round trip (through every hop: the target's client rides the hops' channels), measured once per
   * connection (roundTrip.ts). The probe is a `cancel-tcpip-forward` global request with want-reply for a forward
   * this connection never asked for: OpenSSH's sshd (serverloop.c server_input_global_request) looks it up among
   * the session's own remote listeners (channels.c channel_cancel_rport_listener_tcpip), finds none and answers
   * SSH_MSG_REQUEST_FAILURE at once: one round trip, no channel, no process, nothing changed. ssh2's public
   * `unforwardIn` sends it; its failure callback is the answer we time.
   */
  roundTripMs(signal?: AbortSignal): Promise<number> {
    return this.roundTrip.get(signal);
  }

  private probeRoundTrip(): Promise<number> {
    return new Promise((resolve, reject) => {
      if (this.closedWith) return reject(this.dropError(this.closedWith, 'before-open'));
      const t0 = performance.now();
      try {
        // No listener ever has this name (a real forward's port is never 0 once bound), so nothing is cancelled.
        this.target.unforwardIn(ROUND_TRIP_PROBE_ADDRESS, 0, () => {
          // A failure reply is the expected answer; a close fails pending requests the same way, so look.
          if (this.isClosed) return reject(this.dropError(this.closedWith ?? {}, 'after-open'));
          resolve(performance.now() - t0);
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
