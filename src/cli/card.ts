/**
 * `remote-runs eval --card host/target/run [--json] [--references FILE] [--results STEP=FILE…]`: the speculative-decoding card of a run
 * (core/eval/spec/card.ts): one row per checkpoint the run's speculative-server evals measured, the paper's row and
 * the reference drafter's row entered for the run in the references file, the differences against the paper row,
 * and the settings checklist.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RemoteRunsCore } from '../core/service';
import type { parseAddress } from '../core/address';
import { RemoteRunsError, formatTarget } from '../core/types';
import type { EvalService } from '../core/eval/service';
import { checkpointRowsFromFile, specCardOf, type CardRow, type SpecCard } from '../core/eval/spec/card';
import { readSpecOutput } from '../core/eval/spec/detect';
import { TAU_DEFINITION_TEXT } from '../core/eval/spec/definitions';
import { SPEC_SETTINGS } from '../core/eval/spec/settings';
import { parseReferences, REFERENCES_FILE } from '../core/metrics/references';

export interface CardCliDeps {
  core: RemoteRunsCore;
  evals: EvalService;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  signal: AbortSignal;
  /** Where the default references file is looked for (`<cwd>/.vscode/remote-runs.references.json`). */
  cwd: string;
}

/** Read the references file: `--references FILE` must exist; the default one may not. Any problem in it is bad-config. */
export function readCardReferences(file: string | undefined, cwd: string): { file?: string; rows: ReturnType<typeof parseReferences>['specRows'] } {
  const p = file ?? path.join(cwd, REFERENCES_FILE);
  let text: string;
  try {
    text = fs.readFileSync(p, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (file === undefined && code === 'ENOENT') return { rows: [] };
    throw new RemoteRunsError(code === 'ENOENT' ? 'not-found' : 'bad-config', `the references file ${p} cannot be read (${code ?? (e as Error).message})`, { file: p });
  }
  const parsed = parseReferences(text);
  if (parsed.problems.length > 0) {
    throw new RemoteRunsError('bad-config', `the references file ${p} has problems; fix them so no row is left out of the card:\n${parsed.problems.map((m) => `  ${m}`).join('\n')}`, { file: p, problems: parsed.problems });
  }
  return { file: p, rows: parsed.specRows };
}

/**
 * `--results STEP=FILE`: a tool's output file (SGLang bench_speculative, SpecForge, vLLM spec_decode.py, EAGLE
 * answers, aiperf) on this machine, read with readSpecOutput as the results of the checkpoint at STEP.
 */
export function readResultFiles(specs: readonly string[]): { rows: CardRow[]; notes: string[] } {
  const rows: CardRow[] = [];
  const notes: string[] = [];
  for (const spec of specs) {
    const m = /^(\d+)=(.+)$/s.exec(spec);
    if (!m) throw new RemoteRunsError('bad-config', `--results ${JSON.stringify(spec)}: give STEP=FILE, the checkpoint's step and a tool's output file (e.g. 20000=bench.jsonl)`, { field: 'results' });
    const file = m[2];
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new RemoteRunsError(code === 'ENOENT' ? 'not-found' : 'bad-config', `--results: ${file} cannot be read (${code ?? (e as Error).message})`, { file });
    }
    try {
      const got = checkpointRowsFromFile(readSpecOutput(text, file), { step: Number(m[1]), file });
      rows.push(...got.rows);
      notes.push(...got.notes);
    } catch (e) {
      throw new RemoteRunsError('bad-config', `--results: ${(e as Error).message}`, { file });
    }
  }
  return { rows, notes };
}

export async function cardCommand(deps: CardCliDeps, addr: ReturnType<typeof parseAddress>, options: { json: boolean; references?: string; results?: readonly string[] }): Promise<number> {
  if (!addr.target || addr.run === undefined) throw new RemoteRunsError('bad-address', 'eval --card needs a run: host/target/run');
  const refs = readCardReferences(options.references, deps.cwd);
  const files = readResultFiles(options.results ?? []);
  const segments = addr.segments ?? [addr.run, ...(addr.checkpoint !== undefined ? [addr.checkpoint] : [])];
  const { run } = await deps.core.resolveRun(addr.host, addr.target, segments, 'none', deps.signal);
  const runAddress = `${addr.host}/${formatTarget(addr.target)}/${run.name}`;
  const place = deps.evals.place({ where: { kind: 'target' } }, { host: addr.host, target: addr.target, run: { name: run.name, path: run.path } });
  const records = await deps.evals.list(place, { signal: deps.signal });
  const card = specCardOf({ run: runAddress, records, references: refs.rows, files });
  if (refs.file === undefined) card.notes.push(`no references file (${REFERENCES_FILE} here, or --references FILE): no paper or reference row`);
  deps.stdout.write(options.json ? `${JSON.stringify(card)}\n` : formatCard(card));
  return 0;
}

