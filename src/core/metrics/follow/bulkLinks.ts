/**
 * Bulk reads that are not downloads (a long metrics backlog) through the system's OpenSSH client, as one stream
 * each: `ssh` decrypts in its own process, where ssh2 would do it in JavaScript on the extension host's one thread
 * (bench/metricsStream.ts: a 97 MiB backlog through a warm OpenSSH link took 0.82× a fresh `ssh cat`, through
 * ssh2 1.40×).
 *
 * A stream runs on the host's OpenSSH session, which the pool owns (ConnectionPool.openSsh: one login per host, shared
 * with downloads, kept a while after its last use, ended with the host's connection). Here is only when to wait for
 * it: the first stream of a host waits for its login while that is young (LOGIN_WAIT_MS), else reads stay on ssh2
 * meanwhile. A host on the OpenSSH transport streams through that transport's own master. Where OpenSSH cannot be
 * used (no `ssh`, Windows, a login only the pool can do, a host key that differs), the reason is logged once and the
 * reads stay on ssh2.
 */
import type { ChildProcess } from '../../util/processes';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as fsSync from 'node:fs';
import * as path from 'node:path';
import type { ConnectionPool, OpenSshLease, PoolHost } from '../../ssh/pool';
import { OpenSshConnection } from '../../ssh/openssh/connection';
import { SshConnection } from '../../ssh/connection';
import type { Logger } from '../../ssh/types';
import type { StreamRunner } from './tailStream';
import { fileSource, pipeSource, type StreamEnd } from '../../transfer/stream';
import { wrapForTarget } from '../../targets';
import { fenceSkipper } from '../../shell/portable';
import type { TargetRef } from '../../types';
import { isRemoteRunsError } from '../../types';

/**
 * How long after its start a login is waited for by a stream, instead of reading over ssh2 meanwhile. Waiting won:
 * ssh2's reads beside a login slowed it from ~0.3 s to ~0.9 s (both want the same two cores: JavaScript decryption
 * here, sshd's encryption there), and an open that waited was ~0.3 s faster than one that read meanwhile
 * (`bench/metrics.ts --first-parts`). A login still going after this long is a slow
 * link or a stuck one: the reads go on over ssh2 and the stream starts once it is up.
 */
export const LOGIN_WAIT_MS = 5_000;

export interface BulkLinkOptions {
  /** The `ssh` binary (the user's remoteRuns.sshPath, never a workspace's); read at each start. Default the pool's. */
  sshPath?: () => string | undefined;
  /** `ssh2`: never use OpenSSH for these reads (remoteRuns.downloadClient); read at each stream. */
  client?: () => 'auto' | 'openssh' | 'ssh2';
  /**
   * Where no session is up yet, start one beside the caller's reads (`prepare`, or the first `ready()`), and have a
   * stream wait for it only while it is young (LOGIN_WAIT_MS); past that, give no stream (the caller reads over ssh2
   * meanwhile) until it is up. Default true. False: every stream waits for its login, however long (a process that
   * opens one log and exits: the CLI).
   */
  startInBackground?: boolean;
  /** How long a stream waits for a login begun in the background. Default LOGIN_WAIT_MS. */
  loginWaitMs?: number;
  logger?: Logger;
}

export class BulkLinks {
  /** Hosts whose session was asked for here, by key (their pool name): what `open`, `ready` and dispose look at. */
  private readonly used = new Map<string, string>();
  /** Refusals already said in the log (once each). */
  private readonly said = new WeakSet<Error>();
  private disposed = false;
  /** Hosts whose session is being asked for in the background (before the pool has one), with since when. */
  private readonly preparing = new Map<string, number>();
  /** Stops the starts made in the background (dispose). */
  private readonly stop = new AbortController();

  constructor(
    private readonly pool: ConnectionPool,
    private readonly options: BulkLinkOptions = {},
  ) {}

