/**
 * Bulk reads that are not downloads (a long metrics backlog) through the system's OpenSSH client, as one stream
 * each: `ssh` decrypts in its own process, where ssh2 would do it in JavaScript on the extension host's one thread
 * (bench/metricsStream.ts: a 97 MiB backlog through a warm OpenSSH link took 0.82× a fresh `ssh cat`, through
 * ssh2 1.40×).
 *
 * Per host, one OpenSshSession (openssh/session.ts: the pool's own login and pinned host keys, a private agent, a
 * lifeline that ends every ssh process when this one dies) is started at the first stream and kept while streams
 * run and for `idleMs` after the last, so the next open finds it logged in and its connection warm. A host on the
 * OpenSSH transport streams through that transport's own master. Where OpenSSH cannot be used (no `ssh`, Windows,
 * a login only the pool can do, a host key that differs), the reason is logged once and the reads stay on ssh2.
 */
import type { ChildProcess } from '../../util/processes';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as fsSync from 'node:fs';
import * as path from 'node:path';
import type { ConnectionPool, PoolHost } from '../../ssh/pool';
import { OpenSshConnection } from '../../ssh/openssh/connection';
import { SshConnection } from '../../ssh/connection';
import type { Logger } from '../../ssh/types';
import type { StreamRunner } from './tailStream';
import { fileSource, pipeSource, type StreamEnd } from '../../transfer/stream';
import { wrapForTarget } from '../../targets';
import { fenceSkipper } from '../../shell/portable';
import type { TargetRef } from '../../types';
import { isRemoteRunsError } from '../../types';
import { lastingRefusal, startBesidePool, type OpenSshSession } from '../../ssh/openssh/session';

/**
 * How long a host's session is kept after its last stream (it also ends with the host's pool connection: closeHost).
 * Long, because a stream on a live session skips the login (~0.3 s on the test host) and the first stream of a new
 * `ssh` process grows its buffers from nothing (spoolChild below).
 */
export const BULK_LINK_IDLE_MS = 10 * 60_000;

/**
 * How long after its start a login is waited for by a stream, instead of reading over ssh2 meanwhile. Waiting won:
 * ssh2's reads beside a login slowed it from ~0.3 s to ~0.9 s (both want the same two cores: JavaScript decryption
 * here, sshd's encryption there), and an open that waited was ~0.3 s faster than one that read meanwhile
 * (`bench/metrics.ts --first-parts`). A login still going after this long is a slow
 * link or a stuck one: the reads go on over ssh2 and the stream starts once it is up.
 */
export const LOGIN_WAIT_MS = 5_000;

export interface BulkLinkOptions {
  /** The `ssh` binary (the user's remoteRuns.sshPath, never a workspace's); read at each start. */
  sshPath?: () => string | undefined;
  /** `ssh2`: never use OpenSSH for these reads (remoteRuns.downloadClient); read at each stream. */
  client?: () => 'auto' | 'openssh' | 'ssh2';
  idleMs?: number;
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

interface Link {
  session: Promise<OpenSshSession | undefined>;
  /** When its start was asked for (performance.now()). */
  since: number;
  /** The session, once it is up. */
  ready?: OpenSshSession;
  active: number;
  timer?: NodeJS.Timeout;
  dead?: boolean;
}

export class BulkLinks {
  private readonly links = new Map<string, Link>();
  /** Hosts OpenSSH was refused for, with why (said once; not tried again until the settings change or a reload). */
  private readonly refused = new Map<string, string>();
  private disposed = false;
  /** Hosts whose session is being asked for in the background (before its link exists), with since when. */
  private readonly preparing = new Map<string, number>();
  /** Stops the starts made in the background (dispose). */
  private readonly stop = new AbortController();

  /** The pool's state changes, watched so a host's sessions end with its connection (extension and CLI alike). */
  private readonly poolWatch: { dispose(): void };

  constructor(
    private readonly pool: ConnectionPool,
    private readonly options: BulkLinkOptions = {},
  ) {
    this.poolWatch = pool.onDidChangeState((e) => {
      if (e.state.kind !== 'connected' && e.state.kind !== 'connecting') this.closeHost(e.host);
    });
  }

