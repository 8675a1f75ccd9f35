/**
 * One byte range arriving as a stream (a remote `cat`/`dd`), whatever carries it: an ssh2 exec channel or the
 * stdout of an OpenSSH `ssh` child. The runner does what both need alike: coalesce small packets into large writes,
 * hold the source back while writes are behind (memory stays bounded), refuse bytes beyond the range, and turn the
 * stream's end into success or the error it means. The two sources differ only in how they are read and how their
 * exit is classified (ByteSource).
 */
import type { ChildProcess } from '../util/processes';
import * as nodeFs from 'node:fs';
import { createHash } from 'node:crypto';
import { localFs as fs, type FileHandle } from '../util/localFs';
import type { ClientChannel } from 'ssh2';
import { stopChannel } from '../ssh/channels';
import { RemoteRunsError } from '../types';
import type { RangeHashes, RangeJob, WriteFn } from './types';
import { streamedSha256 } from './remoteCommands';
import { fenceEnd, fenceSkipper } from '../shell/portable';

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
  /**
   * Start delivering: `data` for each chunk of stdout, then `end` once stdout is closed and the exit is known. A
   * number in place of a chunk: that many bytes were written to their place by the source itself, not read here.
   */
  start(data: (chunk: Buffer | number) => void, end: (e: StreamEnd) => void, broken: (e: RemoteRunsError) => void): void;
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
 * remote side computed of what it sent (absent when its stderr did not end with it). Bytes the source wrote to their place itself are reported to `placed`.
 */
export function runStream(
  source: ByteSource,
  job: RangeJob,
  write: WriteFn,
  signal: AbortSignal,
  placed?: (position: number, length: number) => void,
): Promise<RangeHashes | undefined> {
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
      // No hash line from a stream that delivered the whole range and exited 0: the bytes are kept, unproven (the
      // download hashes the range on both sides with a command of its own before the rename).
      const remote = streamedSha256(ended.stderr);
      resolve({ local: hash.digest('hex'), ...(remote ? { remote } : {}) });
    };
    source.start(
      (chunk) => {
        if (settled) return;
        if (typeof chunk === 'number') {
          flush();
          if (settled) return;
          if (hash || !placed) return fail(new RemoteRunsError('protocol', `The stream of ${job.remotePath} wrote bytes that were not read back`));
          const at = pos;
          pos += chunk;
          if (pos > job.end) return fail(new RemoteRunsError('changed', `${job.remotePath} grew while it was downloaded (the remote file changed)`, { path: job.remotePath }));
          placed(at, chunk);
          return;
        }
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
    // The command's own stderr starts after FENCE (shell/portable.ts); rc-file noise before it is not its words.
    text: () => {
      const all = Buffer.concat(parts);
      const at = fenceEnd(all);
      return (at < 0 ? all : all.subarray(at)).toString('utf8');
    },
  };
}

/**
 * A source's bytes into `sink` in order (paused while a promise the sink returned is pending). Resolves with how it
 * ended; a stop (`signal`) stops the source and resolves at once as killed; the sink's error, or the source's
 * (ssh could not start, its file could not be read), stops it and rejects.
 */
export function pipeSource(source: ByteSource, sink: (chunk: Buffer) => void | Promise<void>, signal: AbortSignal): Promise<StreamEnd> {
  return new Promise<StreamEnd>((resolve, reject) => {
    let settled = false;
    const settle = (how: () => void): void => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      how();
    };
    const fail = (e: unknown): void => {
      if (settled) return;
      source.stop();
      settle(() => reject(e));
    };
    const onAbort = (): void => {
      if (settled) return;
      source.stop();
      settle(() => resolve({ code: null, signal: 'SIGKILL', stderr: '' }));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) return onAbort();
    source.start(
      (chunk) => {
        if (settled || typeof chunk === 'number') return;
        try {
          const p = sink(chunk);
          if (p) {
            source.pause();
            p.then(() => source.resume(), fail);
          }
        } catch (e) {
          fail(e);
        }
      },
      (end) => settle(() => resolve(end)),
      fail,
    );
  });
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
      // The line is fenced (wrapForTarget): the range's bytes are what follows FENCE.
      ch.on('data', fenceSkipper(data));
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
      // The line is fenced (wrapForTarget): the range's bytes are what follows FENCE.
      child.stdout?.on('data', fenceSkipper(data));
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

/** Bytes read back per step while following a file a stream writes itself. */
const FOLLOW_CHUNK = 4 << 20;
/** How long the follower waits for more bytes once it has read all there are. */
const FOLLOW_POLL_MS = 10;
/** How often a stream that is only counted (not read back) has its size asked. */
const SIZE_POLL_MS = 50;

/**
 * An `ssh` child that writes its range into the file itself (its stdout is the `.part`, opened for appending at the
 * range's start; the master writes into it) as a byte source: what has been written is read back as the file grows
 * (from the page cache), so the runner counts and hashes the bytes that are on disk. Passing every byte through this
 * process as well costs more CPU than the link on loopback or a LAN (bench/transfer.ts). The file's size is the
 * count of bytes written: it is appended to by that one writer only (the download's lock; the lifeline kills the
 * writer when this process dies, and the next owner waits for it, lock.ts). One of several ranges of a file is written
 * at its place instead (util/processes.ts stdoutAt), with other ranges after it: then `landed` (openOffset) says how
 * far it has got.
 */