  /**
   * A StreamRunner for `target` on `host`: the command runs there through OpenSSH, or not at all (undefined). Its
   * `ready()` says whether a stream can start at once, and starts the host's session beside the caller if none is.
   */
  runner(host: PoolHost, target: TargetRef): StreamRunner {
    const run = async (argv: readonly string[], sink: (chunk: Buffer) => void | Promise<void>, signal: AbortSignal) => {
      if (this.disposed || signal.aborted || this.options.client?.() === 'ssh2') return undefined;
      const line = wrapForTarget(target, argv);
      // The line is fenced: the stream's bytes are what follows FENCE (rc-file noise before it is dropped).
      const sinkAfterFence = fenceSkipper(sink);
      if (this.pool.transportFor(host).kind === 'openssh') {
        const lease = await this.pool.acquire(host, signal).catch(() => undefined);
        if (!lease) return undefined;
        try {
          const conn = lease.connection;
          // The OpenSSH transport's master carries it; the lease keeps that master up while the stream runs.
          return conn instanceof OpenSshConnection ? await spoolChild(conn.spoolDir, (fd) => conn.run(line, fd), sinkAfterFence, signal) : undefined;
        } finally {
          lease.dispose();
        }
      }
      const key = keyOf(host);
      const background = this.options.startInBackground !== false;
      const state = this.pool.openSshState(host.name);
      const since = Math.min(state?.since ?? Infinity, this.preparing.get(key) ?? Infinity, performance.now());
      const pending = this.lease(host, key, background ? this.stop.signal : signal);
      if (background && !state?.up && !(await this.young(since, pending, signal))) {
        // Too slow to wait for: the reads go on over ssh2, and the login goes on for the next stream.
        void pending.then((l) => l?.dispose());
        return undefined;
      }
      const lease = await pending;
      if (!lease) return undefined;
      try {
        if (this.disposed) return undefined;
        const session = lease.session;
        // Started by the session's process starter where it has one: no fork of this process per stream.
        const end = await spoolChild(session.spoolDir, session.starter ? { byPath: (file) => session.runToFile(line, file) } : (fd) => session.run(line, fd), sinkAfterFence, signal);
        // 255 is ssh's own failure (the master gone, the link dropped): the next stream starts a new session.
        if (end.code === 255) void lease.retire();
        return end;
      } finally {
        lease.dispose();
      }
    };
    return Object.assign(run, { ready: () => this.readyFor(host), prepare: () => void this.readyFor(host) });
  }

  /** A stream now or soon (see startInBackground); starts the host's session in the background if none is. */
  private readyFor(host: PoolHost): boolean {
    if (this.disposed || this.options.client?.() === 'ssh2') return false;
    if (this.options.startInBackground === false || this.pool.transportFor(host).kind === 'openssh') return true;
    const key = keyOf(host);
    const state = this.pool.openSshState(host.name);
    if (state) return state.up || this.waitLeft(state.since) > 0;
    if (this.pool.openSshRefusal(host, this.options.sshPath?.())) return false;
    if (!this.preparing.has(key)) void this.prepare(host, key);
    return this.waitLeft(this.preparing.get(key) ?? -Infinity) > 0;
  }

  private waitLeft(since: number): number {
    return since + (this.options.loginWaitMs ?? LOGIN_WAIT_MS) - performance.now();
  }

