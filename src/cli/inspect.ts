/**
 * `remote-runs inspect ADDRESS [--json]` and `remote-runs diff ADDRESS_A ADDRESS_B [--json]`: what a remote checkpoint
 * holds, read from its headers over SSH (one remote command per checkpoint; nothing is loaded, nothing downloaded).
 * JSON shapes are documented in docs/cli.md and built by inspectionJson / diffJson below.
 */
import type { RemoteRunsCore } from '../core/service';
import { pickCheckpointWithNote } from '../core/service';
import { skippedLines } from '../core/transfer';
import type { Executor } from '../core/remote';
import { RemoteRunsError, type Checkpoint, type TargetRef } from '../core/types';
import { formatAddress, type Address } from '../core/address';
import { formatBytes } from '../core/util/format';
import {
  diffInspections,
  formatCount,
  groupTensors,
  inspectCompleteness,
  stateParts,
  summaryLine,
  totals,
  type Inspection,
  type InspectionDiff,
  type TensorInfo,
} from '../core/inspect';
import { displayName } from '../shared/display';
import { writeInSteps } from './output';
import { inspectRemote, listedFilesOf, type InspectCache, type RemoteInspection } from '../core/inspect/remoteRead';

export interface InspectCliDeps {
  core: RemoteRunsCore;
  executor(host: string, target: TargetRef): Executor;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  signal: AbortSignal;
  cache?: InspectCache;
}

export interface InspectedCheckpoint {
  address: string;
  checkpoint: Checkpoint;
  result: RemoteInspection;
}

/** Resolve host/target/run/checkpoint (as pull does) and inspect that checkpoint on its target. */
export async function inspectAddress(deps: InspectCliDeps, addr: Address): Promise<InspectedCheckpoint> {
  if (!addr.target || addr.run === undefined || addr.checkpoint === undefined) {
    throw new RemoteRunsError('bad-address', 'inspect needs host/target/run/checkpoint (a checkpoint name such as step_20000 or last.ckpt, a step, last/best, final, or "latest")');
  }
  const found = await deps.core.resolveRun(addr.host, addr.target, addr.segments ?? [addr.run, addr.checkpoint], 'required', deps.signal);
  const { checkpoint, note } = pickCheckpointWithNote(found.run, found.checkpoint ?? addr.checkpoint, found.listedInPart);
  if (note) deps.stderr.write(`${note}\n`);
  // Inspect reads the files the listing found: its walk is bounded and never enters a link to a folder
  // (discovery/listScript.ts), so neither does inspect (listedFilesOf refuses a checkpoint linked out); what the
  // listing left out is said.
  if (checkpoint.partialSize) deps.stderr.write(`remote-runs: ${displayName(checkpoint.name)} reaches the listing's depth: files below it were not listed, so not inspected\n`);
  for (const line of skippedLines({ skipped: checkpoint.skipped ?? [] })) deps.stderr.write(`remote-runs: ${displayName(checkpoint.name)}: ${line.replace(/^skipped /, 'not inspected: ')}\n`);
  const result = await inspectRemote(deps.executor(addr.host, addr.target), addr.target, listedFilesOf(checkpoint), { cache: deps.cache, host: addr.host, signal: deps.signal });
  // The address as it is typed (names as ls shows them, display.ts), so `--json`'s address can be passed back as is.
  const address = formatAddress({ host: addr.host, target: addr.target, run: found.run.name, checkpoint: checkpoint.name });
  return { address, checkpoint, result };
}

const tensorJson = (t: TensorInfo): unknown => ({
  name: t.name,
  dtype: t.dtype,
  shape: t.shape,
  numel: t.numel,
  bytes: t.bytes,
  role: t.role,
  ...(t.file !== undefined ? { file: t.file } : {}),
  ...(t.storage !== undefined ? { storage: t.storage } : {}),
});

/** The JSON of one inspection, as documented in docs/cli.md (`tensors` last: inspectCommand streams them). */
export function inspectionJson(x: InspectedCheckpoint): unknown {
  return { ...inspectionJsonHead(x), tensors: x.result.inspection.tensors.map(tensorJson) };
}

