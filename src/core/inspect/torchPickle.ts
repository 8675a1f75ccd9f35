/**
 * What a torch pickle holds, read by name from the structure readPickle rebuilt (nothing is called):
 * - tensors: `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])`
 *   whose storage is the persistent id `('storage', torch.FloatStorage, key, location, numel)` (torch/serialization.py,
 *   `_save`'s persistent_id), `_rebuild_tensor_v3(…, dtype)` for dtypes without a legacy storage class (float8…,
 *   torch/_tensor.py `_reduce_ex_internal`), `_rebuild_parameter(data, …)`, `_rebuild_parameter_with_state`, and
 *   `torch._tensor._rebuild_from_type_v2(func, type, args, state)` (tensor subclasses);
 * - dicts: plain, and `collections.OrderedDict()` filled by SETITEMS (how a state dict is pickled);
 * - every other global is an opaque name, reported where it is.
 * The walk is iterative with an explicit stack and bounded in depth and in nodes visited (a memo can make a small
 * pickle a huge tree when expanded), so a hostile pickle ends in a typed error, never a stack overflow or a hang.
 */
import { InspectError } from './errors';
import type { PickleValue } from './pickle';
import { fileRole, roleOf, RNG_KEY, writerOf, type Writer } from './roles';
import type { EntryInfo, OpaqueGlobal, TensorInfo, TensorRole } from './types';

export interface WalkLimits {
  /** Deepest nesting followed (default 256). */
  maxDepth?: number;
  /** Values visited in all (default 2,000,000). */
  maxNodes?: number;
}

/** Legacy storage classes (torch/storage.py `_dtype_to_storage_type_map`) → dtype. */
const STORAGE_DTYPE: Record<string, string> = {
  DoubleStorage: 'float64',
  FloatStorage: 'float32',
  HalfStorage: 'float16',
  BFloat16Storage: 'bfloat16',
  LongStorage: 'int64',
  IntStorage: 'int32',
  ShortStorage: 'int16',
  CharStorage: 'int8',
  ByteStorage: 'uint8',
  BoolStorage: 'bool',
  ComplexDoubleStorage: 'complex128',
  ComplexFloatStorage: 'complex64',
  QInt8Storage: 'qint8',
  QUInt8Storage: 'quint8',
  QInt32Storage: 'qint32',
  QUInt4x2Storage: 'quint4x2',
  QUInt2x4Storage: 'quint2x4',
  UntypedStorage: 'uint8',
};

/** Bytes per element by dtype name; absent: not known (sub-byte quantised types). */
export const DTYPE_SIZE: Record<string, number> = {
  float64: 8, float32: 4, float16: 2, bfloat16: 2, int64: 8, int32: 4, int16: 2, int8: 1, uint8: 1, bool: 1,
  uint16: 2, uint32: 4, uint64: 8, complex128: 16, complex64: 8, complex32: 4, qint8: 1, quint8: 1, qint32: 4,
  float8_e4m3fn: 1, float8_e5m2: 1, float8_e4m3fnuz: 1, float8_e5m2fnuz: 1, float8_e8m0fnu: 1,
};

/** Names torch.dtype globals carry (`torch.float32` pickles as GLOBAL 'torch float32'). */
export function dtypeOfGlobal(v: PickleValue | undefined): string | undefined {
  if (v?.t !== 'global' || v.module !== 'torch') return undefined;
  return v.name in DTYPE_SIZE || /^(float|int|uint|complex|bfloat|qu?int|bits)\w*$/.test(v.name) ? v.name : undefined;
}

const TENSOR_REBUILDERS = new Set(['_rebuild_tensor', '_rebuild_tensor_v2', '_rebuild_tensor_v3']);
const PARAMETER_REBUILDERS = new Set(['_rebuild_parameter', '_rebuild_parameter_with_state']);

export function globalName(v: PickleValue): string | undefined {
  return v.t === 'global' ? `${v.module}.${v.name}` : undefined;
}

