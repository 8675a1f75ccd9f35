/**
 * A long JSONL backlog read in a worker thread (parseWorker.ts) while this thread receives the next reads: ssh2
 * decrypts on this thread, so parsing here too put the two in series (bench/metrics.ts: about a second of CPU for a
 * million lines). The worker turns bytes into lines of key ids and numbers (flatBatch.ts); this thread only adds
 * the points (JsonlParser.applyBatch), in order, as each batch comes back. The batch's arrays are transferred, and
 * so is each read's buffer on the way in: nothing is copied twice.
 *
 * A thread is kept warm between backlogs: one whose backlog was read to the end (nothing of it outstanding) waits
 * idle for the next one for PARSE_WORKER_IDLE_MS, then exits; at most MAX_IDLE wait at a time. Its compiled code is what makes it fast: a fresh
 * thread spends its first 8 MiB in V8's interpreter and baseline tiers (measured: ~320 ms for the first 8 MiB read,
 * ~27 ms for each one after), so opening a second run, or the same run again, would pay that every time. An idle
 * thread does not keep the process alive (unref) and holds no data of the backlog it read (each backlog starts a
 * fresh batcher).
 *
 * The worker never outlives its owner's interest: MetricsFollower.catchUp gets one for a backlog and gives it back
 * when the backlog is read; when the feed stops (its signal) or a read fails with reads still in the thread, the
 * thread is ended at once, not reused. A worker that dies (crash, killed, out of memory) fails the backlog with a
 * clear error, and the parser takes the stream back from the end of the last batch applied, so the next poll reads
 * the rest again and nothing is lost.
 */
import * as path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { FlatBatch } from './flatBatch';
import type { JsonlParser } from './jsonl';
import type { SplitterState } from './lines';
import { spawnWorker } from '../../util/worker';
import { RemoteRunsError } from '../../types';

export type ToParseWorker =
  | { type: 'start'; state: SplitterState }
  /** The bytes `buffer[offset, offset + length)`, the read numbered `seq` (from 1); `back`: return the buffer when parsed. */
  | { type: 'chunk'; seq: number; buffer: ArrayBuffer; offset: number; length: number; back?: boolean }
  /** An applied batch's buffers, given back for the next batches to be written into. */
  | { type: 'spare'; meta: ArrayBuffer; values: ArrayBuffer; raw: ArrayBuffer };

/** `buffer`: the chunk's buffer, handed back once parsed (the parser keeps no view of it), for a later read to fill. */
export type FromParseWorker = { type: 'batch'; seq: number; batch: FlatBatch; buffer?: ArrayBuffer } | { type: 'failed'; message: string };

/** Backlogs of at least this many bytes not yet read are parsed in a worker (two default reads or more). */
export const PARSE_WORKER_ABOVE = 16 * 1024 * 1024;

/** How long a thread whose backlog is read waits for the next one before it exits (its compiled code kept warm). */
export const PARSE_WORKER_IDLE_MS = 60_000;

/**
 * Idle threads kept at most: one serves the next open (runs are opened one after another), and each idle thread
 * holds its own heap (measured: three kept after a comparison of three runs put the bench's RSS growth over its budget).
 */
const MAX_IDLE = 1;

/** A buffer at least this big is the read's own (Buffer.concat's, never the shared pool's): transferred, not copied. */
const TRANSFER_AT_LEAST = 1024 * 1024;
/** Read buffers kept per thread (a stream has STREAM_MAX_PENDING in flight, follow.ts): 1 MiB each at most. */
const MAX_SPARES = 12;
/** Only buffers up to this size are asked back (a stream's pieces; an 8 MiB ssh2 read's buffer is never reused). */
const SPARE_AT_MOST = 1024 * 1024;

