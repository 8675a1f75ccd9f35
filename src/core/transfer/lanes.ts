/**
 * A lane moves byte ranges of remote files over one SSH connection: SFTP reads with many requests in flight, or a
 * `cat`/`dd` stream through the target's exec prefix. A download runs several lanes at once, lane 0 on the pool's
 * shared connection and the others on sibling connections that reuse its secrets (never a second prompt), each in
 * a worker thread of its own (workerLane.ts) running one of these lanes.
 */
import type { ClientChannel, SFTPWrapper } from 'ssh2';
import { stopChannel } from '../ssh/channels';
import type { SshConnection } from '../ssh/connection';
import { classifyTargetFailure, wrapForTarget } from '../targets';
import { commandFailed } from '../remote';
import { RemoteRunsError, isRemoteRunsError, type TargetRef } from '../types';
import { hashedRangeArgv, rangeArgv } from './remoteCommands';
import { channelSource, runStream } from './stream';
import type { RangeHashes, RangeJob, TransportKind, WriteFn } from './types';

export type { RangeHashes, RangeJob, WriteFn } from './types';

export interface Lane {
  /**
   * Fetch [start, end) of the file; rejects with RemoteRunsError. An in-process lane hands bytes to `write`; a lane
   * in another thread writes them itself and reports each written range to `written` instead.
   */
  fetch(job: RangeJob, write: WriteFn, signal: AbortSignal, written?: (position: number, length: number) => void): Promise<RangeHashes | undefined>;
  /** Stop whatever runs and release the lane's resources (closes a sibling connection). */
  close(): void;
}

/** Bytes per SFTP read: OpenSSH's limit is 256 KiB per packet including headers. */
const SFTP_CHUNK = 255 * 1024;
/** SFTP reads in flight per lane. */
const SFTP_IN_FLIGHT = 32;
/**
 * Read buffers an SFTP lane keeps for reuse. A fresh 255 KiB buffer per read is 4096 large allocations per GiB,
 * and the collector's work for them showed as ~15% of the client's CPU time in bench/transfer.ts profiles.
 */
const SFTP_SPARE_BUFFERS = SFTP_IN_FLIGHT + 4;

/** The remote command of a range: with its remote SHA-256 when the job asks for it. */
export function rangeArgvOf(job: RangeJob): string[] {
  return (job.hash ? hashedRangeArgv : rangeArgv)(job.remotePath, job.start, job.end, job.size);
}

export function createLane(kind: TransportKind, connection: SshConnection, target: TargetRef, ownsConnection: boolean): Lane {
  return kind === 'sftp' ? new SftpLane(connection, ownsConnection) : new ExecLane(connection, target, ownsConnection);
}

/** What a failure on a lane means: a dropped connection is `unreachable` (retried), anything else is not. */
function laneError(conn: SshConnection, e: unknown, what: string): RemoteRunsError {
  if (isRemoteRunsError(e)) return e;
  if (conn.isClosed) return new RemoteRunsError('unreachable', `Connection lost while ${what}`, { dropped: 'after-open' });
  return new RemoteRunsError('protocol', `${what} failed: ${e instanceof Error ? e.message : String(e)}`);
}

function changedError(path: string): RemoteRunsError {
  return new RemoteRunsError('changed', `${path} became shorter while it was downloaded (the remote file changed)`, { path });
}

class ExecLane implements Lane {
  private readonly channels = new Set<ClientChannel>();

  constructor(
    readonly connection: SshConnection,
    private readonly target: TargetRef,
    private readonly owns: boolean,
  ) {}