/** The dict a value is, if it is one (plain, or an OrderedDict/defaultdict call filled by SETITEMS). */
export function asDict(v: PickleValue): [PickleValue, PickleValue][] | undefined {
  if (v.t === 'dict') return v.entries;
  if (v.t === 'call') {
    const g = globalName(v.fn);
    if (g === 'collections.OrderedDict' || g === 'collections.defaultdict' || g === 'builtins.dict') return v.entries ?? [];
  }
  return undefined;
}

/** A list or tuple's items (torch.Size(...) included). */
export function asSeq(v: PickleValue): PickleValue[] | undefined {
  if (v.t === 'list' || v.t === 'tuple') return v.items;
  if (v.t === 'call' && globalName(v.fn) === 'torch.Size' && v.args.t === 'tuple') {
    const inner = v.args.items[0];
    return inner && (inner.t === 'tuple' || inner.t === 'list') ? inner.items : [];
  }
  return undefined;
}

export function keyText(k: PickleValue): string {
  switch (k.t) {
    case 'str':
      return k.v;
    case 'int':
      return String(k.v);
    case 'bool':
      return k.v ? 'True' : 'False';
    case 'float':
      return String(k.v);
    case 'none':
      return 'None';
    default:
      return `<${k.t}>`;
  }
}

function intOf(v: PickleValue | undefined): number | undefined {
  return v?.t === 'int' && typeof v.v === 'number' ? v.v : undefined;
}

/** The tensor a rebuild call describes (without its name and role), or undefined when it is not one. */
export function tensorOf(v: PickleValue): Omit<TensorInfo, 'name' | 'role'> | undefined {
  if (v.t !== 'call' || v.fn.t !== 'global') return undefined;
  const { module, name } = v.fn;
  const args = v.args.t === 'tuple' ? v.args.items : [];
  if (module === 'torch._utils' && PARAMETER_REBUILDERS.has(name)) return args[0] ? tensorOf(args[0]) : undefined;
  if (module === 'torch._tensor' && name === '_rebuild_from_type_v2') {
    const [fn, , inner] = args;
    return fn && inner ? tensorOf({ t: 'call', fn, args: inner }) : undefined;
  }
  if (module !== 'torch._utils' || !TENSOR_REBUILDERS.has(name)) return undefined;
  const [storage, offsetArg, size, strideArg] = args;
  const shape = (size && asSeq(size)?.map(intOf)) ?? [];
  if (shape.some((d) => d === undefined || d < 0)) return undefined;
  const dims = shape as number[];
  let dtype: string | undefined;
  let key: string | undefined;
  let storageNumel: number | undefined;
  if (storage?.t === 'persid') {
    const id = storage.id.t === 'tuple' ? storage.id.items : [];
    const cls = id[1];
    if (cls?.t === 'global') dtype = STORAGE_DTYPE[cls.name];
    if (id[2]?.t === 'str') key = id[2].v;
    storageNumel = intOf(id[4]);
  }
  // v3 names its dtype (its storage is untyped).
  if (name === '_rebuild_tensor_v3') dtype = dtypeOfGlobal(args[6]) ?? dtype;
  const numel = dims.reduce((a, b) => a * b, 1);
  const size1 = dtype !== undefined ? DTYPE_SIZE[dtype] : undefined;
  // The elements of its storage the view reaches: torch.load's set_ refuses a view past its storage's end.
  const offset = intOf(offsetArg);
  const strides = strideArg ? asSeq(strideArg)?.map(intOf) : undefined;
  let needs: number | undefined;
  if (numel > 0 && offset !== undefined && strides && strides.length === dims.length && strides.every((x) => x !== undefined && x >= 0)) {
    needs = offset + 1;
    dims.forEach((d, i) => (needs! += (d - 1) * strides[i]!));
  } else if (numel === 0) needs = 0;
  return {
    dtype: dtype ?? 'unknown',
    shape: dims,
    numel,
    bytes: size1 !== undefined ? numel * size1 : null,
    ...(key !== undefined ? { storage: key } : {}),
    ...(storageNumel !== undefined ? { storageNumel } : {}),
    ...(needs !== undefined && Number.isSafeInteger(needs) ? { storageNeeds: needs } : {}),
  };
}

