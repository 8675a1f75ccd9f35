/**
 * The eval card of a drafter run: each evaluated checkpoint's τ and p_1…p_K beside the paper's row and a reference
 * drafter's row, the differences against the paper row, and a settings checklist that marks every setting that
 * differs between the rows compared, or is known on one side only (a τ at temperature 1 is never compared silently
 * with one at 0).
 *
 * Rows come from the run's speculative-server evals (their spec.json, spec/record.ts: the newest per checkpoint and
 * profile), from a tool's output file read with readSpecOutput (checkpointRow), and from the paper and reference rows
 * the user entered for the run (core/metrics/references.ts `specRows`).
 *
 * τ of two rows is compared only when they carry the same definition (definitions.ts TauDefinition), or when the
 * measured row holds the counts to compute its τ under the paper row's definition with definitions.ts' own
 * functions (tauFromAccepted: 1 + accepted / verify steps; tauFromCompletion: completion tokens / verify steps);
 * otherwise the card says why it cannot compare them. p_k means one thing everywhere (the share of verify steps that
 * accepted at least k draft tokens) and is compared position by position.
 *
 * Pure: no I/O, no vscode.
 */
import { TAU_DEFINITION_TEXT, tauFromAccepted, tauFromCompletion, type TauDefinition } from './definitions';
import { SPEC_SETTINGS } from './settings';
import type { SpecResult, SpecSettingKey, SpecSettings } from './types';
import type { EvalRecord } from '../types';
import type { SpecReadOutcome } from './detect';

/** A row the user entered for a run: the paper's reported numbers, or a reference drafter's. */
export interface SpecReferenceRow {
  /** The run it belongs to, as an address: `host/target/run` (e.g. `gpu1/host/dflash-qwen3`). */
  run: string;
  kind: 'paper' | 'reference';
  label: string;
  tau?: number;
  tauDefinition: TauDefinition;
  /** p_1 … p_K. */
  pk?: number[];
  acceptanceRate?: number;
  settings: SpecSettings;
  /** Where the numbers come from (a table of a paper, a model card). */
  source?: string;
}

export type CardRowKind = 'checkpoint' | 'paper' | 'reference';

export interface CardRow {
  kind: CardRowKind;
  label: string;
  /** The checkpoint's step (checkpoint rows). */
  step?: number;
  /** The eval and its profile a checkpoint row comes from (speculative-server evals). */
  evalId?: string;
  profile?: string;
  tau?: number;
  tauDefinition: TauDefinition;
  pk: number[];
  acceptanceRate?: number;
  outputTokensPerSec?: number;
  settings: SpecSettings;
  counts?: SpecResult['counts'];
  /** Where the numbers come from, for people. */
  source?: string;
}

/** A number against the paper's: row − paper, and that over the paper's (undefined when the paper's is 0). */
export interface Difference {
  paper: number;
  row: number;
  abs: number;
  rel?: number;
}

export type TauComparison =
  | ({ kind: 'compared'; definition: TauDefinition; converted?: string } & Difference)
  | { kind: 'not-comparable'; why: string };

/** One row against the paper row. */
export interface RowComparison {
  tau: TauComparison;
  /** p_k differences for k = 1 … min(K of both); undefined past either row's K. */
  pk: (Difference | undefined)[];
  /** Settings that both rows know and that differ. */
  settingsDiffer: SpecSettingKey[];
  /** Settings that one of the two rows knows and the other does not. */
  settingsUnknown: SpecSettingKey[];
}

/**
 * `same`: every row knows it and all agree. `differs`: two rows know different values. `unknown`: some rows know it and
 * some do not. `unrecorded`: no row knows it (listed, not flagged: there is nothing to hold against anything).
 */
export type CheckStatus = 'same' | 'differs' | 'unknown' | 'unrecorded';

export interface SettingCheck {
  key: SpecSettingKey;
  label: string;
  /** Each row's value (aligned with SpecCard.rows), undefined where the row does not say. */
  values: (SpecSettings[SpecSettingKey] | undefined)[];
  status: CheckStatus;
  /** differs or unknown: the card marks it. */
  flagged: boolean;
}

export interface SpecCard {
  run: string;
  rows: CardRow[];
  /** Index in rows of the paper row, when there is one. */
  paper?: number;
  /** Each row against the paper row (aligned with rows; undefined for the paper row itself and without a paper row). */
  comparisons: (RowComparison | undefined)[];
  checklist: SettingCheck[];
  notes: string[];
}

