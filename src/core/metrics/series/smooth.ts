/** TensorBoard's scalar smoothing: a debiased exponential moving average, restarted at every segment. */
import type { Segment } from './series';

/**
 * Smooth `y` with weight `w` in [0, 1) (TensorBoard's slider; 0 = raw). Per segment:
 *   last = last·w + (1−w)·v;  smoothed = last / (1 − w^k)
 * where k counts the finite values so far in the segment. Non-finite values are passed through unchanged and
 * do not advance the average; a segment whose values are all equal is passed through exactly (the average of a
 * constant would drift in the last bits). Segments default to one covering everything.
 */
export function emaSmooth(y: ArrayLike<number>, weight: number, segments?: readonly Segment[]): Float64Array {
  const out = new Float64Array(y.length);
  const w = Number.isFinite(weight) ? Math.min(Math.max(weight, 0), 0.999999) : 0;
  const segs = segments ?? [{ start: 0, end: y.length }];
  for (const seg of segs) {
    const end = Math.min(seg.end, y.length);
    if (w === 0 || isConstant(y, seg.start, end)) {
      for (let i = seg.start; i < end; i++) out[i] = y[i];
      continue;
    }
    let last = 0;
    // w^k as a running product: one multiply per point instead of Math.pow.
    let wk = 1;
    for (let i = seg.start; i < end; i++) {
      const v = y[i];
      if (!Number.isFinite(v)) {
        out[i] = v;
        continue;
      }
      last = last * w + (1 - w) * v;
      wk *= w;
      out[i] = last / (1 - wk);
    }
  }
  return out;
}

function isConstant(y: ArrayLike<number>, start: number, end: number): boolean {
  for (let i = start + 1; i < end; i++) if (y[i] !== y[start]) return false;
  return true;
}