export function fileSource(
  child: ChildProcess,
  /** The file's path, or a handle open for reading (kept open: the caller closes it). */
  file: string | FileHandle,
  start: number,
  /** Read the bytes back (to hash them), or only follow the file's size. */
  readBack: boolean,
  failure: (end: StreamEnd, short: boolean) => RemoteRunsError | undefined,
  /**
   * Where the writer has got to: by default the file's size (an appending writer); for a writer placed at an offset
   * in a file that holds other bytes after it, its descriptor's offset (opensshLane.ts).
   */
  landed?: () => Promise<number>,
): ByteSource {
  let paused = false;
  let stopped = false;
  let wake: (() => void) | undefined;
  const nap = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done(): void {
        clearTimeout(t);
        wake = undefined;
        resolve();
      }
      wake = done;
    });
  return {
    start(data, end, broken) {
      const err = stderrCollector();
      let exit: StreamEnd | undefined;
      child.stderr?.on('data', (b: Buffer) => err.add(b));
      child.once('error', (e) => broken(new RemoteRunsError('unreachable', `Cannot start ssh: ${e.message}`)));
      child.once('close', (code, sig) => {
        exit = { code, ...(sig ? { signal: sig } : {}), stderr: err.text() };
        wake?.();
      });
      void (async () => {
        let fh: FileHandle | undefined;
        const spare = readBack ? Buffer.allocUnsafe(FOLLOW_CHUNK) : Buffer.alloc(0);
        try {
          fh = typeof file === 'string' ? await fs.open(file, 'r') : file;
          let pos = start;
          while (!stopped) {
            if (paused) {
              await nap(FOLLOW_POLL_MS);
              continue;
            }
            // Taken before the size: once the writer has exited, the size read after it is final.
            const finished = exit;
            const size = landed ? await landed() : (await fh.stat()).size;
            if (size > pos && !readBack) {
              data(size - pos);
              pos = size;
              // Only the count is wanted (progress, the record): asking the kernel again at once would spin this
              // thread against the writer for two shared cores. A writer that exited while the size was read woke
              // nobody (no nap was waiting): its last size is read at once, not a whole nap later.
              if (!finished && !exit) await nap(SIZE_POLL_MS);
              continue;
            }
            if (size > pos) {
              const n = Math.min(size - pos, FOLLOW_CHUNK);
              const { bytesRead } = await fh.read(spare, 0, n, pos);
              if (bytesRead > 0) {
                pos += bytesRead;
                // One buffer, read into again and again (fresh 4 MiB buffers cost page faults on every byte): a
                // chunk of at least WRITE_COALESCE is hashed and handed on by the runner before `data` returns, and
                // this source's bytes are never written again; a smaller one may wait for the next, so it is a copy.
                data(bytesRead >= WRITE_COALESCE ? spare.subarray(0, bytesRead) : Buffer.from(spare.subarray(0, bytesRead)));
                continue;
              }
            }
            if (finished) {
              end(finished);
              return;
            }
            if (!exit) await nap(FOLLOW_POLL_MS);
          }
        } catch (e) {
          const name = typeof file === 'string' ? file : 'the stream\'s file';
          if (!stopped) broken(new RemoteRunsError('protocol', `Reading back ${name} failed: ${e instanceof Error ? e.message : String(e)}`, typeof file === 'string' ? { path: file } : undefined));
        } finally {
          if (typeof file === 'string') await fh?.close().catch(() => undefined);
        }
      })();
    },
    pause: () => {
      paused = true;
    },
    resume: () => {
      paused = false;
      wake?.();
    },
    stop: () => {
      stopped = true;
      child.kill('SIGKILL');
      wake?.();
    },
    failure,
  };
}

/**
 * A descriptor's offset can be read (Linux /proc/self/fdinfo), so a writer placed in the middle of a file can be
 * followed (fileSource's `landed`); elsewhere such ranges are piped.
 */
export const OFFSETS_VISIBLE = process.platform === 'linux' && nodeFs.existsSync('/proc/self/fdinfo');

/**
 * The offset of this process's descriptor `fd`, read from /proc/self/fdinfo: opened once and read again from its start
 * at each look (procfs writes the text anew); opening it at every look was a fifth of this process's time with eight
 * streams (openFileHandle, fstat and close in the profile).
 */
export async function openOffset(fd: number): Promise<{ read: () => Promise<number>; close: () => Promise<void> }> {
  const name = `/proc/self/fdinfo/${fd}`;
  const info = await nodeFs.promises.open(name, 'r');
  const text = Buffer.alloc(512);
  return {
    read: async () => {
      const { bytesRead } = await info.read(text, 0, text.length, 0);
      const pos = /^pos:\s*(\d+)/m.exec(text.toString('latin1', 0, bytesRead));
      if (!pos) throw new RemoteRunsError('protocol', `No offset in ${name}`);
      return Number(pos[1]);
    },
    close: () => info.close().catch(() => undefined),
  };
}
