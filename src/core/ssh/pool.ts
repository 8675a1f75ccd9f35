/**
 * The one place connections come from: one SSH connection per host, shared by every listing, poll, download
 * and eval. It reuses a connect in progress (so a password or one-time code is asked once, not per command),
 * multiplexes commands as channels (queueing beyond what sshd's default `MaxSessions 10` allows), counts users,
 * closes idle connections, reconnects with exponential backoff after a drop, and reports each host's state.
 *
 * It also owns each host's OpenSSH session (openssh/session.ts: a ControlMaster logged in with what the host's ssh2
 * connection holds), for the bytes that ssh decrypts faster than ssh2 can (metrics backlogs, downloads): started at the
 * first `openSsh`, shared by every holder, kept for `opensshIdleMs` after the last one lets go, and ended with the
 * host's connection (closed, idle, failed, its settings changed) and with the pool. So a window that lists a host,
 * follows its metrics and pulls a checkpoint logs in to it once per transport it needs.
 *
 * Host resolution (~/.ssh/config) happens before: callers pass a ResolvedHost with a name. Each host's connection is
 * a Transport: the built-in ssh2 client (SshConnection), or the system OpenSSH (OpenSshConnection) for a host whose
 * ssh config asks for what ssh2 cannot do (transportFor / chooseTransport says which and why). A pool made with
 * `opensshFirst` (the CLI's pull) gives a host with no link up the OpenSSH transport as its first link where that
 * login asks nothing (opensshFirst.ts), so a pull's commands and streams share one login; a user that needs the
 * built-in client (`acquire(…, { builtIn: true })`) gets it, the OpenSSH link let go once nothing runs on it.
 *
 * This folder never imports `vscode`.
 */
import { RemoteRunsError, isRemoteRunsError } from '../types';
import type { ExecOptions, ExecResult, Executor } from '../remote';
import { Emitter, type Disposable, type Event } from '../util/event';
import { SecretStore } from './auth';
import { SshConnection, type ConnectOptions, type SiblingLogin } from './connection';
import { OpenSshConnection } from './openssh/connection';
import { CIPHERS, lastingRefusal, startBeside, type OpenSshSession } from './openssh/session';
import { defaultKnownHostsFiles } from './hostKeyPolicy';
import { whyNotOpenSshFirst } from './opensshFirst';
import { chooseTransport, describeTransport, problemsFor, type Transport, type TransportChoice } from './transport';
import type { ConnectionState, Logger, Prompter, ResolvedHost } from './types';
import { backoffMs, delay } from '../util/delay';

/** A resolved host plus the name it is known by (the pool key). */
export interface PoolHost extends ResolvedHost {
  name: string;
}

export interface PoolExecOptions extends ExecOptions {
  /**
   * Safe to run twice (listings, stat, cat). A command whose channel was open when the connection died is
   * retried only then; one that never started is always retried once.
   */
  idempotent?: boolean;
}

export interface PoolOptions {
  prompter: Prompter;
  logger: Logger;
  /** Checked in order, new keys appended to the first. Default: OpenSSH's. */
  knownHostsFiles?: string[];
  /** See ConnectOptions.knownHostsPinned. */
  knownHostsPinned?: boolean;
  /** Close a connection nobody has used for this long. Default 5 minutes. */
  idleTimeoutMs?: number;
  /** Default 15 s; a server silent for keepaliveCountMax intervals is declared dead. */
  keepaliveIntervalMs?: number;
  /** Default 3. */
  keepaliveCountMax?: number;
  /** Per hop, excluding time spent in prompts. Default 15 s. */
  connectTimeoutMs?: number;
  /** Concurrent channels per connection. Default 8: sshd allows 10 sessions, we keep room for SFTP and a spare. */
  maxChannelsPerConnection?: number;
  /** Connect attempts after a drop, with exponential backoff between them. Default 4. */
  reconnectAttempts?: number;
  /** First backoff delay; doubles per attempt up to 30 s. Default 500 ms. */
  backoffBaseMs?: number;
  /** ssh-agent socket. Default: SSH_AUTH_SOCK. null never uses an agent. */
  agent?: string | null;
  /** The `ssh` binary for hosts on the OpenSSH transport (transport.ts), or a getter read at each connect. Default `ssh` from PATH. */
  sshPath?: string | (() => string | undefined);
  /** What runs askpass for the OpenSSH transport: this process's executable (node, or Electron run as node). */
  runtime?: string;
  /**
   * Keep a host's OpenSSH session this long after its last holder lets go (it also ends with the host's connection).
   * Default OPENSSH_IDLE_MS.
   */
  opensshIdleMs?: number;
  /**
   * A host with no link up connects first through the system's OpenSSH (the transport) where that login needs no
   * prompt: its host key known, a key to log in with (opensshFirst.ts). Otherwise, or when that login fails, the
   * built-in client connects as without this option, and the log says why. For a process whose work is a pull (the
   * CLI's): its commands and byte streams then share one login instead of the built-in client's and an OpenSSH
   * session's beside it. Default false (a window, whose tree, metrics and evals want the built-in client's link).
   */
  opensshFirst?: boolean;
}

