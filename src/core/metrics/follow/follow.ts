/**
 * One followed metrics file: parser, RunMetrics and tail state together. The extension calls `catchUp` each
 * poll (it reads everything new, a long backlog with several reads in flight, parsing each as the next ones
 * arrive); the step-by-step `nextCommand()` → `apply(result)` is there for callers that want one read at a time.
 */
import type { RemoteCommand } from '../../remote';
import { RemoteRunsError } from '../../types';
import { createParser, tailModeOf, unitOf } from '../formats/format';
import type { MetricsFormat, MetricsParser } from '../formats/parser';
import { RunMetrics } from '../series/series';
import { JsonlParser } from '../formats/jsonl';
import { PARSE_WORKER_ABOVE, ParseOffload } from '../formats/parseOffload';
import { TailStreamReader, type StreamRunner, type TailStreamHeader } from './tailStream';
import {
  applyTailRead,
  DEFAULT_TAIL_COMPRESS_ABOVE,
  DEFAULT_TAIL_MAX_BYTES,
  nextTailRequest,
  tailReadCommand,
  type TailDecision,
  type TailMode,
  type TailReadResult,
  type TailState,
} from './tail';

/** Bytes of a log's first read (then DEFAULT_TAIL_MAX_BYTES each): enough for a first chart, quick to parse. */
export const FIRST_READ_BYTES = 256 * 1024;

/** A backlog of at least this many bytes after the first read comes as one stream where one can be had. */
export const STREAM_ABOVE = 16 * 1024 * 1024;
/**
 * Most bytes one stream asks for: a longer backlog comes as several streams, one after the other. The OpenSSH runner
 * spools a stream into a file (transfer/bulkLinks.ts spoolChild), which this bounds, on a disk or a tmpfs alike.
 * Not smaller: each stream is an `ssh` started, a remote shell and a new channel. A 97 MiB log in two 64 MiB streams
 * took ~0.25 s longer than in one (bench/metrics.ts, 1,337 vs 1,092 ms), when each start forked this process
 * and again once the session's process starter started them (util/spawner.ts).
 */
export const STREAM_MAX_BYTES = 128 * 1024 * 1024;
/** A stream's bytes go to the parser in pieces of this size (each one batch of the worker's). */
const STREAM_PIECE = 1024 * 1024;
/**
 * Pieces given to the worker and not yet applied before the stream waits (so what is in flight stays bounded): a
 * few keep the worker busy while this thread applies batches, and each one more is a buffer (and a batch's) that
 * is new memory before the first comes back.
 */
const STREAM_MAX_PENDING = 8;

export interface FollowUpdate {
  /** `ok`, or why the file could not be read (the metrics keep what they had). */
  status: TailReadResult['status'];
  decision?: TailDecision;
  /** metrics.revision moved: send the view a new snapshot. */
  changed: boolean;
  /** Poll again now. */
  more: boolean;
}

export interface CatchUpOptions {
  /**
   * Reads in flight while a backlog remains (default 2). The next ones are on their way while one is parsed, and
   * the remote side never waits for us between reads: one at a time left the link idle for a round trip and a
   * remote shell's start-up per read, which on a loaded host was a third of the time to open a long log.
   */
  depth?: number;
  /** Stop sending reads (the ones in flight are awaited by nobody and their failures ignored). */
  signal?: AbortSignal;
  /** After each read is parsed, before the next is awaited: a view can show a long backlog as it arrives. */
  onChunk?(update: FollowUpdate): void;
  /**
   * Parse a JSONL backlog of at least this many bytes (after its first read, parsed here for the first chart) in a
   * worker thread while the next reads arrive (parseOffload.ts). Default PARSE_WORKER_ABOVE; Infinity: never.
   */
  workerAbove?: number;
  /**
   * How to read a long backlog of an append-only log as one stream (tailStream.ts) instead of reads of maxBytes
   * each; absent, or when it can have no stream, the reads go on as before. Tried once per catchUp: a backlog longer
   * than one stream's `streamMaxBytes` goes on with the next stream while each brings all it asked for.
   */
  stream?: StreamRunner;
  /** A backlog of at least this many bytes (after the first read) is streamed. Default STREAM_ABOVE. */
  streamAbove?: number;
  /** Most bytes one stream asks for. Default STREAM_MAX_BYTES. */
  streamMaxBytes?: number;
  /** Told why a stream was given up part-way (the reads then go on from where it stopped). */
  log?(message: string): void;
}

