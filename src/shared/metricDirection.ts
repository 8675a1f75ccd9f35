/**
 * Which way is better for a metric, from its name: the default of the plateau hint, read by the presenter (which
 * computes the hint) and by the webview (which shows the direction and lets the user flip it, viewState.ts).
 * Pure and dependency-free: both bundles import it.
 */

export type MetricDirection = 'lower' | 'higher';

/** What the user may choose per metric: a direction, or no plateau hint at all. */
export type PlateauDirection = MetricDirection | 'off';

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

/** The direction the plateau hint of `key` uses: the user's choice when there is one, else the name's. */
export function plateauDirection(key: string, chosen: Readonly<Record<string, PlateauDirection>> | undefined): PlateauDirection {
  const c = chosen && Object.prototype.hasOwnProperty.call(chosen, key) ? chosen[key] : undefined;
  return c ?? metricDirection(key) ?? 'off';
}
