/**
 * Has a metric stopped improving? Works on a smoothed series (raw values are too noisy to call a plateau).
 * Only the last segment is looked at: after a resume, that is the run as it is now.
 */
import type { Points, Segment } from './series';
import type { MetricDirection } from '../../../shared/metricDirection';

export type { MetricDirection };

export interface PlateauOptions {
  /** How many steps (x units, not points) without enough improvement make a plateau. */
  window: number;
  /** Relative improvement that still counts as "not improving", e.g. 0.01 for 1%. */
  fraction: number;
  direction: MetricDirection;
}

export type PlateauResult =
  | {
      /** Enough data to judge. */
      state: 'plateau' | 'improving';
      /**
       * The step from which the metric never again improved by more than `fraction` on its best so far: the
       * start of the flat stretch (for `improving`, the stretch is still shorter than the window).
       */
      flatSince: number;
      /** Best value in the segment, and its step. */
      best: number;
      bestStep: number;
      /** Relative improvement over the last `window` steps (positive = better). */
      recentImprovement: number;
    }
  | { state: 'too-short'; span: number };

/**
 * Judge the last segment of (x, smoothed y). With `best(i)` the best value up to point i and B the final best,
 * the flat stretch starts at the first point whose best-so-far is within `fraction` of B; it is a plateau when
 * that stretch spans at least `window` steps. Equivalently: over the last `window` steps the best value did not
 * improve by more than `fraction` (relative to the best before them; absolute when that is 0).
 */
export function detectPlateau(
  points: Pick<Points, 'length' | 'xAt'>,
  /** The (smoothed) values by index: an array, or a store with `at` (incrementalEma.ts). */
  y: { at(index: number): number | undefined },
  options: PlateauOptions,
  segments?: readonly Segment[],
): PlateauResult {
  const seg = segments && segments.length > 0 ? segments[segments.length - 1] : { start: 0, end: points.length };
  const sign = options.direction === 'lower' ? 1 : -1;
  // Work in "lower is better" terms: v = sign·y. Called on every update of a live run with a million points,
  // so it makes two passes over the segment and allocates nothing.
  let first = -1;
  let last = -1;
  let best = Infinity;
  let bestAt = -1;
  for (let i = seg.start; i < seg.end; i++) {
    const yi = y.at(i) ?? NaN;
    if (!Number.isFinite(yi)) continue;
    if (first < 0) first = i;
    last = i;
    const v = sign * yi;
    if (v < best) {
      best = v;
      bestAt = i;
    }
  }
  if (first < 0) return { state: 'too-short', span: 0 };
  const lastX = points.xAt(last);
  const span = lastX - points.xAt(first);
  if (span < options.window) return { state: 'too-short', span };

  const improvement = (from: number, to: number) => (from - to) / (from === 0 ? 1 : Math.abs(from));
  // flatSince: the first point whose best-so-far is within `fraction` of the final best. Before the window:
  // the best-so-far at the last point at or before lastX - window (x never decreases inside a segment).
  let flatSince = NaN;
  let beforeWindow = NaN;
  let bestSoFar = Infinity;
  const windowStart = lastX - options.window;
  for (let i = first; i <= last; i++) {
    const yi = y.at(i) ?? NaN;
    if (!Number.isFinite(yi)) continue;
    const v = sign * yi;
    if (v < bestSoFar) bestSoFar = v;
    const xi = points.xAt(i);
    if (xi <= windowStart) beforeWindow = bestSoFar; // true at `first` at least, since span >= window
    if (Number.isNaN(flatSince) && improvement(bestSoFar, best) <= options.fraction) flatSince = xi;
    if (!Number.isNaN(flatSince) && xi > windowStart) break;
  }
  const recentImprovement = improvement(beforeWindow, best);

  return {
    state: lastX - flatSince >= options.window ? 'plateau' : 'improving',
    flatSince,
    best: sign * best,
    bestStep: points.xAt(bestAt),
    recentImprovement,
  };
}

// The name rule lives in src/shared (the webview shows and flips the direction too).
export { metricDirection } from '../../../shared/metricDirection';
