/**
 * One model of what a checkpoint holds, for the CLI now and the tree, hover and compare view later: tensors grouped
 * by module prefix, parameter counts and bytes, a one-line summary, completeness, and the diff of two inspections.
 */
import { formatBytes } from '../util/format';
import { STATE_ROLES } from './roles';
import type { EntryInfo, Inspection, TensorInfo, TensorRole } from './types';

export interface TensorGroup {
  /** The module path, as parts: `model.layers.0.self_attn.q_proj.weight` is in `['model','layers','0','self_attn']`. */
  path: string[];
  /** `model › layers › 0 › self_attn` */
  label: string;
  params: number;
  /** null when a tensor's dtype size is unknown. */
  bytes: number | null;
  tensors: TensorInfo[];
}

/** The module holding a tensor: its name without the last part (`model.layers.0.self_attn.q_proj`). */
export function modulePath(name: string): string[] {
  const parts = name.split('.');
  return parts.slice(0, -1);
}

/**
 * Model tensors (every other role apart: roles.ts) grouped by module, in first-seen order. A tensor of a leaf module (one with
 * no modules below it: `q_proj`, `norm`, `embed_tokens`) goes to the module above it, so one row is one attention
 * or MLP block (`model › layers › 0 › self_attn`) rather than one Linear; a tensor of a module with sub-modules (a
 * buffer such as `rope_freqs`) stays in that module's own group.
 */
export function groupTensors(tensors: readonly TensorInfo[]): TensorGroup[] {
  const model = tensors.filter((t) => t.role === 'model');
  const modules = model.map((t) => modulePath(t.name));
  const parents = new Set<string>();
  for (const m of modules) for (let i = 1; i < m.length; i++) parents.add(m.slice(0, i).join('.'));
  const groups = new Map<string, TensorGroup>();
  model.forEach((t, i) => {
    const m = modules[i];
    const path = m.length > 0 && !parents.has(m.join('.')) ? m.slice(0, -1) : m;
    const key = path.join('\0');
    let g = groups.get(key);
    if (!g) {
      g = { path, label: path.length ? path.join(' › ') : '(top level)', params: 0, bytes: 0, tensors: [] };
      groups.set(key, g);
    }
    g.params += t.numel;
    g.bytes = g.bytes === null || t.bytes === null ? null : g.bytes + t.bytes;
    g.tensors.push(t);
  });
  return [...groups.values()];
}

/** The tensors of one kind of state that is not the model's. */
export interface StateCount {
  tensors: number;
  /** Elements. */
  numel: number;
  /** null when a tensor's dtype size is unknown. */
  bytes: number | null;
}

export interface Totals {
  /** Elements of the model's tensors: the parameters (and buffers); no other state is counted. */
  params: number;
  bytes: number | null;
  /** Model tensors. */
  tensors: number;
  optimizerTensors: number;
  /** RNG state tensors. */
  rngTensors: number;
  /** Every role but the model's (roles.ts), with its tensors; roles with none are absent. */
  state: Partial<Record<Exclude<TensorRole, 'model'>, StateCount>>;
  /** dtype → parameter count, largest first. */
  dtypes: [string, number][];
}

export function totals(ins: Inspection): Totals {
  let params = 0;
  let bytes: number | null = 0;
  let n = 0;
  const state: Totals['state'] = {};
  const dt = new Map<string, number>();
  for (const t of ins.tensors) {
    if (t.role !== 'model') {
      const s = (state[t.role] ??= { tensors: 0, numel: 0, bytes: 0 });
      s.tensors++;
      s.numel += t.numel;
      s.bytes = s.bytes === null || t.bytes === null ? null : s.bytes + t.bytes;
      continue;
    }
    n++;
    params += t.numel;
    bytes = bytes === null || t.bytes === null ? null : bytes + t.bytes;
    dt.set(t.dtype, (dt.get(t.dtype) ?? 0) + t.numel);
  }
  return { params, bytes, tensors: n, optimizerTensors: state.optimizer?.tensors ?? 0, rngTensors: state.rng?.tensors ?? 0, state, dtypes: [...dt].sort((a, b) => b[1] - a[1]) };
}

const ROLE_WORD: Record<Exclude<TensorRole, 'model'>, string> = { optimizer: 'optimizer', scheduler: 'scheduler', rng: 'RNG', callback: 'callbacks', loop: 'loops', other: 'other' };

/**
 * What the checkpoint holds beside the model, one part per kind of state, with its own counts (none of it is in the
 * params): `optimizer 2 × 321 · scheduler · RNG 5.1 kB · callbacks: ModelCheckpoint(best_model_score, best_k_models)`.
 * The optimizer's count is kinds of state × the elements each covers when every kind covers as many (Adam's exp_avg
 * and exp_avg_sq over 321 parameters: `2 × 321`; buffers have none, so this can be less than the params). Empty when
 * there is nothing but the model.
 */
