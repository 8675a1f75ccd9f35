/**
 * A run's evals as a table (one row per checkpoint step and profile, one column per metric) and as text to paste
 * elsewhere: CSV (RFC 4180) and a Markdown table. Pure: the extension's table view, the chart's points and tests
 * all use these.
 */
import type { EvalRecord, EvalResult, EvalState } from './types';
import { put } from '../util/dict';

/** What an eval measured: the last value of each metric over its result lines (a later line wins). */
export function latestValues(results: readonly EvalResult[]): EvalResult {
  const out: EvalResult = {};
  for (const r of results) for (const [k, v] of Object.entries(r)) put(out, k, v);
  return out;
}

export interface EvalTableRow {
  step: number;
  /** The checkpoint's own name (the last segment of its path). */
  checkpoint: string;
  profile: string;
  state: EvalState;
  /** ms since the epoch. */
  startedAt: number;
  id: string;
  /** Other evals of the same step and profile that this row stands for (older, or without results). */
  others: number;
  values: EvalResult;
}

export interface EvalTable {
  /** Metric columns, in order of first appearance along the rows. */
  metrics: string[];
  /** Sorted by step, then profile. */
  rows: EvalTableRow[];
}

/**
 * The table of a run's evals. One row per (step, profile): the newest eval with results, else the newest one (so a
 * re-run replaces an older value and a running re-run does not hide a finished result). `all` keeps every eval.
 */
export function buildEvalTable(records: readonly EvalRecord[], options: { all?: boolean } = {}): EvalTable {
  const groups = new Map<string, EvalRecord[]>();
  for (const r of records) {
    const key = options.all ? r.id : `${r.step}\u0000${r.profile}`;
    const list = groups.get(key);
    if (list) list.push(r);
    else groups.set(key, [r]);
  }
  const rows: EvalTableRow[] = [];
  for (const list of groups.values()) {
    const newestFirst = [...list].sort((a, b) => b.startedAt - a.startedAt || (a.id < b.id ? 1 : -1));
    const chosen = newestFirst.find((r) => r.results.length > 0) ?? newestFirst[0]!;
    rows.push({
      step: chosen.step,
      checkpoint: baseName(chosen.checkpointPath),
      profile: chosen.profile,
      state: chosen.state,
      startedAt: chosen.startedAt,
      id: chosen.id,
      others: list.length - 1,
      values: latestValues(chosen.results),
    });
  }
  rows.sort((a, b) => a.step - b.step || (a.profile < b.profile ? -1 : a.profile > b.profile ? 1 : b.startedAt - a.startedAt));
  const metrics: string[] = [];
  for (const r of rows) for (const k of Object.keys(r.values)) if (!metrics.includes(k)) metrics.push(k);
  return { metrics, rows };
}

/** The header row's cells, then each row's cells as text (empty where an eval did not measure a metric). */
export function tableCells(table: EvalTable): string[][] {
  const head = ['step', 'checkpoint', 'profile', 'state', 'started', ...table.metrics];
  const body = table.rows.map((r) => [
    String(r.step),
    r.checkpoint,
    r.profile,
    r.state,
    r.startedAt > 0 ? new Date(r.startedAt).toISOString() : '',
    ...table.metrics.map((m) => (m in r.values ? String(r.values[m]) : '')),
  ]);
  return [head, ...body];
}

/** CSV (RFC 4180): fields with a comma, quote, CR or LF are quoted, quotes doubled; lines end in CRLF. */
export function evalTableCsv(table: EvalTable): string {
  const field = (s: string): string => (/[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  return tableCells(table).map((row) => row.map(field).join(',') + '\r\n').join('');
}

/**
 * A GitHub-flavoured Markdown table: `|` and `\` escaped, line breaks flattened to spaces, `<` and `&` as entities
 * (a name from a remote folder must not become markup where the table is pasted), numbers right-aligned.
 */
export function evalTableMarkdown(table: EvalTable): string {
  const cell = (s: string): string =>
    s.replace(/\\/g, '\\\\').replace(/\|/g, '\\|').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/\r?\n|\r/g, ' ');
  const [head, ...body] = tableCells(table);
  const align = head!.map((_, i) => (i === 0 || i >= 5 ? '---:' : '---'));
  const line = (cells: string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  return [line(head!), `| ${align.join(' | ')} |`, ...body.map(line)].join('\n') + '\n';
}

function baseName(p: string): string {
  const trimmed = p.replace(/\/+$/, '');
  return trimmed.slice(trimmed.lastIndexOf('/') + 1);
}