/**
 * How long a host's OpenSSH session is kept after its last holder. Long, because a stream on a live session skips the
 * login (~0.3 s on the test host) and the first stream of a new `ssh` process grows its buffers from nothing
 * (metrics/follow/bulkLinks.ts spoolChild); the host's connection idling out (idleTimeoutMs) ends it sooner.
 */
export const OPENSSH_IDLE_MS = 10 * 60_000;

/** A hold on a host's OpenSSH session (ConnectionPool.openSsh): keeps it, and the host's connection, up until released. */
export interface OpenSshLease extends Disposable {
  readonly session: OpenSshSession;
  /**
   * End the session now, for every holder (its master is gone, or a stream of this holder may still write into a file
   * after a failure: only the master's exit makes sure it does not); resolves once its processes are gone. The next
   * `openSsh` logs in again.
   */
  retire(): Promise<void>;
}

/** A host's OpenSSH session as it stands: when its start was asked for (performance.now()) and whether it is up. */
export interface OpenSshState {
  since: number;
  up: boolean;
}

/** One host's OpenSSH session, starting or up. */
interface SessionSlot {
  session: Promise<OpenSshSession>;
  /** The ssh program it runs (undefined: the pool's default). */
  sshPath: string | undefined;
  since: number;
  /** The session, once it is up. */
  up?: OpenSshSession;
  /** Leases held. */
  users: number;
  timer?: NodeJS.Timeout;
  ended: boolean;
  /** Let go by the host (its connection closed or failed): it ends when its last holder lets go. */
  draining?: boolean;
  /** Its end, once asked for (the master and every stream gone, the folder removed). */
  closing?: Promise<void>;
}

export type { SiblingLogin } from './connection';

/** A hold on a host's connection (e.g. for SFTP or a forward): keeps it from idling out until released. */
export interface Lease extends Disposable {
  readonly connection: Transport;
}

export interface StateChange {
  host: string;
  state: ConnectionState;
}

interface Entry {
  name: string;
  /** The resolved host as JSON: a change (settings edited) replaces the connection. */
  key: string;
  host: ResolvedHost;
  conn?: Transport;
  connecting?: Promise<Transport>;
  state: ConnectionState;
  /** Channels in use through exec. */
  active: number;
  leases: number;
  waiters: { grant(): void; reject(e: RemoteRunsError): void }[];
  idleTimer?: NodeJS.Timeout;
  /** Once connected, failures to reconnect are retried with backoff; a first connect fails fast. */
  everConnected: boolean;
  /** Bumped by disconnect(): a connect that finishes after it belongs to nobody. */
  generation: number;
  /** Why the last round of connect attempts gave up (unreachable), until a connect succeeds: ConnectionState gaveUp. */
  gaveUp?: string;
  /** The host's OpenSSH session (openSsh), starting or up. */
  openssh?: SessionSlot;
  /**
   * Why OpenSSH cannot be used for this host, per `ssh` binary ('' for PATH's): a reason that will not change by
   * itself (no binary, no key login, a refused login, another host key), so it is not tried again until the host's
   * settings change, the binary named changes, or a reload.
   */
  opensshRefused: Map<string, Error>;
  /** `conn` is an OpenSSH transport opened only because of `opensshFirst` (a preference, not the ssh config's need). */
  firstLink?: boolean;
  /** Why OpenSSH first is not tried again for this host (its login failed, or a user needed the built-in client). */
  opensshFirstOff?: string;
  /** An OpenSSH-first link let go for the built-in client while something still ran on it: closed once nothing does. */
  retired?: Transport;
}

const IDLE: ConnectionState = { kind: 'idle' };
/** Answers every question with "no": sibling connections must not ask the user anything. */
export const NEVER_PROMPT: Prompter = {
  confirmHostKey: async () => false,
  passphrase: async () => undefined,
  password: async () => undefined,
  keyboardInteractive: async () => undefined,
};
/** Retries of a refused channel open: 20 ms doubling, about 1.3 s in all, before the refusal is reported. */
const CHANNEL_RETRIES = 6;
const CHANNEL_RETRY_BASE_MS = 20;

