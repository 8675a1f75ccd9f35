/**
 * The words of the plateau hint and of the per-metric direction switch. The hint never names a best newer than its
 * "flat since": from that step on the metric moved less than the fraction (from its value there to its best since),
 * which is what it says. Pure, unit-tested in node.
 */
import type { PlateauHint } from '../shared/metricsProtocol';
import type { PlateauDirection } from '../shared/metricDirection';
import { formatValue } from './store';

/** The hint: `short` for the chart's one reserved line, `full` for its tooltip and screen readers. */
export function plateauText(h: PlateauHint, mode: 'panel' | 'inline'): { short: string; full: string } {
  const pct = `${formatValue(h.fraction * 100)}%`;
  const moved = h.direction === 'higher' ? 'rose' : 'fell';
  const arrow = h.direction === 'higher' ? '↑' : '↓';
  const since = `since step ${formatValue(h.flatSince)}`;
  const full =
    `Plateau (${h.direction} is better): ${moved} at most ${pct} ${since} ` +
    `(${formatValue(h.flatValue)} there, best since ${formatValue(h.best)}), flat for at least ${formatValue(h.window)} steps`;
  const short = mode === 'inline' ? `${arrow} flat ${since}` : `${arrow} flat ${since}: ${moved} ≤ ${pct} (${formatValue(h.flatValue)} → ${formatValue(h.best)})`;
  return { short, full };
}

/**
 * The next choice of a metric's direction switch, from its name's own direction: a click first flips it (what a
 * wrongly guessed metric needs), then turns the hint off, then back: `higher → lower → off`; a metric whose name
 * says nothing goes `off → lower → higher`.
 */
export function nextDirection(d: PlateauDirection, own: PlateauDirection): PlateauDirection {
  const order: PlateauDirection[] = own === 'off' ? ['off', 'lower', 'higher'] : [own, own === 'higher' ? 'lower' : 'higher', 'off'];
  return order[(order.indexOf(d) + 1) % order.length];
}

/** The switch's face and what it says it does. */
export function directionSwitch(key: string, d: PlateauDirection, own: PlateauDirection): { symbol: string; label: string } {
  const now = d === 'off' ? `No plateau hint for ${key}` : `${d === 'higher' ? 'Higher' : 'Lower'} is better for ${key} (plateau hint)`;
  const next = nextDirection(d, own);
  const then = next === 'off' ? 'no plateau hint' : `${next} is better`;
  return { symbol: d === 'higher' ? '↑' : d === 'lower' ? '↓' : '–', label: `${now}; click for ${then}` };
}
