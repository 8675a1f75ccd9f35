/**
 * Min-max decimation for drawing a long series into a chart a few hundred pixels wide, as W&B's "full fidelity"
 * line plots do: per pixel bucket one point survives, the bucket's last (a real point of the series, so its step,
 * time and smoothed value are exact), with the bucket's minimum and maximum beside it, which the chart draws as a
 * translucent band under the curve. A one-step loss spike is still drawn (as the band's reach); a plain stride or
 * an average would erase it. O(points in view), with binary search for the view's ends in each segment.
 */
import type { Points, Segment } from './series';
import { BLOCK } from './compact';

export interface DecimateInput {
  points: Points;
  /** Monotonic stretches (x non-decreasing inside each); default one segment over everything. */
  segments?: readonly Segment[];
}

/** Plain arrays: cheap at this size and safe through a webview's JSON postMessage. */
export interface DecimatedSeries {
  x: number[];
  y: number[];
  /** Index into the source arrays of every output point (for tooltips that show exact values). */
  index: number[];
  /** Output positions where a new segment begins (always starts with 0 when there are points). */
  segmentStarts: number[];
  /**
   * Present when a bucket was reduced to one point: per output point, the source index of the smallest and of the
   * largest value of the bucket it stands for (its own index for a point passed through as itself).
   */
  loIndex?: number[];
  hiIndex?: number[];
}

export interface DecimateRange {
  /** Visible x range, inclusive; default the whole series. */
  xMin?: number;
  xMax?: number;
  /** Plot width in pixels: the number of buckets. */
  width: number;
}

/**
 * Decimate each segment to at most width + 2 points: the last point of every bucket with the bucket's min and max
 * (the bucket of x is floor((x − xMin) / (xMax − xMin) · width), the last one closed), plus the point just
 * outside each end of the view (so lines run to the chart's edge; the first/last visible point when there is
 * none outside). A segment with no more than 2·width + 2 points in view is passed through exactly (no band). Points
 * that summarise their blocks (Series: ValueColumn.blockExtremes) are read a block at a time wherever a whole block
 * falls in one bucket, so the whole range of a long series costs O(blocks + buckets · BLOCK), not O(points); the
 * result is the same point for point.
 */
export function decimateMinMax(series: DecimateInput, range: DecimateRange): DecimatedSeries {
  const out: DecimatedSeries = { x: [], y: [], index: [], segmentStarts: [] };
  const p = series.points;
  const n = p.length;
  const segments = series.segments ?? (n > 0 ? [{ start: 0, end: n }] : []);
  const width = Math.max(1, Math.floor(range.width));
  for (const seg of segments) {
    const lo = Math.max(0, seg.start);
    const hi = Math.min(n, seg.end);
    if (hi <= lo) continue;
    const xMin = range.xMin ?? p.xAt(lo);
    const xMax = range.xMax ?? p.xAt(hi - 1);
    if (!(xMax >= xMin)) continue;
    const first = lowerBound(p, lo, hi, xMin);
    const last = upperBound(p, lo, hi, xMax) - 1;
    if (last < first) {
      // Nothing inside the view, but the segment may cross it: draw the two points around it.
      if (first > lo && first < hi) emitSegment(out, p, [first - 1, first]);
      continue;
    }
    const before = first > lo ? first - 1 : first;
    const after = last < hi - 1 ? last + 1 : last;
    const budget = 2 * width + 2;
    if (after - before + 1 <= budget) {
      const all: number[] = [];
      for (let i = before; i <= after; i++) all.push(i);
      emitSegment(out, p, all);
      continue;
    }
    const b = bucketExtremes(p, first, last, before, after, xMin, xMax, width);
    emitSegment(out, p, b.picked, b.lo, b.hi);
  }
  return out;
}

