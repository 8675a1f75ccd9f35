/**
 * A long JSONL backlog read in a worker thread (parseWorker.ts) while this thread receives the next reads: ssh2
 * decrypts on this thread, so parsing here too put the two in series (bench/metrics.ts: about a second of CPU for a
 * million lines). The worker turns bytes into lines of key ids and numbers (flatBatch.ts); this thread only adds
 * the points (JsonlParser.applyBatch), in order, as each batch comes back. The batch's arrays are transferred, and
 * so is each read's buffer on the way in: nothing is copied twice.
 *
 * The worker never outlives its owner: MetricsFollower.catchUp starts one for a backlog and closes it when the
 * backlog is read, when the feed stops (its signal), or when a read fails; a worker that dies (crash, killed, out of
 * memory) fails the backlog with a clear error, and the parser takes the stream back from the end of the last batch
 * applied, so the next poll reads the rest again and nothing is lost.
 */
import * as path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { FlatBatch } from './flatBatch';
import type { JsonlParser } from './jsonl';
import type { SplitterState } from './lines';
import { spawnWorker } from '../util/worker';
import { RemoteRunsError } from '../types';

export type ToParseWorker =
  | { type: 'start'; state: SplitterState }
  /** The bytes `buffer[offset, offset + length)`, the read numbered `seq` (from 1). */
  | { type: 'chunk'; seq: number; buffer: ArrayBuffer; offset: number; length: number };

export type FromParseWorker = { type: 'batch'; seq: number; batch: FlatBatch } | { type: 'failed'; message: string };

/** Backlogs of at least this many bytes not yet read are parsed in a worker (two default reads or more). */
export const PARSE_WORKER_ABOVE = 16 * 1024 * 1024;

/** A buffer at least this big is the read's own (Buffer.concat's, never the shared pool's): transferred, not copied. */
const TRANSFER_AT_LEAST = 1024 * 1024;

let live = 0;
const idle: (() => void)[] = [];
/** Parse workers running in this process (started and not yet exited): for tests and the benchmark. */
export function liveParseWorkers(): number {
  return live;
}

/** Resolves once no parse worker runs (a closed one exits a moment after it is told to). */
export function noParseWorkers(): Promise<void> {
  return live === 0 ? Promise.resolve() : new Promise((resolve) => idle.push(resolve));
}

export class ParseOffload {
  private readonly worker: Worker;
  private seq = 0;
  /** The file offset after each read sent and not yet applied, oldest first. */
  private readonly ends: number[] = [];
  /** Where the stream is taken back from: after the last batch applied (or where the worker took it over). */
  private resumeAt: { state: SplitterState; offset: number };
  private failure: RemoteRunsError | undefined;
  private waiters: { resolve(): void; reject(e: RemoteRunsError): void }[] = [];
  private closed = false;
  /** Resolves once the thread has exited. */
  readonly exited: Promise<void>;

  /**
   * Detach `parser` (whose stream is at file offset `offset`) and start the worker. `onApplied` is called after each
   * batch was added, with whether the metrics changed.
   */
  constructor(
    private readonly parser: JsonlParser,
    offset: number,
    private readonly onApplied: (changed: boolean) => void,
  ) {
    // Started before the parser lets go of its stream: a worker that cannot start (throws) leaves the parser as it was.
    this.worker = spawnWorker({ bundled: path.join(__dirname, 'metricsWorker.js'), source: path.join(__dirname, 'parseWorker.ts'), override: process.env.REMOTE_RUNS_METRICS_WORKER });
    live++;
    const state = parser.detach();
    this.resumeAt = { state, offset };
    this.exited = new Promise((resolve) => this.worker.once('exit', () => resolve()));
    this.worker.on('message', (m: FromParseWorker) => this.onMessage(m));
    this.worker.on('error', (e: Error) => this.fail(`failed: ${e.message}`));
    this.worker.once('exit', (code: number) => {
      if (--live === 0) for (const f of idle.splice(0)) f();
      if (!this.closed) this.fail(`stopped (exit code ${code})`);
    });
    this.post({ type: 'start', state });
  }

  private post(m: ToParseWorker, transfer: ArrayBuffer[] = []): void {
    this.worker.postMessage(m, transfer);
  }

  /** The next read's bytes; `endOffset` is the file offset after them. */
  push(data: Uint8Array, endOffset: number): void {
    if (this.failure || this.closed) return;
    // A read's buffer is its own once it is this big (its one ArrayBuffer is sent over, no copy); a small one is copied.
    const own = data.buffer.byteLength >= TRANSFER_AT_LEAST && data.buffer instanceof ArrayBuffer ? data : data.slice();
    this.ends.push(endOffset);
    this.post({ type: 'chunk', seq: ++this.seq, buffer: own.buffer as ArrayBuffer, offset: own.byteOffset, length: own.length }, [own.buffer as ArrayBuffer]);
  }

  private onMessage(m: FromParseWorker): void {
    if (this.closed || this.failure) return;
    if (m.type === 'failed') return this.fail(`failed: ${m.message}`);
    const before = this.parser.metrics.revision;
    try {
      this.parser.applyBatch(m.batch);
    } catch (e) {
      return this.fail(`sent a batch that could not be applied: ${e instanceof Error ? e.message : String(e)}`);
    }
    this.resumeAt = { state: m.batch.state, offset: this.ends.shift() ?? this.resumeAt.offset };
    this.onApplied(this.parser.metrics.revision !== before);
    if (this.ends.length === 0) for (const w of this.waiters.splice(0)) w.resolve();
  }

  private fail(why: string): void {
    if (this.failure || this.closed) return;
    this.failure = new RemoteRunsError('protocol', `The metrics parser thread ${why}; the log is read again from byte ${this.resumeAt.offset} at the next poll`);
    for (const w of this.waiters.splice(0)) w.reject(this.failure);
  }

  /** Resolves once every read pushed has been applied; rejects with the worker's failure. */
  drained(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.ends.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** Why the worker failed, once it has. */
  get failed(): RemoteRunsError | undefined {
    return this.failure;
  }

  /**
   * Stop the worker (reads not yet applied are dropped) and give the parser its stream back as of the last batch
   * applied. Returns the file offset the stream is at: where reading goes on.
   */
  close(): number {
    if (!this.closed) {
      this.closed = true;
      void this.worker.terminate();
      this.parser.resume(this.resumeAt.state);
      for (const w of this.waiters.splice(0)) w.reject(this.failure ?? new RemoteRunsError('cancelled', 'Parsing stopped'));
    }
    return this.resumeAt.offset;
  }

  /** Stop the worker without giving anything back (the parser is being replaced). */
  discard(): void {
    if (this.closed) return;
    this.closed = true;
    void this.worker.terminate();
    for (const w of this.waiters.splice(0)) w.reject(new RemoteRunsError('cancelled', 'Parsing stopped'));
  }

}