export function stateParts(ins: Inspection): string[] {
  const t = totals(ins);
  const parts: string[] = [];
  const has = (kind: EntryInfo['kind']): EntryInfo | undefined => ins.entries.find((e) => e.kind === kind);
  for (const role of STATE_ROLES) {
    const c = t.state[role];
    // Loops and other state are said when they hold tensors; an optimizer, a scheduler, RNG or callbacks also when
    // their entry holds none (SGD without momentum, Trainer's python/numpy RNG state).
    const entry = role === 'loop' || role === 'other' ? undefined : has(role);
    if (!c && !entry) continue;
    const word = ROLE_WORD[role];
    if (role === 'optimizer') {
      // Per kind of state (the name's last part: exp_avg, exp_avg_sq; scalar `step`s aside), the elements it covers.
      const perKind = new Map<string, number>();
      for (const x of ins.tensors) if (x.role === 'optimizer' && x.shape.length > 0) perKind.set(x.name.slice(x.name.lastIndexOf('.') + 1), (perKind.get(x.name.slice(x.name.lastIndexOf('.') + 1)) ?? 0) + x.numel);
      const sizes = [...new Set(perKind.values())];
      parts.push(!c ? `${word} (no tensors)` : sizes.length === 1 ? `${word} ${perKind.size} × ${formatCount(sizes[0])}` : `${word} ${formatCount(c.numel)} values in ${c.tensors} tensor${c.tensors === 1 ? '' : 's'}`);
    } else if (role === 'callback') {
      const names = ins.entries.filter((e) => e.kind === 'callback').map((e) => e.what);
      parts.push(`${word}: ${names.length ? names.join(', ') : `${c!.tensors} tensor${c!.tensors === 1 ? '' : 's'}`}`);
    } else if (role === 'rng') parts.push(c ? `${word} ${c.bytes === null ? `${c.tensors} tensors` : formatBytes(c.bytes)}` : word);
    else parts.push(c ? `${word} ${c.tensors} tensor${c.tensors === 1 ? '' : 's'}${c.bytes !== null ? ` (${formatBytes(c.bytes)})` : ''}` : word);
  }
  return parts;
}

/** `1.2 B`, `7.0 M`, `4.1 K`, `312`. */
export function formatCount(n: number): string {
  const units: [number, string][] = [[1e12, 'T'], [1e9, 'B'], [1e6, 'M'], [1e3, 'K']];
  for (const [u, s] of units) if (n >= u) return `${(n / u).toFixed(n / u >= 100 ? 0 : 1)} ${s}`;
  return String(n);
}

const SHORT_DTYPE: Record<string, string> = { bfloat16: 'bf16', float16: 'fp16', float32: 'fp32', float64: 'fp64', float8_e4m3fn: 'fp8 e4m3', float8_e5m2: 'fp8 e5m2' };

/**
 * `1.2 B params · bf16 · 291 tensors · optimizer: AdamW state (exp_avg, exp_avg_sq) · step 20000`, plus
 * `incomplete` or `not readable` first when that is the case.
 */
export function summaryLine(ins: Inspection): string {
  const t = totals(ins);
  const parts: string[] = [];
  if (ins.incomplete.length) parts.push(`INCOMPLETE (${ins.incomplete[0]}${ins.incomplete.length > 1 ? `; +${ins.incomplete.length - 1} more` : ''})`);
  if (t.tensors === 0) {
    const note = ins.files.find((f) => f.note && f.format !== 'json')?.note ?? ins.files.find((f) => f.problem)?.problem?.message;
    parts.push(note ? `no tensors read: ${note}` : 'no tensors');
  } else {
    parts.push(`${formatCount(t.params)} params`);
    const dts = t.dtypes.map(([d]) => SHORT_DTYPE[d] ?? d);
    parts.push(dts.length > 2 ? `${dts.slice(0, 2).join('/')}/…` : dts.join('/'));
    parts.push(`${t.tensors} tensor${t.tensors === 1 ? '' : 's'}`);
  }
  const opt = ins.entries.find((e) => e.kind === 'optimizer');
  if (opt) parts.push(`optimizer: ${opt.what.replace(/ for \d+ parameters?.*$/, '')}`);
  if (ins.step !== undefined) parts.push(`step ${ins.step}`);
  else if (ins.epoch !== undefined) parts.push(`epoch ${ins.epoch}`);
  if (ins.opaque.length) {
    const inFiles = [...new Set(ins.opaque.flatMap((o) => (o.file !== undefined && ins.files.length > 1 ? [o.file] : [])))];
    parts.push(`${ins.opaque.length} opaque global${ins.opaque.length === 1 ? '' : 's'} (not called): ${ins.opaque.slice(0, 2).map((o) => o.name).join(', ')}${ins.opaque.length > 2 ? ', …' : ''}${inFiles.length ? ` in ${inFiles.join(', ')}` : ''}`);
  }
  return parts.join(' · ');
}