  /** Wait for a login begun at `since` while it is young: whether it is up (false: too slow, failed, or `signal` stopped). */
  private async young(since: number, pending: Promise<OpenSshLease | undefined>, signal: AbortSignal): Promise<boolean> {
    const left = this.waitLeft(since);
    if (left <= 0 || signal.aborted) return false;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), left);
      onAbort = () => resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return (await Promise.race([pending, late])) !== undefined && !signal.aborted;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /** Start the host's session in the background and let it go at once: the pool keeps it for the next stream. */
  private async prepare(host: PoolHost, key: string): Promise<void> {
    this.preparing.set(key, performance.now());
    try {
      (await this.lease(host, key, this.stop.signal))?.dispose();
    } finally {
      this.preparing.delete(key);
    }
  }

  /** A lease on the host's session from the pool, or undefined (said in the log once per reason). */
  private async lease(host: PoolHost, key: string, signal: AbortSignal): Promise<OpenSshLease | undefined> {
    this.used.set(key, host.name);
    const sshPath = this.options.sshPath?.();
    const had = this.pool.openSshState(host.name) !== undefined;
    try {
      const lease = await this.pool.openSsh(host, { sshPath, signal });
      if (this.disposed) {
        lease.dispose();
        return undefined;
      }
      if (!had) this.options.logger?.info(`metrics of ${host.name}: long backlogs are read through OpenSSH (one login, shared with downloads)`);
      return lease;
    } catch (e) {
      if (!(e instanceof Error) || this.said.has(e)) return undefined;
      if (isRemoteRunsError(e) && (e.kind === 'cancelled' || e.kind === 'protocol')) return undefined;
      this.said.add(e);
      const why = e.message;
      if (isRemoteRunsError(e) && e.kind === 'host-key-mismatch') {
        this.options.logger?.error(`metrics of ${host.name}: a new OpenSSH connection was shown another host key than the open one, so it is not used (the reads stay on the verified connection): ${why}`);
      } else {
        this.options.logger?.warn(`metrics of ${host.name}: long backlogs are read over ssh2, not OpenSSH: ${why}`);
      }
      return undefined;
    }
  }

  /** End the sessions of the host named `name` (the pool ends them with its connection anyway). */
  closeHost(name: string): void {
    void this.pool.endOpenSshOf(name);
  }

  /** Hosts used here with a session now, up or starting (for tests and the log). */
  get open(): number {
    return [...new Set(this.used.values())].filter((name) => this.pool.openSshState(name) !== undefined).length;
  }

  /** Hosts used here whose session is up. */
  get ready(): number {
    return [...new Set(this.used.values())].filter((name) => this.pool.openSshState(name)?.up === true).length;
  }

  /** Stop the starts made here and end the sessions of the hosts used here (their streams are killed). */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.stop.abort();
    const names = [...new Set(this.used.values())];
    this.used.clear();
    await Promise.all(names.map((name) => this.pool.endOpenSshOf(name)));
  }
}

function keyOf(host: PoolHost): string {
  return JSON.stringify([host.name, host.jumps, host.target]);
}

/**
 * Run an `ssh` child whose stdout is a spool file, and give what it writes to `sink` as it arrives (read back from
 * the page cache). Not a pipe: OpenSSH writes a pipe's 64 KiB per turn of its loop while it reads up to 256 KiB from
 * the connection, so its channel buffer grows to the window, 32 KiB at a time, each growth a fresh allocation copied
 * and cleared (recallocarray); on the test host a fresh master moved 100 MB into a pipe in 1.4-1.8 s and into a file
 * in 0.35-0.44 s. The file is created 0600 in the session's own 0700 folder and unlinked at once,
 * so it holds no name while the stream runs and its space is freed when the last descriptor closes, whoever dies
 * (this process, the child: the lifeline kills the child); a kill between the two leaves it in a folder the next
 * process removes as an orphan (sessionFolder.ts). It grows to the stream's size: the caller bounds that.
 * A chunk given to `sink` is valid only until the sink returns (the buffer is read into again).
 */
export async function spoolChild(
  dir: string,
  /**
   * Start the child with stdout the descriptor given; or, `byPath`, appending to the file named (which exists: a
   * process starter opens it, util/spawner.ts), its name removed once the child runs ('spawn').
   */
  start: ((stdout: number) => ChildProcess) | { byPath: (file: string) => ChildProcess },
  sink: (chunk: Buffer) => void | Promise<void>,
  signal: AbortSignal,
): Promise<StreamEnd> {
  const file = path.join(dir, `spool-${randomBytes(8).toString('hex')}`);
  const fh = await fs.open(file, 'wx+', 0o600);
  try {
    let child: ChildProcess;
    if (typeof start === 'function') {
      await fs.unlink(file);
      child = start(fh.fd);
    } else {
      child = start.byPath(file);
      const unname = (): void => {
        try {
          fsSync.unlinkSync(file);
        } catch {
          // gone already
        }
      };
      child.once('spawn', unname);
      child.once('close', unname);
    }
    return await pipeSource(fileSource(child, fh, 0, true, () => undefined), sink, signal);
  } finally {
    await fh.close().catch(() => undefined);
  }
}
