/**
 * The webview's copy of what the extension sent: runs, their decimated series, their evals, reference lines.
 * Applies snapshots and incremental updates (one path: a snapshot is a run whose every series is replaced), and
 * turns series and evals into chart points for the chosen x axis (step, wall time, time since the run's start).
 * Pure: no DOM, no chart.js, so it is unit-tested in node. The types are the protocol's own.
 */
import { localTime } from '../shared/localTime';
import type {
  EvalPointWire,
  ReferenceLine,
  RunHeader,
  RunSnapshot,
  SeriesChunk,
  SeriesUpdate,
  ToWebview,
  ViewMode,
} from '../shared/metricsProtocol';
import type { XMode } from './viewState';
import { countFields } from './evalSeries';
import { displayName } from '../shared/display';

export type { XMode };

/** A run as the webview holds it: the snapshot's fields, with its series by key. */
export interface RunState extends Omit<RunSnapshot, 'series'> {
  series: Map<string, SeriesChunk>;
}

import type { BandPoint, Point } from './points';
export type { BandPoint, Point } from './points';

/** An eval drawn on one metric's chart: where, and which eval (for its tooltip). */
export interface EvalMark extends Point {
  eval: EvalPointWire;
}

export class MetricsStore {
  mode: ViewMode = 'panel';
  title = '';
  runs: RunState[] = [];
  references: ReferenceLine[] = [];
  highlight: number | null = null;

  /** Apply an extension message; returns what needs redrawing. */
  apply(msg: ToWebview): 'all' | 'data' | 'references' | 'none' {
    switch (msg.type) {
      case 'snapshot':
        this.mode = msg.mode;
        this.title = msg.title;
        this.runs = msg.runs.map(({ series, ...rest }) => {
          const run: RunState = { ...rest, evals: [...rest.evals], series: new Map() };
          for (const chunk of series) applySeries(run.series, { ...chunk, mode: 'replace' });
          return run;
        });
        this.references = msg.references;
        this.highlight = msg.highlight;
        return 'all';
      case 'update': {
        let newKeys = false;
        for (const u of msg.runs) {
          const run = this.runs.find((r) => r.runKey === u.runKey);
          if (!run) continue;
          const { series, ...header } = u;
          Object.assign(run, header satisfies RunHeader);
          for (const chunk of series) {
            if (!run.series.has(chunk.key)) newKeys = true;
            applySeries(run.series, chunk);
          }
        }
        return newKeys ? 'all' : 'data';
      }
      case 'references':
        this.references = msg.lines;
        return 'references';
      case 'evals': {
        const run = this.runs.find((r) => r.runKey === msg.runKey);
        if (!run) return 'none';
        run.evals = [...msg.evals];
        // A new eval metric is a new chart; new points are new datasets: rebuild.
        return 'all';
      }
      case 'highlight':
        this.highlight = msg.step;
        return 'none';
      case 'values':
      case 'empty':
      case 'runConfig':
        return 'none';
    }
  }

  get primary(): RunState | undefined {
    return this.runs.find((r) => r.role === 'primary');
  }

  /**
   * Every metric key across runs, the primary run's first, in the order they appeared; then the metrics only evals
   * measured (each gets a chart of its own, where its reference lines show too).
   */
  metricKeys(): string[] {
    const keys: string[] = [];
    const seen = new Set<string>();
    const ordered = [...this.runs].sort((a, b) => (a.role === 'primary' ? -1 : b.role === 'primary' ? 1 : 0));
    for (const r of ordered) for (const k of r.series.keys()) if (!seen.has(k)) seen.add(k), keys.push(k);
    for (const r of ordered) for (const k of evalMetricKeys(r)) if (!seen.has(k)) seen.add(k), keys.push(k);
    return keys;
  }

  /**
   * The run's evals that measured `key`, as points at their checkpoint's step (on a time axis: the time the run's
   * log gives that step). Log-y drops values ≤ 0; an eval whose step cannot be placed on the axis is left out.
   */
  evalMarks(run: RunState, key: string, xMode: XMode, logY: boolean): EvalMark[] {
    const out: EvalMark[] = [];
    // A count the eval printed (`prompts: 200`) is no metric: no point (its tooltip and the table still show it).
    if (countFields(run.evals).has(key)) return out;
    for (const e of run.evals) {
      const y = e.values[key];
      if (y === undefined || !Number.isFinite(y) || (logY && !(y > 0))) continue;
      const x = this.xOfStep(run, key, e.step, xMode);
      if (x === undefined) continue;
      out.push({ x, y, eval: e });
    }
    return out.sort((a, b) => a.x - b.x);
  }

