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

/** `meta` codes below 0 (0 and up: a flat line of that many pairs). */
export const GENERAL_LINE = -1;
export const TOO_LONG_LINE = -2;

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

/** Grows a typed array by doubling, handing out its filled part at the end. */
class Growing<A extends Int32Array | Float64Array | Uint8Array> {
  array: A;
  length = 0;

  constructor(private readonly make: (n: number) => A) {
    this.array = make(1 << 12);
  }

  room(extra: number): A {
    if (this.length + extra > this.array.length) {
      const grown = this.make(Math.max(this.length + extra, this.array.length * 2));
      grown.set(this.array.subarray(0, this.length));
      this.array = grown;
    }
    return this.array;
  }

  /** The filled part, in an ArrayBuffer of its own (to transfer), and a fresh start. */
  take(): A {
    const out = this.array.length === this.length ? this.array : (this.array.slice(0, this.length) as A);
    this.array = this.make(1 << 12);
    this.length = 0;
    return out;
  }
}

export class FlatBatcher {
  private readonly splitter: LineSplitter;
  private readonly tokens = new FlatTokenizer();
  private namesSent = 0;
  private readonly meta = new Growing((n) => new Int32Array(n));
  private readonly values = new Growing((n) => new Float64Array(n));
  private readonly raw = new Growing((n) => new Uint8Array(n));

  /** `from`: the state of the splitter that read the stream's first bytes (JsonlParser.detach). */
  constructor(from?: SplitterState) {
    this.splitter = new LineSplitter(
      {
        line: (buf, start, end, lineNo, byteOffset) => this.line(buf, start, end, lineNo, byteOffset),
        tooLong: (lineNo, byteOffset) => {
          const meta = this.meta.room(2);
          meta[this.meta.length++] = TOO_LONG_LINE;
          meta[this.meta.length++] = lineNo;
          this.values.room(1)[this.values.length++] = byteOffset;
        },
      },
      from,
    );
  }

  /** The lines the next bytes complete, as one batch (every array in a buffer of its own). */
  push(chunk: Uint8Array): FlatBatch {
    this.splitter.push(chunk);
    const names = this.tokens.names.slice(this.namesSent);
    this.namesSent = this.tokens.names.length;
    return { meta: this.meta.take(), values: this.values.take(), raw: this.raw.take(), names, state: this.splitter.state() };
  }

  private line(buf: Uint8Array, start: number, end: number, lineNo: number, byteOffset: number): void {
    const t = this.tokens;
    const n = t.scan(buf, start, end);
    if (n >= 0) {
      const meta = this.meta.room(2 + n);
      let m = this.meta.length;
      meta[m++] = n;
      meta[m++] = lineNo;
      const values = this.values.room(n);
      let v = this.values.length;
      for (let k = 0; k < n; k++) {
        meta[m++] = t.lineIds[k];
        values[v++] = t.values[k];
      }
      this.meta.length = m;
      this.values.length = v;
      return;
    }
    const raw = this.raw.room(end - start);
    const at = this.raw.length;
    raw.set(buf.subarray(start, end), at);
    this.raw.length = at + end - start;
    const meta = this.meta.room(4);
    meta[this.meta.length++] = GENERAL_LINE;
    meta[this.meta.length++] = lineNo;
    meta[this.meta.length++] = at;
    meta[this.meta.length++] = at + end - start;
    this.values.room(1)[this.values.length++] = byteOffset;
  }
}
