/// <reference lib="dom" />
/**
 * A chart whose y range the user fixed keeps its whole x range. chart.js leaves points outside the y axis's fixed
 * bounds out of the x axis's automatic range (a loss fixed to 1.5–2.5 lost its first 5,000 steps, where the loss was
 * higher), so the axis moved under the user's hand: this plugin widens x back to every point drawn. A zoomed (fixed)
 * x range is left alone.
 */
import type { Plugin, Scale } from './chartjs';

export function keepXWhenYFixed(): Plugin<'line'> {
  return {
    id: 'remoteRunsKeepX',
    afterDataLimits: (chart, args: { scale: Scale }) => {
      const x = args.scale;
      if (x.id !== 'x' || x.options.min !== undefined || x.options.max !== undefined) return;
      const y = chart.options.scales?.y;
      if (!y || (y.min === undefined && y.max === undefined)) return;
      let min = Infinity;
      let max = -Infinity;
      for (const ds of chart.data.datasets) {
        for (const p of ds.data as { x: number }[]) {
          if (!Number.isFinite(p.x)) continue;
          if (p.x < min) min = p.x;
          if (p.x > max) max = p.x;
        }
      }
      if (min < x.min) x.min = min;
      if (max > x.max) x.max = max;
    },
  };
}
