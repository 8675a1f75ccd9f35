/**
 * Compact columns for metric series: what a run's points cost in the extension host, which every other extension
 * shares. A run that logged a million lines of five metrics is five million points; at 16-24 bytes a point
 * (float64 x, y and time per series) three compared runs took over a gigabyte.
 *
 * - Steps and wall times are kept **exactly**: in chunks of 4,096, each chunk holds its first value and the
 *   others as 32-bit integer differences from it when they are whole numbers within ±2^31 of it (steps almost
 *   always are: 4 bytes each), and falls back to float64 for that chunk alone when one is not (a fractional
 *   epoch, a wall time in fractional milliseconds, a jump of more than 2^31): any float64 reads back as written.
 * - Values are **float32** (4 bytes): a relative error of at most 2^-24 (6·10^-8), so 7 significant digits
 *   survive, one more than the hover shows (6) and far below a chart's pixel. NaN and ±Infinity are float32 values
 *   too. A finite value float32 cannot hold within that error (beyond ±3.4·10^38, or below 1.2·10^-38 in
 *   magnitude) is kept exactly, beside the chunk, so no value ever turns into an infinity or a zero.
 * - Chunks are fixed: an append never copies what is already held.
 */

const CHUNK_BITS = 12;
export const CHUNK = 1 << CHUNK_BITS;
const MASK = CHUNK - 1;
const INT32_SPAN = 2 ** 31;
/** Capacity of a column's first chunk. */
const FIRST = 16;

/** A growable column of float64 numbers, each read back exactly as pushed, in ~4 bytes each when they are steps. */
export class ExactColumn {
  private readonly bases: number[] = [];
  /** Per chunk: its 32-bit differences from the base, or null once the chunk is held as float64. */
  private readonly ints: (Int32Array | null)[] = [];
  private readonly floats: (Float64Array | null)[] = [];
  private len = 0;

  get length(): number {
    return this.len;
  }

  /** Bytes allocated. */
  get byteLength(): number {
    let b = this.bases.length * 8;
    for (let c = 0; c < this.ints.length; c++) b += this.ints[c]?.byteLength ?? this.floats[c]?.byteLength ?? 0;
    return b;
  }

  push(v: number): void {
    const c = this.len >>> CHUNK_BITS;
    const o = this.len & MASK;
    if (o === 0) {
      this.bases.push(v);
      this.ints.push(new Int32Array(c === 0 ? FIRST : CHUNK));
      this.floats.push(null);
    } else this.room(c, o);
    const ints = this.ints[c];
    if (ints) {
      const base = this.bases[c];
      const d = v - base;
      // Held as an int32 only when it reads back as exactly this number (which rules out NaN, infinities, -0,
      // fractions and integers beyond 2^53 whose difference rounds).
      if (d >= -INT32_SPAN && d < INT32_SPAN && Number.isInteger(d) && Object.is(base + d, v)) {
        ints[o] = d;
        this.len++;
        return;
      }
      const f = new Float64Array(ints.length);
      for (let k = 0; k < o; k++) f[k] = base + ints[k];
      this.ints[c] = null;
      this.floats[c] = f;
    }
    this.floats[c]![o] = v;
    this.len++;
  }

  /** The first chunk starts small (a series of three points is common) and doubles up to CHUNK: a bounded copy. */
  private room(c: number, o: number): void {
    const ints = this.ints[c];
    const have = ints ? ints.length : this.floats[c]!.length;
    if (o < have) return;
    if (ints) {
      const g = new Int32Array(Math.min(CHUNK, have * 2));
      g.set(ints);
      this.ints[c] = g;
    } else {
      const g = new Float64Array(Math.min(CHUNK, have * 2));
      g.set(this.floats[c]!);
      this.floats[c] = g;
    }
  }

  at(i: number): number {
    if (!(i >= 0 && i < this.len)) return NaN;
    const c = i >>> CHUNK_BITS;
    const ints = this.ints[c];
    return ints ? this.bases[c] + ints[i & MASK] : this.floats[c]![i & MASK];
  }

  /** The last value (NaN when empty). */
  get last(): number {
    return this.at(this.len - 1);
  }
}

/** Smallest and largest magnitude float32 holds as a normal number, within its 2^-24 relative error. */
const F32_MAX = 3.4028234663852886e38;
const F32_MIN_NORMAL = 1.1754943508222875e-38;

/** Values per block of a ValueColumn's summary (blockExtremes): a chart bucket spans many blocks of a long series. */
export const BLOCK = 64;
const BLOCK_BITS = 6;
/** A block whose summary cannot stand for its values (a NaN, a value kept exactly): read it point by point. */
const NO_SUMMARY = 0xff;

/** A growable column of values held as float32 (see the file comment for the precision kept). */
export class ValueColumn {
  private readonly chunks: Float32Array[] = [];
  /**
   * Per chunk, per full block of BLOCK values: the offsets in the block of its first smallest and first largest
   * value (two bytes), or NO_SUMMARY. What a min-max decimation of a long series needs without reading every point.
   */
  private readonly summaries: Uint8Array[] = [];
  /** Finite values float32 cannot hold within its relative error, by index: kept exactly. Rare. */
  private exact: Map<number, number> | undefined;
  private len = 0;

  get length(): number {
    return this.len;
  }

  get byteLength(): number {
    let b = this.exact ? this.exact.size * 32 : 0;
    for (const c of this.chunks) b += c.byteLength;
    for (const c of this.summaries) b += c.byteLength;
    return b;
  }

