/**
 * Reference numbers a run is judged against ("paper: acceptance length 6.5"), kept in a small JSON file in the
 * workspace (`.vscode/remote-runs.references.json`) that the panel edits and a team can commit. Pure: parsing,
 * validating and editing the file's text; the extension (extension/metrics/referenceStore.ts) and the CLI
 * (`remote-runs eval --card`) do the reading and writing.
 *
 * File shape: `{ "version": 1, "lines": [{ "metric": "loss", "value": 1.2, "label": "paper", "source": "…" }] }`;
 * version 2 adds the speculative-decoding card's rows of a run, entered once per run, each with its settings:
 * `"specRows": [{ "run": "host/target/run", "kind": "paper" | "reference", "label", "tau", "tauDefinition", "pk",
 * "acceptanceRate", "settings": {…}, "source" }]` (core/eval/spec/card.ts SpecReferenceRow). A version 1 file is a
 * version 2 file without rows; a file is written as version 1 while it holds no rows, so an older extension
 * reading it loses nothing.
 */
import type { ReferenceLine } from '../../shared/metricsProtocol';
import type { SpecReferenceRow } from '../eval/spec/card';
import { TAU_DEFINITION_TEXT, type TauDefinition } from '../eval/spec/definitions';
import { parseSpecSettings, SPEC_SETTINGS } from '../eval/spec/settings';
import type { SpecSettingKey } from '../eval/spec/types';

export const REFERENCES_FILE = '.vscode/remote-runs.references.json';

export interface ParsedReferences {
  lines: ReferenceLine[];
  /** The card's paper and reference rows (version 2); a bad row is left out and named in `problems`. */
  specRows: SpecReferenceRow[];
  /** Entries skipped and why, for the log (a hand-edited file may hold mistakes). */
  problems: string[];
}