export interface FollowerOptions {
  /** Cap on bytes per read. */
  maxBytes?: number;
  /** Reads of at least this many bytes come gzip-compressed where the remote side can (default 0: never). */
  compressAbove?: number;
  /** The metric key of a one-metric file (MLflow's `metrics/<key>`). */
  key?: string;
  /** The user's choice of x column (RunMetrics.xPick). */
  xPick?: string;
}

export class MetricsFollower {
  readonly metrics: RunMetrics;
  readonly mode: TailMode;
  private parser: MetricsParser;
  private tail: TailState | undefined;
  /** The worker parsing the backlog being read (catchUp only). */
  private offload: ParseOffload | undefined;
  /** Set by catchUp: a backlog this big goes to a worker (Infinity: not now). */
  private offloadAbove = Infinity;
  /** A worker of this follower died: parse here from now on (a crash is not worth repeating every poll). */
  private offloadBroken = false;
  /** Called by an offload after each batch is applied (catchUp's onChunk). */
  private onOffloaded: ((changed: boolean) => void) | undefined;

  private readonly maxBytes: number;
  private readonly compressAbove: number;
  private readonly key: string | undefined;

  /** `options` as a number is the cap on bytes per read (the older signature). */
  constructor(
    readonly path: string,
    readonly format: MetricsFormat,
    options: FollowerOptions | number = {},
  ) {
    const o = typeof options === 'number' ? { maxBytes: options } : options;
    this.maxBytes = o.maxBytes ?? DEFAULT_TAIL_MAX_BYTES;
    this.compressAbove = o.compressAbove ?? DEFAULT_TAIL_COMPRESS_ABOVE;
    this.key = o.key;
    this.metrics = new RunMetrics(unitOf(format), o.xPick);
    this.mode = tailModeOf(format);
    this.parser = createParser(format, this.metrics, this.key);
  }

  /** What the last poll saw, for status lines (undefined before the first). */
  get state(): TailState | undefined {
    return this.tail;
  }

  nextCommand(): RemoteCommand<TailReadResult> {
    // A log's first read is small: it is what the first chart waits for (its transfer and its parse on this thread).
    const first = this.tail === undefined && this.mode === 'append';
    return tailReadCommand(this.path, nextTailRequest(this.tail, this.mode, first ? Math.min(this.maxBytes, FIRST_READ_BYTES) : this.maxBytes, this.compressAbove));
  }