/** One parse thread: running one backlog (`job`), or idle until its timer ends it. */
interface ParseThread {
  readonly worker: Worker;
  /** The script it runs (a test's or a benchmark's override, or ''): only a backlog wanting the same one reuses it. */
  readonly script: string;
  job: ParseOffload | undefined;
  idleTimer: ReturnType<typeof setTimeout> | undefined;
  exited: boolean;
  /** Told to end (terminate stops its JavaScript at once; it exits a moment later). */
  ending?: boolean;
  /**
   * Read buffers the thread gave back after parsing them, kept with the thread from one backlog to the next: a
   * stream copies its next pieces into these. A buffer allocated anew for every piece cost a page fault per 4 KiB
   * at its first touch, ~12 µs each on this project's machines: a quarter of a second of this thread's time for a
   * 100 MB log (bench/metrics.ts: 100-300 ms of copies per open).
   */
  readonly spares: ArrayBuffer[];
}

let live = 0;
let started = 0;
/** Live threads told to end that have not exited yet. */
let ending = 0;
let idleMs = PARSE_WORKER_IDLE_MS;
const idleThreads: ParseThread[] = [];
/** Every live thread (started, not yet exited). */
const liveThreads = new Set<ParseThread>();
const gone: (() => void)[] = [];

/** Parse threads in this process (started and not yet exited, busy or idle): for tests and the benchmark. */
export function liveParseWorkers(): number {
  return live;
}

/** Parse threads running a backlog now (live ones neither idle nor told to end). */
export function busyParseWorkers(): number {
  return live - idleThreads.length - ending;
}

/**
 * Parse threads holding reads of a backlog now (sent and not yet parsed back): a backlog closed at such a moment ends
 * its thread, where one closed with nothing outstanding gives it back to wait idle (ParseOffload.close). For tests.
 */
export function parsingParseWorkers(): number {
  let n = 0;
  for (const t of liveThreads) if (!t.ending && t.job && t.job.pending > 0) n++;
  return n;
}

/** Parse threads started in this process so far (a warm one reused is not counted again). */
export function parseWorkersStarted(): number {
  return started;
}

/** Resolves once no parse thread runs (a closed one exits a moment after it is told to; an idle one after its wait). */
export function noParseWorkers(): Promise<void> {
  return live === 0 ? Promise.resolve() : new Promise((resolve) => gone.push(resolve));
}

/** How long an idle thread waits (tests, the benchmark); the idle ones now wait that long from now. */
export function setParseWorkerIdleMs(ms: number): void {
  idleMs = ms;
  for (const t of [...idleThreads]) armIdle(t);
}

/** End every idle thread now (deactivation, the CLI's exit, tests). Busy ones end with their backlog. */
export function closeIdleParseWorkers(): void {
  for (const t of idleThreads.splice(0)) endThread(t);
}

function armIdle(t: ParseThread): void {
  if (t.idleTimer) clearTimeout(t.idleTimer);
  t.idleTimer = setTimeout(() => {
    const i = idleThreads.indexOf(t);
    if (i >= 0) idleThreads.splice(i, 1);
    endThread(t);
  }, idleMs);
  t.idleTimer.unref?.();
}

function endThread(t: ParseThread): void {
  t.spares.length = 0;
  if (t.idleTimer) clearTimeout(t.idleTimer);
  t.idleTimer = undefined;
  t.job = undefined;
  if (!t.ending && !t.exited) {
    t.ending = true;
    ending++;
  }
  void t.worker.terminate();
}