/** Everything of inspectionJson but its tensors. */
function inspectionJsonHead(x: InspectedCheckpoint): Record<string, unknown> {
  const ins = x.result.inspection;
  const t = totals(ins);
  const c = inspectCompleteness(ins);
  return {
    address: x.address,
    checkpoint: { name: x.checkpoint.name, kind: x.checkpoint.kind, step: x.checkpoint.step, path: x.checkpoint.path, bytes: x.checkpoint.bytes, ...(x.checkpoint.skipped ? { skipped: x.checkpoint.skipped } : {}) },
    summary: summaryLine(ins),
    format: ins.format,
    completeness: c.state,
    incomplete: c.state === 'incomplete' ? c.reasons : [],
    ...(ins.step !== undefined ? { step: ins.step } : {}),
    ...(ins.epoch !== undefined ? { epoch: ins.epoch } : {}),
    totals: { params: t.params, bytes: t.bytes, tensors: t.tensors, optimizerTensors: t.optimizerTensors, rngTensors: t.rngTensors, state: t.state, dtypes: Object.fromEntries(t.dtypes) },
    state: stateParts(ins),
    groups: groupTensors(ins.tensors).map((g) => ({ label: g.label, path: g.path, params: g.params, bytes: g.bytes, tensors: g.tensors.length })),
    entries: ins.entries,
    opaque: ins.opaque,
    files: ins.files,
    remote: { commands: x.result.commands, bytesRead: x.result.bytesRead },
  };
}

/** inspectionJson's text in pieces: the head, then the tensors one by one (never one string of a million tensors). */
function* inspectionJsonPieces(x: InspectedCheckpoint): Generator<string> {
  const head = JSON.stringify(inspectionJsonHead(x));
  yield `${head.slice(0, -1)},"tensors":[`;
  let first = true;
  for (const t of x.result.inspection.tensors) {
    yield `${first ? '' : ','}${JSON.stringify(tensorJson(t))}`;
    first = false;
  }
  yield ']}\n';
}

/** The widest name column of the text output; longer names run past it. */
const NAME_COLUMN = 100;

const shapeText = (s: number[]): string => `[${s.join(', ')}]`;
const bytesText = (b: number | null): string => (b === null ? '? B' : formatBytes(b));

export function inspectionText(x: InspectedCheckpoint): string {
  return [...inspectionTextPieces(x)].join('');
}

/** inspectionText in pieces of a line each. */
function* inspectionTextPieces(x: InspectedCheckpoint): Generator<string> {
  const ins = x.result.inspection;
  const lines: string[] = [`${x.address}: ${summaryLine(ins)}`];
  const flush = function* (): Generator<string> {
    for (const l of lines) yield `${l}\n`;
    lines.length = 0;
  };
  const t = totals(ins);
  lines.push(`format: ${ins.format} · ${ins.files.length} file${ins.files.length === 1 ? '' : 's'} · read ${formatBytes(x.result.bytesRead)} in ${x.result.commands} remote command${x.result.commands === 1 ? '' : 's'}`);
  for (const r of inspectCompleteness(ins).reasons) lines.push(`${ins.incomplete.length ? 'incomplete' : 'not known'}: ${r}`);
  const groups = groupTensors(ins.tensors);
  if (groups.length) {
    lines.push('', `tensors (${t.tensors}, ${formatCount(t.params)} params, ${bytesText(t.bytes)}):`);
    // Names are aligned up to NAME_COLUMN: one name of megabytes (a hostile header) must not pad every line to it.
    const w = Math.min(NAME_COLUMN, ins.tensors.reduce((m, x2) => (x2.role === 'model' ? Math.max(m, displayName(x2.name).length) : m), 10));
    for (const g of groups) {
      lines.push(`  ${displayName(g.label)}  ${formatCount(g.params)} params  ${bytesText(g.bytes)}`);
      yield* flush();
      for (const tt of g.tensors) yield `    ${displayName(tt.name).padEnd(w)}  ${displayName(tt.dtype).padEnd(9)} ${shapeText(tt.shape)}\n`;
    }
  }
  const state = stateParts(ins);
  if (state.length) lines.push('', `other state (not counted in params): ${state.join(' · ')}`);
  if (ins.entries.length) {
    lines.push('', 'entries:');
    const w = Math.min(NAME_COLUMN, ins.entries.reduce((m, e) => Math.max(m, displayName(e.name).length), 0));
    for (const e of ins.entries) lines.push(`  ${displayName(e.name).padEnd(w)}  ${displayName(e.what)}`);
  }
  if (ins.opaque.length) {
    lines.push('', 'globals the file names (shown by name; nothing was imported or called):');
    for (const o of ins.opaque) lines.push(`  ${displayName(o.name)}  at ${displayName(o.at)}${o.count > 1 ? ` (${o.count}×)` : ''}${o.file ? ` in ${displayName(o.file)}` : ''}`);
  }
  lines.push('', 'files:');
  for (const f of ins.files) {
    const what = f.problem ? `not read: ${f.problem.message}` : f.note ? f.note : `${f.format}${f.tensors ? `, ${f.tensors} tensors` : ''}`;
    lines.push(`  ${displayName(f.name)}  ${formatBytes(f.size)}  ${what}${f.incomplete ? `  INCOMPLETE: ${f.incomplete}` : ''}`);
  }
  yield* flush();
}