export class ConnectionPool implements Disposable {
  private readonly entries = new Map<string, Entry>();
  private readonly stateEmitter = new Emitter<StateChange>();
  /** Fires whenever a host's connection state changes (the tree turns it into an icon and a refresh). */
  readonly onDidChangeState: Event<StateChange> = this.stateEmitter.event;
  private readonly secrets = new SecretStore();
  /** What users answered to the OpenSSH transport's prompts, per host name: a reconnect does not ask again. */
  private readonly opensshAnswers = new Map<string, Map<string, string>>();
  private disposed = false;
  /** Stops OpenSSH session logins under way (dispose). */
  private readonly stopSessions = new AbortController();

  constructor(private readonly options: PoolOptions) {}

  getState(name: string): ConnectionState {
    return this.entries.get(name)?.state ?? IDLE;
  }

  /**
   * Which client a host's connection uses and why (chooseTransport, with this pool's known_hosts files): what the
   * log says on connecting, the host's tooltip and `ls --json` show.
   */
  transportFor(host: ResolvedHost): TransportChoice {
    return chooseTransport(host, this.options.knownHostsFiles ?? defaultKnownHostsFiles(), undefined, this.options.knownHostsPinned ?? false);
  }

  /**
   * Run a command line on a host over its shared connection, connecting if needed. A command that was lost to a
   * dropped connection before it got an answer is retried once on a fresh connection (see PoolExecOptions).
   */
  async exec(host: PoolHost, commandLine: string, options: PoolExecOptions = {}): Promise<ExecResult> {
    const entry = this.entryFor(host);
    await this.takeSlot(entry, options.signal);
    try {
      for (let attempt = 0, refusals = 0; ; ) {
        const conn = await this.connection(entry, options.signal);
        try {
          return await conn.exec(commandLine, options);
        } catch (e) {
          if (isRemoteRunsError(e) && e.detail.channelRefused && refusals < CHANNEL_RETRIES) {
            // Sessions we just closed still count on the server until it reaps them: wait a little and ask again.
            await delay(backoffMs(++refusals, CHANNEL_RETRY_BASE_MS), options.signal);
            continue;
          }
          const dropped = isRemoteRunsError(e) && e.kind === 'unreachable' ? e.detail.dropped : undefined;
          const retry = attempt === 0 && (dropped === 'before-open' || (dropped === 'after-open' && options.idempotent === true));
          if (!retry) throw e;
          attempt++;
          this.options.logger.info(`Connection to ${entry.name} dropped ${dropped === 'before-open' ? 'before the command started' : 'during an idempotent command'}; retrying once`);
        }
      }
    } finally {
      this.releaseSlot(entry);
    }
  }

  /**
   * An Executor bound to one host, for runCommand and friends. Pass `{ idempotent: true }` for listings; the
   * default (not idempotent) is the safe one for commands that start things, which must never run twice.
   */
  executor(host: PoolHost, defaults: { idempotent?: boolean } = {}): Executor {
    return { exec: (line, opts) => this.exec(host, line, { ...defaults, ...opts }) };
  }

