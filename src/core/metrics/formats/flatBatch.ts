/**
 * A JSONL log's bytes turned into lines of keys and numbers without touching the metrics: what the parse worker
 * (parseWorker.ts) does with each read of a long backlog, so the thread that owns the metrics (the extension host's)
 * only adds points (JsonlParser.applyBatch). A batch holds, in file order, every line of the bytes it was given:
 * flat lines as key ids and values (FlatTokenizer), other lines as their bytes for the general path, too-long lines
 * as a mark. Applying the batches in order gives exactly what pushing the same bytes into a JsonlParser gives (a
 * unit test holds that).
 */
import { FlatTokenizer } from './jsonlFlat';
import { LineSplitter, type SplitterState } from './lines';
import { TypedColumn } from '../series/column';

/** `meta` codes below 0 (0 and up: a flat line of that many pairs). */
export const GENERAL_LINE = -1;
export const TOO_LONG_LINE = -2;
/** Buffers of each kind kept for reuse (batches come back about as fast as they go). */
const MAX_SPARES = 4;

/** Batch storage given back, by kind (FlatBatcher.recycle). */
export interface BatchSpares {
  meta: Int32Array<ArrayBuffer>[];
  values: Float64Array<ArrayBuffer>[];
  raw: Uint8Array<ArrayBuffer>[];
}

export function newBatchSpares(): BatchSpares {
  return { meta: [], values: [], raw: [] };
}

export interface FlatBatch {
  /**
   * Per line, in file order: `[code, lineNo, …]`. A flat line of n pairs: `n, lineNo`, then its n key ids (its values
   * are the next n of `values`). A line for the general path: `GENERAL_LINE, lineNo, rawStart, rawEnd` (its bytes are
   * `raw[rawStart, rawEnd)`, its byte offset the next of `values`). A line too long to keep: `TOO_LONG_LINE, lineNo`
   * (its byte offset the next of `values`).
   */
  meta: Int32Array;
  values: Float64Array;
  raw: Uint8Array;
  /** Names of the key ids first used in this batch: the ids continue those of the batches before it. */
  names: string[];
  /** Where the stream is after this batch (the line not yet complete included): to take it back from here. */
  state: SplitterState;
}

export class FlatBatcher {
  private readonly splitter: LineSplitter;
  private readonly tokens = new FlatTokenizer();
  private namesSent = 0;
  private readonly meta = new TypedColumn((n) => new Int32Array(n), 1 << 12);
  private readonly values = new TypedColumn((n) => new Float64Array(n), 1 << 12);
  private readonly raw = new TypedColumn((n) => new Uint8Array(n), 1 << 12);

  /**
   * `from`: the state of the splitter that read the stream's first bytes (JsonlParser.detach). `spares`: storage of
   * earlier batches given back once applied (`recycle`), written into by the next ones; the parse thread keeps one
   * for all the backlogs it reads.
   */
  constructor(
    from?: SplitterState,
    private readonly spares: BatchSpares = newBatchSpares(),
  ) {
    this.splitter = new LineSplitter(
      {
        line: (buf, start, end, lineNo, byteOffset) => this.line(buf, start, end, lineNo, byteOffset),
        tooLong: (lineNo, byteOffset) => {
          this.meta.push(TOO_LONG_LINE);
          this.meta.push(lineNo);
          this.values.push(byteOffset);
        },
      },
      from,
    );
  }

  /**
   * The lines the next bytes complete, as one batch. Each array is a view from the start of a buffer of its own
   * (transfer the buffer: the view keeps its length).
   */
  push(chunk: Uint8Array): FlatBatch {
    this.splitter.push(chunk);
    const names = this.tokens.names.slice(this.namesSent);
    this.namesSent = this.tokens.names.length;
    const s = this.spares;
    return { meta: this.meta.handOff(s.meta.pop()), values: this.values.handOff(s.values.pop()), raw: this.raw.handOff(s.raw.pop()), names, state: this.splitter.state() };
  }

  /** A batch's buffers, given back once it was applied, for the next batches (a few are kept). */
  recycle(buffers: { meta: ArrayBuffer; values: ArrayBuffer; raw: ArrayBuffer }): void {
    const s = this.spares;
    if (s.meta.length < MAX_SPARES) s.meta.push(new Int32Array(buffers.meta));
    if (s.values.length < MAX_SPARES) s.values.push(new Float64Array(buffers.values));
    if (s.raw.length < MAX_SPARES) s.raw.push(new Uint8Array(buffers.raw));
  }

  private line(buf: Uint8Array, start: number, end: number, lineNo: number, byteOffset: number): void {
    const t = this.tokens;
    const n = t.scan(buf, start, end);
    if (n >= 0) {
      // Room for the line's entries at once (resize lengthens the column and hands out its storage).
      let m = this.meta.length;
      const meta = this.meta.resize(m + 2 + n);
      meta[m++] = n;
      meta[m++] = lineNo;
      let v = this.values.length;
      const values = this.values.resize(v + n);
      for (let k = 0; k < n; k++) {
        meta[m++] = t.lineIds[k];
        values[v++] = t.values[k];
      }
      return;
    }
    const at = this.raw.length;
    this.raw.resize(at + end - start).set(buf.subarray(start, end), at);
    for (const e of [GENERAL_LINE, lineNo, at, at + end - start]) this.meta.push(e);
    this.values.push(byteOffset);
  }
}
