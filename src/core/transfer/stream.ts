/**
 * One byte range arriving as a stream (a remote `cat`/`dd`), whatever carries it: an ssh2 exec channel or the
 * stdout of an OpenSSH `ssh` child. The runner does what both need alike: coalesce small packets into large writes,
 * hold the source back while writes are behind (memory stays bounded), refuse bytes beyond the range, and turn the
 * stream's end into success or the error it means. The two sources differ only in how they are read and how their
 * exit is classified (ByteSource).
 */
import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import type { ClientChannel } from 'ssh2';
import { stopChannel } from '../ssh/connection';
import { RemoteRunsError } from '../types';
import type { RangeHashes, RangeJob, WriteFn } from './lanes';
import { streamedSha256 } from './remoteCommands';

/** How a stream ended, as its source saw it. */
export interface StreamEnd {
  /** The remote command's exit status; null when killed by a signal or none arrived. */
  code: number | null;
  signal?: string;
  /** What the command wrote to stderr (the first 64 KiB). */
  stderr: string;
}

/** Where a stream's bytes come from. */
export interface ByteSource {
  /** Start delivering: `data` for each chunk of stdout, then `end` once stdout is closed and the exit is known. */
  start(data: (chunk: Buffer) => void, end: (e: StreamEnd) => void, broken: (e: RemoteRunsError) => void): void;
  pause(): void;
  resume(): void;
  /** Stop at once (the remote reader ends too). */
  stop(): void;
  /**
   * The error a finished stream's end means, or undefined when the command exited 0. `short`: it delivered fewer
   * bytes than the range (a drop on the way, or a file that became shorter).
   */
  failure(end: StreamEnd, short: boolean): RemoteRunsError | undefined;
}

/** Coalesce stream data into writes of this size (one fs call per ssh packet of 32 KiB is costly). */
const WRITE_COALESCE = 1 << 20;
/** Writes in flight before the source is paused. */
const MAX_WRITES = 2;
const STDERR_KEEP = 64 * 1024;

/**
 * Receive [job.start, job.end) from `source` into `write`; rejects with RemoteRunsError. With `job.hash` (the remote
 * command is hashedRangeArgv), resolves with the SHA-256 of the bytes handed to `write`, in order, and the one the
 * remote side computed of what it sent.
 */
export function runStream(source: ByteSource, job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<RangeHashes | undefined> {
  return new Promise<RangeHashes | undefined>((resolve, reject) => {
    const hash = job.hash ? createHash('sha256') : undefined;
    let pos = job.start;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let writing = 0;
    let ended: StreamEnd | undefined;
    let settled = false;
    const fail = (e: RemoteRunsError): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      source.stop();
      reject(e);
    };
    const onAbort = (): void => fail(new RemoteRunsError('cancelled', 'Download cancelled'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const flush = (): void => {
      if (pendingBytes === 0) return;
      const data = pending.length === 1 ? pending[0] : Buffer.concat(pending, pendingBytes);
      const at = pos;
      pos += data.length;
      pending = [];
      pendingBytes = 0;
      // More than the range: the file grew since it was listed (a `cat` of a whole file sends all it has).
      if (pos > job.end) return fail(new RemoteRunsError('changed', `${job.remotePath} grew while it was downloaded (the remote file changed)`, { path: job.remotePath }));
      hash?.update(data);
      writing++;
      if (writing > MAX_WRITES) source.pause();
      write(at, data).then(
        () => {
          writing--;
          if (writing <= MAX_WRITES && !ended) source.resume();
          finish();
        },
        (e: unknown) => fail(e instanceof RemoteRunsError ? e : new RemoteRunsError('protocol', `Writing ${job.remotePath} failed: ${e instanceof Error ? e.message : String(e)}`)),
      );
    };
    const finish = (): void => {
      if (settled || !ended || writing > 0) return;
      const short = pos < job.end;
      const err = source.failure(ended, short);
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (err) return reject(err);
      if (short) return reject(new RemoteRunsError('changed', `${job.remotePath} became shorter while it was downloaded (the remote file changed)`, { path: job.remotePath }));
      if (!hash) return resolve(undefined);
      const remote = streamedSha256(ended.stderr);
      if (!remote) return reject(new RemoteRunsError('protocol', `The stream of ${job.remotePath} ended without the remote side's SHA-256`));
      resolve({ local: hash.digest('hex'), remote });
    };
    source.start(
      (chunk) => {
        if (settled) return;
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes >= WRITE_COALESCE) flush();
      },
      (end) => {
        if (settled) return;
        flush();
        ended = end;
        finish();
      },
      fail,
    );
  });
}

/** Keeps the first STDERR_KEEP bytes of a stream's stderr. */
function stderrCollector(): { add(b: Buffer): void; text(): string } {
  const parts: Buffer[] = [];
  let n = 0;
  return {
    add(b) {
      if (n < STDERR_KEEP) parts.push(b);
      n += b.length;
    },
    text: () => Buffer.concat(parts).toString('utf8'),
  };
}

/**
 * An ssh2 exec channel as a byte source. `failure` classifies a non-zero exit (container errors first); `dropped`
 * says whether the connection went away (a missing exit status or a short stream then means a drop, retried).
 */
export function channelSource(ch: ClientChannel, failure: (end: StreamEnd, short: boolean) => RemoteRunsError | undefined): ByteSource {
  return {
    start(data, end) {
      const err = stderrCollector();
      let exit: { code: number | null; signal?: string } | undefined;
      ch.on('data', data);
      ch.stderr.on('data', (b: Buffer) => err.add(b));
      ch.on('exit', (code: number | null, sig?: string) => {
        exit = typeof code === 'number' ? { code } : { code: null, signal: sig ?? undefined };
      });
      ch.on('close', () => end({ code: exit ? exit.code : null, ...(exit?.signal ? { signal: exit.signal } : {}), stderr: err.text() }));
    },
    pause: () => ch.pause(),
    resume: () => ch.resume(),
    stop: () => stopChannel(ch),
    failure,
  };
}

/** An `ssh` child's stdout as a byte source (its stderr is OpenSSH's own messages and the remote command's). */
export function childSource(child: ChildProcess, failure: (end: StreamEnd, short: boolean) => RemoteRunsError | undefined): ByteSource {
  return {
    start(data, end, broken) {
      const err = stderrCollector();
      child.stdout?.on('data', data);
      child.stderr?.on('data', (b: Buffer) => err.add(b));
      child.once('error', (e) => broken(new RemoteRunsError('unreachable', `Cannot start ssh: ${e.message}`)));
      // 'close': the exit status is known and stdout and stderr are drained.
      child.once('close', (code, sig) => end({ code, ...(sig ? { signal: sig } : {}), stderr: err.text() }));
    },
    pause: () => child.stdout?.pause(),
    resume: () => child.stdout?.resume(),
    stop: () => {
      child.kill('SIGKILL');
    },
    failure,
  };
}
