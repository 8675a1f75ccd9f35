/**
 * torch.distributed.checkpoint's `.metadata`: a pickle (pickle.dump's default protocol) of
 * `Metadata(state_dict_metadata={fqn: TensorStorageMetadata(properties=TensorProperties(dtype, …), size=torch.Size,
 * chunks=[ChunkStorageMetadata(offsets, sizes)]) | BytesStorageMetadata()}, planner_data, storage_data, …)`
 * (torch/distributed/checkpoint/metadata.py; written last by FileSystemWriter.finish in filesystem.py). The dataclasses
 * pickle as NEWOBJ + BUILD with their __dict__ (TensorProperties' __getstate__ gives a tuple whose first item is the
 * dtype). Read with the same non-executing pickle reader: keys, global shapes and dtypes across the .distcp shards.
 */
import { InspectError } from './errors';
import type { PickleValue } from './pickle';
import { asDict, asSeq, dtypeOfGlobal, DTYPE_SIZE, globalName, keyText } from './torchPickle';
import { roleOf } from './roles';
import type { EntryInfo, TensorInfo } from './types';

/** A dataclass instance's fields: BUILD's state dict, or a (dict, slots) pair. */
function fields(v: PickleValue | undefined): Map<string, PickleValue> {
  const out = new Map<string, PickleValue>();
  if (!v || v.t !== 'call' || !v.state) return out;
  const states = v.state.t === 'tuple' ? v.state.items : [v.state];
  for (const s of states) for (const [k, x] of asDict(s) ?? []) out.set(keyText(k), x);
  return out;
}

/** Where `.metadata` says a saved item's bytes are: `length` bytes at `offset` of the shard `path` (relative). */
export interface DcpStorage {
  fqn: string;
  path: string;
  offset: number;
  length: number;
}

/**
 * `storage_data`: MetadataIndex(fqn, offset, index) → _StorageInfo(relative_path, offset, length, …)
 * (torch/distributed/checkpoint/filesystem.py). Entries that do not read as that are left out.
 */
function storageOf(root: PickleValue): DcpStorage[] {
  const out: DcpStorage[] = [];
  for (const [k, v] of asDict(fields(root).get('storage_data') ?? { t: 'none' }) ?? []) {
    const kf = fields(k);
    const vf = fields(v);
    const fqn = kf.get('fqn');
    const rel = vf.get('relative_path');
    const offset = vf.get('offset');
    const length = vf.get('length');
    if (rel?.t === 'str' && offset?.t === 'int' && typeof offset.v === 'number' && length?.t === 'int' && typeof length.v === 'number') {
      out.push({ fqn: fqn?.t === 'str' ? fqn.v : '?', path: rel.v, offset: offset.v, length: length.v });
    }
  }
  return out;
}

export function readDcpMetadata(root: PickleValue): { tensors: TensorInfo[]; entries: EntryInfo[]; chunks: number; storage: DcpStorage[] } {
  const g = root.t === 'call' ? globalName(root.fn) : undefined;
  if (!g || !/^torch\.distributed\.checkpoint\.metadata\.Metadata$/.test(g)) {
    throw new InspectError('bad-format', `.metadata is not a torch.distributed.checkpoint Metadata (its root is ${g ?? root.t})`);
  }
  const sdm = asDict(fields(root).get('state_dict_metadata') ?? { t: 'none' });
  if (!sdm) throw new InspectError('bad-format', '.metadata has no state_dict_metadata');
  const tensors: TensorInfo[] = [];
  const entries: EntryInfo[] = [];
  let chunks = 0;
  for (const [k, v] of sdm) {
    const name = keyText(k);
    const cls = v.t === 'call' ? globalName(v.fn) : undefined;
    const f = fields(v);
    if (cls?.endsWith('.TensorStorageMetadata')) {
      const props = f.get('properties');
      const pf = fields(props);
      // TensorProperties.__getstate__: (dtype, layout, requires_grad, memory_format, pin_memory).
      const tuple = props?.t === 'call' && props.state?.t === 'tuple' ? props.state.items : [];
      const dtype = dtypeOfGlobal(pf.get('dtype')) ?? dtypeOfGlobal(tuple[0]) ?? 'unknown';
      const size = f.get('size');
      const shape = (size ? asSeq(size) : undefined)?.map((d) => (d.t === 'int' && typeof d.v === 'number' ? d.v : NaN)) ?? [];
      if (shape.some((d) => !Number.isSafeInteger(d) || d < 0)) throw new InspectError('bad-format', `.metadata gives ${name} no size`);
      const numel = shape.reduce((a, b) => a * b, 1);
      const s1 = DTYPE_SIZE[dtype];
      chunks += asSeq(f.get('chunks') ?? { t: 'none' })?.length ?? 0;
      // The saved dict's first key says whose state it is (torchtitan's `optimizer`, `lr_scheduler`…): roles.ts.
      tensors.push({ name, dtype, shape, numel, bytes: s1 !== undefined ? numel * s1 : null, role: roleOf({ writer: 'dcp', path: [name.split('.')[0]], parent: 'model' }) });
    } else if (cls?.endsWith('.BytesStorageMetadata')) {
      // Whose it is by its first key (torchtitan's `lr_scheduler.last_epoch` is the scheduler's, not an epoch).
      const role = roleOf({ writer: 'dcp', path: [name.split('.')[0]], parent: 'model' });
      const last = name.slice(name.lastIndexOf('.') + 1);
      const kind: EntryInfo['kind'] =
        role === 'scheduler' || role === 'rng' ? role : role === 'loop' ? (last === 'step' ? 'step' : 'loop') : role !== 'model' ? 'other' : /step/.test(name) ? 'step' : /epoch/.test(name) ? 'epoch' : /rng/i.test(name) ? 'rng' : 'other';
      entries.push({ name, kind, what: 'a pickled object saved as bytes (its value is in the .distcp shards, not read)' });
    } else {
      entries.push({ name, kind: 'opaque', what: `${cls ?? v.t} (not a kind of storage this reader knows)` });
    }
  }
  return { tensors, entries, chunks, storage: storageOf(root) };
}
