/**
 * The OpenSSH lane: byte ranges as `ssh` streams on an OpenSshSession's shared master connection (openssh/session.ts
 * says how that login is made), through the target's prefix.
 */
import * as fs from 'node:fs';
import { localFs, openSync } from '../util/localFs';
import * as path from 'node:path';
import { commandFailed } from '../remote';
import { classifyTargetFailure, wrapForTarget } from '../targets';
import { RemoteRunsError, isRemoteRunsError, type TargetRef } from '../types';
import { statAfterOf, withStatAfter } from './remoteCommands';
import { rangeArgvOf, type Lane, type RangeHashes, type RangeJob, type WriteFn } from './lanes';
import type { OpenSshStreams } from '../ssh/openssh/session';
import { classifySshFailure } from '../ssh/clientErrors';
import { localError } from './localErrors';
import { childSource, fileSource, OFFSETS_VISIBLE, openOffset, runStream, type StreamEnd } from './stream';

/**
 * ssh cannot say why it stopped writing a file (the master closes the channel; the remote command fails or is cut
 * off): when its file system has no room left, that is the reason (`disk-full`, like a write here would say).
 */
async function fullDisk(part: string, e: unknown): Promise<RemoteRunsError | undefined> {
  if (isRemoteRunsError(e) && e.kind === 'cancelled') return undefined;
  const st = await localFs.statfs(path.dirname(part)).catch(() => undefined);
  if (!st || st.bavail * st.bsize >= FULL_BELOW_BYTES) return undefined;
  return localError(Object.assign(new Error('no space left on device'), { code: 'ENOSPC' }), `Cannot write ${part}`, part);
}

/** Less room than this (an ssh packet and then some) counts as a full file system. */
const FULL_BELOW_BYTES = 1 << 20;

/**
 * A lane whose bytes come through the OpenSSH session: one `ssh` stream per range, through the target's prefix.
 * Its stdout is a pipe into this process, which writes the bytes at their position; or, for a `direct` job (the
 * one stream of a file over a short link), the `.part` itself opened for appending, the bytes read back from it as
 * they land (stream.ts fileSource). A writer whose owner died would otherwise go on appending to a file the next
 * download resumes: the session's lifeline kills it, and the next owner of the lock waits until it is gone.
 */
export class OpenSshLane implements Lane {
  constructor(
    private readonly session: OpenSshStreams,
    private readonly target: TargetRef,
  ) {}

  async fetch(job: RangeJob, write: WriteFn, signal: AbortSignal, written?: (position: number, length: number) => void): Promise<RangeHashes | undefined> {
    if (signal.aborted) throw new RemoteRunsError('cancelled', 'Download cancelled');
    // A direct stream's stdout is the `.part` itself, so it cannot be fenced: rc-file noise would land in the file
    // (and the stream would then be longer than its range: refused, never verified).
    if (job.direct && job.partPath && written) {
      if (!job.at) return this.direct(wrapForTarget(this.target, withStatAfter(rangeArgvOf(job), job.remotePath), false), job, job.partPath, written, signal);
      const line = wrapForTarget(this.target, rangeArgvOf(job), false);
      if (OFFSETS_VISIBLE) return this.placed(line, job, job.partPath, written, signal);
    }
    return this.piped(wrapForTarget(this.target, rangeArgvOf(job)), job, write, signal);
  }

  /**
   * One of several ranges of a file, written by ssh at its place in the `.part` (the master writes into the file;
   * no byte passes through this process but the read back to hash it). Piped into this process instead, each byte
   * is read from a pipe and written again: 8 piped ranges of 512 MiB on loopback cost this process 3.35 CPU s/GiB
   * and the local OpenSSH 2.10, against 1.71 and 0.96 for the single stream; placed, 1.6–2.3 and 1.1
   * (bench/transfer.ts --only os1,os8, 2 shared cores).
   *
   * The writer's descriptor is opened here (read-write, no truncation) and placed at `start` as ssh starts
   * (util/processes.ts stdoutAt: no second start of this process, whose every fork costs copy-on-write faults): every copy shares that one offset (the mux client hands its stdout to the master),
   * so the master's writes land from `start` on, and the offset (stream.ts openOffset) says how far they have got
   * (fileSource's `landed`). The remote command sends exactly the
   * range (rangeArgv's dd/head count) and nothing else (direct lines are unfenced, and hosts whose shell prints get
   * no direct streams: download.ts shellPrints), so nothing lands past `end`.
   */
  private async placed(line: string, job: RangeJob, part: string, written: (position: number, length: number) => void, signal: AbortSignal): Promise<RangeHashes | undefined> {
    let fd: number;
    try {
      fd = openSync(part, 'r+');
    } catch (e) {
      throw localError(e, `Cannot open ${part}`);
    }
    let info: { read: () => Promise<number>; close: () => Promise<void> } | undefined;
    try {
      info = await openOffset(fd);
      const landed = info.read;
      // ssh starts with its stdout placed at the range's start (one start: a `sh` places it, then becomes ssh).
      const child = this.session.run(line, fd, job.start);
      const source = fileSource(child, part, job.start, job.hash === true, (end) => this.failure(job, end), landed);
      return await runStream(source, job, async (pos, data) => written(pos, data.length), signal, written).catch(async (e: unknown) => {
        throw (await fullDisk(part, e)) ?? e;
      });
    } finally {
      await info?.close();
      // Kept open until the stream ended: its offset is how far the writer got.
      fs.closeSync(fd);
    }
  }

  private direct(line: string, job: RangeJob, part: string, written: (position: number, length: number) => void, signal: AbortSignal): Promise<RangeHashes | undefined> {
    let fd: number;
    try {
      fd = openSync(part, 'a');
    } catch (e) {
      throw localError(e, `Cannot open ${part}`);
    }
    try {
      const size = fs.fstatSync(fd).size;
      if (size !== job.start) throw new RemoteRunsError('protocol', `${part} holds ${size} bytes where a stream from ${job.start} was to be appended`, { path: part });
      const child = this.session.run(line, fd);
      // The file's one stream: the stat its command took after the last byte is the download's look after it.
      const ended = (end: StreamEnd): RemoteRunsError | undefined => {
        const failed = this.failure(job, end);
        const after = failed ? undefined : statAfterOf(end.stderr);
        if (after) job.after = { bytes: after.bytes, mtime: after.mtime };
        return failed;
      };
      const source = fileSource(child, part, job.start, job.hash === true, ended);
      return runStream(source, job, async (pos, data) => written(pos, data.length), signal, written).catch(async (e: unknown) => {
        throw (await fullDisk(part, e)) ?? e;
      });
    } finally {
      // The child has its own copy (or none, if it could not start).
      fs.closeSync(fd);
    }
  }

  private piped(line: string, job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<RangeHashes | undefined> {
    const child = this.session.run(line);
    return runStream(childSource(child, (end) => this.failure(job, end)), job, write, signal);
  }

  /** Turn the stream's end into the error it means (undefined: it exited 0). */
  private failure(job: RangeJob, end: StreamEnd): RemoteRunsError | undefined {
    const { code, stderr } = end;
    const ssh = classifySshFailure(stderr, code);
    if (ssh) return ssh;
    if (code !== 0) {
      const result = { stdout: Buffer.alloc(0), stderr: Buffer.from(stderr), code, ...(end.signal ? { signal: end.signal } : {}), truncated: false };
      return classifyTargetFailure(this.target, result) ?? commandFailed(`Streaming ${job.remotePath}`, result);
    }
    return undefined;
  }

  close(): void {
    // The session is the download's: it is disposed there, once, after every lane.
  }
}