  /**
   * The earliest wall time of a run (relative time counts from it): the extension's, from the whole log (a zoomed view
   * holds only the zoom's points); else the earliest of the points held. NaN when it logs no time.
   */
  startTime(run: RunState): number {
    if (run.startTime !== undefined && Number.isFinite(run.startTime)) return run.startTime;
    let t0 = Infinity;
    for (const s of run.series.values()) {
      if (!s.t) continue;
      for (const v of s.t) if (Number.isFinite(v)) {
        if (v < t0) t0 = v;
        break;
      }
    }
    return Number.isFinite(t0) ? t0 : NaN;
  }

  /** Points of one series on the chosen axis, with gaps between segments; log-y drops values ≤ 0. */
  points(run: RunState, key: string, which: 'raw' | 'smooth', xMode: XMode, logY: boolean): Point[] {
    const s = run.series.get(key);
    if (!s) return [];
    const ys = which === 'raw' ? s.y : s.s;
    return this.onAxis(run, s, xMode, (i, x) => ({ x, y: logY && !(ys[i] > 0) ? NaN : ys[i] }), (x) => ({ x, y: NaN }));
  }

  /**
   * One item per point of a series that has a place on the chosen axis (`at`), with a gap item (`gap`) before each
   * segment after the first, so no line (or band) is drawn across a resumed run's step going back.
   */
  private onAxis<T>(run: RunState, s: SeriesChunk, xMode: XMode, at: (i: number, x: number) => T, gap: (x: number) => T): T[] {
    const t0 = xMode === 'relative' ? this.startTime(run) : 0;
    const out: T[] = [];
    let seg = 1;
    for (let i = 0; i < s.x.length; i++) {
      const x = xMode === 'step' ? s.x[i] : s.t ? s.t[i] - t0 : NaN;
      if (!Number.isFinite(x)) continue;
      if (seg < s.segmentStarts.length && s.segmentStarts[seg] === i) {
        seg++;
        if (out.length) out.push(gap(x));
      }
      out.push(at(i, x));
    }
    return out;
  }

  /**
   * The min/max band of one series on the chosen axis (decimated points only carry one, see SeriesChunk.lo), with a
   * gap (NaN) between segments; empty when the series was sent point for point. Log-y leaves out what it cannot draw.
   */
  band(run: RunState, key: string, xMode: XMode, logY: boolean): BandPoint[] {
    const s = run.series.get(key);
    const lo = s?.lo;
    const hi = s?.hi;
    if (!s || !lo || !hi) return [];
    return this.onAxis(run, s, xMode, (i, x) => (logY && !(lo[i] > 0) ? { x, lo: NaN, hi: NaN } : { x, lo: lo[i], hi: hi[i] }), (x) => ({ x, lo: NaN, hi: NaN }));
  }

  /** Can this x axis be drawn for the run (time modes need a time field)? */
  hasTime(run: RunState): boolean {
    for (const s of run.series.values()) if (s.t && s.t.some(Number.isFinite)) return true;
    return false;
  }

  /**
   * The step at an x position of the chosen axis, read from the run's points of that metric (the nearest
   * one); for `step` it is x itself. Used to turn hovers and zooms in time into steps for the extension.
   */
  stepAt(run: RunState | undefined, key: string, x: number, xMode: XMode): number | undefined {
    if (xMode === 'step') return x;
    if (!run) return undefined;
    const s = run.series.get(key);
    if (!s?.t) return undefined;
    const t0 = xMode === 'relative' ? this.startTime(run) : 0;
    let best: number | undefined;
    let bestD = Infinity;
    for (let i = 0; i < s.x.length; i++) {
      const d = Math.abs(s.t[i] - t0 - x);
      if (d < bestD) {
        bestD = d;
        best = s.x[i];
      }
    }
    return best;
  }