const num = (v: number | undefined, digits = 3): string => (v === undefined ? '?' : String(Number(v.toFixed(digits))));
const signed = (v: number, digits = 3): string => `${v >= 0 ? '+' : '−'}${num(Math.abs(v), digits)}`;

function table(rows: string[][]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => [...(r[c] ?? '')].length)));
  return rows.map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell + ' '.repeat(widths[c] - [...cell].length))).join('  ').trimEnd()).join('\n') + '\n';
}

/** The card as text: the rows with τ, its difference from the paper row, p_k; the τ definitions; then the checklist. */
export function formatCard(card: SpecCard): string {
  const out: string[] = [`speculative-decoding card of ${card.run}\n`];
  const K = Math.max(0, ...card.rows.map((r) => r.pk.length));
  const head = ['row', 'step', 'τ', ...(card.paper !== undefined ? ['τ vs paper'] : []), ...Array.from({ length: K }, (_, k) => `p_${k + 1}`), 'acceptance', 'tokens/s', 'τ def'];
  const defs = [...new Set(card.rows.map((r) => r.tauDefinition))];
  const body = card.rows.map((r, i) => {
    const c = card.comparisons[i];
    const label = r.kind === 'checkpoint' ? `${r.label}${r.profile ? ` (${r.profile})` : ''}` : `${r.kind}: ${r.label}`;
    let vs = '';
    if (c) {
      // The settings that differ by name; those one side does not say, counted (the checklist names them).
      const said = [...c.settingsDiffer.map((k) => `${SPEC_SETTINGS[k].label} differs`), ...(c.settingsUnknown.length > 0 ? [`${c.settingsUnknown.length} unknown`] : [])];
      const mark = said.length > 0 ? ` ! ${said.join(', ')}` : '';
      vs = c.tau.kind === 'compared' ? `${signed(c.tau.abs)}${c.tau.rel !== undefined ? ` (${signed(c.tau.rel * 100, 1)}%)` : ''}${c.tau.converted ? ' *' : ''}${mark}` : `not comparable${mark}`;
    } else if (i === card.paper) vs = '(paper)';
    const pk = Array.from({ length: K }, (_, k) => {
      if (k >= r.pk.length) return '';
      const d = c?.pk[k];
      return d ? `${num(r.pk[k])} (${signed(d.abs)})` : num(r.pk[k]);
    });
    return [label, r.step !== undefined ? String(r.step) : '', num(r.tau), ...(card.paper !== undefined ? [vs] : []), ...pk, num(r.acceptanceRate), num(r.outputTokensPerSec, 1), String(defs.indexOf(r.tauDefinition) + 1)];
  });
  out.push(table([head, ...body]));
  out.push('\nτ definitions:\n');
  defs.forEach((d, i) => out.push(`  ${i + 1}: ${TAU_DEFINITION_TEXT[d]}\n`));
  card.comparisons.forEach((c, i) => {
    if (c?.tau.kind === 'compared' && c.tau.converted) out.push(`  * ${card.rows[i].label}: τ ${c.tau.converted}, under the paper row's definition\n`);
    if (c?.tau.kind === 'not-comparable') out.push(`  ${card.rows[i].label}: τ not compared: ${c.tau.why}\n`);
  });
  out.push('\nsettings checklist (! = differs between the rows, or unknown on some):\n');
  const names = card.rows.map((r) => (r.kind === 'checkpoint' ? r.label : `${r.kind}: ${r.label}`));
  const show = (v: unknown): string => (v === undefined ? '?' : String(v));
  out.push(table([['', 'setting', ...names], ...card.checklist.map((c) => [c.flagged ? '!' : '', c.label, ...c.values.map(show)])]));
  for (const n of card.notes) out.push(`note: ${n}\n`);
  return out.join('');
}
