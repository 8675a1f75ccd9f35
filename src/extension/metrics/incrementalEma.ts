/**
 * emaSmooth, kept up to date as points arrive: a live run appends a few points per poll, and smoothing a
 * million-point series again each time would cost tens of milliseconds per metric. Produces exactly what
 * `emaSmooth(series.y, weight, series.segments)` (its values as an array) gives for the same points (a unit test holds that).
 */
/** Smoothed values are held in chunks of this many: growing never copies what is held, nor asks for twice the memory. */
const CHUNK_BITS = 12;
const CHUNK = 1 << CHUNK_BITS;
const MASK = CHUNK - 1;
/** Capacity of the first chunk. */
const FIRST = 64;
/** A chunk's worth of the values being smoothed (one thread: one at a time). */
let scratch: Float64Array | undefined;

/** What is smoothed: a Series, or an array through `valuesOf`. */
export interface Values {
  readonly length: number;
  yAt(i: number): number;
  /** Values `from` to `to` into `out` from 0 (a Series reads its storage in one pass): else yAt, one by one. */
  readY?(from: number, to: number, out: Float64Array): void;
}

export function valuesOf(y: ArrayLike<number>): Values {
  return { length: y.length, yAt: (i) => y[i] };
}

interface SegmentState {
  start: number;
  last: number;
  /** w^k as a running product. */
  wk: number;
  /** Every value of the segment so far equals the first: emaSmooth passes such a segment through exactly. */
  constant: boolean;
}

export class IncrementalEma {
  /**
   * float32: smoothed values are sent and shown to 7 significant digits (seriesTracker.ts), half the memory of
   * float64. In fixed chunks: one array doubled as a million-point series loads asked for twice its size in new
   * memory and copied it (bench/metrics.ts: the RSS growth of three compared runs).
   */
  private readonly out: Float32Array[] = [];
  private len = 0;
  private seg: SegmentState | undefined;
  private segCount = 0;
  readonly weight: number;

  constructor(weight: number) {
    this.weight = Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 0.999999) : 0;
  }

  /** The smoothed value of point `i` (NaN past the end). */
  at(i: number): number {
    return i >= 0 && i < this.len ? this.out[i >>> CHUNK_BITS][i & MASK] : NaN;
  }

  get length(): number {
    return this.len;
  }

  /**
   * Room for `n` values (the new places to be written). The first chunk starts small and doubles up to CHUNK, as
   * compact.ts's columns do (a series of a few eval points is common), then whole chunks are added.
   */
  private grow(n: number): void {
    const out = this.out;
    if (out.length === 1 && out[0].length < CHUNK && n > out[0].length) {
      let size = out[0].length;
      while (size < n && size < CHUNK) size *= 2;
      const first = new Float32Array(size);
      first.set(out[0]);
      out[0] = first;
    }
    if (out.length === 0) {
      let size = FIRST;
      while (size < n && size < CHUNK) size *= 2;
      out.push(new Float32Array(size));
    }
    while (out.length * CHUNK < n) out.push(new Float32Array(CHUNK));
    this.len = n;
  }

  /**
   * Smooth the points from `this.length` to `y.length`. `segmentStarts` are the indices where segments begin
   * (ascending); it must extend what earlier calls saw, as a Series' segments do.
   */
  extend(y: Values, segmentStarts: readonly number[]): void {
    const n = y.length;
    let i = this.len;
    if (i >= n) return;
    // Opening a long run smooths a million points per metric: write them in one pass into storage made room for
    // once, with the segment's state in locals, instead of a push and a segment check per point.
    this.grow(n);
    const chunks = this.out;
    const vals = (scratch ??= new Float64Array(CHUNK));
    let out = chunks[i >>> CHUNK_BITS];
    let base = i & ~MASK;
    const w = this.weight;
    while (i < n) {
      while (this.segCount < segmentStarts.length && segmentStarts[this.segCount] <= i) {
        this.seg = { start: segmentStarts[this.segCount], last: 0, wk: 1, constant: true };
        this.segCount++;
      }
      const seg = (this.seg ??= { start: 0, last: 0, wk: 1, constant: true });
      const end = this.segCount < segmentStarts.length ? Math.min(n, segmentStarts[this.segCount]) : n;
      let { last, wk, constant } = seg;
      const first = y.yAt(seg.start);
      // The values come in runs of at most one storage chunk, read at once into `vals`.
      let runEnd = i;
      let runStart = i;
      for (; i < end; i++) {
        if (i - base === CHUNK) {
          base = i;
          out = chunks[i >>> CHUNK_BITS];
        }
        if (i === runEnd) {
          runStart = i;
          runEnd = Math.min(end, base + CHUNK);
          if (y.readY) y.readY(runStart, runEnd, vals);
          else for (let k = runStart; k < runEnd; k++) vals[k - runStart] = y.yAt(k);
        }
        const v = vals[i - runStart];
        if (w === 0 || !Number.isFinite(v)) {
          out[i - base] = v;
          continue;
        }
        if (constant && i > seg.start && v !== first) {
          constant = false;
          // emaSmooth smooths a non-constant segment from its start: rewrite what was passed through.
          this.rewrite(y, seg.start, i);
        }
        last = last * w + (1 - w) * v;
        wk *= w;
        out[i - base] = constant ? v : last / (1 - wk);
      }
      seg.last = last;
      seg.wk = wk;
      seg.constant = constant;
    }
  }

  private rewrite(y: Values, start: number, end: number): void {
    const w = this.weight;
    const chunks = this.out;
    let last = 0;
    let wk = 1;
    for (let i = start; i < end; i++) {
      const v = y.yAt(i);
      if (!Number.isFinite(v)) continue;
      last = last * w + (1 - w) * v;
      wk *= w;
      chunks[i >>> CHUNK_BITS][i & MASK] = last / (1 - wk);
    }
  }
}
