/**
 * safetensors: an 8-byte little-endian header length N, then N bytes of JSON
 * `{"name": {"dtype", "shape", "data_offsets": [begin, end]}, …, "__metadata__": {str: str}}`, then the data
 * (offsets relative to byte 8+N). Format: huggingface/safetensors README ("Format") and safetensors/src/tensor.rs
 * (`Metadata`, MAX_HEADER_SIZE = 100 MB). Sharded saves name their shards in `model.safetensors.index.json`:
 * `{"metadata": {"total_size": …}, "weight_map": {tensor: shard file}}` (transformers' modeling_utils.py, save_pretrained).
 */
import { InspectError } from './errors';
import type { Pieces } from './pieces';
import { DTYPE_SIZE } from './torchPickle';
import type { TensorInfo } from './types';

/** The safetensors library refuses headers over 100 MB (safetensors/src/tensor.rs MAX_HEADER_SIZE); so do we. */
export const MAX_SAFETENSORS_HEADER = 100_000_000;

/** safetensors dtype codes → torch's names. */
const DTYPES: Record<string, string> = {
  BOOL: 'bool', U8: 'uint8', I8: 'int8', I16: 'int16', U16: 'uint16', F16: 'float16', BF16: 'bfloat16', I32: 'int32',
  U32: 'uint32', F32: 'float32', F64: 'float64', I64: 'int64', U64: 'uint64', F8_E4M3: 'float8_e4m3fn', F8_E5M2: 'float8_e5m2',
  F8_E8M0: 'float8_e8m0fnu', C64: 'complex64', F4: 'float4_e2m1fn_x2', F6_E2M3: 'float6_e2m3', F6_E3M2: 'float6_e3m2',
};

export interface SafetensorsHeader {
  /** 8 + N: where the data begins. */
  dataStart: number;
  tensors: (TensorInfo & { offsets: [number, number] })[];
  metadata?: Record<string, string>;
  /** Where the last tensor's data ends (dataStart + the largest end offset): the size a whole file has at least. */
  expectedSize: number;
}

/** The header length the first 8 bytes claim, refused when absurd. */
export function safetensorsHeaderLength(src: Pieces): number {
  const first = src.range(0, 8, 'the safetensors header length');
  const n = new DataView(first.buffer, first.byteOffset, 8).getBigUint64(0, true);
  if (n > BigInt(MAX_SAFETENSORS_HEADER)) {
    throw new InspectError('absurd-length', `the header claims ${n} bytes (the safetensors library refuses over ${MAX_SAFETENSORS_HEADER}): not read`);
  }
  return Number(n);
}

export function readSafetensorsHeader(src: Pieces): SafetensorsHeader {
  const n = safetensorsHeaderLength(src);
  if (8 + n > src.size) throw new InspectError('truncated', `the header claims ${n} bytes but the file has ${src.size}: cut short`);
  const text = Buffer.from(src.range(8, 8 + n, 'the safetensors header')).toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InspectError('bad-format', `the header is not JSON: ${(e as Error).message}`);
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) throw new InspectError('bad-format', 'the header is not a JSON object');
  const tensors: SafetensorsHeader['tensors'] = [];
  let metadata: Record<string, string> | undefined;
  let maxEnd = 0;
  for (const [name, v] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (v && typeof v === 'object' && !Array.isArray(v)) metadata = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, typeof x === 'string' ? x : JSON.stringify(x)]));
      continue;
    }
    const t = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (!t || typeof t !== 'object' || typeof t.dtype !== 'string' || !Array.isArray(t.shape) || !Array.isArray(t.data_offsets) || t.data_offsets.length !== 2) {
      throw new InspectError('bad-format', `tensor ${JSON.stringify(name)} in the header has no dtype, shape and data_offsets`);
    }
    const shape = t.shape as unknown[];
    if (!shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) throw new InspectError('bad-format', `tensor ${JSON.stringify(name)} has a shape that is not a list of sizes`);
    const [a, b] = t.data_offsets as unknown[];
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || (a as number) < 0 || (b as number) < (a as number)) throw new InspectError('bad-format', `tensor ${JSON.stringify(name)} has impossible data_offsets`);
    const dtype = DTYPES[t.dtype] ?? t.dtype;
    const dims = shape as number[];
    const numel = dims.reduce((x, y) => x * y, 1);
    const size1 = DTYPE_SIZE[dtype];
    tensors.push({ name, dtype, shape: dims, numel, bytes: size1 !== undefined ? numel * size1 : (b as number) - (a as number), role: 'model', offsets: [a as number, b as number] });
    maxEnd = Math.max(maxEnd, b as number);
  }
  return { dataStart: 8 + n, tensors, ...(metadata ? { metadata } : {}), expectedSize: 8 + n + maxEnd };
}

export interface SafetensorsIndex {
  totalSize?: number;
  /** Tensor name → shard file, in the index's order. */
  weightMap: [string, string][];
  /** The shard files it names, in first-named order. */
  shards: string[];
}

/** A `*.index.json` of a sharded save (safetensors' or pytorch_model.bin's: the same shape). */
export function readShardIndex(text: string): SafetensorsIndex {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new InspectError('bad-format', `the index is not JSON: ${(e as Error).message}`);
  }
  const o = json as { metadata?: { total_size?: unknown }; weight_map?: unknown };
  if (!o || typeof o !== 'object' || !o.weight_map || typeof o.weight_map !== 'object' || Array.isArray(o.weight_map)) {
    throw new InspectError('bad-format', 'the index has no weight_map');
  }
  const weightMap: [string, string][] = [];
  const shards = new Set<string>();
  for (const [k, v] of Object.entries(o.weight_map as Record<string, unknown>)) {
    if (typeof v !== 'string') throw new InspectError('bad-format', `weight_map names no file for ${JSON.stringify(k)}`);
    weightMap.push([k, v]);
    shards.add(v);
  }
  const total = o.metadata?.total_size;
  return { weightMap, shards: [...shards], ...(typeof total === 'number' ? { totalSize: total } : {}) };
}
