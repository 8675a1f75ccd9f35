/// <reference lib="dom" />
/**
 * The min/max band under a decimated curve (W&B's "full fidelity" band): where the extension reduced a bucket of
 * the series to one point, it sent the bucket's smallest and largest value too; this chart.js plugin fills the
 * area between them, translucent, in the run's colour, under the curves. The band also counts for the y axis's
 * automatic range (a one-step spike is inside the band, not on the line), but never widens a range the user fixed.
 */
import type { Plugin, Scale } from './chartjs';
import type { BandPoint } from './points';

export interface Band {
  /** A CSS colour with its alpha (the band is drawn with it as is). */
  color: string;
  points: BandPoint[];
}

/** Alpha of a band's fill: visible behind a faint raw curve, never hiding it. */
export const BAND_ALPHA = 0.16;

/** The contiguous stretches of a band (split at gaps), each at least two points long. */
export function bandRuns(points: readonly BandPoint[]): BandPoint[][] {
  const runs: BandPoint[][] = [];
  let cur: BandPoint[] = [];
  for (const p of points) {
    if (Number.isFinite(p.x) && Number.isFinite(p.lo) && Number.isFinite(p.hi)) cur.push(p);
    else {
      if (cur.length > 1) runs.push(cur);
      cur = [];
    }
  }
  if (cur.length > 1) runs.push(cur);
  return runs;
}

/** The smallest lo and largest hi of the bands (undefined when none has a finite point). */
export function bandLimits(bands: readonly Band[]): { min: number; max: number } | undefined {
  let min = Infinity;
  let max = -Infinity;
  for (const b of bands) {
    for (const p of b.points) {
      if (!Number.isFinite(p.x) || !Number.isFinite(p.lo) || !Number.isFinite(p.hi)) continue;
      if (p.lo < min) min = p.lo;
      if (p.hi > max) max = p.hi;
    }
  }
  return min <= max ? { min, max } : undefined;
}

/** The plugin: `bands()` is read at every layout and draw (the chart's current bands). */
export function bandPlugin(bands: () => readonly Band[]): Plugin<'line'> {
  return {
    id: 'remoteRunsBand',
    afterDataLimits: (_chart, args: { scale: Scale }) => {
      const scale = args.scale;
      if (scale.id !== 'y') return;
      // A fixed range (the user's) stays exactly as set.
      if (scale.options.min !== undefined || scale.options.max !== undefined) return;
      const lim = bandLimits(bands());
      if (!lim) return;
      const logY = scale.type === 'logarithmic';
      if (lim.min < scale.min && (!logY || lim.min > 0)) scale.min = lim.min;
      if (lim.max > scale.max) scale.max = lim.max;
    },
    beforeDatasetsDraw: (chart) => {
      const { ctx, chartArea: area, scales } = chart;
      const x = scales.x;
      const y = scales.y;
      if (!area || !x || !y) return;
      ctx.save();
      ctx.beginPath();
      ctx.rect(area.left, area.top, area.width, area.height);
      ctx.clip();
      for (const band of bands()) {
        ctx.fillStyle = band.color;
        for (const run of bandRuns(band.points)) {
          ctx.beginPath();
          run.forEach((p, i) => (i === 0 ? ctx.moveTo : ctx.lineTo).call(ctx, x.getPixelForValue(p.x), y.getPixelForValue(p.hi)));
          for (let i = run.length - 1; i >= 0; i--) ctx.lineTo(x.getPixelForValue(run[i].x), y.getPixelForValue(run[i].lo));
          ctx.closePath();
          ctx.fill();
        }
      }
      ctx.restore();
    },
  };
}
