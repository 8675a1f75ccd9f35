/**
 * One x range for every chart of a panel: the span of everything any chart draws (the shown runs' curves of the
 * shown metrics, their eval points, the primary run's checkpoints), on the chosen x axis. Charts that each fit
 * their own data disagree (an eval-only chart at 0–30000 beside training charts at 0–40000), and then the same
 * checkpoint sits at different places. Also the room each chart's y axis leaves around its data. Pure, unit-tested
 * in node.
 */
import type { MetricsStore, RunState, XMode } from './store';

export interface Extent {
  min: number;
  max: number;
}

/** The x extent of the charts of `keys`, or undefined when nothing has a place on this axis. */
export function panelXExtent(store: MetricsStore, keys: readonly string[], xMode: XMode, hiddenRuns: ReadonlySet<string>): Extent | undefined {
  let min = Infinity;
  let max = -Infinity;
  const take = (x: number | undefined): void => {
    if (x === undefined || !Number.isFinite(x)) return;
    if (x < min) min = x;
    if (x > max) max = x;
  };
  const shown = new Set(keys);
  for (const run of store.runs) {
    if (hiddenRuns.has(run.runKey)) continue;
    const t0 = xMode === 'relative' ? store.startTime(run) : 0;
    for (const [key, s] of run.series) {
      if (!shown.has(key)) continue;
      const xs = xMode === 'step' ? s.x : s.t;
      if (!xs) continue;
      for (const v of xs) take(v - t0);
    }
    for (const key of keys) for (const m of store.evalMarks(run, key, xMode, false)) take(m.x);
  }
  const primary: RunState | undefined = store.primary;
  if (primary && !hiddenRuns.has(primary.runKey)) {
    const anyKey = keys.find((k) => primary.series.has(k)) ?? keys[0] ?? '';
    for (const c of primary.checkpoints) take(store.xOfStep(primary, anyKey, c.step, xMode));
  }
  return min <= max ? { min, max } : undefined;
}

/**
 * [min, max] widened by `fraction` of its span at both ends (of the value when flat): room above and below a chart's
 * data, so a point at the top or bottom value is not cut by the plot's edge. Never across zero: a learning rate's
 * axis gets no negative ticks.
 */
export function padRange(min: number, max: number, fraction: number): Extent {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max < min) return { min, max };
  const pad = (max > min ? max - min : Math.abs(max) || 1) * fraction;
  // Flat: widen away from zero only (all zeros: upwards).
  if (max === min) return min >= 0 ? { min: Math.max(0, min - pad), max: max + pad } : { min: min - pad, max: Math.min(0, max + pad) };
  return { min: min >= 0 && min - pad < 0 ? 0 : min - pad, max: max <= 0 && max + pad > 0 ? 0 : max + pad };
}