  /**
   * Read what is new, all of it: the next read, then while the file holds more than has been asked for, reads of
   * the following ranges sent ahead (`depth` in flight), each parsed in file order as it arrives. A reply that
   * does not continue what was read (the file was replaced or truncated meanwhile) is not used, the reads sent
   * ahead of it are dropped, and reading goes on from what the tail state asks for next. Resolves with the last
   * update, `changed` if any read changed the metrics; rejects with the first failed read's error.
   */
  async catchUp(run: (command: RemoteCommand<TailReadResult>) => Promise<TailReadResult>, options: CatchUpOptions = {}): Promise<FollowUpdate> {
    this.offloadAbove = options.workerAbove ?? PARSE_WORKER_ABOVE;
    let offloadChanged = false;
    this.onOffloaded = (changed) => {
      offloadChanged ||= changed;
      if (!options.signal?.aborted) options.onChunk?.({ status: 'ok', changed, more: true });
    };
    // A stop (the feed disposed, the panel closed) ends the worker at once, not when the read in flight returns.
    const onAbort = (): void => this.endOffload();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const u = await this.readBacklog(run, options);
      if (this.offload) {
        await this.offload.drained();
        this.endOffload();
      }
      return { ...u, changed: u.changed || offloadChanged };
    } catch (e) {
      const failed = this.offload?.failed;
      this.endOffload();
      throw failed ?? e;
    } finally {
      this.endOffload();
      this.offloadAbove = Infinity;
      this.onOffloaded = undefined;
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Stop the backlog's worker, if any: the parser takes its stream back as of the last batch applied, and the tail
   * goes back to that point of the file (what was sent to the worker and not applied is read again).
   */
  private endOffload(): void {
    const o = this.offload;
    if (!o) return;
    this.offload = undefined;
    if (o.failed) this.offloadBroken = true;
    const offset = o.close();
    if (this.tail && offset < this.tail.offset) this.tail = { ...this.tail, offset };
  }

  private async readBacklog(run: (command: RemoteCommand<TailReadResult>) => Promise<TailReadResult>, options: CatchUpOptions): Promise<FollowUpdate> {
    const depth = Math.max(1, Math.floor(options.depth ?? 2));
    const queue: Promise<TailReadResult>[] = [];
    const send = (command: RemoteCommand<TailReadResult>): void => {
      const reply = run(command);
      reply.catch(() => undefined); // awaited in turn; one left behind after a failure or a stop is not unhandled
      queue.push(reply);
    };
    // End of the ranges asked for so far; -1 when nothing is planned ahead (whole files are read one at a time).
    let asked = -1;
    let changed = false;
    let streamTried = false;
    const firstRead = this.tail === undefined;
    send(this.nextCommand());
    // A log's first read: what a long backlog's stream would need (a login) starts beside it.
    if (firstRead && this.mode === 'append') options.stream?.prepare?.();
    for (let reads = 0; reads < 100_000; reads++) {
      const result = await queue.shift()!;
      if (this.offload?.failed) throw this.offload.failed;
      const before = this.tail?.offset;
      const step = this.advance(result);
      if (result.status === 'ok') {
        const taken = this.tail !== undefined && this.tail.offset === result.from + result.data.length;
        if (!taken || result.from !== before) {
          // Not the next bytes of what we had (a first read, a re-read from 0, or a reply that was not used):
          // the reads sent ahead were planned on another file or position.
          queue.length = 0;
          asked = taken && this.mode === 'append' ? result.from + result.requestedBytes : -1;
        }
      }
      // A long backlog as one stream, once per catchUp: the rest of the file after this read (the first is parsed
      // first, for the first chart) asked for in one go. Where a stream can only be had later (a login starting
      // beside this backlog), the reads go on and the question is asked again after each; once it can, no more reads
      // are sent, and the stream starts when those in flight are in.
      const streamPossible =
        step.more && !streamTried && options.stream !== undefined && !options.signal?.aborted && this.mode === 'append' && this.tail !== undefined &&
        this.tail.size - Math.max(this.tail.offset, asked) >= (options.streamAbove ?? STREAM_ABOVE) && (options.stream.ready?.() ?? true);
      const streamIt = streamPossible && queue.length === 0;
      if (step.more && !options.signal?.aborted && !streamPossible) {
        if (queue.length === 0) {
          send(this.nextCommand());
          asked = this.mode === 'append' && this.tail ? this.tail.offset + this.maxBytes : -1;
        }
        while (asked >= 0 && this.tail && queue.length < depth && asked < this.tail.size) {
          send(tailReadCommand(this.path, { ...nextTailRequest(this.tail, this.mode, this.maxBytes, this.compressAbove), offset: asked }));
          asked += this.maxBytes;
        }
      }
      // A read given to the worker reports itself when its batch is applied; one parsed here (the first of a long
      // backlog, before the worker takes the rest) at once.
      const toWorker = this.offload !== undefined;
      const update = step.parse();
      changed ||= update.changed;
      if (update.status !== 'ok' || options.signal?.aborted || (queue.length === 0 && !streamIt)) return { ...update, changed };
      if (!toWorker) {
        options.onChunk?.(update);
        // The first chart drawn, the rest of a long backlog goes to a worker.
        if (this.tail) this.maybeOffload(this.tail);
      }
      if (streamIt) {
        streamTried = true;
        for (;;) {
          const r = await this.streamRest(options.stream!, options);
          changed ||= r.changed;
          if (options.signal?.aborted) return { status: 'ok', changed, more: true };
          const left = this.tail ? this.tail.size - this.tail.offset : 0;
          if (!r.whole || this.mode !== 'append' || !(left >= (options.streamAbove ?? STREAM_ABOVE))) break;
        }
        // Whatever the stream brought (all of it, part, or nothing), a read from where it stopped goes on: it checks
        // the file again and takes what was written meanwhile.
        send(this.nextCommand());
        asked = -1;
      }
    }
    return { status: 'ok', changed, more: true };
  }

  /**
   * Read the rest of the file (from the tail's offset to its size as last seen, at most streamMaxBytes) as one
   * stream, its pieces taken as reads of their own (same state machine, same checks). `changed`: that changed the
   * metrics; `whole`: it brought every byte it asked for and ended well. A stream that cannot be had, fails or stops
   * part-way leaves the tail where its last piece ended; a failed worker is rethrown.
   */
  private async streamRest(stream: StreamRunner, options: CatchUpOptions): Promise<{ changed: boolean; whole: boolean }> {
    const tail = this.tail!;
    const maxBytes = Math.min(tail.size - tail.offset, options.streamMaxBytes ?? STREAM_MAX_BYTES);
    const request = { offset: tail.offset, maxBytes, expectHead: tail.head, expectInode: tail.inode, compressAbove: 0 };
    const command = tailReadCommand(this.path, request);
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    let header: TailStreamHeader | undefined;
    let at = 0;
    let changed = false;
    const piece = (data: Uint8Array): void => {
      if (header?.status !== 'ok' || stop.signal.aborted) return;
      // (The worker takes the piece's buffer: its length reads 0 once it is pushed.)
      const from = at;
      const n = data.length;
      at += n;
      const toWorker = this.offload !== undefined;
      const update = this.advance({ status: 'ok', stat: header.stat, from, data, requestedBytes: data.length }).parse();
      changed ||= update.changed;
      // Not taken (the file is not the one the stream was asked of): the rest of it is not used either.
      if (this.tail?.offset !== from + n) throw new RemoteRunsError('protocol', `${command.describe}: the stream's bytes from ${from} do not continue what was read`);
      if (!toWorker) options.onChunk?.(update);
    };
    const reader = new TailStreamReader(request, command.describe, STREAM_PIECE, (h) => {
      header = h;
      if (h.status === 'ok') at = h.from;
    }, piece, (bytes) => this.offload?.spare(bytes));
    try {
      const end = await stream(
        command.argv,
        (chunk) => {
          if (this.offload?.failed) throw this.offload.failed;
          reader.push(chunk);
          if (this.offload && this.offload.pending > STREAM_MAX_PENDING) return this.offload.atMost(STREAM_MAX_PENDING / 2);
        },
        stop.signal,
      );
      if (end === undefined) return { changed, whole: false };
      // What came is the file's bytes in order, whatever ended the stream: it is used, and reading goes on after it.
      if (!stop.signal.aborted) reader.end();
      if (end.code === 0 && !stop.signal.aborted && header?.status === 'ok' && reader.dataBytes === request.maxBytes && this.tail?.offset === request.offset + maxBytes) {
        return { changed, whole: true };
      }
      if (end.code !== 0 && !stop.signal.aborted) {
        options.log?.(`metrics ${this.path}: the stream ended after ${reader.dataBytes} of ${request.maxBytes} bytes (${end.code === null ? 'killed or dropped' : `exit ${end.code}`}${end.stderr ? `: ${end.stderr.trim().split('\n')[0]}` : ''}); reading on from byte ${this.tail?.offset}`);
      }
    } catch (e) {
      if (this.offload?.failed) throw this.offload.failed;
      if (!stop.signal.aborted) options.log?.(`metrics ${this.path}: the stream was given up after ${reader.dataBytes} bytes (${e instanceof Error ? e.message : String(e)}); reading on from byte ${this.tail?.offset}`);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
    return { changed, whole: false };
  }

  apply(result: TailReadResult): FollowUpdate {
    return this.advance(result).parse();
  }

  /**
   * After a read parsed here and reported: hand the rest of a long JSONL backlog to a worker, the first read having
   * given the first chart (only within catchUp, which ends the worker).
   */
  private maybeOffload(state: TailState): void {
    const parser = this.parser;
    if (this.offloadBroken || !(parser instanceof JsonlParser) || this.mode !== 'append' || !this.onOffloaded) return;
    if (!(state.size - state.offset >= this.offloadAbove)) return;
    try {
      this.offload = new ParseOffload(parser, state.offset, (changed) => this.onOffloaded?.(changed));
    } catch {
      // No worker to be had (no script, no threads): parse here, as before.
      this.offloadBroken = true;
    }
  }

  /**
   * Take a read's place in the file now (so `nextCommand()` already asks for what follows) and parse its bytes
   * when `parse()` is called: a caller reading a long backlog sends the next read before parsing this one, so
   * the transfer of one chunk overlaps the parsing of the previous. Call `parse()` before the next `advance()`.
   */
  advance(result: TailReadResult): { more: boolean; parse(): FollowUpdate } {
    if (result.status !== 'ok') {
      const update: FollowUpdate = { status: result.status, changed: false, more: false };
      return { more: false, parse: () => update };
    }
    const step = applyTailRead(this.tail, result, this.mode);
    this.tail = step.state;
    return {
      more: step.more,
      parse: () => {
        const before = this.metrics.revision;
        if (step.reset) {
          // The reads a worker was given belong to the file as it was: dropped with it.
          this.offload?.discard();
          this.offload = undefined;
          // A whole-file parser replaces the data itself once the new text parses; until then the old curve stays.
          if (this.mode === 'append') this.metrics.reset();
          this.parser = createParser(this.format, this.metrics, this.key);
        }
        if (step.data.length > 0) {
          if (this.offload) this.offload.push(step.data, step.state.offset);
          else this.parser.push(step.data);
        }
        if (step.complete) this.parser.end();
        return { status: 'ok', decision: step.decision, changed: this.metrics.revision !== before, more: step.more };
      },
    };
  }
}
