/**
 * emaSmooth, kept up to date as points arrive: a live run appends a few points per poll, and smoothing a
 * million-point series again each time would cost tens of milliseconds per metric. Produces exactly what
 * `emaSmooth(series.y, weight, series.segments)` (its values as an array) gives for the same points (a unit test holds that).
 */
import { Float32Column } from '../../core/metrics';

/** What is smoothed: a Series, or an array through `valuesOf`. */
export interface Values {
  readonly length: number;
  yAt(i: number): number;
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
  /** float32: smoothed values are sent and shown to 7 significant digits (seriesTracker.ts), half the memory of float64. */
  private readonly out = new Float32Column();
  private seg: SegmentState | undefined;
  private segCount = 0;
  readonly weight: number;

  constructor(weight: number) {
    this.weight = Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 0.999999) : 0;
  }

  /** Smoothed values so far (a view, valid until the next extend). */
  get values(): Float32Array {
    return this.out.values;
  }

  get length(): number {
    return this.out.length;
  }

  /**
   * Smooth the points from `this.length` to `y.length`. `segmentStarts` are the indices where segments begin
   * (ascending); it must extend what earlier calls saw, as a Series' segments do.
   */
  extend(y: Values, segmentStarts: readonly number[]): void {
    const n = y.length;
    let i = this.out.length;
    if (i >= n) return;
    // Opening a long run smooths a million points per metric: write them in one pass into storage sized once,
    // with the segment's state in locals, instead of a push and a segment check per point.
    const out = this.out.resize(n);
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
      for (; i < end; i++) {
        const v = y.yAt(i);
        if (w === 0 || !Number.isFinite(v)) {
          out[i] = v;
          continue;
        }
        if (constant && i > seg.start && v !== first) {
          constant = false;
          // emaSmooth smooths a non-constant segment from its start: rewrite what was passed through.
          this.rewrite(y, seg.start, i);
        }
        last = last * w + (1 - w) * v;
        wk *= w;
        out[i] = constant ? v : last / (1 - wk);
      }
      seg.last = last;
      seg.wk = wk;
      seg.constant = constant;
    }
  }

  private rewrite(y: Values, start: number, end: number): void {
    const w = this.weight;
    const vals = this.out.values;
    let last = 0;
    let wk = 1;
    for (let i = start; i < end; i++) {
      const v = y.yAt(i);
      if (!Number.isFinite(v)) continue;
      last = last * w + (1 - w) * v;
      wk *= w;
      vals[i] = last / (1 - wk);
    }
  }
}
