/**
 * Axis ticks people read at a glance: values at 1-2-5 steps (`0, 2k, 4k`; `1e-4, 2e-4`), labelled as short as the
 * step allows (`10k`, `12.5k`, `5e-5`, `0.25`), and relative times at clock steps (`20m`, `1h 20m`, not `16m 40s`).
 * Pure: chart.js asks for them through a scale's afterBuildTicks and its tick callback (metricChart.ts).
 */

/** The smallest 1-2-5 step (× a power of ten) that fits [min, max] in at most `maxCount` intervals. */
export function niceStep(span: number, maxCount: number): number {
  if (!(span > 0) || !Number.isFinite(span)) return 1;
  const raw = span / Math.max(1, maxCount);
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw * (1 - 1e-12)) return m * p;
  return 10 * p;
}

/** Multiples of niceStep inside [min, max] (both ends included when they are multiples). */
export function niceTicks(min: number, max: number, maxCount: number): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  if (max === min) return [min];
  const step = niceStep(max - min, maxCount);
  return multiples(min, max, step);
}

function multiples(min: number, max: number, step: number): number[] {
  const eps = step * 1e-9;
  const first = Math.ceil((min - eps) / step);
  const last = Math.floor((max + eps) / step);
  const out: number[] = [];
  // Bounded: niceStep keeps the count near maxCount; the cap guards against a degenerate step.
  for (let k = first; k <= last && out.length < 1000; k++) out.push(clean(k * step, step));
  return out;
}

/** 0.30000000000000004 → 0.3: a multiple of the step rounded to the step's own digits. */
function clean(v: number, step: number): number {
  const digits = Math.max(0, -Math.floor(Math.log10(step)) + 1);
  return digits > 0 && digits < 100 ? Number(v.toFixed(Math.min(digits, 20))) : v === 0 ? 0 : v;
}

const SUFFIXES: ReadonlyArray<readonly [number, string]> = [
  [1e12, 'T'],
  [1e9, 'B'],
  [1e6, 'M'],
  [1e3, 'k'],
];

/**
 * A tick's label, with no more digits than the step between ticks needs: `10k`, `12.5k`, `1.5M` from 10,000 up
 * (from 1,000 up when the ticks step by thousands);
 * `5e-5`, `1.5e-4` below 0.001; `0.25`, `3`, `120` in between. Step 0 (a lone tick): the value's own 3 digits.
 */
export function formatTick(v: number, step: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  const s = step > 0 && Number.isFinite(step) ? step : a / 100;
  // From 10,000 up, or from 1,000 up on an axis that steps by thousands: one axis reads `8k, 10k, 12k`, not `8000, 10k`.
  if (a >= 1e4 || (a >= 1e3 && s >= 1e3)) {
    const [unit, suffix] = SUFFIXES.find(([u]) => a >= u) ?? [1, ''];
    return `${trimFixed(v / unit, decimalsFor(s / unit))}${suffix}`;
  }
  if (a < 1e-3) {
    // Mantissa digits as the step needs relative to the value: 1e-4, 2e-4 → one; 1.5e-4 → two.
    const digits = Math.min(6, Math.max(0, Math.floor(Math.log10(a)) - Math.floor(Math.log10(s))));
    return v.toExponential(digits).replace(/\.?0+e/, 'e').replace('e+', 'e');
  }
  return trimFixed(v, decimalsFor(s));
}

/** Digits after the point that write the step itself: 2.5 → 1, 0.05 → 2, 20 → 0. */
function decimalsFor(step: number): number {
  const [mantissa, exp] = Number(step.toPrecision(6)).toExponential().split('e');
  const frac = mantissa.split('.')[1]?.length ?? 0;
  return Math.min(10, Math.max(0, frac - Number(exp)));
}

function trimFixed(v: number, decimals: number): string {
  const t = v.toFixed(decimals);
  return decimals > 0 ? t.replace(/\.?0+$/, '') : t;
}

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;
/** Clock steps for a relative time axis, in ms. */
const DURATION_STEPS = [S, 2 * S, 5 * S, 10 * S, 15 * S, 30 * S, M, 2 * M, 5 * M, 10 * M, 15 * M, 20 * M, 30 * M, H, 2 * H, 3 * H, 6 * H, 12 * H, D, 2 * D, 7 * D];

/** Ticks of a relative time axis (ms): multiples of the smallest clock step that fits `maxCount` intervals. */
export function durationTicks(min: number, max: number, maxCount: number): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  if (max === min) return [min];
  const raw = (max - min) / Math.max(1, maxCount);
  if (raw < S) return niceTicks(min, max, maxCount);
  const step = DURATION_STEPS.find((d) => d >= raw) ?? niceStep(max - min, maxCount * D) * D;
  return multiples(min, max, step);
}

/** `45s`, `20m`, `1h 20m`, `2d 3h`, `0.5s`: the two largest parts, zero parts left out. */
export function formatDurationTick(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < S) return `${sign}${Number((a / S).toPrecision(2))}s`;
  const total = Math.round(a / S);
  const parts: [number, string][] = [
    [Math.floor(total / 86400), 'd'],
    [Math.floor((total % 86400) / 3600), 'h'],
    [Math.floor((total % 3600) / 60), 'm'],
    [total % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  const shown = parts.slice(first, first + 2).filter(([n]) => n > 0);
  return sign + shown.map(([n, u]) => `${n}${u}`).join(' ');
}

/** The step between ticks chart.js was given (0 for fewer than two). */
export function stepOf(ticks: readonly { value: number }[]): number {
  return ticks.length >= 2 ? Math.abs(ticks[1].value - ticks[0].value) : 0;
}

/**
 * Ticks of a log axis over [min, max] (both > 0): 1, 2, 3 and 5, else 1, 2 and 5, else 1 and 5, else 1 × each power of ten
 * inside (the densest that keeps at most `maxCount`), then every k-th power; linear steps in a range too narrow for two. Labelled with `formatTick(v, v)`: `1e-5`,
 * `2e-5`, `0.002`, `20k`, never chart.js's `2.0000e-5` (which a 46 px axis cut to `000e-5`).
 */
export function logTicks(min: number, max: number, maxCount: number): number[] {
  if (!(min > 0) || !(max > 0) || !Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (max < min) [min, max] = [max, min];
  const lo = Math.floor(Math.log10(min));
  const hi = Math.ceil(Math.log10(max));
  const within = (v: number): boolean => v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9);
  let out: number[] = [];
  // Densest first: a range inside one decade (0.9–3.5) gets 1, 2, 3; one over many gets 1, 5 or powers of ten only.
  // Never 7, 8, 9 beside the next 1: on a log axis they are a few pixels apart and their labels overlap.
  for (const mantissas of [[1, 2, 3, 5], [1, 2, 5], [1, 5], [1]]) {
    out = [];
    for (let e = lo; e <= hi; e++) for (const m of mantissas) if (within(m * 10 ** e)) out.push(Number((m * 10 ** e).toPrecision(12)));
    if (out.length <= maxCount) break;
  }
  // Too narrow for two of those (0.91–0.99): linear steps inside it.
  if (out.length < 2) return niceTicks(min, max, maxCount).filter((v) => v > 0);
  if (out.length <= maxCount) return out;
  // Many decades: every k-th power of ten.
  const every = Math.ceil(out.length / Math.max(1, maxCount));
  return out.filter((v) => Math.round(Math.log10(v)) % every === 0);
}