/** A warm idle thread running `script`, or a new one. */
function takeThread(script: string | undefined): ParseThread {
  const key = script ?? '';
  const i = idleThreads.findIndex((t) => t.script === key && !t.exited);
  if (i >= 0) {
    const [t] = idleThreads.splice(i, 1);
    if (t.idleTimer) clearTimeout(t.idleTimer);
    t.idleTimer = undefined;
    t.worker.ref();
    return t;
  }
  const worker = spawnWorker({ bundled: path.join(__dirname, 'metricsWorker.js'), source: path.join(__dirname, 'parseWorker.ts'), override: script });
  const t: ParseThread = { worker, script: key, job: undefined, idleTimer: undefined, exited: false, spares: [] };
  live++;
  started++;
  liveThreads.add(t);
  worker.on('message', (m: FromParseWorker) => t.job?.onMessage(m));
  worker.on('error', (e: Error) => t.job?.fail(`failed: ${e.message}`));
  worker.once('exit', (code: number) => {
    t.exited = true;
    liveThreads.delete(t);
    if (t.ending) ending--;
    const idle = idleThreads.indexOf(t);
    if (idle >= 0) idleThreads.splice(idle, 1);
    if (t.idleTimer) clearTimeout(t.idleTimer);
    t.job?.fail(`stopped (exit code ${code})`);
    t.job = undefined;
    if (--live === 0) for (const f of gone.splice(0)) f();
  });
  return t;
}

/**
 * Have a parse thread running `script` ready for the next backlog (started now if none waits idle), so its start
 * overlaps what comes before the backlog reaches it. A thread started ~1 s ahead made a first open ~0.1 s faster
 * (`bench/metrics.ts --first-parts`): a fresh one starts while the backlog's stream competes with it for the cores.
 * It waits idle as a released one does (PARSE_WORKER_IDLE_MS, then exits).
 */
export function warmParseThread(script = process.env.REMOTE_RUNS_METRICS_WORKER): void {
  const key = script ?? '';
  if (idleThreads.some((t) => t.script === key && !t.exited)) return;
  releaseThread(takeThread(script));
}

/** Give back a thread whose backlog has nothing outstanding: it waits idle for the next one. */
function releaseThread(t: ParseThread): void {
  t.job = undefined;
  if (t.exited) return;
  if (idleThreads.length >= MAX_IDLE) return endThread(t);
  t.worker.unref();
  idleThreads.push(t);
  armIdle(t);
}

export class ParseOffload {
  private readonly thread: ParseThread;
  private seq = 0;
  /** The file offset after each read sent and not yet applied, oldest first. */
  private readonly ends: number[] = [];
  /** Where the stream is taken back from: after the last batch applied (or where the worker took it over). */
  private resumeAt: { state: SplitterState; offset: number };
  private failure: RemoteRunsError | undefined;
  /** Each waits until at most `n` reads are outstanding. */
  private waiters: { n: number; resolve(): void; reject(e: RemoteRunsError): void }[] = [];
  private closed = false;

  /**
   * Detach `parser` (whose stream is at file offset `offset`) and start the worker. `onApplied` is called after each
   * batch was added, with whether the metrics changed.
   */
  constructor(
    private readonly parser: JsonlParser,
    offset: number,
    private readonly onApplied: (changed: boolean) => void,
  ) {
    // Taken (or started) before the parser lets go of its stream: a worker that cannot start (throws) leaves the
    // parser as it was.
    this.thread = takeThread(process.env.REMOTE_RUNS_METRICS_WORKER);
    this.thread.job = this;
    const state = parser.detach();
    this.resumeAt = { state, offset };
    this.post({ type: 'start', state });
  }

  private post(m: ToParseWorker, transfer: ArrayBuffer[] = []): void {
    this.thread.worker.postMessage(m, transfer);
  }

  /** The next read's bytes; `endOffset` is the file offset after them. */
  push(data: Uint8Array, endOffset: number): void {
    if (this.failure || this.closed) return;
    // A read's buffer is its own once it is this big (its one ArrayBuffer is sent over, no copy); a small one is copied.
    const own = data.buffer.byteLength >= TRANSFER_AT_LEAST && data.buffer instanceof ArrayBuffer ? data : data.slice();
    this.ends.push(endOffset);
    const buffer = own.buffer as ArrayBuffer;
    const back = buffer.byteLength <= SPARE_AT_MOST && buffer.byteLength >= TRANSFER_AT_LEAST;
    this.post({ type: 'chunk', seq: ++this.seq, buffer, offset: own.byteOffset, length: own.length, ...(back ? { back } : {}) }, [buffer]);
  }