/**
 * The settings the checklist walks, in its order: what moves τ (issue 38: temperature, max tokens, thinking, chat
 * template, concurrency, draft steps / top-k / draft tokens / K, block size, draft method, target model, prompt set).
 * The draft model is left out: it is what the rows are there to compare.
 */
export const CHECKLIST_KEYS: readonly SpecSettingKey[] = [
  'temperature',
  'maxTokens',
  'thinking',
  'chatTemplate',
  'concurrency',
  'method',
  'numSteps',
  'topk',
  'numDraftTokens',
  'numSpeculativeTokens',
  'blockSize',
  'model',
  'benchmark',
];

/** A checkpoint row from a SpecResult (a recorded eval's spec.json, or a tool's output file read with readSpecOutput). */
export function checkpointRow(r: SpecResult, o: { step?: number; label?: string; evalId?: string; profile?: string; source?: string }): CardRow {
  return {
    kind: 'checkpoint',
    label: o.label ?? r.label,
    tauDefinition: r.tauDefinition,
    pk: r.pk ?? [],
    settings: { ...r.settings },
    ...(o.step !== undefined ? { step: o.step } : {}),
    ...(o.evalId !== undefined ? { evalId: o.evalId } : {}),
    ...(o.profile !== undefined ? { profile: o.profile } : {}),
    ...(r.tau !== undefined ? { tau: r.tau } : {}),
    ...(r.acceptanceRate !== undefined ? { acceptanceRate: r.acceptanceRate } : {}),
    ...(r.outputTokensPerSec !== undefined ? { outputTokensPerSec: r.outputTokensPerSec } : {}),
    ...(r.counts ? { counts: { ...r.counts } } : {}),
    ...(o.source !== undefined ? { source: o.source } : {}),
  };
}

/**
 * The checkpoint rows of a run's eval records: for each checkpoint and profile, the newest passed record that has a
 * spec.json (records come newest first from EvalService.list), in step order. Label: the checkpoint's folder name.
 */
export function checkpointRowsFromRecords(records: readonly EvalRecord[]): CardRow[] {
  const seen = new Set<string>();
  const rows: CardRow[] = [];
  const newestFirst = [...records].sort((a, b) => b.startedAt - a.startedAt || (a.id < b.id ? 1 : -1));
  for (const r of newestFirst) {
    if (!r.spec || r.state !== 'passed') continue;
    const key = `${r.checkpointPath}\u0000${r.profile}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const name = r.checkpointPath.replace(/\/+$/, '').split('/').pop() || r.checkpointPath;
    rows.push(checkpointRow(r.spec.result, { step: r.step, label: name, evalId: r.id, profile: r.profile, source: `eval ${r.id}` }));
  }
  return rows.sort((a, b) => (a.step ?? 0) - (b.step ?? 0) || (a.profile ?? '').localeCompare(b.profile ?? ''));
}

/**
 * The checkpoint rows of a tool's output file (readSpecOutput's outcome) for the checkpoint at `step`: one per
 * speculative result (a sweep's row with speculation off is the baseline, not a drafter's row, and is said in a note),
 * labelled with the file's name and the result's own label. A file no reader recognises throws with the reader's
 * reason; lines that do not parse and a file still being written are notes, never dropped silently.
 */
export function checkpointRowsFromFile(outcome: SpecReadOutcome, o: { step: number; file: string }): { rows: CardRow[]; notes: string[] } {
  const name = o.file.split('/').pop() || o.file;
  if (outcome.tool === undefined) {
    throw new RangeError(`${o.file}: not a result file of a known tool: ${outcome.reason}${outcome.seen.length ? ` (first lines: ${outcome.seen.join(' | ')})` : ''}`);
  }
  const notes: string[] = [];
  for (const p of outcome.problems) notes.push(`${name}${p.line !== undefined ? `:${p.line}` : ''}: ${p.message}`);
  if (outcome.incomplete) notes.push(`${name}: ${outcome.incomplete}`);
  const off = outcome.results.filter((r) => !r.speculative).length;
  if (off > 0) notes.push(`${name}: ${off} row(s) with speculation off (the baseline) are not drafter rows and are left off the card`);
  const rows = outcome.results.filter((r) => r.speculative).map((r) => checkpointRow(r, { step: o.step, label: `${name}: ${r.label}`, source: o.file }));
  if (rows.length === 0) notes.push(`${name}: no speculative result in the file`);
  return { rows, notes };
}

/** A paper or reference row as a card row. */
export function referenceRow(r: SpecReferenceRow): CardRow {
  return {
    kind: r.kind,
    label: r.label,
    tauDefinition: r.tauDefinition,
    pk: r.pk ? [...r.pk] : [],
    settings: { ...r.settings },
    ...(r.tau !== undefined ? { tau: r.tau } : {}),
    ...(r.acceptanceRate !== undefined ? { acceptanceRate: r.acceptanceRate } : {}),
    ...(r.source !== undefined ? { source: r.source } : {}),
  };
}

function difference(row: number, paper: number): Difference {
  const abs = row - paper;
  return { paper, row, abs, ...(paper !== 0 ? { rel: abs / paper } : {}) };
}

/**
 * The row's τ under `definition`: its own when the definitions agree, else recomputed from its counts with
 * definitions.ts' functions when it holds them; otherwise why not.
 */
export function tauUnder(row: Pick<CardRow, 'tau' | 'tauDefinition' | 'counts'>, definition: TauDefinition): { tau: number; converted?: string } | { why: string } {
  if (row.tauDefinition === definition) {
    return row.tau === undefined ? { why: 'this row has no τ' } : { tau: row.tau };
  }
  const c = row.counts;
  if (c?.verifySteps !== undefined && c.verifySteps > 0) {
    if (definition === 'one-plus-accepted-per-draft' && c.acceptedDraftTokens !== undefined) {
      const tau = tauFromAccepted(c.acceptedDraftTokens, c.verifySteps);
      if (tau !== undefined) return { tau, converted: `recomputed from this row's counts as 1 + ${c.acceptedDraftTokens} accepted / ${c.verifySteps} verify steps` };
    }
    if (definition === 'completion-per-verify' && c.completionTokens !== undefined) {
      const tau = tauFromCompletion(c.completionTokens, c.verifySteps);
      if (tau !== undefined) return { tau, converted: `recomputed from this row's counts as ${c.completionTokens} completion tokens / ${c.verifySteps} verify steps` };
    }
  }
  return { why: `τ here is ${TAU_DEFINITION_TEXT[row.tauDefinition]}, the paper row's is ${TAU_DEFINITION_TEXT[definition]}, and this row holds no counts to compute it the paper's way` };
}