export interface TorchWalk {
  tensors: TensorInfo[];
  entries: EntryInfo[];
  opaque: OpaqueGlobal[];
  step?: number;
  epoch?: number;
}

/** Globals that are values, not calls to report: dtypes, torch.Size, containers rebuilt above. */
function isBenignGlobal(g: string): boolean {
  return /^torch\.(float|int|uint|bfloat|complex|bool|qu?int|Size$|\w*Storage$|strided$|contiguous_format|preserve_format|channels_last)/.test(g) || g === 'collections.OrderedDict' || g === 'builtins.set' || g === 'builtins.frozenset' || g === '__builtin__.set' || g === '__builtin__.frozenset' || g === 'torch._utils._rebuild_tensor_v2';
}

/**
 * Every tensor under `root` by its path, the opaque globals it names, and its top-level entries named for what
 * they are. Throws InspectError('too-large') past the limits.
 */
export function walkTorchPickle(
  root: PickleValue,
  limits: WalkLimits = {},
  options: {
    /** The file's name: a file its writer gives to one kind of state (roles.ts fileRole) is wholly that state. */
    fileName?: string;
  } = {},
): TorchWalk {
  const maxDepth = limits.maxDepth ?? 256;
  const maxNodes = limits.maxNodes ?? 2_000_000;
  const tensors: TensorInfo[] = [];
  const opaque = new Map<string, OpaqueGlobal>();
  let nodes = 0;
  // Depth-first, children pushed in reverse so tensors come out in the file's order.
  const byFile = options.fileName !== undefined ? fileRole(options.fileName) : undefined;
  const top = asDict(root);
  const writer = top ? writerOf(new Set(top.map(([k]) => keyText(k)))) : undefined;
  // `keys`: the first keys of the path, unjoined (roleOf looks at most two levels down).
  const todo: { v: PickleValue; path: string; keys: string[]; depth: number; opt: TensorRole }[] = [{ v: root, path: '', keys: [], depth: 0, opt: byFile?.role ?? 'model' }];
  const join = (a: string, b: string): string => (a ? `${a}.${b}` : b);
  const noteOpaque = (g: string, at: string): void => {
    const o = opaque.get(g);
    if (o) o.count++;
    else opaque.set(g, { name: g, at, count: 1 });
  };
  while (todo.length) {
    const { v, path, keys, depth, opt } = todo.pop()!;
    if (++nodes > maxNodes) throw new InspectError('too-large', `the pickle expands to more than ${maxNodes} values (shared references repeated); not walked further`);
    if (depth > maxDepth) throw new InspectError('too-large', `the pickle nests deeper than ${maxDepth} levels (at ${path.length > 60 ? `${path.slice(0, 60)}…` : path}); not walked further`);
    const t = tensorOf(v);
    if (t) {
      tensors.push({ name: path, ...t, role: opt });
      continue;
    }
    const dict = asDict(v);
    if (dict) {
      const siblings = new Set(dict.map(([k]) => keyText(k)));
      for (let i = dict.length - 1; i >= 0; i--) {
        const [k, val] = dict[i];
        const key = keyText(k);
        const below = keys.length < 3 ? [...keys, key] : keys;
        todo.push({ v: val, path: join(path, key), keys: below, depth: depth + 1, opt: roleOf({ writer, path: below, parent: opt, siblings }) });
      }
      continue;
    }
    const seq = v.t === 'list' || v.t === 'tuple' || v.t === 'set' ? v.items : undefined;
    if (seq) {
      for (let i = seq.length - 1; i >= 0; i--) todo.push({ v: seq[i], path: join(path, String(i)), keys: keys.length < 3 ? [...keys, String(i)] : keys, depth: depth + 1, opt });
      continue;
    }
    if (v.t === 'call') {
      const g = globalName(v.fn);
      if (g === undefined || !isBenignGlobal(g)) noteOpaque(g ?? 'a computed callable', path || '(root)');
      // An object's arguments and state may hold tensors (a dataclass of tensors): walk them, under its path.
      const parts: PickleValue[] = [v.args, ...(v.state ? [v.state] : [])];
      for (let i = parts.length - 1; i >= 0; i--) todo.push({ v: parts[i], path, keys, depth: depth + 1, opt });
      if (v.entries) for (let i = v.entries.length - 1; i >= 0; i--) todo.push({ v: v.entries[i][1], path: join(path, keyText(v.entries[i][0])), keys, depth: depth + 1, opt });
      if (v.items) for (let i = v.items.length - 1; i >= 0; i--) todo.push({ v: v.items[i], path: join(path, String(i)), keys, depth: depth + 1, opt });
      continue;
    }
    if (v.t === 'global') {
      const g = `${v.module}.${v.name}`;
      if (!isBenignGlobal(g)) noteOpaque(g, path || '(root)');
    }
  }
  const walk: TorchWalk = { tensors, entries: topEntries(root, byFile?.role, writer), opaque: [...opaque.values()] };
  // A step in a file of one kind of state is that state's counter (accelerate's random_states_*.pkl `step`), not the
  // training step; an optimizer's `step` is per parameter, below the top, and never read.
  if (top && (byFile === undefined || byFile.step)) {
    for (const [k, val] of top) {
      const key = keyText(k);
      if (STEP_KEYS.has(key) && intOf(val) !== undefined) walk.step = intOf(val);
      if (key === 'epoch' && intOf(val) !== undefined) walk.epoch = intOf(val);
    }
    if (writer === 'composer') {
      const batch = composerBatch(top);
      if (batch !== undefined) walk.step = batch;
    }
  }
  return walk;
}