/** A stable id from the line's content: deleting or adding one line never changes another's id. */
export function referenceId(line: Omit<ReferenceLine, 'id'>, taken: Set<string>): string {
  const base = `${line.metric}\u0000${line.label}\u0000${line.value}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < base.length; i++) h = Math.imul(h ^ base.charCodeAt(i), 0x01000193) >>> 0;
  let id = h.toString(36);
  for (let n = 2; taken.has(id); n++) id = `${h.toString(36)}-${n}`;
  taken.add(id);
  return id;
}

/** Parse the file's text. An empty or missing file is no lines; a malformed one is no lines plus a problem. */
export function parseReferences(text: string | undefined): ParsedReferences {
  if (text === undefined || text.trim() === '') return { lines: [], specRows: [], problems: [] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { lines: [], specRows: [], problems: [`${REFERENCES_FILE} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`] };
  }
  const entries = Array.isArray(json) ? json : typeof json === 'object' && json !== null ? (json as { lines?: unknown }).lines : undefined;
  const rawRows = typeof json === 'object' && json !== null && !Array.isArray(json) ? (json as { specRows?: unknown }).specRows : undefined;
  const { specRows, problems: rowProblems } = parseSpecRows(rawRows);
  if (!Array.isArray(entries)) {
    // A file of card rows alone needs no "lines".
    if (rawRows !== undefined) return { lines: [], specRows, problems: rowProblems };
    return { lines: [], specRows, problems: [`${REFERENCES_FILE} has no "lines" array`] };
  }
  const lines: ReferenceLine[] = [];
  const problems: string[] = [];
  const taken = new Set<string>();
  entries.forEach((e: unknown, i) => {
    const o = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
    const value = typeof o.value === 'string' ? Number(o.value) : o.value;
    if (typeof o.metric !== 'string' || o.metric === '') return problems.push(`lines[${i}]: "metric" must be a non-empty string`);
    if (typeof value !== 'number' || !Number.isFinite(value)) return problems.push(`lines[${i}]: "value" must be a finite number`);
    const label = typeof o.label === 'string' && o.label.trim() ? o.label.trim() : `${value}`;
    const source = typeof o.source === 'string' ? o.source.trim() : '';
    const line = { metric: o.metric, value, label, source };
    lines.push({ id: referenceId(line, taken), ...line });
  });
  return { lines, specRows, problems: [...problems, ...rowProblems] };
}

const TAU_DEFINITIONS = Object.keys(TAU_DEFINITION_TEXT) as TauDefinition[];

/** The `specRows` array: each row validated (parseSpecRow), a bad one left out with every reason named. */
export function parseSpecRows(v: unknown): { specRows: SpecReferenceRow[]; problems: string[] } {
  if (v === undefined) return { specRows: [], problems: [] };
  if (!Array.isArray(v)) return { specRows: [], problems: [`${REFERENCES_FILE}: "specRows" must be a list of rows`] };
  const specRows: SpecReferenceRow[] = [];
  const problems: string[] = [];
  v.forEach((e: unknown, i) => {
    const at = `specRows[${i}]`;
    const got = parseSpecRow(e, `${at}.settings`);
    if ('row' in got) specRows.push(got.row);
    else problems.push(...got.problems.map((p) => (p.field.startsWith(`${at}.settings`) ? p.message : `${at}: ${p.message}`)));
  });
  return { specRows, problems };
}

/** What is wrong with one field of a card row: `field` is its key (`tau`, `pk`…, or `<settingsAt>.<setting>`). */
export interface SpecRowProblem {
  field: string;
  message: string;
}

/**
 * One card row, validated: the one validator of paper and reference rows, for the file (parseSpecRows) and for a row
 * entered in the card's form (specRowFromForm). Settings are validated by parseSpecSettings with `settingsAt` as their
 * prefix (the file: `specRows[i].settings`; the form: `setting`, its inputs' names). Every problem is named.
 */
export function parseSpecRow(e: unknown, settingsAt = 'settings'): { row: SpecReferenceRow } | { problems: SpecRowProblem[] } {
  if (typeof e !== 'object' || e === null || Array.isArray(e)) return { problems: [{ field: '', message: 'must be an object {run, kind, label, tau, tauDefinition, pk, settings}' }] };
  const o = e as Record<string, unknown>;
  const bad: SpecRowProblem[] = [];
  const why = (field: string, message: string) => bad.push({ field, message });
  if (typeof o.run !== 'string' || o.run.trim() === '') why('run', '"run" must be the run\'s address, host/target/run');
  if (o.kind !== 'paper' && o.kind !== 'reference') why('kind', `"kind" must be "paper" or "reference", got ${JSON.stringify(o.kind)}`);
  if (typeof o.label !== 'string' || o.label.trim() === '') why('label', '"label" must be a non-empty string');
  if (typeof o.tauDefinition !== 'string' || !TAU_DEFINITIONS.includes(o.tauDefinition as TauDefinition)) {
    why('tauDefinition', `"tauDefinition" must say how τ was computed, one of ${TAU_DEFINITIONS.join(', ')} (got ${JSON.stringify(o.tauDefinition)})`);
  }
  if (o.tau !== undefined && !(typeof o.tau === 'number' && Number.isFinite(o.tau) && o.tau >= 1)) {
    why('tau', `"tau" must be a number ≥ 1 (every definition counts the bonus token; a figure that leaves it out is τ − 1: add 1), got ${JSON.stringify(o.tau)}`);
  }
  if (o.acceptanceRate !== undefined && !(typeof o.acceptanceRate === 'number' && o.acceptanceRate >= 0 && o.acceptanceRate <= 1)) why('acceptanceRate', `"acceptanceRate" must be a number from 0 to 1, got ${JSON.stringify(o.acceptanceRate)}`);
  if (o.pk !== undefined) {
    const pk = o.pk;
    if (!Array.isArray(pk) || !pk.every((p) => typeof p === 'number' && p >= 0 && p <= 1)) why('pk', '"pk" must be a list of numbers from 0 to 1 (p_1, p_2, …)');
    else if (pk.some((p, k) => k > 0 && p > pk[k - 1])) why('pk', '"pk" must not rise with k (p_k is the share of steps that accepted at least k draft tokens)');
  }
  if (o.source !== undefined && typeof o.source !== 'string') why('source', '"source" must be a string');
  const settings = parseSpecSettings(o.settings, settingsAt);
  for (const p of settings.problems) bad.push({ field: /^[^:]*/.exec(p)![0], message: p });
  if (bad.length > 0) return { problems: bad };
  return {
    row: {
      run: (o.run as string).trim(),
      kind: o.kind as 'paper' | 'reference',
      label: (o.label as string).trim(),
      tauDefinition: o.tauDefinition as TauDefinition,
      settings: settings.settings,
      ...(o.tau !== undefined ? { tau: o.tau as number } : {}),
      ...(o.pk !== undefined ? { pk: [...(o.pk as number[])] } : {}),
      ...(o.acceptanceRate !== undefined ? { acceptanceRate: o.acceptanceRate as number } : {}),
      ...(typeof o.source === 'string' && o.source.trim() ? { source: o.source.trim() } : {}),
    },
  };
}

/** The names of the card form's inputs (besides one `setting.<key>` per SpecSettingKey). */
export const SPEC_ROW_FORM_FIELDS = ['label', 'tau', 'tauDefinition', 'pk', 'acceptanceRate', 'source'] as const;

/** A form's text as a number when it is one; otherwise the text itself, which the validator then names as wrong. */
function formNumber(s: string): number | string | undefined {
  const t = s.trim();
  if (t === '') return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

/**
 * A row entered in the card's form (every input's text, by its name: SPEC_ROW_FORM_FIELDS and `setting.<key>`) for
 * the run `run`, validated by parseSpecRow: the text becomes what the file holds (numbers, `pk` split at commas, a
 * setting by its type in SPEC_SETTINGS: "true"/"false" for yes-or-no ones), an empty input is left out, and text
 * that is not what its field needs is passed on as text, so the one validator names the field and what it got.
 */
export function specRowFromForm(run: string, kind: 'paper' | 'reference', fields: Readonly<Record<string, string>>): { row: SpecReferenceRow } | { problems: SpecRowProblem[] } {
  const get = (k: string): string => fields[k] ?? '';
  const settings: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(fields)) {
    if (!name.startsWith('setting.')) continue;
    const key = name.slice('setting.'.length);
    const t = text.trim();
    if (t === '') continue;
    const type = Object.prototype.hasOwnProperty.call(SPEC_SETTINGS, key) ? SPEC_SETTINGS[key as SpecSettingKey].type : undefined;
    settings[key] = type === 'number' ? formNumber(t) : type === 'boolean' ? (t === 'true' ? true : t === 'false' ? false : t) : t;
  }
  const pkText = get('pk').trim();
  const raw: Record<string, unknown> = {
    run,
    kind,
    label: get('label'),
    tauDefinition: get('tauDefinition'),
    settings,
    ...(formNumber(get('tau')) !== undefined ? { tau: formNumber(get('tau')) } : {}),
    ...(formNumber(get('acceptanceRate')) !== undefined ? { acceptanceRate: formNumber(get('acceptanceRate')) } : {}),
    ...(pkText !== '' ? { pk: pkText.split(',').map((p) => formNumber(p) ?? p) } : {}),
    ...(get('source').trim() !== '' ? { source: get('source') } : {}),
  };
  return parseSpecRow(raw, 'setting');
}

/** Each row's id, from its content (as referenceId for lines): removing one row never changes another's id. */
export function specRowIds(rows: readonly SpecReferenceRow[]): string[] {
  const taken = new Set<string>();
  return rows.map((r) => {
    const base = JSON.stringify([r.run, r.kind, r.label, r.tau, r.tauDefinition, r.pk, r.acceptanceRate, r.source, Object.entries(r.settings).sort(([a], [b]) => (a < b ? -1 : 1))]);
    let h = 0x811c9dc5;
    for (let i = 0; i < base.length; i++) h = Math.imul(h ^ base.charCodeAt(i), 0x01000193) >>> 0;
    let id = `r${h.toString(36)}`;
    for (let n = 2; taken.has(id); n++) id = `r${h.toString(36)}-${n}`;
    taken.add(id);
    return id;
  });
}

/** Rows with one removed by its id (specRowIds); unchanged when no row has it. */
export function withSpecRowRemoved(rows: readonly SpecReferenceRow[], id: string): SpecReferenceRow[] {
  const ids = specRowIds(rows);
  return rows.filter((_, i) => ids[i] !== id);
}

/**
 * The file's text for these lines and card rows (ids are derived, not stored). Version 1 while there is no card row,
 * so the file a team committed changes only when one is entered.
 */
export function serializeReferences(lines: readonly ReferenceLine[], specRows: readonly SpecReferenceRow[] = []): string {
  const out = {
    version: specRows.length > 0 ? 2 : 1,
    lines: lines.map(({ metric, value, label, source }) => ({ metric, value, label, source })),
    ...(specRows.length > 0 ? { specRows } : {}),
  };
  return `${JSON.stringify(out, null, 2)}\n`;
}

/**
 * Why the file cannot be written back from what was read without losing part of it (an entry left out as unreadable,
 * a file that is not JSON, a shape this version does not know); undefined when everything in it was read. A panel
 * that adds or removes a line then writes nothing: a hand-edited file is never replaced by what survived its parse.
 */
export function rewriteBlocked(parsed: Pick<ParsedReferences, 'problems'>): string | undefined {
  if (parsed.problems.length === 0) return undefined;
  return `${REFERENCES_FILE} holds what could not be read (${parsed.problems.join('; ')}): fix or remove that first; nothing was written`;
}

/** Lines with one added (after the others) — the text to write back. */
export function withLineAdded(current: readonly ReferenceLine[], line: Omit<ReferenceLine, 'id'>): ReferenceLine[] {
  return parseReferences(serializeReferences([...current, { id: '', ...line }])).lines;
}

/** Lines without the one with this id (unchanged when no line has it). */
export function withLineRemoved(current: readonly ReferenceLine[], id: string): ReferenceLine[] {
  return current.filter((l) => l.id !== id);
}