  /**
   * A StreamRunner for `target` on `host`: the command runs there through OpenSSH, or not at all (undefined). Its
   * `ready()` says whether a stream can start at once, and starts the host's session beside the caller if none is.
   */
  runner(host: PoolHost, target: TargetRef): StreamRunner {
    const run = async (argv: readonly string[], sink: (chunk: Buffer) => void | Promise<void>, signal: AbortSignal) => {
      if (this.disposed || signal.aborted || this.options.client?.() === 'ssh2') return undefined;
      const lease = await this.pool.acquire(host, signal).catch(() => undefined);
      if (!lease) return undefined;
      try {
        const conn = lease.connection;
        const line = wrapForTarget(target, argv);
        // The line is fenced: the stream's bytes are what follows FENCE (rc-file noise before it is dropped).
        const sinkAfterFence = fenceSkipper(sink);
        // The OpenSSH transport's master carries it; the lease keeps that master up while the stream runs.
        if (conn instanceof OpenSshConnection) return await spoolChild(conn.spoolDir, (fd) => conn.run(line, fd), sinkAfterFence, signal);
        if (!(conn instanceof SshConnection)) return undefined;
        const key = keyOf(host);
        const background = this.options.startInBackground !== false;
        const link = this.linkFor(key, host, conn.hostKeys, background ? this.stop.signal : signal, this.preparing.get(key));
        lease.dispose();
        if (background && !link.ready && !(await this.young(link, signal))) return undefined;
        const session = await link.session;
        if (!session || link.dead || this.disposed) return undefined;
        link.active++;
        if (link.timer) clearTimeout(link.timer);
        link.timer = undefined;
        try {
          // Started by the session's process starter where it has one: no fork of this process per stream.
          const end = await spoolChild(session.spoolDir, session.starter ? { byPath: (file) => session.runToFile(line, file) } : (fd) => session.run(line, fd), sinkAfterFence, signal);
          // 255 is ssh's own failure (the master gone, the link dropped): the next stream starts a new session.
          if (end.code === 255) this.drop(key, link);
          return end;
        } finally {
          link.active--;
          this.scheduleIdle(key, link);
        }
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
    const link = this.links.get(key);
    if (link && !link.dead) return link.ready !== undefined || this.waitLeft(link.since) > 0;
    if (this.refused.has(key)) return false;
    if (!this.preparing.has(key)) void this.prepare(host, key);
    return this.waitLeft(this.preparing.get(key) ?? -Infinity) > 0;
  }

  private waitLeft(since: number): number {
    return since + (this.options.loginWaitMs ?? LOGIN_WAIT_MS) - performance.now();
  }

  /** Wait for `link`'s login while it is young: whether it is up (false: too slow, failed, or `signal` stopped). */
  private async young(link: Link, signal: AbortSignal): Promise<boolean> {
    const left = this.waitLeft(link.since);
    if (left <= 0 || signal.aborted) return false;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, left);
      onAbort = resolve;
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      await Promise.race([link.session.catch(() => undefined), late]);
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort!);
    }
    return link.ready !== undefined && !link.dead && !signal.aborted;
  }

  /** Start the host's session in the background (the pool's connection gives the host keys to pin). */
  private async prepare(host: PoolHost, key: string): Promise<void> {
    const since = performance.now();
    this.preparing.set(key, since);
    try {
      const lease = await this.pool.acquire(host, this.stop.signal);
      try {
        if (lease.connection instanceof SshConnection && !this.disposed) this.linkFor(key, host, lease.connection.hostKeys, this.stop.signal, since);
      } finally {
        lease.dispose();
      }
    } catch {
      // No connection now: the next backlog asks again.
    } finally {
      this.preparing.delete(key);
    }
  }

  private linkFor(key: string, host: PoolHost, hostKeys: Buffer[], signal: AbortSignal, since = performance.now()): Link {
    const known = this.links.get(key);
    if (known && !known.dead) return known;
    const link: Link = { session: Promise.resolve(undefined), since, active: 0 };
    const why = this.refused.get(key);
    if (why === undefined) link.session = this.start(key, host, hostKeys, signal);
    this.links.set(key, link);
    link.session.then(
      (s) => {
        if (!s) return this.drop(key, link);
        link.ready = s;
        this.scheduleIdle(key, link);
      },
      () => this.drop(key, link),
    );
    return link;
  }

  private async start(key: string, host: PoolHost, hostKeys: Buffer[], signal: AbortSignal): Promise<OpenSshSession | undefined> {
    try {
      const session = await startBesidePool(this.pool, host, hostKeys, { sshPath: this.options.sshPath?.(), signal, starter: true });
      if (this.disposed) {
        await session.dispose();
        return undefined;
      }
      this.options.logger?.info(`metrics of ${host.name}: long backlogs are read through OpenSSH (one login, kept ${Math.round((this.options.idleMs ?? BULK_LINK_IDLE_MS) / 1000)} s after the last)`);
      return session;
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      if (isRemoteRunsError(e) && e.kind === 'cancelled') return undefined;
      if (isRemoteRunsError(e) && e.kind === 'host-key-mismatch') {
        this.refused.set(key, why);
        this.options.logger?.error(`metrics of ${host.name}: a new OpenSSH connection was shown another host key than the open one, so it is not used (the reads stay on the verified connection): ${why}`);
        return undefined;
      }
      // A reason that will not change by itself is remembered; a passing one (unreachable) is tried again next time.
      if (lastingRefusal(e)) this.refused.set(key, why);
      this.options.logger?.warn(`metrics of ${host.name}: long backlogs are read over ssh2, not OpenSSH: ${why}`);
      return undefined;
    }
  }

  private scheduleIdle(key: string, link: Link): void {
    if (link.active > 0 || link.dead || this.disposed) return;
    if (link.timer) clearTimeout(link.timer);
    link.timer = setTimeout(() => this.drop(key, link), this.options.idleMs ?? BULK_LINK_IDLE_MS);
    link.timer.unref?.();
  }

  private drop(key: string, link: Link): void {
    if (link.dead) return;
    link.dead = true;
    if (link.timer) clearTimeout(link.timer);
    if (this.links.get(key) === link) this.links.delete(key);
    void link.session.then((s) => s?.dispose(), () => undefined);
  }

  /** End the sessions of the host named `name` (its pool connection was closed or failed): none outlives it. */
  closeHost(name: string): void {
    for (const [key, link] of [...this.links]) if ((JSON.parse(key) as unknown[])[0] === name) this.drop(key, link);
  }

  /** Hosts with a session now, up or starting (for tests and the log). */
  get open(): number {
    return [...this.links.values()].filter((l) => !l.dead).length;
  }

  /** Hosts whose session is up. */
  get ready(): number {
    return [...this.links.values()].filter((l) => !l.dead && l.ready).length;
  }

  /** End every session (their streams are killed; the lifelines see to any ssh left). */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.poolWatch.dispose();
    this.stop.abort();
    const links = [...this.links.entries()];
    this.links.clear();
    await Promise.all(
      links.map(async ([, link]) => {
        link.dead = true;
        if (link.timer) clearTimeout(link.timer);
        await (await link.session.catch(() => undefined))?.dispose();
      }),
    );
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