  /**
   * A buffer of exactly `bytes` the thread gave back (its old contents still in it), or undefined: storage for a
   * read that `push` will send, so the same few buffers go back and forth instead of new memory for each read.
   */
  spare(bytes: number): Uint8Array | undefined {
    const spares = this.thread.spares;
    const i = spares.findIndex((b) => b.byteLength === bytes);
    return i < 0 ? undefined : new Uint8Array(spares.splice(i, 1)[0]);
  }

  /** A message of this backlog's thread (ParseThread dispatches). */
  onMessage(m: FromParseWorker): void {
    if (this.closed || this.failure) return;
    if (m.type === 'failed') return this.fail(`failed: ${m.message}`);
    if (m.buffer && this.thread.spares.length < MAX_SPARES) this.thread.spares.push(m.buffer);
    const before = this.parser.metrics.revision;
    try {
      this.parser.applyBatch(m.batch);
    } catch (e) {
      return this.fail(`sent a batch that could not be applied: ${e instanceof Error ? e.message : String(e)}`);
    }
    // Applied: nothing here keeps a view of the batch, so its storage goes back to be filled again.
    const spare = { meta: m.batch.meta.buffer as ArrayBuffer, values: m.batch.values.buffer as ArrayBuffer, raw: m.batch.raw.buffer as ArrayBuffer };
    this.post({ type: 'spare', ...spare }, [spare.meta, spare.values, spare.raw]);
    this.resumeAt = { state: m.batch.state, offset: this.ends.shift() ?? this.resumeAt.offset };
    this.onApplied(this.parser.metrics.revision !== before);
    const left = this.ends.length;
    this.waiters = this.waiters.filter((w) => (w.n >= left ? (w.resolve(), false) : true));
  }

  /** The thread failed or stopped while this backlog had it. */
  fail(why: string): void {
    if (this.failure || this.closed) return;
    this.failure = new RemoteRunsError('protocol', `The metrics parser thread ${why}; the log is read again from byte ${this.resumeAt.offset} at the next poll`);
    for (const w of this.waiters.splice(0)) w.reject(this.failure);
  }

  /** Resolves once every read pushed has been applied; rejects with the worker's failure. */
  drained(): Promise<void> {
    return this.atMost(0);
  }

  /**
   * Resolves once at most `n` of the reads pushed are not yet applied; rejects with the worker's failure, or when
   * the backlog is closed first. A stream pushing faster than the worker parses waits on this, so what is held in
   * flight stays bounded.
   */
  atMost(n: number): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new RemoteRunsError('cancelled', 'Parsing stopped'));
    if (this.ends.length <= n) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ n, resolve, reject }));
  }

  /** Reads pushed and not yet applied. */
  get pending(): number {
    return this.ends.length;
  }

  /** Why the worker failed, once it has. */
  get failed(): RemoteRunsError | undefined {
    return this.failure;
  }

  /**
   * Done with the worker: a thread with nothing of this backlog outstanding waits idle for the next one; one still
   * holding reads (a stop or a failure mid-way) is ended at once. The parser gets its stream back as of the last
   * batch applied. Returns the file offset the stream is at: where reading goes on.
   */
  close(): number {
    if (!this.closed) {
      this.closed = true;
      this.letGo();
      this.parser.resume(this.resumeAt.state);
      for (const w of this.waiters.splice(0)) w.reject(this.failure ?? new RemoteRunsError('cancelled', 'Parsing stopped'));
    }
    return this.resumeAt.offset;
  }

  /** Done with the worker without giving anything back (the parser is being replaced). */
  discard(): void {
    if (this.closed) return;
    this.closed = true;
    this.letGo();
    for (const w of this.waiters.splice(0)) w.reject(new RemoteRunsError('cancelled', 'Parsing stopped'));
  }

  private letGo(): void {
    const t = this.thread;
    if (t.job !== this) return;
    if (this.ends.length === 0 && !this.failure) releaseThread(t);
    else endThread(t);
  }
}
