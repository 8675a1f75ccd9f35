/**
 * emaSmooth, kept up to date as points arrive: a live run appends a few points per poll, and smoothing a
 * million-point series again each time would cost tens of milliseconds per metric. Produces exactly what
 * `emaSmooth(series.y, weight, series.segments)` gives for the same points (a unit test holds that).
 */
import { Float64Column } from '../../core/metrics';

interface SegmentState {
  start: number;
  last: number;
  /** w^k as a running product. */
  wk: number;
  /** Every value of the segment so far equals the first: emaSmooth passes such a segment through exactly. */
  constant: boolean;
}

export class IncrementalEma {
  private readonly out = new Float64Column();
  private seg: SegmentState | undefined;
  private segCount = 0;
  readonly weight: number;

  constructor(weight: number) {
    this.weight = Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 0.999999) : 0;
  }

  /** Smoothed values so far (a view, valid until the next extend). */
  get values(): Float64Array {
    return this.out.values;
  }

  get length(): number {
    return this.out.length;
  }

  /**
   * Smooth the points from `this.length` to `y.length`. `segmentStarts` are the indices where segments begin
   * (ascending); it must extend what earlier calls saw, as a Series' segments do.
   */
  extend(y: ArrayLike<number>, segmentStarts: readonly number[]): void {
    const w = this.weight;
    for (let i = this.out.length; i < y.length; i++) {
      while (this.segCount < segmentStarts.length && segmentStarts[this.segCount] <= i) {
        this.seg = { start: segmentStarts[this.segCount], last: 0, wk: 1, constant: true };
        this.segCount++;
      }
      const seg = (this.seg ??= { start: 0, last: 0, wk: 1, constant: true });
      const v = y[i];
      if (w === 0 || !Number.isFinite(v)) {
        this.out.push(v);
        continue;
      }
      if (seg.constant && i > seg.start && v !== y[seg.start]) {
        seg.constant = false;
        // emaSmooth smooths a non-constant segment from its start: rewrite what was passed through.
        this.rewrite(y, seg.start, i);
      }
      seg.last = seg.last * w + (1 - w) * v;
      seg.wk *= w;
      this.out.push(seg.constant ? v : seg.last / (1 - seg.wk));
    }
  }

  private rewrite(y: ArrayLike<number>, start: number, end: number): void {
    const w = this.weight;
    const vals = this.out.values;
    let last = 0;
    let wk = 1;
    for (let i = start; i < end; i++) {
      const v = y[i];
      if (!Number.isFinite(v)) continue;
      last = last * w + (1 - w) * v;
      wk *= w;
      vals[i] = last / (1 - wk);
    }
  }
}