export interface Completeness {
  /** `unknown`: nothing could be read that tells (a legacy file, an unknown format, a read that failed). */
  state: 'complete' | 'incomplete' | 'unknown';
  reasons: string[];
}

/**
 * Whether the checkpoint is whole as far as its headers tell: a sharded save's index naming a shard that is not
 * there, a safetensors file shorter than its header says, a torch archive without its zip end record (still being
 * written), a DCP folder without .metadata. For the tree (never offered as `latest`) as much as for inspect.
 */
export function inspectCompleteness(ins: Inspection): Completeness {
  if (ins.incomplete.length) return { state: 'incomplete', reasons: [...ins.incomplete] };
  const unreadable = ins.files.filter((f) => f.problem || f.format === 'legacy-torch' || (f.format === 'unknown' && f.note));
  if (ins.tensors.length === 0 && unreadable.length) return { state: 'unknown', reasons: unreadable.map((f) => `${f.name || 'the file'}: ${f.problem?.message ?? f.note}`) };
  return { state: 'complete', reasons: [] };
}

export interface TensorChange {
  name: string;
  a: { dtype: string; shape: number[] };
  b: { dtype: string; shape: number[] };
  /** What differs. */
  changed: ('shape' | 'dtype')[];
}

export interface InspectionDiff {
  added: TensorInfo[];
  removed: TensorInfo[];
  changed: TensorChange[];
  same: number;
  totals: { a: Totals; b: Totals };
  /** A prefix stripped from one side's names so the two line up (`state_dict.` of Lightning, `model.` of a wrapper). */
  aligned?: { side: 'a' | 'b'; prefix: string };
}

/** The prefix every model tensor name of `names` shares (`state_dict.`), if any. */
function commonFirstPart(names: string[]): string | undefined {
  if (names.length === 0) return undefined;
  const first = names[0].split('.')[0];
  return names.every((n) => n.startsWith(`${first}.`)) ? `${first}.` : undefined;
}

/**
 * Tensors added (in B only), removed (in A only), changed in shape or dtype, and the totals side by side; model
 * tensors only (optimizer, scheduler, RNG, callback and loop state differ by design: roles.ts). When A's names all sit under one prefix B lacks (Lightning's
 * `state_dict.`, a `{'model': …}` wrapper) and stripping it lines more names up, it is stripped and said (`aligned`).
 */
export function diffInspections(a: Inspection, b: Inspection): InspectionDiff {
  let am = a.tensors.filter((t) => t.role === 'model');
  let bm = b.tensors.filter((t) => t.role === 'model');
  const names = (ts: TensorInfo[]): Set<string> => new Set(ts.map((t) => t.name));
  const overlap = (x: Set<string>, y: Set<string>): number => [...x].filter((n) => y.has(n)).length;
  let aligned: InspectionDiff['aligned'];
  const base = overlap(names(am), names(bm));
  for (const side of ['a', 'b'] as const) {
    const mine = side === 'a' ? am : bm;
    const other = side === 'a' ? bm : am;
    const prefix = commonFirstPart(mine.map((t) => t.name));
    if (!prefix || commonFirstPart(other.map((t) => t.name)) === prefix) continue;
    const stripped = mine.map((t) => ({ ...t, name: t.name.slice(prefix.length) }));
    if (overlap(names(stripped), names(other)) > base) {
      if (side === 'a') am = stripped;
      else bm = stripped;
      aligned = { side, prefix };
      break;
    }
  }
  const bByName = new Map(bm.map((t) => [t.name, t]));
  const aNames = names(am);
  const added = bm.filter((t) => !aNames.has(t.name));
  const removed: TensorInfo[] = [];
  const changed: TensorChange[] = [];
  let same = 0;
  for (const t of am) {
    const o = bByName.get(t.name);
    if (!o) {
      removed.push(t);
      continue;
    }
    const what: ('shape' | 'dtype')[] = [];
    if (t.shape.join(',') !== o.shape.join(',')) what.push('shape');
    if (t.dtype !== o.dtype) what.push('dtype');
    if (what.length) changed.push({ name: t.name, a: { dtype: t.dtype, shape: t.shape }, b: { dtype: o.dtype, shape: o.shape }, changed: what });
    else same++;
  }
  return { added, removed, changed, same, totals: { a: totals(a), b: totals(b) }, ...(aligned ? { aligned } : {}) };
}