  /**
   * Hold the host's connection (for SFTP, forwards, shells); release the lease when done. `builtIn`: the caller needs
   * the built-in client (channel forwarding): a link the pool opened through OpenSSH only by preference
   * (`opensshFirst`) is let go for it; a host whose ssh config needs OpenSSH keeps its transport.
   */
  async acquire(host: PoolHost, signal?: AbortSignal, options: { builtIn?: boolean } = {}): Promise<Lease> {
    const entry = this.entryFor(host);
    entry.leases++;
    this.clearIdle(entry);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      entry.leases--;
      this.closeRetired(entry, false);
      this.scheduleIdle(entry);
    };
    try {
      const connection = await this.connection(entry, signal, options.builtIn === true);
      return { connection, dispose: release };
    } catch (e) {
      release();
      throw e;
    }
  }

  /**
   * A second, separate connection to a host (parallel byte ranges of a download), authenticated only with what
   * the shared connection already holds: cached keys and passwords, the agent, key files without passphrase.
   * It never prompts (a one-time code or a new passphrase would be a second prompt), so it fails with
   * `auth-failed` where it would have to; the caller then does with the shared connection. Not pooled: the
   * caller closes it.
   */
  async connectSibling(host: PoolHost, signal?: AbortSignal): Promise<SshConnection> {
    if (this.disposed) throw new RemoteRunsError('cancelled', 'Connection pool closed');
    const { name: _name, ...resolved } = host;
    // The OpenSSH transport's one master carries every stream: a second login would be a second set of prompts.
    if (this.transportFor(resolved).kind === 'openssh') throw new RemoteRunsError('protocol', `${host.name} uses the OpenSSH transport: no second connection is opened`);
    return SshConnection.connect(resolved, this.connectOptions(NEVER_PROMPT, signal));
  }

  /**
   * What a sibling connection opened in another thread (a transfer worker) needs to log in as connectSibling would,
   * never asking anyone: the connect settings and, per hop (jumps first, target last), the secrets the shared
   * connection already holds (a cached password, keys unlocked by path). In memory only; never log them.
   */
  siblingLogin(host: PoolHost): SiblingLogin {
    const { name: _name, ...resolved } = host;
    const { prompter: _p, logger: _l, secrets: _s, signal: _sig, ...settings } = this.connectOptions(NEVER_PROMPT);
    const hops = [...resolved.jumps, resolved.target].map((hop) => {
      const s = this.secrets.for(hop);
      return { password: s.password, keys: new Map(s.keys) };
    });
    return { host: resolved, settings, hops };
  }

  /**
   * Hold the host's OpenSSH session, starting it (once, whoever asks) if none is up: logged in beside the host's ssh2
   * connection with the secrets it holds and pinned to the host keys it verified. Rejects with why OpenSSH cannot be
   * used (OpenSshUnsupported, or a RemoteRunsError: `auth-failed`, `host-key-mismatch`, `unreachable`, `cancelled`);
   * a lasting reason is remembered for the host and given again at once. `signal` stops this caller's wait only, not
   * a login others may wait for. Not for a host on the OpenSSH transport (`protocol`): its own master carries streams.
   * `sshPath` names the binary where a new session starts (default the pool's; undefined: the pool's, so a caller
   * passes its own optional setting through as it is).
   */
  async openSsh(host: PoolHost, options: { sshPath?: string | undefined; signal?: AbortSignal | undefined } = {}): Promise<OpenSshLease> {
    const entry = this.entryFor(host);
    const sshPath = options.sshPath ?? this.sshPath();
    const refused = entry.opensshRefused.get(sshPath ?? '');
    if (refused) throw refused;
    // The session's holders hold the host's connection too: it ends the session when it closes.
    entry.leases++;
    this.clearIdle(entry);
    let held = true;
    const unhold = (): void => {
      if (!held) return;
      held = false;
      entry.leases--;
      this.scheduleIdle(entry);
    };
    try {
      const conn = await this.connection(entry, options.signal);
      if (!(conn instanceof SshConnection)) throw new RemoteRunsError('protocol', `${entry.name} uses the OpenSSH transport: its own master carries every stream`);
      const slot = this.sessionSlot(entry, conn, sshPath);
      const session = await raceAbort(slot.session, options.signal);
      if (slot.ended) throw new RemoteRunsError('cancelled', `The OpenSSH session to ${entry.name} was ended`);
      slot.users++;
      if (slot.timer) clearTimeout(slot.timer);
      slot.timer = undefined;
      let released = false;
      return {
        session,
        dispose: () => {
          if (released) return;
          released = true;
          slot.users--;
          if (slot.draining && slot.users === 0) void this.endOpenSsh(entry, slot);
          else this.scheduleSessionIdle(entry, slot);
          unhold();
        },
        retire: () => this.endOpenSsh(entry, slot),
      };
    } catch (e) {
      unhold();
      throw e;
    }
  }

  /**
   * Whether `conn` is the host's link that the pool opened through OpenSSH by preference (`opensshFirst`): a pull's
   * process's link, which its download may end after a failed attempt (retireLink) as it retires a session, so its
   * streams may have ssh write into the files themselves. A host whose ssh config needs OpenSSH shares its transport
   * with everything else of a window: its streams stay piped.
   */
  isOpenSshFirst(host: PoolHost, conn: Transport): boolean {
    const entry = this.entries.get(host.name);
    return entry?.firstLink === true && entry.conn === conn;
  }

  /**
   * End the host's OpenSSH link `conn` now, for every user (a stream of a failed download may still have ssh write into
   * a file: only the master's exit makes sure it does not); resolves once its master has exited. The next user of the
   * host connects again.
   */
  async retireLink(conn: Transport): Promise<void> {
    if (conn instanceof OpenSshConnection) await conn.end();
    else conn.close();
  }

  /** The host's OpenSSH session as it stands (starting or up), without starting one; undefined if none. */
  openSshState(name: string): OpenSshState | undefined {
    const slot = this.entries.get(name)?.openssh;
    return slot && !slot.ended ? { since: slot.since, up: slot.up !== undefined } : undefined;
  }

  /** Why OpenSSH was found unusable for the host with this binary (default the pool's), if it was. */
  openSshRefusal(host: PoolHost, sshPath?: string): Error | undefined {
    const entry = this.entries.get(host.name);
    if (!entry || entry.key !== hostKey(host)) return undefined;
    return entry.opensshRefused.get(sshPath ?? this.sshPath() ?? '');
  }

  /** End the OpenSSH session of the host named `name` now (its holders' streams die); resolves once it is gone. */
  endOpenSshOf(name: string): Promise<void> {
    const entry = this.entries.get(name);
    return entry ? this.endOpenSsh(entry) : Promise.resolve();
  }

  /** Close a host's connection now (pending commands reject with `cancelled`). */
  disconnect(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.clearIdle(entry);
    void this.endOpenSsh(entry);
    this.closeRetired(entry, true);
    entry.generation++;
    entry.gaveUp = undefined;
    entry.conn?.close();
    entry.conn = undefined;
    entry.firstLink = undefined;
    this.setState(entry, IDLE);
  }

  dispose(): void {
    void this.close();
  }

  /**
   * Close every connection and OpenSSH session; resolves once the sessions' processes are gone and their folders
   * removed (a process about to exit awaits it: the CLI). dispose() is the same without the wait.
   */
  async close(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.stopSessions.abort();
    const ending: Promise<void>[] = [];
    for (const entry of this.entries.values()) {
      ending.push(this.endOpenSsh(entry));
      this.clearIdle(entry);
      for (const w of entry.waiters.splice(0)) w.reject(new RemoteRunsError('cancelled', 'Connection pool closed'));
      this.closeRetired(entry, true);
      entry.conn?.close();
      entry.conn = undefined;
    }
    this.entries.clear();
    this.secrets.clear();
    this.opensshAnswers.clear();
    this.stateEmitter.dispose();
    await Promise.all(ending);
  }

  private entryFor(host: PoolHost): Entry {
    if (this.disposed) throw new RemoteRunsError('cancelled', 'Connection pool closed');
    const { name, ...resolved } = host;
    const key = hostKey(host);
    let entry = this.entries.get(name);
    if (!entry) {
      entry = { name, key, host: resolved, state: IDLE, active: 0, leases: 0, waiters: [], everConnected: false, generation: 0, opensshRefused: new Map() };
      this.entries.set(name, entry);
    } else if (entry.key !== key) {
      // The host was edited: the next command must go to the new address, not the old connection.
      this.options.logger.info(`Settings of ${name} changed; reconnecting`);
      void this.endOpenSsh(entry);
      entry.opensshRefused.clear();
      entry.opensshFirstOff = undefined;
      this.closeRetired(entry, true);
      entry.gaveUp = undefined;
      entry.conn?.close();
      entry.conn = undefined;
      entry.firstLink = undefined;
      entry.key = key;
      entry.host = resolved;
      entry.everConnected = false;
    }
    return entry;
  }

  /** Wait for one of the connection's channel slots (sshd refuses channels beyond MaxSessions). */
  private takeSlot(entry: Entry, signal?: AbortSignal): Promise<void> {
    this.clearIdle(entry);
    if (signal?.aborted) return Promise.reject(new RemoteRunsError('cancelled', 'Command cancelled'));
    if (entry.active < (this.options.maxChannelsPerConnection ?? 8)) {
      entry.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = entry.waiters.indexOf(waiter);
        if (i >= 0) entry.waiters.splice(i, 1);
        reject(new RemoteRunsError('cancelled', 'Command cancelled'));
      };
      const waiter = {
        // The slot passes straight from the releasing command to this one: `active` stays as it is.
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (e: RemoteRunsError) => {
          signal?.removeEventListener('abort', onAbort);
          reject(e);
        },
      };
      entry.waiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private releaseSlot(entry: Entry): void {
    const next = entry.waiters.shift();
    if (next) return next.grant();
    entry.active--;
    this.closeRetired(entry, false);
    this.scheduleIdle(entry);
  }

  private scheduleIdle(entry: Entry): void {
    if (entry.active > 0 || entry.leases > 0 || !entry.conn || this.disposed) return;
    this.clearIdle(entry);
    entry.idleTimer = setTimeout(() => {
      entry.idleTimer = undefined;
      if (entry.active > 0 || entry.leases > 0 || !entry.conn) return;
      this.options.logger.info(`Closing idle connection to ${entry.name}`);
      this.closeRetired(entry, true);
      entry.conn.close();
      entry.conn = undefined;
      entry.firstLink = undefined;
      this.setState(entry, IDLE);
    }, this.options.idleTimeoutMs ?? 300_000);
    entry.idleTimer.unref();
  }

  private clearIdle(entry: Entry): void {
    if (entry.idleTimer) clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
  }

  /**
   * The open connection, a connect already under way, or a new one; a caller's abort only stops its own wait.
   * `builtIn`: not a link opened through OpenSSH by preference (letGoOpenSshFirst).
   */
  private async connection(entry: Entry, signal?: AbortSignal, builtIn = false): Promise<Transport> {
    for (;;) {
      const conn = entry.conn && !entry.conn.isClosed ? entry.conn : undefined;
      if (conn && !(builtIn && entry.firstLink)) return conn;
      if (conn) this.letGoOpenSshFirst(entry, 'a user of the host needs the built-in client');
      // A connect this user starts is the built-in client's at once (no OpenSSH login only to let it go).
      entry.connecting ??= this.connectWithBackoff(entry, builtIn).finally(() => {
        entry.connecting = undefined;
      });
      const connected = await raceAbort(entry.connecting, signal);
      if (!(builtIn && entry.firstLink && entry.conn === connected)) return connected;
    }
  }

  /**
   * Stop using the host's OpenSSH-first link (`why` goes in the log; OpenSSH first is not tried again for the host):
   * the next connect is the built-in client's. Commands and streams running on it finish there; it is closed once
   * none is left (closeRetired), at the latest when the host idles out or the pool closes.
   */
  private letGoOpenSshFirst(entry: Entry, why: string): void {
    const old = entry.conn;
    if (!old || !entry.firstLink) return;
    this.options.logger.info(`${entry.name}: its OpenSSH link is let go (${why}); connecting with the built-in client`);
    entry.opensshFirstOff = why;
    entry.firstLink = undefined;
    entry.conn = undefined;
    this.closeRetired(entry, true);
    entry.retired = old;
    this.closeRetired(entry, false);
  }

  /** Close the host's let-go OpenSSH link: now (`force`), or once no command or stream runs on it. */
  private closeRetired(entry: Entry, force: boolean): void {
    const old = entry.retired;
    if (!old || (!force && old.openChannels > 0 && !old.isClosed)) return;
    entry.retired = undefined;
    old.close();
  }

  /**
   * The host's first link through OpenSSH (opensshFirst), or undefined, said in the log, where the built-in client
   * must connect instead: the pool was not asked to, the host cannot log in without a prompt (opensshFirst.ts), or the
   * OpenSSH login failed (the built-in client then meets the same checks as without the option, with its own
   * messages). A cancel, and a host that did not answer in time, are thrown: trying again would only wait again.
   */
  private async openSshFirst(entry: Entry, host: ResolvedHost, builtIn: boolean): Promise<OpenSshConnection | undefined> {
    const o = this.options;
    if (!o.opensshFirst) return undefined;
    const off = builtIn ? 'the user that connects needs the built-in client' : entry.opensshFirstOff;
    if (off !== undefined) {
      o.logger.info(`Transport for ${entry.name}: built-in client (ssh2), not OpenSSH first: ${off}`);
      return undefined;
    }
    const why = await whyNotOpenSshFirst(host, { knownHostsFiles: o.knownHostsFiles ?? defaultKnownHostsFiles(), knownHostsPinned: o.knownHostsPinned ?? false, agent: o.agent });
    if (why !== undefined) {
      o.logger.info(`Transport for ${entry.name}: built-in client (ssh2), not OpenSSH first: ${why}`);
      return undefined;
    }
    o.logger.info(`Transport for ${entry.name}: OpenSSH first (no link up, its host key known, a key without a prompt): one login for the commands and the streams`);
    try {
      // Never asks: a question ssh would put (a passphrase, a password, a host key) is refused and the login fails.
      // Its streams get the cipher the session it replaces asks for (AES-GCM first), unless the user's config sets one.
      return await OpenSshConnection.connect(host, { ...this.connectOptions(NEVER_PROMPT), sshPath: this.sshPath(), runtime: o.runtime, ciphers: CIPHERS });
    } catch (e) {
      const err = isRemoteRunsError(e) ? e : new RemoteRunsError('unreachable', e instanceof Error ? e.message : String(e));
      if (err.kind === 'cancelled' || (err.kind === 'unreachable' && err.detail.code === 'timeout')) throw err;
      entry.opensshFirstOff = `its OpenSSH login failed (${err.kind}: ${err.message})`;
      o.logger.warn(`Transport for ${entry.name}: OpenSSH first failed (${err.kind}: ${err.message}); connecting with the built-in client (ssh2)`);
      return undefined;
    }
  }

  /** `builtIn`: the user that asked needs the built-in client (no OpenSSH first). */
  private async connectWithBackoff(entry: Entry, builtIn = false): Promise<Transport> {
    const o = this.options;
    const attempts = entry.everConnected ? Math.max(1, o.reconnectAttempts ?? 4) : 1;
    for (let attempt = 1; ; attempt++) {
      if (this.disposed) throw new RemoteRunsError('cancelled', 'Connection pool closed');
      this.setState(entry, { kind: 'connecting', attempt, ...(entry.everConnected ? { reconnect: true } : {}), ...(entry.gaveUp !== undefined ? { gaveUp: entry.gaveUp } : {}) });
      const host = entry.host;
      const generation = entry.generation;
      const choice = this.transportFor(host);
      if (attempt === 1) {
        // (With opensshFirst, openSshFirst says which client it is and why.)
        if (!(choice.kind === 'ssh2' && o.opensshFirst)) o.logger.info(`Transport for ${entry.name}: ${describeTransport(choice)}`);
        // Lines of the ssh config this connection does not follow: in the log of every connect, never dropped.
        for (const p of problemsFor(host.configProblems ?? [], choice)) o.logger.warn(`ssh config: ${p}`);
      }
      try {
        const first = choice.kind === 'ssh2' ? await this.openSshFirst(entry, host, builtIn) : undefined;
        const conn: Transport =
          choice.kind === 'openssh'
            ? await OpenSshConnection.connect(host, { ...this.connectOptions(o.prompter), sshPath: this.sshPath(), runtime: o.runtime, answers: this.answersFor(entry.name) })
            : (first ?? (await SshConnection.connect(host, this.connectOptions(o.prompter))));
        if (this.disposed || entry.generation !== generation) {
          // Disposed or disconnected while we connected: this connection is for nobody.
          conn.close();
          throw new RemoteRunsError('cancelled', this.disposed ? 'Connection pool closed' : `Disconnected from ${entry.name}`);
        }
        if (entry.host !== host) {
          // The host was edited while we connected: connect to the new address instead.
          conn.close();
          continue;
        }
        entry.conn = conn;
        entry.firstLink = first !== undefined;
        entry.everConnected = true;
        conn.onDidClose((ev) => {
          if (entry.conn !== conn) return;
          entry.conn = undefined;
          this.clearIdle(entry);
          this.setState(entry, ev.error ? { kind: 'unreachable', message: ev.error.message } : IDLE);
        });
        if (conn.isClosed) {
          // Dropped between the handshake and here: the listener above came too late to see it.
          entry.conn = undefined;
          throw new RemoteRunsError('unreachable', `Connection to ${entry.name} lost right after connecting`);
        }
        entry.gaveUp = undefined;
        this.setState(entry, { kind: 'connected' });
        this.scheduleIdle(entry);
        return conn;
      } catch (e) {
        const err = isRemoteRunsError(e) ? e : new RemoteRunsError('unreachable', e instanceof Error ? e.message : String(e));
        // Only a network failure is worth retrying; a refused key or password will be refused again.
        if (err.kind !== 'unreachable' || attempt >= attempts || this.disposed) {
          entry.gaveUp = err.kind === 'unreachable' ? err.message : undefined;
          this.setState(entry, stateForError(err));
          throw err;
        }
        const pause = backoffMs(attempt, o.backoffBaseMs ?? 500);
        o.logger.info(`Reconnecting to ${entry.name} in ${pause} ms (attempt ${attempt + 1} of ${attempts}): ${err.message}`);
        await delay(pause);
      }
    }
  }

  /** The `ssh` binary named in the pool's options (read now), undefined for PATH's. */
  private sshPath(): string | undefined {
    const p = this.options.sshPath;
    return typeof p === 'function' ? p() : p;
  }

  /** The host's session, or a new one starting beside `conn` (one login, whoever asks first). */
  private sessionSlot(entry: Entry, conn: SshConnection, sshPath: string | undefined): SessionSlot {
    if (entry.openssh && !entry.openssh.ended) {
      if (entry.openssh.sshPath === sshPath) return entry.openssh;
      // Another ssh program asked for (the user changed `sshPath`): it runs from now on; the old session goes once its
      // holders let go, as when its connection closes.
      this.letGoOpenSsh(entry);
    }
    const o = this.options;
    const login = this.siblingLogin({ name: entry.name, ...entry.host });
    const slot: SessionSlot = {
      session: startBeside(login, conn.hostKeys, { sshPath, signal: this.stopSessions.signal, starter: true, ...(o.runtime ? { runtime: o.runtime } : {}) }),
      sshPath,
      since: performance.now(),
      users: 0,
      ended: false,
    };
    entry.openssh = slot;
    slot.session.then(
      (session) => {
        if (slot.ended) return; // ended while it logged in: endOpenSsh disposes it
        slot.up = session;
        o.logger.info(`OpenSSH session to ${entry.name} up (one login, kept ${Math.round((o.opensshIdleMs ?? OPENSSH_IDLE_MS) / 1000)} s after its last use)`);
        this.scheduleSessionIdle(entry, slot);
      },
      (e: unknown) => {
        slot.ended = true;
        if (entry.openssh === slot) entry.openssh = undefined;
        // A reason that will not change by itself is remembered; a passing one (unreachable, cancelled) is tried again.
        if (e instanceof Error && (lastingRefusal(e) || (isRemoteRunsError(e) && e.kind === 'host-key-mismatch'))) entry.opensshRefused.set(sshPath ?? '', e);
      },
    );
    return slot;
  }

  private scheduleSessionIdle(entry: Entry, slot: SessionSlot): void {
    if (slot.users > 0 || slot.ended || !slot.up) return;
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = setTimeout(() => {
      this.options.logger.info(`Closing the idle OpenSSH session to ${entry.name}`);
      void this.endOpenSsh(entry, slot);
    }, this.options.opensshIdleMs ?? OPENSSH_IDLE_MS);
    slot.timer.unref();
  }

  /**
   * Let the host's session go with its connection: at once if nobody holds it, else when its last holder lets go (a
   * stream in flight runs to its own end: a drop that took the session's connection too ends it with ssh's exit 255,
   * which its holder reads as a dropped connection and retries). The next `openSsh` starts a new one.
   */
  private letGoOpenSsh(entry: Entry): void {
    const slot = entry.openssh;
    if (!slot) return;
    entry.openssh = undefined;
    slot.draining = true;
    if (slot.users === 0) void this.endOpenSsh(entry, slot);
  }

  /** End a session of the host (default its current one): its streams are killed, its master logs out. */
  private endOpenSsh(entry: Entry, slot = entry.openssh): Promise<void> {
    if (!slot) return Promise.resolve();
    if (entry.openssh === slot) entry.openssh = undefined;
    if (!slot.closing) {
      slot.ended = true;
      if (slot.timer) clearTimeout(slot.timer);
      slot.timer = undefined;
      slot.closing = slot.session.then(
        (s) => s.dispose(),
        () => undefined,
      );
    }
    return slot.closing;
  }

  private answersFor(name: string): Map<string, string> {
    let m = this.opensshAnswers.get(name);
    if (!m) this.opensshAnswers.set(name, (m = new Map()));
    return m;
  }

  /** What every connection of this pool is opened with: the shared one (user's prompter) and siblings (never prompt). */
  private connectOptions(prompter: Prompter, signal?: AbortSignal): ConnectOptions {
    const o = this.options;
    return {
      prompter,
      logger: o.logger,
      knownHostsFiles: o.knownHostsFiles,
      knownHostsPinned: o.knownHostsPinned,
      secrets: this.secrets,
      agent: o.agent,
      connectTimeoutMs: o.connectTimeoutMs,
      keepaliveIntervalMs: o.keepaliveIntervalMs,
      keepaliveCountMax: o.keepaliveCountMax,
      ...(signal ? { signal } : {}),
    };
  }

  private setState(entry: Entry, state: ConnectionState): void {
    // No OpenSSH session outlives the host's connection (closed, idle, failed) but for its holders' streams in
    // flight: the same rule in every face.
    if (state.kind !== 'connected' && state.kind !== 'connecting') this.letGoOpenSsh(entry);
    if (JSON.stringify(entry.state) === JSON.stringify(state)) return;
    entry.state = state;
    if (!this.disposed) this.stateEmitter.fire({ host: entry.name, state });
  }
}

/** A host's settings as the pool compares them: a change replaces its connection and its OpenSSH session. */
function hostKey(host: PoolHost): string {
  return JSON.stringify({ jumps: host.jumps, target: host.target });
}

/** The state a failed connect leaves a host in. */
function stateForError(e: RemoteRunsError): ConnectionState {
  switch (e.kind) {
    case 'auth-failed':
    case 'host-key-unknown':
    case 'host-key-mismatch':
    case 'unreachable':
      return { kind: e.kind, message: e.message };
    case 'cancelled':
      return IDLE;
    default:
      return { kind: 'unreachable', message: e.message };
  }
}

/** Wait for a shared promise, but let this caller stop waiting when its signal aborts. */
function raceAbort<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new RemoteRunsError('cancelled', 'Cancelled'));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new RemoteRunsError('cancelled', 'Cancelled'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