  async fetch(job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<RangeHashes | undefined> {
    if (signal.aborted) throw new RemoteRunsError('cancelled', 'Download cancelled');
    const line = wrapForTarget(this.target, rangeArgvOf(job));
    const ch = await this.connection.openExec(line).catch((e: unknown) => {
      throw laneError(this.connection, e, `opening a stream of ${job.remotePath}`);
    });
    this.channels.add(ch);
    try {
      return await this.pump(ch, job, write, signal);
    } finally {
      this.channels.delete(ch);
    }
  }

  private pump(ch: ClientChannel, job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<RangeHashes | undefined> {
    const source = channelSource(ch, (end, short) => {
      const result = { stdout: Buffer.alloc(0), stderr: Buffer.from(end.stderr), code: end.code, signal: end.signal, truncated: false };
      // No exit status, or short with the connection gone: the last bytes did not arrive (a drop, retried). Short on
      // a live connection: the file really is shorter than when the download was planned (the runner says so).
      if (end.code === null && !end.signal) return laneError(this.connection, new Error('the stream ended without an exit status'), `streaming ${job.remotePath}`);
      if (end.code !== 0) return classifyTargetFailure(this.target, result) ?? commandFailed(`Streaming ${job.remotePath}`, result);
      if (short && this.connection.isClosed) return laneError(this.connection, new Error('the stream ended early'), `streaming ${job.remotePath}`);
      return undefined;
    });
    return runStream(source, job, async (pos, data) => {
      try {
        await write(pos, data);
      } catch (e) {
        throw laneError(this.connection, e, `writing ${job.remotePath}`);
      }
    }, signal);
  }

  close(): void {
    for (const ch of this.channels) stopChannel(ch);
    this.channels.clear();
    if (this.owns) this.connection.close();
  }
}

class SftpLane implements Lane {
  private sftp: Promise<SFTPWrapper> | undefined;
  private readonly handles = new Map<string, Promise<Buffer>>();
  private readonly spare: Buffer[] = [];

  constructor(
    readonly connection: SshConnection,
    private readonly owns: boolean,
  ) {}

  private session(): Promise<SFTPWrapper> {
    if (!this.sftp) {
      this.sftp = this.connection.openSftp();
      // Whoever awaits it sees the failure; a session that fails after its fetch gave up must not crash the process.
      this.sftp.catch(() => undefined);
    }
    return this.sftp;
  }

  private handle(sftp: SFTPWrapper, path: string): Promise<Buffer> {
    let h = this.handles.get(path);
    if (!h) {
      h = new Promise<Buffer>((resolve, reject) =>
        sftp.open(path, 'r', (err, handle) => {
          if (!err) return resolve(handle);
          const code = (err as Error & { code?: number }).code;
          if (code === 2) return reject(new RemoteRunsError('path-missing', `${path} no longer exists on the remote side`, { path }));
          if (code === 3) return reject(new RemoteRunsError('permission-denied', `Cannot read ${path}: ${err.message}`, { path }));
          reject(laneError(this.connection, err, `opening ${path}`));
        }),
      );
      h.catch(() => this.handles.delete(path));
      this.handles.set(path, h);
    }
    return h;
  }

  /** SFTP has no remote hash of a read: the download hashes the range on both sides afterwards. */
  async fetch(job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<undefined> {
    if (signal.aborted) throw new RemoteRunsError('cancelled', 'Download cancelled');
    // ssh2 never answers a request sent on an SFTP session whose connection just died (an open or a read written
    // as the socket closed): without this, a lane waits forever after a drop (found by killing sshd mid-download).
    let onClosed: (() => void) | undefined;
    const closed = new Promise<never>((_, reject) => {
      onClosed = () => reject(laneError(this.connection, new Error('connection closed'), `reading ${job.remotePath}`));
    });
    closed.catch(() => undefined);
    const sub = this.connection.onDidClose(() => onClosed?.());
    if (this.connection.isClosed) onClosed?.();
    try {
      await Promise.race([this.read(job, write, signal), closed]);
      return undefined;
    } finally {
      sub.dispose();
    }
  }

  private async read(job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<void> {
    let sftp: SFTPWrapper;
    let handle: Buffer;
    try {
      sftp = await this.session();
      handle = await this.handle(sftp, job.remotePath);
    } catch (e) {
      this.sftp = undefined;
      throw laneError(this.connection, e, `opening ${job.remotePath} over SFTP`);
    }
    await new Promise<void>((resolve, reject) => {
      let next = job.start;
      let active = 0;
      let failed = false;
      const fail = (e: RemoteRunsError): void => {
        if (failed) return;
        failed = true;
        signal.removeEventListener('abort', onAbort);
        reject(e);
      };
      const onAbort = (): void => fail(new RemoteRunsError('cancelled', 'Download cancelled'));
      signal.addEventListener('abort', onAbort, { once: true });
      const readAt = (pos: number, len: number): void => {
        active++;
        const buf = this.spare.pop() ?? Buffer.allocUnsafe(SFTP_CHUNK);
        sftp.read(handle, buf, 0, len, pos, (err, n) => {
          if (failed) return;
          if (err) return fail(laneError(this.connection, err, `reading ${job.remotePath}`));
          if (n === 0) return fail(changedError(job.remotePath));
          // A short read (server limit) is fine: ask again for the rest.
          if (n < len) readAt(pos + n, len - n);
          write(pos, buf.subarray(0, n)).then(
            () => {
              // Written out: the buffer may carry the next read (never while a write still holds it).
              if (this.spare.length < SFTP_SPARE_BUFFERS) this.spare.push(buf);
              active--;
              pump();
            },
            (e: unknown) => fail(laneError(this.connection, e, `writing ${job.remotePath}`)),
          );
        });
      };
      const pump = (): void => {
        if (failed) return;
        while (active < SFTP_IN_FLIGHT && next < job.end) {
          const len = Math.min(SFTP_CHUNK, job.end - next);
          readAt(next, len);
          next += len;
        }
        if (active === 0 && next >= job.end) {
          failed = true;
          signal.removeEventListener('abort', onAbort);
          resolve();
        }
      };
      pump();
    });
  }

  close(): void {
    const s = this.sftp;
    this.sftp = undefined;
    this.handles.clear();
    // Ending the SFTP channel drops every read in flight at once; handles die with the session.
    void s?.then((sftp) => sftp.end(), () => undefined);
    if (this.owns) this.connection.close();
  }
}
