/**
 * The run table of one target: one row per run with its name, state, latest step, the last value of its metrics
 * and the config keys that differ between the target's runs (only those: what every run sets alike says nothing
 * about why two runs differ). Pure: the extension gathers each run's config (config.ts) and metrics (RunFeed), this
 * builds the table, and the same cells become the page, CSV and Markdown (util/textTable.ts).
 */
import type { Run } from '../types';
import { formatAge } from '../util/format';
import { configDifferences, mergedConfig, type RunConfig } from './config';

/** What was read of one run (undefined where not read yet or not readable: `configError` / `metricsError` say why). */
export interface RunFacts {
  run: Run;
  config?: RunConfig;
  configError?: string;
  /** Last step of the run's metrics (undefined: no metrics, or not read). */
  latestStep?: number;
  /** Last value per metric. */
  last?: Record<string, number>;
  metricsError?: string;
}

export interface RunTable {
  /** Metric columns (at most MAX_METRIC_COLUMNS, those most runs have first). */
  metrics: string[];
  /** Metrics not shown as columns. */
  moreMetrics: number;
  /** Config keys whose values differ across the runs. */
  differing: string[];
  rows: RunTableRow[];
}

export interface RunTableRow {
  name: string;
  path: string;
  state: string;
  latestStep?: number;
  last: Record<string, number>;
  /** Merged config (undefined: none read); `configNote` says when a file could not be read. */
  config?: Record<string, string>;
  configNote?: string;
}

export const MAX_METRIC_COLUMNS = 8;

/** A run's state in a word or three: live, when it last logged, or that it has no metrics log. */
export function runState(run: Run, remoteNow: number): string {
  if (run.metrics.length === 0) return 'no metrics log';
  if (run.live) return 'live';
  return run.metricsMtime > 0 ? `last logged ${formatAge(run.metricsMtime, remoteNow)}` : 'not logging';
}

export function buildRunTable(facts: readonly RunFacts[], remoteNow: number): RunTable {
  const configs = facts.map((f) => (f.config ? mergedConfig(f.config) : undefined));
  const differing = configDifferences(configs.map((c) => (c && Object.keys(c).length ? c : undefined)));
  // Metric columns: the ones most runs have, in first-seen order among equals.
  const counts = new Map<string, number>();
  for (const f of facts) for (const k of Object.keys(f.last ?? {})) counts.set(k, (counts.get(k) ?? 0) + 1);
  const order = [...counts.keys()];
  const ranked = [...order].sort((a, b) => counts.get(b)! - counts.get(a)! || order.indexOf(a) - order.indexOf(b));
  const metrics = ranked.slice(0, MAX_METRIC_COLUMNS);
  const rows = facts.map((f, i): RunTableRow => {
    const notes = [
      ...(f.config?.files.filter((x) => !x.ok).map((x) => (x.ok ? '' : x.error)) ?? []),
      ...(f.configError ? [f.configError] : []),
      ...(f.metricsError ? [`metrics: ${f.metricsError}`] : []),
    ];
    return {
      name: f.run.name,
      path: f.run.path,
      state: runState(f.run, remoteNow),
      ...(f.latestStep !== undefined ? { latestStep: f.latestStep } : {}),
      last: f.last ?? {},
      ...(configs[i] ? { config: configs[i] } : {}),
      ...(notes.length ? { configNote: notes.join('; ') } : {}),
    };
  });
  return { metrics, moreMetrics: Math.max(0, ranked.length - metrics.length), differing, rows };
}

/** Header, then one line of text cells per row: name, state, latest step, metrics, differing config keys, notes. */
export function runTableCells(table: RunTable): string[][] {
  const head = ['run', 'state', 'latest step', ...table.metrics, ...table.differing, 'notes'];
  const body = table.rows.map((r) => [
    r.name,
    r.state,
    r.latestStep !== undefined ? String(r.latestStep) : '',
    ...table.metrics.map((m) => (m in r.last ? formatValue(r.last[m]!) : '')),
    ...table.differing.map((k) => (r.config && k in r.config ? r.config[k]! : r.config ? '(not set)' : '')),
    r.configNote ?? '',
  ]);
  return [head, ...body];
}

/** Which columns of runTableCells are numbers (right-aligned). */
export function runTableNumeric(table: RunTable): boolean[] {
  return ['run', 'state', 'latest step', ...table.metrics, ...table.differing, 'notes'].map((_, i) => i >= 2 && i < 3 + table.metrics.length);
}

function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(3) : String(Number(v.toPrecision(5)));
}