/**
 * Composer's training step: `state.timestamp.batch`, the batches trained (composer/core/time.py
 * `Timestamp.state_dict`, under State.state_dict's `timestamp`).
 */
function composerBatch(top: [PickleValue, PickleValue][]): number | undefined {
  const get = (d: [PickleValue, PickleValue][] | undefined, k: string): PickleValue | undefined => d?.find(([x]) => keyText(x) === k)?.[1];
  const state = get(top, 'state');
  const ts = state && asDict(state);
  const timestamp = get(ts, 'timestamp');
  const batch = get(timestamp && asDict(timestamp), 'batch');
  return intOf(batch);
}

/**
 * The top-level entries that are not tensors, each named for what it is. Bounded: it looks two levels down. A file
 * that is one optimizer's state dict (Hugging Face's optimizer.pt) is one entry, `(root)`; every entry of an RNG
 * file (rng_state.pth) is RNG state.
 */
function topEntries(root: PickleValue, byFile: TensorRole | undefined, writer: Writer | undefined): EntryInfo[] {
  const opt = optimizerOf(root);
  if (opt) return [{ name: '(root)', kind: 'optimizer', what: opt }];
  const top = asDict(root);
  if (byFile === 'scheduler') return [{ name: '(root)', kind: 'scheduler', what: schedulerOf(top) }];
  if (!top) return tensorOf(root) ? [] : [{ name: '(root)', ...describe(root, byFile === 'rng' ? 'rng' : '') }];
  const rngFile = byFile === 'rng';
  const siblings = new Set(top.map(([k]) => keyText(k)));
  const out: EntryInfo[] = [];
  // Composer keeps everything but the RNG under `state` (composer/core/state.py State.state_dict): its entries are
  // named one level down, `state.optimizers`, `state.timestamp`…
  const composerState = writer === 'composer' ? asDict(top.find(([k]) => keyText(k) === 'state')?.[1] ?? { t: 'none' }) : undefined;
  const items: { path: string[]; v: PickleValue; siblings: Set<string> }[] = top.flatMap(([k, v]) => {
    const name = keyText(k);
    if (composerState && name === 'state') {
      const inner = new Set(composerState.map(([x]) => keyText(x)));
      return composerState.map(([x, y]) => ({ path: [name, keyText(x)], v: y, siblings: inner }));
    }
    return [{ path: [name], v, siblings }];
  });
  for (const { path, v, siblings: sib } of items) {
    if (tensorOf(v) && !rngFile) continue;
    const name = path.join('.');
    if (rngFile) {
      out.push({ name, kind: 'rng', what: `RNG state (${shortType(v)})` });
      continue;
    }
    const role = roleOf({ writer, path, parent: byFile ?? 'model', siblings: sib });
    const described = describe(v, name);
    // Nothing saved (DeepSpeed's `lr_scheduler: None`, Lightning's `lr_schedulers: []`) is no state of that kind.
    const empty = v.t === 'none' || asSeq(v)?.length === 0 || asDict(v)?.length === 0;
    if (empty) out.push({ name, ...described, kind: described.kind === 'rng' ? 'other' : described.kind });
    else if (role === 'callback') out.push({ name, kind: 'callback', what: callbacksOf(v) });
    else if (role === 'scheduler' && described.kind !== 'optimizer') out.push({ name, kind: 'scheduler', what: `LR scheduler state (${shortType(v)})` });
    else if (role === 'loop' && described.kind !== 'step') out.push({ name, kind: 'loop', what: `training loop state (${described.what})` });
    // The writer's layout says whose it is: DeepSpeed's `random_ltd` is a layer-dropping schedule, not RNG state.
    else if (described.kind === 'rng' && role !== 'rng') out.push({ name, ...described, kind: 'other', what: shortType(v) });
    else out.push({ name, ...described });
  }
  return out;
}