  /**
   * The x position of a step on the chosen axis (nearest point of the run's series of that metric, or of any
   * series with times when that metric has none: an eval-only metric).
   */
  xOfStep(run: RunState | undefined, key: string, step: number, xMode: XMode): number | undefined {
    if (xMode === 'step') return step;
    if (!run) return undefined;
    const own = run.series.get(key);
    const s = own?.t ? own : own ? undefined : [...run.series.values()].find((c) => c.t !== undefined);
    if (!s?.t) return undefined;
    const t0 = xMode === 'relative' ? this.startTime(run) : 0;
    let best: number | undefined;
    let bestD = Infinity;
    for (let i = 0; i < s.x.length; i++) {
      const d = Math.abs(s.x[i] - step);
      if (d < bestD && Number.isFinite(s.t[i])) {
        bestD = d;
        best = s.t[i] - t0;
      }
    }
    return best;
  }
}

/** The metrics a run's evals measured, in order of first appearance; counts (evalSeries.ts) are not metrics. */
export function evalMetricKeys(run: Pick<RunState, 'evals'>): string[] {
  const keys: string[] = [];
  const counts = countFields(run.evals);
  for (const e of run.evals) for (const k of Object.keys(e.values)) if (!keys.includes(k) && !counts.has(k)) keys.push(k);
  return keys;
}

/** Apply one series update: `replace` (or a key not held yet) takes a copy of the chunk, `append` adds to it. */
function applySeries(map: Map<string, SeriesChunk>, u: SeriesUpdate): void {
  const { mode, lo, hi, ...chunk } = u;
  const have = map.get(u.key);
  if (mode === 'replace' || !have) {
    const copy: SeriesChunk = { ...chunk, x: [...u.x], y: [...u.y], s: [...u.s], t: u.t ? [...u.t] : undefined, segmentStarts: [...u.segmentStarts] };
    if (lo && hi) (copy.lo = [...lo]), (copy.hi = [...hi]);
    map.set(u.key, copy);
    return;
  }
  const base = have.x.length;
  // Loops, not push(...xs): a long chunk would overflow the call's argument limit.
  if (u.t || have.t) have.t ??= new Array<number>(base).fill(NaN);
  // A band on either side: the points without one stand for themselves (lo = hi = y).
  const banded = lo !== undefined && hi !== undefined;
  if ((banded || have.lo) && !(have.lo && have.hi)) (have.lo = [...have.y]), (have.hi = [...have.y]);
  for (let i = 0; i < u.x.length; i++) {
    have.x.push(u.x[i]);
    have.y.push(u.y[i]);
    have.s.push(u.s[i]);
    have.t?.push(u.t ? u.t[i] : NaN);
    have.lo?.push(banded ? lo[i] : u.y[i]);
    have.hi?.push(banded ? hi[i] : u.y[i]);
  }
  for (const st of u.segmentStarts) have.segmentStarts.push(st + base);
  have.total = u.total;
}

/** `2026-01-30 14:20` in local time: the eval's start in its tooltip. */
export const formatTime = localTime;

/** What hovering (or focusing) an eval's point shows, one fact per line: profile and checkpoint, time, state, values. */
export function evalTooltip(e: EvalPointWire, runLabel: string): string {
  const lines = [`eval ${displayName(e.profile)} · ${runLabel} · ${displayName(e.checkpoint)} (step ${formatValue(e.step)})`, `started ${formatTime(e.startedAt)} · ${e.state}`];
  for (const [k, v] of Object.entries(e.values)) lines.push(`${displayName(k)} = ${formatValue(v)}`);
  return lines.join('\n');
}

/** Format a number for a readout: up to 6 significant digits, no exponent for everyday magnitudes. */
export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e7)) return v.toExponential(4);
  return String(Number(v.toPrecision(6)));
}

/** `+0.123` / `−0.05`: a signed difference for "compared to the reference". */
export function formatDiff(v: number): string {
  if (!Number.isFinite(v)) return '';
  return `${v >= 0 ? '+' : '−'}${formatValue(Math.abs(v))}`;
}

/** Seconds as `1h 02m 03s` / `2m 03s` / `3.2s`, for the relative time axis (input in ms). */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  if (Math.abs(s) < 60) return `${Number(s.toFixed(1))}s`;
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}h ${pad(m)}m ${pad(sec)}s` : `${m}m ${pad(sec)}s`;
}