export async function inspectCommand(deps: InspectCliDeps, addr: Address, options: { json: boolean }): Promise<number> {
  const x = await inspectAddress(deps, addr);
  await writeInSteps(deps.stdout, deps.signal, options.json ? inspectionJsonPieces(x) : inspectionTextPieces(x), 'inspect');
  return 0;
}

/** The JSON of a diff, as documented in docs/cli.md. */
export function diffJson(a: InspectedCheckpoint, b: InspectedCheckpoint, d: InspectionDiff): unknown {
  const side = (x: InspectedCheckpoint, t: InspectionDiff['totals']['a']): unknown => ({
    address: x.address,
    summary: summaryLine(x.result.inspection),
    completeness: inspectCompleteness(x.result.inspection).state,
    totals: { params: t.params, bytes: t.bytes, tensors: t.tensors, dtypes: Object.fromEntries(t.dtypes) },
  });
  return {
    a: side(a, d.totals.a),
    b: side(b, d.totals.b),
    ...(d.aligned ? { aligned: d.aligned } : {}),
    added: d.added.map(tensorJson),
    removed: d.removed.map(tensorJson),
    changed: d.changed,
    same: d.same,
  };
}

export function diffText(a: InspectedCheckpoint, b: InspectedCheckpoint, d: InspectionDiff): string {
  const lines = [`A: ${a.address}  ${summaryLine(a.result.inspection)}`, `B: ${b.address}  ${summaryLine(b.result.inspection)}`];
  const ta = d.totals.a;
  const tb = d.totals.b;
  const delta = tb.params - ta.params;
  lines.push(`params: ${ta.params} → ${tb.params} (${delta >= 0 ? '+' : ''}${delta}) · tensors: ${ta.tensors} → ${tb.tensors} · bytes: ${bytesText(ta.bytes)} → ${bytesText(tb.bytes)}`);
  if (d.aligned) lines.push(`names aligned: ${d.aligned.side.toUpperCase()}'s tensors under "${d.aligned.prefix}" compared with the other's top level`);
  const row = (t: TensorInfo): string => `${displayName(t.name)}  ${displayName(t.dtype)} ${shapeText(t.shape)}`;
  lines.push(`added (in B only): ${d.added.length}`, ...d.added.map((t) => `  + ${row(t)}`));
  lines.push(`removed (in A only): ${d.removed.length}`, ...d.removed.map((t) => `  - ${row(t)}`));
  lines.push(`changed: ${d.changed.length}`, ...d.changed.map((c) => `  ~ ${displayName(c.name)}  ${displayName(c.a.dtype)} ${shapeText(c.a.shape)} → ${displayName(c.b.dtype)} ${shapeText(c.b.shape)}`));
  lines.push(`same: ${d.same}`);
  for (const [label, x] of [['A', a], ['B', b]] as const) {
    const c = inspectCompleteness(x.result.inspection);
    if (c.state !== 'complete') lines.push(`${label} is ${c.state}: ${c.reasons.join('; ')}`);
  }
  return `${lines.join('\n')}\n`;
}

export async function diffCommand(deps: InspectCliDeps, a: Address, b: Address, options: { json: boolean }): Promise<number> {
  const xa = await inspectAddress(deps, a);
  const xb = await inspectAddress(deps, b);
  const d = diffInspections(xa.result.inspection, xb.result.inspection);
  deps.stdout.write(options.json ? `${JSON.stringify(diffJson(xa, xb, d))}\n` : diffText(xa, xb, d));
  return 0;
}

export type { Inspection };
export { formatAddress };