/** Settings of two rows: those both know and that differ, and those one knows and the other does not. */
export function settingDifferences(a: SpecSettings, b: SpecSettings, keys: readonly SpecSettingKey[] = CHECKLIST_KEYS): { differ: SpecSettingKey[]; unknown: SpecSettingKey[] } {
  const differ: SpecSettingKey[] = [];
  const unknown: SpecSettingKey[] = [];
  for (const k of keys) {
    const x = a[k];
    const y = b[k];
    if (x === undefined && y === undefined) continue;
    if (x === undefined || y === undefined) unknown.push(k);
    else if (x !== y) differ.push(k);
  }
  return { differ, unknown };
}

/** One row against the paper row. */
export function compareRows(row: CardRow, paper: CardRow): RowComparison {
  let tau: TauComparison;
  if (paper.tau === undefined) tau = { kind: 'not-comparable', why: 'the paper row has no τ' };
  else {
    const t = tauUnder(row, paper.tauDefinition);
    tau = 'why' in t ? { kind: 'not-comparable', why: t.why } : { kind: 'compared', definition: paper.tauDefinition, ...difference(t.tau, paper.tau), ...(t.converted ? { converted: t.converted } : {}) };
  }
  const n = Math.max(row.pk.length, paper.pk.length);
  const pk: (Difference | undefined)[] = [];
  for (let i = 0; i < n; i++) pk.push(i < row.pk.length && i < paper.pk.length ? difference(row.pk[i], paper.pk[i]) : undefined);
  const { differ, unknown } = settingDifferences(row.settings, paper.settings);
  return { tau, pk, settingsDiffer: differ, settingsUnknown: unknown };
}

/** The checklist over all rows (see CheckStatus). */
export function settingsChecklist(rows: readonly Pick<CardRow, 'settings'>[], keys: readonly SpecSettingKey[] = CHECKLIST_KEYS): SettingCheck[] {
  return keys.map((key) => {
    const values = rows.map((r) => r.settings[key]);
    const known = values.filter((v) => v !== undefined);
    const status: CheckStatus =
      known.length === 0 ? 'unrecorded' : known.some((v) => v !== known[0]) ? 'differs' : known.length < values.length ? 'unknown' : 'same';
    return { key, label: SPEC_SETTINGS[key].label, values, status, flagged: status === 'differs' || status === 'unknown' };
  });
}

/**
 * Where the run's entered rows stand on its card: indexes into `references` of the rows of `run`, its paper rows
 * first, then its reference rows, each in the file's order. The card's rows after its checkpoint rows are these, in
 * this order (buildSpecCard), so a face can tell which entered row a card row is (to remove it).
 */
