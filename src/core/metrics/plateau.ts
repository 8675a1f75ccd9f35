/**
 * Has a metric stopped improving? Works on a smoothed series (raw values are too noisy to call a plateau).
 * Only the last segment is looked at: after a resume, that is the run as it is now.
 */
import type { Segment } from './series';

export type MetricDirection = 'lower' | 'higher';

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
  x: ArrayLike<number>,
  y: ArrayLike<number>,
  options: PlateauOptions,
  segments?: readonly Segment[],
): PlateauResult {
  const seg = segments && segments.length > 0 ? segments[segments.length - 1] : { start: 0, end: x.length };
  const sign = options.direction === 'lower' ? 1 : -1;
  // Work in "lower is better" terms: v = sign·y.
  const idx: number[] = [];
  for (let i = seg.start; i < seg.end; i++) if (Number.isFinite(y[i])) idx.push(i);
  if (idx.length === 0) return { state: 'too-short', span: 0 };
  const lastX = x[idx[idx.length - 1]];
  const span = lastX - x[idx[0]];
  if (span < options.window) return { state: 'too-short', span };

  const bestSoFar: number[] = [];
  let best = Infinity;
  let bestAt = idx[0];
  for (const i of idx) {
    const v = sign * y[i];
    if (v < best) {
      best = v;
      bestAt = i;
    }
    bestSoFar.push(best);
  }
  const improvement = (from: number, to: number) => (from - to) / (from === 0 ? 1 : Math.abs(from));
  let k = 0;
  while (k < idx.length && improvement(bestSoFar[k], best) > options.fraction) k++;
  const flatSince = x[idx[k]];

  // Best before the window (the last point at or before lastX - window) against the final best.
  let w = 0;
  while (w + 1 < idx.length && x[idx[w + 1]] <= lastX - options.window) w++;
  const recentImprovement = improvement(bestSoFar[w], best);

  return {
    state: lastX - flatSince >= options.window ? 'plateau' : 'improving',
    flatSince,
    best: sign * best,
    bestStep: x[bestAt],
    recentImprovement,
  };
}

// Whole words only (`_`, `/`, `-`, `.`, digits separate them): `grad_accum` is not an accuracy.
const LOWER = /(^|[^a-z])(loss|losses|perplexity|ppl|err|error|mse|mae|rmse|nll|wer|cer|bpc|bpb|regret)(?![a-z])/;
const HIGHER = /(^|[^a-z])(acc|accuracy|f1|precision|recall|auc|auroc|bleu|rouge\w*|meteor|iou|miou|dice|map|em|exact_match|reward|return|score|psnr|ssim|r2)(?![a-z])/;

/**
 * Which way is better for a metric key, from its last path part; undefined when the name does not say
 * (learning rate, grad norm, epoch), where a plateau means nothing.
 */
export function metricDirection(key: string): MetricDirection | undefined {
  const name = key.slice(key.lastIndexOf('/') + 1).toLowerCase();
  if (LOWER.test(name)) return 'lower';
  if (HIGHER.test(name)) return 'higher';
  return undefined;
}
