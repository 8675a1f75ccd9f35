/**
 * Min-max decimation for drawing a long series into a chart a few hundred pixels wide. Per pixel bucket the
 * minimum and the maximum survive, in x order, so a one-step loss spike is still drawn; a plain stride or an
 * average would erase it. O(points in view), with binary search for the view's ends in each segment.
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
}

export interface DecimateRange {
  /** Visible x range, inclusive; default the whole series. */
  xMin?: number;
  xMax?: number;
  /** Plot width in pixels: the number of buckets. */
  width: number;
}

/**
 * Decimate each segment to at most 2·width + 2 points: the min and max of every bucket (the bucket of x is
 * floor((x − xMin) / (xMax − xMin) · width), the last one closed), plus the point just
 * outside each end of the view (so lines run to the chart's edge; the first/last visible point when there is
 * none outside). A segment with no more than that many points in view is passed through exactly. Points that
 * summarise their blocks (Series: ValueColumn.blockExtremes) are read a block at a time wherever a whole block
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
    emitSegment(out, p, bucketExtremes(p, first, last, before, after, xMin, xMax, width));
  }
  return out;
}

function bucketExtremes(
  s: Points,
  first: number,
  last: number,
  before: number,
  after: number,
  xMin: number,
  xMax: number,
  width: number,
): number[] {
  const picked: number[] = [before];
  const span = xMax - xMin;
  let bucket = -1;
  let minI = -1;
  let maxI = -1;
  let minV = NaN;
  let maxV = NaN;
  const flush = () => {
    if (minI < 0) return;
    const a = Math.min(minI, maxI);
    const b = Math.max(minI, maxI);
    if (a !== picked[picked.length - 1]) picked.push(a);
    if (b !== a) picked.push(b);
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
        const lo = i + (e & 0xff);
        const hi = i + (e >>> 8);
        const vLo = s.yAt(lo);
        const vHi = s.yAt(hi);
        if (b !== bucket) {
          flush();
          bucket = b;
          minI = lo;
          minV = vLo;
          maxI = hi;
          maxV = vHi;
        } else {
          if (vLo < minV) (minI = lo), (minV = vLo);
          if (vHi > maxV) (maxI = hi), (maxV = vHi);
        }
        i = end;
        continue;
      }
    }
    const v = s.yAt(i);
    if (b !== bucket) {
      flush();
      bucket = b;
      minI = maxI = i;
      minV = maxV = v;
      continue;
    }
    if (v < minV) (minI = i), (minV = v);
    if (v > maxV) (maxI = i), (maxV = v);
  }
  flush();
  if (after !== picked[picked.length - 1]) picked.push(after);
  return picked;
}

function emitSegment(out: DecimatedSeries, s: Points, indices: number[]): void {
  if (indices.length === 0) return;
  out.segmentStarts.push(out.x.length);
  for (const i of indices) {
    out.x.push(s.xAt(i));
    out.y.push(s.yAt(i));
    out.index.push(i);
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