export function enteredRowOrder(run: string, references: readonly SpecReferenceRow[]): number[] {
  const of = (kind: SpecReferenceRow['kind']) => references.flatMap((r, i) => (r.run === run && r.kind === kind ? [i] : []));
  return [...of('paper'), ...of('reference')];
}

/**
 * The card of a run: its checkpoint rows, then the paper row(s) and the reference row(s) entered for it (rows of other
 * runs are left out), the comparisons against the (first) paper row, and the settings checklist over every row.
 */
export function buildSpecCard(input: { run: string; checkpoints: readonly CardRow[]; references: readonly SpecReferenceRow[] }): SpecCard {
  const checkpoints = [...input.checkpoints].sort((a, b) => (a.step ?? 0) - (b.step ?? 0));
  const entered = enteredRowOrder(input.run, input.references).map((i) => referenceRow(input.references[i]));
  const papers = entered.filter((r) => r.kind === 'paper');
  const rows = [...checkpoints, ...entered];
  const notes: string[] = [];
  const paper = papers.length > 0 ? checkpoints.length : undefined;
  if (paper === undefined) notes.push(`no paper row is entered for ${input.run}: nothing to compare against`);
  if (papers.length > 1) notes.push(`${papers.length} paper rows are entered for ${input.run}: differences are against the first, "${papers[0].label}"`);
  if (checkpoints.length === 0) notes.push(noCheckpointNote(input.run));
  const comparisons = rows.map((r, i) => (paper === undefined || i === paper ? undefined : compareRows(r, rows[paper])));
  return { run: input.run, rows, ...(paper !== undefined ? { paper } : {}), comparisons, checklist: settingsChecklist(rows), notes };
}

/**
 * Why a run's card has no checkpoint row, in the one case it is (docs/HOUSE_STYLE 5: never fold two into one):
 * no eval of the run at all; evals, none of them speculative-server; speculative-server evals, none passed with a
 * spec.json that reads (running, failed, or their spec.json unreadable). Undefined when some checkpoint row exists.
 */
export function cardEmptyReason(run: string, records: readonly EvalRecord[]): string | undefined {
  if (checkpointRowsFromRecords(records).length > 0) return undefined;
  const how = `measure a checkpoint with a speculative-server eval profile (docs/evals.md): Evaluate Checkpoint… on it in the tree, or \`remote-runs eval PROFILE ${run}/STEP\``;
  if (records.length === 0) return `No eval of ${run} yet: ${how}.`;
  const spec = records.filter((r) => r.meta.kind === 'speculative-server' || r.spec !== undefined || r.specProblems !== undefined);
  if (spec.length === 0) {
    const profiles = [...new Set(records.map((r) => r.profile))].sort();
    return `${records.length} eval(s) of ${run} (profile ${profiles.join(', ')}), none of them speculative-server: the card's rows come from those; ${how}.`;
  }
  const counts = new Map<string, number>();
  for (const r of spec) {
    const what = r.specProblems ? 'spec.json unreadable' : r.state === 'passed' ? 'no spec.json' : r.state;
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  return `${spec.length} speculative-server eval(s) of ${run}, none passed with its result: ${[...counts].map(([k, n]) => `${n} ${k}`).join(', ')}.`;
}

/**
 * A run's card from its listed eval records (EvalService.list, newest first; the extension's EvalResultsHub holds
 * the same) and the references file's rows: the one collection of the CLI (`remote-runs eval --card`) and the
 * editor's card. `files` are checkpoint rows of tools' output files (checkpointRowsFromFile) with their notes. The
 * notes say each eval whose spec.json is left out, and why there is no checkpoint row (cardEmptyReason).
 */
export function specCardOf(input: { run: string; records: readonly EvalRecord[]; references: readonly SpecReferenceRow[]; files?: { rows: readonly CardRow[]; notes: readonly string[] } }): SpecCard {
  const checkpoints = [...checkpointRowsFromRecords(input.records), ...(input.files?.rows ?? [])];
  const card = buildSpecCard({ run: input.run, checkpoints, references: input.references });
  if (checkpoints.length === 0) {
    const why = cardEmptyReason(input.run, input.records);
    card.notes = card.notes.map((n) => (n === noCheckpointNote(input.run) && why ? why : n));
  }
  card.notes.push(...(input.files?.notes ?? []));
  for (const r of input.records) if (r.specProblems) card.notes.push(`eval ${r.id}: its spec.json is left out: ${r.specProblems.join('; ')}`);
  return card;
}

function noCheckpointNote(run: string): string {
  return `no checkpoint of ${run} has a speculative-server eval yet`;
}