  push(v: number): void {
    const o = this.len & MASK;
    const c = this.len >>> CHUNK_BITS;
    if (o === 0) {
      this.chunks.push(new Float32Array(c === 0 ? FIRST : CHUNK));
      this.summaries.push(new Uint8Array(2 * (CHUNK / BLOCK)));
    } else if (o === this.chunks[c].length) {
      // The first chunk grows by doubling up to CHUNK (see ExactColumn.room).
      const g = new Float32Array(Math.min(CHUNK, o * 2));
      g.set(this.chunks[c]);
      this.chunks[c] = g;
    }
    this.chunks[c][o] = v;
    if (v !== 0 && Number.isFinite(v)) {
      const a = Math.abs(v);
      if (a > F32_MAX || a < F32_MIN_NORMAL) (this.exact ??= new Map()).set(this.len, v);
    }
    this.len++;
    if ((o & (BLOCK - 1)) === BLOCK - 1) this.summarize(c, o - (BLOCK - 1));
  }

  /** The summary of the block of chunk `c` starting at offset `start` (just filled). */
  private summarize(c: number, start: number): void {
    const ch = this.chunks[c];
    const out = this.summaries[c];
    const at = 2 * (start >>> BLOCK_BITS);
    let lo = ch[start];
    let hi = lo;
    let loAt = 0;
    let hiAt = 0;
    let usable = lo === lo;
    for (let k = 1; k < BLOCK && usable; k++) {
      const v = ch[start + k];
      if (v !== v) usable = false;
      else if (v < lo) (lo = v), (loAt = k);
      else if (v > hi) (hi = v), (hiAt = k);
    }
    if (usable && this.exact) {
      const first = (c << CHUNK_BITS) + start;
      for (let k = 0; k < BLOCK && usable; k++) if (this.exact.has(first + k)) usable = false;
    }
    out[at] = usable ? loAt : NO_SUMMARY;
    out[at + 1] = usable ? hiAt : NO_SUMMARY;
  }

  /**
   * For the full block of BLOCK values starting at `i` (a multiple of BLOCK): the offset in it of its first smallest
   * value, plus 256 × the offset of its first largest, as reading its values in order with `<` and `>` finds them;
   * -1 when the block is not full or holds a value the summary does not stand for (NaN, a value kept exactly).
   */
  blockExtremes(i: number): number {
    if ((i & (BLOCK - 1)) !== 0 || !(i >= 0 && i + BLOCK <= this.len)) return -1;
    const s = this.summaries[i >>> CHUNK_BITS];
    const at = 2 * ((i & MASK) >>> BLOCK_BITS);
    const lo = s[at];
    return lo === NO_SUMMARY ? -1 : lo + 256 * s[at + 1];
  }

  /**
   * Values `from` to `to` (within the column) into `out` from index 0, as `at` reads them: a pass over many values
   * without a call and a range check per value.
   */
  read(from: number, to: number, out: Float64Array): void {
    let k = 0;
    for (let i = from; i < to; ) {
      const ch = this.chunks[i >>> CHUNK_BITS];
      const o = i & MASK;
      const n = Math.min(to - i, CHUNK - o);
      for (let j = 0; j < n; j++) out[k + j] = ch[o + j];
      k += n;
      i += n;
    }
    if (this.exact) for (const [i, v] of this.exact) if (i >= from && i < to) out[i - from] = v;
  }

  at(i: number): number {
    if (!(i >= 0 && i < this.len)) return NaN;
    if (this.exact) {
      const e = this.exact.get(i);
      if (e !== undefined) return e;
    }
    return this.chunks[i >>> CHUNK_BITS][i & MASK];
  }
}

/**
 * The x and wall time of a log's records, shared by the series of that log: the metrics of one JSONL line (one
 * CSV row, one trainer_state entry, one step's TensorBoard scalars) have the same step and time, so each series
 * holding a value on every record needs only its values (Series below). Time is allocated once a record has one.
 */
export class Axis {
  readonly x = new ExactColumn();
  private t: ExactColumn | undefined;

  get length(): number {
    return this.x.length;
  }

  get hasTime(): boolean {
    return this.t !== undefined;
  }

  get byteLength(): number {
    return this.x.byteLength + (this.t?.byteLength ?? 0);
  }

  push(x: number, timeMs: number): void {
    const n = this.x.length;
    this.x.push(x);
    if (this.t) this.t.push(timeMs);
    else if (!Number.isNaN(timeMs)) {
      this.t = new ExactColumn();
      for (let k = 0; k < n; k++) this.t.push(NaN);
      this.t.push(timeMs);
    }
  }

  timeAt(i: number): number {
    return this.t ? this.t.at(i) : NaN;
  }

  /** Does record `i` have this x and time (NaN times equal)? */
  matches(i: number, x: number, timeMs: number): boolean {
    if (!Object.is(this.x.at(i), x)) return false;
    const t = this.timeAt(i);
    return Object.is(t, timeMs);
  }
}

/**
 * The shortest decimal that is the same float32 as `v` (a value read from a ValueColumn): what the log said
 * whenever it said it with 7 significant digits or fewer (`5e-5`, not `4.999999873689376e-5`). Values kept
 * exactly (not float32) come back unchanged. For what is shown and sent, not for arithmetic (it costs a few
 * toPrecision calls).
 */
export function shortestFloat32(v: number): number {
  if (v === 0 || !Number.isFinite(v) || Math.fround(v) !== v) return v;
  for (let p = 1; p < 10; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}