/** Whether a tensor is within `depth` levels of containers below v. */
function holdsTensor(v: PickleValue, depth: number): boolean {
  if (tensorOf(v)) return true;
  if (depth === 0) return false;
  const inside = asDict(v)?.map(([, x]) => x) ?? asSeq(v) ?? [];
  return inside.some((x) => holdsTensor(x, depth - 1));
}

/** `LambdaLR state (last_epoch 30)`: an LR scheduler's state dict (torch/optim/lr_scheduler.py LRScheduler.state_dict). */
function schedulerOf(top: [PickleValue, PickleValue][] | undefined): string {
  const last = top?.find(([k]) => keyText(k) === 'last_epoch')?.[1];
  const n = intOf(last);
  return `LR scheduler state${n !== undefined ? ` (last_epoch ${n})` : ''}`;
}

/**
 * Lightning's `callbacks`: each callback's `state_dict()` under its `state_key` (lightning/pytorch/callbacks/callback.py
 * `Callback.state_key`: the class name, with its identifying arguments for ModelCheckpoint: `ModelCheckpoint{'monitor':
 * 'val_loss', …}`). `ModelCheckpoint(best_model_score, best_k_models, …)`: each named by its class, with its keys.
 */
function callbacksOf(v: PickleValue): string {
  const d = asDict(v);
  if (!d) return `callback state (${shortType(v)})`;
  return d
    .map(([k, x]) => {
      const name = keyText(k).replace(/\{.*$/s, '');
      // The fields holding tensors (ModelCheckpoint's best_model_score, best_k_models…): what would be counted.
      const fields = (asDict(x) ?? []).filter(([, y]) => holdsTensor(y, 3)).map(([f]) => keyText(f));
      return fields.length ? `${name}(${fields.slice(0, 6).join(', ')}${fields.length > 6 ? ', …' : ''})` : name;
    })
    .join(', ');
}

/** Top-level keys holding the step: `global_step` (Lightning, most loops), `step`, DeepSpeed's `global_steps` (engine.py _save_checkpoint). */
const STEP_KEYS: ReadonlySet<string> = new Set(['global_step', 'step', 'global_steps']);

function describe(v: PickleValue, name: string): Omit<EntryInfo, 'name'> {
  const opt = optimizerOf(v) ?? zeroOptimizerOf(v);
  if (opt) return { kind: 'optimizer', what: opt };
  // A list of optimizers' states (Lightning's optimizer_states), or a dict of them by name (Composer's optimizers).
  const seq = asSeq(v) ?? asDict(v)?.map(([, x]) => x);
  if (seq && seq.length > 0 && seq.every((x) => optimizerOf(x))) {
    return { kind: 'optimizer', what: seq.length === 1 ? optimizerOf(seq[0])! : `${seq.length} optimizers: ${seq.map((x) => optimizerOf(x)).join('; ')}` };
  }
  if (RNG_KEY.test(name)) return { kind: 'rng', what: `RNG state (${shortType(v)})` };
  switch (v.t) {
    case 'int':
      return { kind: STEP_KEYS.has(name) ? 'step' : name === 'epoch' ? 'epoch' : 'scalar', what: `int ${v.v}`, value: typeof v.v === 'number' ? v.v : String(v.v) };
    case 'float':
      return { kind: 'scalar', what: `float ${v.v}`, value: Number.isFinite(v.v) ? v.v : String(v.v) };
    case 'str':
      return { kind: 'scalar', what: `str ${JSON.stringify(v.v.length > 80 ? `${v.v.slice(0, 80)}…` : v.v)}`, value: v.v };
    case 'bool':
      return { kind: 'scalar', what: `bool ${v.v ? 'True' : 'False'}`, value: v.v };
    case 'none':
      return { kind: 'scalar', what: 'None', value: null };
    default:
  }
  const dict = asDict(v);
  // torch/optim/lr_scheduler.py LRScheduler.state_dict: its __dict__ but the optimizer (base_lrs, last_epoch, …).
  if (dict?.some(([k]) => keyText(k) === 'base_lrs') && dict.some(([k]) => keyText(k) === 'last_epoch')) return { kind: 'scheduler', what: schedulerOf(dict) };
  if (dict) {
    let n = 0;
    for (const [, x] of dict) if (tensorOf(x)) n++;
    if (n > 0 && n === dict.length) return { kind: 'state-dict', what: `state dict of ${n} tensors` };
    const keys = dict.map(([k]) => keyText(k));
    const kind = /hyper_?param|hparams|config|args/i.test(name) ? 'hyper-parameters' : 'other';
    return { kind, what: `dict of ${keys.length} key${keys.length === 1 ? '' : 's'}${keys.length ? `: ${keys.slice(0, 8).join(', ')}${keys.length > 8 ? ', …' : ''}` : ''}${n ? ` (${n} tensors)` : ''}` };
  }
  if (v.t === 'call' || v.t === 'global') {
    const g = v.t === 'global' ? `${v.module}.${v.name}` : globalName(v.fn) ?? 'a computed callable';
    const kind = /hyper_?param|hparams|config|args/i.test(name) ? 'hyper-parameters' : 'opaque';
    return { kind, what: v.t === 'call' ? `${g}(…): an object this file would build by calling ${g} if loaded (not called)` : `the global ${g} (not imported)` };
  }
  return { kind: 'other', what: shortType(v) };
}

function shortType(v: PickleValue): string {
  switch (v.t) {
    case 'list':
    case 'tuple':
      return `${v.t} of ${v.items.length}`;
    case 'dict':
      return `dict of ${v.entries.length}`;
    case 'bytes':
      return `${v.length} bytes`;
    case 'call':
      return `${globalName(v.fn) ?? 'object'}(…)`;
    default:
      return v.t;
  }
}

/**
 * A DeepSpeed ZeRO stage 1/2 optimizer's state dict (deepspeed/runtime/zero/stage_1_and_2.py, state_dict): the torch
 * optimizer's state over this rank's flat fp32 partition under `base_optimizer_state` (a list of per-group states
 * when saved elastic), the partition itself under `single_partition_of_fp32_groups`, `zero_stage` a ZeroStageEnum
 * (an int enum: pickled as a call with the number), `partition_count` the data-parallel ranks per group.
 * `ZeRO stage 2 partition (1 of 2 per group) of AdamW state (exp_avg, exp_avg_sq) for 1 parameter, …`.
 */
function zeroOptimizerOf(v: PickleValue): string | undefined {
  const d = asDict(v);
  if (!d) return undefined;
  const get = (k: string): PickleValue | undefined => d.find(([x]) => x.t === 'str' && x.v === k)?.[1];
  const base = get('base_optimizer_state');
  if (!base || !(get('single_partition_of_fp32_groups') || get('zero_stage'))) return undefined;
  const stageV = get('zero_stage');
  const stage = intOf(stageV) ?? (stageV?.t === 'call' && stageV.args.t === 'tuple' ? intOf(stageV.args.items[0]) : undefined);
  const counts = (get('partition_count') && asSeq(get('partition_count')!)?.map(intOf)) ?? [];
  const ranks = counts.length && counts.every((c) => c === counts[0]) ? counts[0] : undefined;
  const inner = optimizerOf(base) ?? (asSeq(base)?.length ? `per-group state of ${asSeq(base)!.length} group${asSeq(base)!.length === 1 ? '' : 's'}` : 'optimizer state');
  return `ZeRO${stage !== undefined ? ` stage ${stage}` : ''} partition${ranks !== undefined ? ` (one of ${ranks} data-parallel ranks)` : ''} of ${inner}`;
}

/** `AdamW state (exp_avg, exp_avg_sq) for 24 tensors, 1 param group (lr 0.001)`, for an optimizer's state dict. */
function optimizerOf(v: PickleValue): string | undefined {
  const d = asDict(v);
  if (!d) return undefined;
  const state = d.find(([k]) => k.t === 'str' && k.v === 'state')?.[1];
  const groups = d.find(([k]) => k.t === 'str' && k.v === 'param_groups')?.[1];
  if (!state || !groups) return undefined;
  const perParam = asDict(state) ?? [];
  const names = new Set<string>();
  for (const [, s] of perParam) for (const [k] of asDict(s) ?? []) names.add(keyText(k));
  const groupList = asSeq(groups) ?? [];
  const groupKeys = new Map<string, PickleValue>();
  for (const g of groupList) for (const [k, val] of asDict(g) ?? []) if (!groupKeys.has(keyText(k))) groupKeys.set(keyText(k), val);
  const has = (n: string): boolean => names.has(n);
  // The state's names say the family (torch/optim/*.py); AdamW is told from Adam only by its own flag
  // (decoupled_weight_decay, in param groups since torch 2.6's Adam/AdamW merge): without it, both are named.
  let family: string;
  const decoupled = groupKeys.get('decoupled_weight_decay');
  if (has('exp_avg') && has('exp_avg_sq')) family = decoupled?.t === 'bool' ? (decoupled.v ? 'AdamW' : 'Adam') : 'Adam or AdamW';
  else if (has('momentum_buffer')) family = 'SGD (momentum)';
  else if (has('square_avg')) family = has('acc_delta') ? 'Adadelta' : 'RMSprop';
  else if (has('sum')) family = 'Adagrad';
  else if (has('exp_avg')) family = 'Lion-like';
  else if (names.size === 0) family = groupKeys.has('momentum') ? 'SGD' : 'optimizer';
  else family = 'optimizer';
  const stateNames = [...names].filter((n) => n !== 'step');
  const lr = groupKeys.get('lr');
  const lrText = lr && (lr.t === 'float' || lr.t === 'int') ? ` (lr ${lr.v})` : '';
  return `${family} state${stateNames.length ? ` (${stateNames.join(', ')})` : ''} for ${perParam.length} parameter${perParam.length === 1 ? '' : 's'}, ${groupList.length} param group${groupList.length === 1 ? '' : 's'}${lrText}`;
}