/** Per bucket its last point, and the indices of its smallest and largest values; `before`/`after` as themselves. */
function bucketExtremes(
  s: Points,
  first: number,
  last: number,
  before: number,
  after: number,
  xMin: number,
  xMax: number,
  width: number,
): { picked: number[]; lo: number[]; hi: number[] } {
  const picked: number[] = [];
  const lo: number[] = [];
  const hi: number[] = [];
  const own = (i: number) => {
    picked.push(i);
    lo.push(i);
    hi.push(i);
  };
  // The point before the view (or the first in it) as itself, so the line starts where the data does.
  own(before);
  const span = xMax - xMin;
  let bucket = -1;
  let lastI = -1;
  let minI = -1;
  let maxI = -1;
  let minV = NaN;
  let maxV = NaN;
  const flush = () => {
    if (lastI < 0) return;
    const k = picked.length - 1;
    if (picked[k] === lastI) {
      // A first bucket of one point, already out as `before`: it stands for its bucket.
      lo[k] = minI;
      hi[k] = maxI;
      return;
    }
    picked.push(lastI);
    lo.push(minI);
    hi.push(maxI);
  };
  const blocks = s.blockExtremes ? (i: number) => s.blockExtremes!(i) : undefined;
  for (let i = first; i <= last; i++) {
    const b = span > 0 ? Math.min(width - 1, Math.floor(((s.xAt(i) - xMin) / span) * width)) : 0;
    if (blocks && (i & (BLOCK - 1)) === 0 && i + BLOCK - 1 <= last) {
      // A whole block in this bucket (x never decreases in a segment, so its last point's bucket says): its summary
      // gives the first smallest and largest value, which is what reading its points one by one would find.
      const e = blocks(i);
      const end = i + BLOCK - 1;
      if (e >= 0 && (span > 0 ? Math.min(width - 1, Math.floor(((s.xAt(end) - xMin) / span) * width)) : 0) === b) {
        const loI = i + (e & 0xff);
        const hiI = i + (e >>> 8);
        const vLo = s.yAt(loI);
        const vHi = s.yAt(hiI);
        if (b !== bucket) {
          flush();
          bucket = b;
          minI = loI;
          minV = vLo;
          maxI = hiI;
          maxV = vHi;
        } else {
          if (vLo < minV || Number.isNaN(minV)) (minI = loI), (minV = vLo);
          if (vHi > maxV || Number.isNaN(maxV)) (maxI = hiI), (maxV = vHi);
        }
        // The bucket's drawn point is its last: the block's last, as reading it point by point would leave it.
        lastI = end;
        i = end;
        continue;
      }
    }
    const v = s.yAt(i);
    if (b !== bucket) {
      flush();
      bucket = b;
      lastI = minI = maxI = i;
      minV = maxV = v;
      continue;
    }
    lastI = i;
    // A NaN (never in a parsed series, possible in plain arrays) is not an extreme unless the bucket has nothing else.
    if (v < minV || Number.isNaN(minV)) (minI = i), (minV = v);
    if (v > maxV || Number.isNaN(maxV)) (maxI = i), (maxV = v);
  }
  flush();
  // The last bucket's point is `last`; the one after the view (when there is one) as itself.
  if (after !== last) own(after);
  return { picked, lo, hi };
}

function emitSegment(out: DecimatedSeries, s: Points, indices: number[], lo?: number[], hi?: number[]): void {
  if (indices.length === 0) return;
  if (lo && hi && !out.loIndex) {
    // The first banded segment: the points already out stand for themselves.
    out.loIndex = [...out.index];
    out.hiIndex = [...out.index];
  }
  out.segmentStarts.push(out.x.length);
  for (let k = 0; k < indices.length; k++) {
    const i = indices[k];
    out.x.push(s.xAt(i));
    out.y.push(s.yAt(i));
    out.index.push(i);
    if (out.loIndex) {
      out.loIndex.push(lo ? lo[k] : i);
      out.hiIndex!.push(hi ? hi[k] : i);
    }
  }
}

/** First index in [lo, hi) with x[i] >= v (hi when none). */
export function lowerBound(x: Pick<Points, 'xAt'>, lo: number, hi: number, v: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x.xAt(mid) < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index in [lo, hi) with x[i] > v (hi when none). */
export function upperBound(x: Pick<Points, 'xAt'>, lo: number, hi: number, v: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x.xAt(mid) <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
