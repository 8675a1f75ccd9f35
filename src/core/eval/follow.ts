/**
 * Following an eval's log: one short read command per poll (`READ_SCRIPT`: liveness, status, size, then the bytes
 * from an offset), never a long-running `tail -f` channel. Why polling:
 * - a dropped connection loses nothing: the next poll (on the pool's new connection) asks again from the same
 *   offset, so every byte is delivered exactly once and in order, with no gap and no duplicate;
 * - nothing is left running remotely: a `tail -f` behind `pct exec`/`docker exec` is not reliably killed when its
 *   channel dies (signals do not cross the runtime), so each reconnect would leave one more tail behind;
 * - the end is decided in the same command that reads: status present and everything up to the size read at that
 *   moment delivered means the whole log was shown;
 * - each read is bounded (maxBytesPerPoll), so a huge log streams in steps instead of one unbounded channel.
 * The cost is up to one poll interval of latency, which is fine for eval output.
 *
 * Result lines are found on whole lines (split on bytes, so a multi-byte character is never cut) and reported once
 * per follower, in log order; the last line counts once the eval has ended even without a trailing newline.
 */
import { RemoteRunsError, isRemoteRunsError, type TargetRef } from '../types';
import { runCommand, type Executor } from '../remote';
import { delay } from '../util/delay';
import { readEvalLogCommand } from './commands';
import { evalState, type ReadHeader } from './records';
import { compileResultPattern, parseResultLine } from './results';
import type { EvalResult, EvalState } from './types';

export interface FollowOptions {
  /** An executor for reads (idempotent reads may be retried by the pool). */
  executor: Executor;
  target: TargetRef;
  /** The eval folder. */
  dir: string;
  /** The launch-time resultPattern (EvalMeta.resultPattern). */
  resultPattern?: string;
  /** Start here instead of at the beginning (results before it are not reported). Default 0. */
  fromOffset?: number;
  /** Between polls while nothing new came. Default 1000 ms. */
  pollMs?: number;
  /** Largest read per poll. Default 1 MiB. */
  maxBytesPerPoll?: number;
  /** Wait after a failed read before the next try. Default 2000 ms. */
  retryMs?: number;
  /** Log bytes, in order, each exactly once. */
  onData?(chunk: Buffer): void;
  /** A result line, each exactly once, in order. */
  onResult?(result: EvalResult, line: string, offset: number): void;
  /** Every poll's header (status, size, liveness, Slurm state): for a pending/running indicator. */
  onPoll?(header: ReadHeader): void;
  /** A read failed with a connection problem; the follower keeps trying until the signal aborts. */
  onRetry?(error: RemoteRunsError): void;
  signal?: AbortSignal;
}

export interface FollowEnd {
  state: EvalState;
  exitCode?: number;
  /** Results seen by this follower (all of them when it started at offset 0). */
  results: EvalResult[];
  /** Log bytes delivered up to (the final log size). */
  offset: number;
  slurmState?: string;
}

const NL = 0x0a;

const cancelled = (): RemoteRunsError => new RemoteRunsError('cancelled', 'Following the eval was cancelled');

/** Errors worth another try: the connection dropped or was replaced, or the server refused a channel for now. */
export function isTransient(e: unknown): e is RemoteRunsError {
  if (!isRemoteRunsError(e)) return false;
  return e.kind === 'unreachable' || e.kind === 'timeout' || (e.kind === 'protocol' && e.detail.channelRefused !== undefined) || e.kind === 'cancelled';
}

/** Follow an eval's log until it has ended and all of it was delivered. Rejects with `cancelled` on abort. */
export async function followEval(options: FollowOptions): Promise<FollowEnd> {
  const { executor, target, dir, signal } = options;
  const pattern = options.resultPattern ? compileResultPattern(options.resultPattern) : undefined;
  const pollMs = options.pollMs ?? 1000;
  const max = options.maxBytesPerPoll ?? 1 << 20;
  let offset = options.fromOffset ?? 0;
  let carry: Buffer = Buffer.alloc(0);
  let carryOffset = offset;
  const results: EvalResult[] = [];

  const line = (bytes: Buffer, at: number): void => {
    const text = bytes.toString('utf8');
    const r = parseResultLine(text, pattern);
    if (!r) return;
    results.push(r);
    options.onResult?.(r, text, at);
  };

  for (;;) {
    if (signal?.aborted) throw cancelled();
    let read: { header: ReadHeader; data: Buffer };
    try {
      read = await runCommand(executor, target, readEvalLogCommand(dir, offset, max), signal);
    } catch (e) {
      if (signal?.aborted) throw cancelled();
      if (!isTransient(e)) throw e;
      options.onRetry?.(e);
      await delay(options.retryMs ?? 2000, signal, cancelled);
      continue;
    }
    const { header, data } = read;
    options.onPoll?.(header);
    if (header.size < offset) {
      // The log was truncated or replaced under us: say so in the stream and go on from its new end.
      options.onData?.(Buffer.from(`\r\n[remote-runs: the log shrank from ${offset} to ${header.size} bytes; following from there]\r\n`));
      offset = header.size;
      carry = Buffer.alloc(0);
      carryOffset = offset;
    }
    if (data.length > 0) {
      options.onData?.(data);
      let buf = carry.length ? Buffer.concat([carry, data]) : data;
      let start = 0;
      for (let nl = buf.indexOf(NL); nl >= 0; nl = buf.indexOf(NL, start)) {
        line(buf.subarray(start, nl), carryOffset + start);
        start = nl + 1;
      }
      carryOffset += start;
      buf = buf.subarray(start);
      carry = Buffer.from(buf);
      offset += data.length;
    }
    const ended = header.status !== undefined || !header.alive;
    if (ended && offset >= header.size) {
      if (carry.length) line(carry, carryOffset);
      const end: FollowEnd = { state: evalState(header.status, header.alive, header.slurmState), results, offset };
      if (header.status !== undefined) end.exitCode = header.status;
      if (header.slurmState) end.slurmState = header.slurmState;
      return end;
    }
    if (data.length < max) await delay(pollMs, signal, cancelled);
  }
}
