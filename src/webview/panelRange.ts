/**
 * One x range for every chart of a panel: the span of everything any chart draws (the shown runs' curves of the
 * shown metrics, their eval points, the primary run's checkpoints), on the chosen x axis. Charts that each fit
 * their own data disagree (an eval-only chart at 0–30000 beside training charts at 0–40000), and then the same
 * checkpoint sits at different places. Pure, unit-tested in node.
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
