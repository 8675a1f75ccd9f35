/** The pinned run's status-bar text. Pure, so it is unit-tested. */
import { xLabel } from '../../shared/xLabel';
import { displayName } from '../../shared/display';

export { xLabel };

/**
 * The metric to show: the configured key when the run has it, else the first key that looks like a loss
 * (`loss`, `train/loss`, `eval_loss`), else the first key. Undefined when the run has no metrics yet.
 */
export function pickStatusMetric(keys: readonly string[], configured: string): string | undefined {
  if (configured && keys.includes(configured)) return configured;
  return keys.find((k) => /(^|[/_.-])loss$/i.test(k)) ?? keys[0];
}

/**
 * `$(pulse) run · step 23,760 · loss 0.9123` (fewer parts while data is missing); `epoch 12` when the run's x is
 * its epoch (`xAxis`, RunFeed.xAxis).
 */
export function statusText(runName: string, step: number | undefined, metric: string | undefined, value: number | undefined, xAxis?: string): string {
  runName = displayName(runName);
  metric = metric === undefined ? undefined : displayName(metric);
  const parts = [`$(pulse) ${runName.replace(/\$\(/g, '$\u200b(')}`];
  if (step !== undefined) parts.push(`${xLabel(xAxis).replace(/\$\(/g, '$\u200b(')} ${step.toLocaleString('en-US')}`);
  if (metric !== undefined && value !== undefined) parts.push(`${metric.replace(/\$\(/g, '$\u200b(')} ${Number(value.toPrecision(4))}`);
  return parts.join(' · ');
}

/**
 * What a screen reader says for the pinned run's item: `Pinned run run-a on box/docker:trainer, step 23,760, loss
 * 0.9123. Click to open its metrics.` Given to the item as its accessibility label: without one, VS Code reads the
 * text and then the tooltip's raw markdown, where MarkdownString.appendText wrote every space as `&nbsp;`.
 */
export function statusAriaLabel(runName: string, where: string, step: number | undefined, metric: string | undefined, value: number | undefined, xAxis?: string): string {
  const parts = [`Pinned run ${displayName(runName)} on ${displayName(where)}`];
  if (step !== undefined) parts.push(`${xLabel(xAxis)} ${step.toLocaleString('en-US')}`);
  if (metric !== undefined && value !== undefined) parts.push(`${displayName(metric)} ${Number(value.toPrecision(4))}`);
  return `${parts.join(', ')}. Click to open its metrics.`;
}

/**
 * Tab titles of the open metrics panels, by run key: `Metrics: <run>`, and where two panels show runs of the same
 * name (the same folder on two hosts or containers), each with where its run is: `Metrics: workspace · kpro6/pct:200`.
 */
export function panelTitles(panels: readonly { key: string; runName: string; where: string }[]): Map<string, string> {
  const count = new Map<string, number>();
  for (const p of panels) count.set(p.runName, (count.get(p.runName) ?? 0) + 1);
  return new Map(panels.map((p) => [p.key, (count.get(p.runName) ?? 0) > 1 ? `Metrics: ${displayName(p.runName)} · ${displayName(p.where)}` : `Metrics: ${displayName(p.runName)}`]));
}
