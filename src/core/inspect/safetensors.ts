/**
 * safetensors: an 8-byte little-endian header length N, then N bytes of JSON
 * `{"name": {"dtype", "shape", "data_offsets": [begin, end]}, …, "__metadata__": {str: str}}`, then the data
 * (offsets relative to byte 8+N). Format: huggingface/safetensors README ("Format") and safetensors/src/tensor.rs
 * (`Metadata`, MAX_HEADER_SIZE = 100 MB). Sharded saves name their shards in `model.safetensors.index.json`:
 * `{"metadata": {"total_size": …}, "weight_map": {tensor: shard file}}` (transformers' modeling_utils.py, save_pretrained).
 */
import { InspectError } from './errors';
import type { Pieces } from './pieces';
import type { TensorInfo } from './types';

/** The safetensors library refuses headers over 100 MB (safetensors/src/tensor.rs MAX_HEADER_SIZE); so do we. */
export const MAX_SAFETENSORS_HEADER = 100_000_000;

/**
 * safetensors dtype codes → torch's names, and their size in bits (safetensors/src/tensor.rs `Dtype::bitsize`: F4
 * is 4 bits, F6_* 6; every other code whole bytes). A code not here is refused, as serde refuses an unknown variant.
 */
const DTYPES: Record<string, [string, number]> = {
  BOOL: ['bool', 8], U8: ['uint8', 8], I8: ['int8', 8], I16: ['int16', 16], U16: ['uint16', 16], F16: ['float16', 16], BF16: ['bfloat16', 16],
  I32: ['int32', 32], U32: ['uint32', 32], F32: ['float32', 32], F64: ['float64', 64], I64: ['int64', 64], U64: ['uint64', 64],
  F8_E4M3: ['float8_e4m3fn', 8], F8_E5M2: ['float8_e5m2', 8], F8_E8M0: ['float8_e8m0fnu', 8], C64: ['complex64', 64],
  F4: ['float4_e2m1fn_x2', 4], F6_E2M3: ['float6_e2m3', 6], F6_E3M2: ['float6_e3m2', 6], F8_E4M3FNUZ: ['float8_e4m3fnuz', 8], F8_E5M2FNUZ: ['float8_e5m2fnuz', 8],
};

export interface SafetensorsHeader {
  /** 8 + N: where the data begins. */
  dataStart: number;
  tensors: TensorInfo[];
  metadata?: Record<string, string>;
  /** Where the last tensor's data ends (dataStart + the largest end offset): the size a whole file has exactly. */
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

/** Entries parsed between two yields of the stepped reader (a few milliseconds of work). */
const ENTRIES_PER_STEP = 8192;

/**
 * A header the safetensors library refuses: what the library says (its SafeTensorError's text in safetensors 0.8.0,
 * as `safe_open` prints it after "Error while deserializing header: "), then why, in words.
 */
function refused(libraryError: string, why: string): InspectError {
  return new InspectError('bad-format', `refused, as the safetensors library refuses it ("${libraryError}"): ${why}`);
}

/**
 * Where the JSON value starting at `i` ends (one past it), for the header's scanner: strings skipped with their
 * escapes, brackets counted. A value that never ends is `bad-format`.
 */
function valueEnd(text: string, i: number): number {
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x22) {
      j = stringEnd(text, j) - 1;
      if (depth === 0) return j + 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return j;
      if (--depth === 0) return j + 1;
    } else if (depth === 0 && c === 0x2c) return j;
  }
  if (depth === 0) return text.length;
  throw new InspectError('bad-format', `the header is not JSON: a value from character ${i} never ends`);
}

/** One past the closing quote of the JSON string whose opening quote is at `i`. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x5c) j++;
    else if (c === 0x22) return j + 1;
  }
  throw new InspectError('bad-format', `the header is not JSON: a string from character ${i} never ends`);
}

function skipSpace(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

function parseJson(slice: string, where: string): unknown {
  try {
    return JSON.parse(slice);
  } catch (e) {
    throw new InspectError('bad-format', `the header is not JSON (${where}): ${(e as Error).message}`);
  }
}

/**
 * The header, read in steps: the generator yields every ENTRIES_PER_STEP entries so a caller can let other work run
 * (a Ctrl-C handler) between them; readSafetensorsHeader runs it to the end at once. The header is scanned entry by
 * entry, each entry's value parsed alone: the JSON of a million tensors is never one object tree in memory.
 *
 * What the safetensors library refuses is refused here too, in its words (safetensors/src/tensor.rs,
 * `SafeTensors::read_metadata` and `Metadata::validate`, safetensors 0.8.0; test/fixtures/real/make_refused.py
 * records what `safe_open` says of each case): a header that is not UTF-8 (InvalidHeader) or not JSON of
 * `{name: {dtype, shape, data_offsets}}` (InvalidHeaderDeserialization, an unknown dtype too); tensors taken in the
 * order of their data_offsets must each begin where the one before ended, the first at 0, and end at or after their
 * beginning (InvalidOffset: an overlap, a gap, offsets backwards); each must span exactly its elements × its dtype's
 * size (TensorInvalidInfo), sizes that overflow are refused (ValidationOverflow); and the data must end where the file
 * ends (MetadataIncompleteBuffer). A file shorter than its header says is not refused here but told as incomplete
 * (`expectedSize`, read.ts), naming the library's refusal: it is also what a writer still writing leaves, and a
 * checkpoint being written must show as such, not as broken.
 */
export function* safetensorsHeaderSteps(src: Pieces): Generator<void, SafetensorsHeader, void> {
  const n = safetensorsHeaderLength(src);
  if (8 + n > src.size) throw new InspectError('truncated', `the header claims ${n} bytes but the file has ${src.size}: cut short`);
  const raw = src.range(8, 8 + n, 'the safetensors header');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw refused('invalid UTF-8 in header', 'the header is not UTF-8');
  }
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== 0x7b) throw new InspectError('bad-format', 'the header is not a JSON object');
  i = skipSpace(text, i + 1);
  const tensors: TensorInfo[] = [];
  // Each tensor's data offsets, beside it (same index): checked once all are read.
  const begins: number[] = [];
  const ends: number[] = [];
  let metadata: Record<string, string> | undefined;
  let first = true;
  for (let count = 1; ; count++) {
    if (count % ENTRIES_PER_STEP === 0) yield;
    if (text.charCodeAt(i) === 0x7d) {
      i = skipSpace(text, i + 1);
      if (i !== text.length) throw new InspectError('bad-format', `the header is not JSON: more after its end (character ${i})`);
      break;
    }
    if (!first) {
      if (text.charCodeAt(i) !== 0x2c) throw new InspectError('bad-format', `the header is not JSON: a comma or } was expected at character ${i}`);
      i = skipSpace(text, i + 1);
    }
    first = false;
    if (text.charCodeAt(i) !== 0x22) throw new InspectError('bad-format', `the header is not JSON: a name was expected at character ${i}`);
    const keyEnd = stringEnd(text, i);
    const keyText = text.slice(i + 1, keyEnd - 1);
    const name = keyText.includes('\\') ? (parseJson(text.slice(i, keyEnd), `the name at character ${i}`) as string) : keyText;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== 0x3a) throw new InspectError('bad-format', `the header is not JSON: a colon was expected at character ${i}`);
    i = skipSpace(text, i + 1);
    const end = valueEnd(text, i);
    const v = parseJson(text.slice(i, end), `the value of ${JSON.stringify(name.slice(0, 80))}`);
    i = skipSpace(text, end);
    if (name === '__metadata__') {
      if (v === null) continue;
      if (typeof v !== 'object' || Array.isArray(v) || !Object.values(v as object).every((x) => typeof x === 'string')) {
        throw refused('invalid JSON in header', '__metadata__ is not a map of strings to strings');
      }
      metadata = v as Record<string, string>;
      continue;
    }
    const t = v as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (!t || typeof t !== 'object' || typeof t.dtype !== 'string' || !Array.isArray(t.shape) || !Array.isArray(t.data_offsets) || t.data_offsets.length !== 2) {
      throw new InspectError('bad-format', `tensor ${JSON.stringify(name)} in the header has no dtype, shape and data_offsets`);
    }
    const shape = t.shape as unknown[];
    if (!shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) throw new InspectError('bad-format', `tensor ${JSON.stringify(name)} has a shape that is not a list of sizes`);
    const [a, b] = t.data_offsets as unknown[];
    if (!Number.isSafeInteger(a) || !Number.isSafeInteger(b) || (a as number) < 0 || (b as number) < 0) throw new InspectError('bad-format', `tensor ${JSON.stringify(name)} has data_offsets that are not byte offsets`);
    const known = DTYPES[t.dtype];
    if (!known) throw refused(`invalid JSON in header: unknown variant \`${t.dtype}\``, `tensor ${JSON.stringify(name)} has dtype ${JSON.stringify(t.dtype)}, which is not a safetensors dtype`);
    const dims = shape as number[];
    let numel = 1;
    for (const d of dims) numel *= d;
    const bits = numel * known[1];
    if (!Number.isSafeInteger(bits)) throw refused('overflow computing buffer size from shape and/or element type', `tensor ${JSON.stringify(name)} has shape [${dims.join(', ')}]: its size overflows`);
    if (bits % 8 !== 0) throw refused('misaligned slice', `tensor ${JSON.stringify(name)} has ${numel} elements of ${known[1]} bits: not a whole number of bytes`);
    tensors.push({ name, dtype: known[0], shape: dims, numel, bytes: bits / 8, role: 'model' });
    begins.push(a as number);
    ends.push(b as number);
  }
  yield;
  const dataEnd = yield* checkOffsets(tensors, begins, ends);
  const expectedSize = 8 + n + dataEnd;
  if (src.size > expectedSize) throw refused('incomplete metadata, file not fully covered', `the tensors' data ends at byte ${expectedSize} but the file has ${src.size}: ${src.size - expectedSize} bytes no tensor covers`);
  return { dataStart: 8 + n, tensors, ...(metadata ? { metadata } : {}), expectedSize };
}

/** Metadata::validate (safetensors/src/tensor.rs): the tensors in offset order tile the data exactly. Returns where the data ends. */
function* checkOffsets(tensors: TensorInfo[], begins: number[], ends: number[]): Generator<void, number, void> {
  // The library sorts by (begin, end); writers write in that order, so the sort is skipped when it is one already.
  let order: number[] | undefined;
  for (let k = 1; k < tensors.length; k++) {
    if (begins[k] < begins[k - 1] || (begins[k] === begins[k - 1] && ends[k] < ends[k - 1])) {
      order = tensors.map((_, j) => j).sort((x, y) => begins[x] - begins[y] || ends[x] - ends[y]);
      yield;
      break;
    }
  }
  let at = 0;
  for (let k = 0; k < tensors.length; k++) {
    if (k % (ENTRIES_PER_STEP * 8) === 0 && k > 0) yield;
    const j = order ? order[k] : k;
    const t = tensors[j];
    const [s, e] = [begins[j], ends[j]];
    const name = JSON.stringify(t.name);
    if (s !== at) {
      throw refused(`invalid offset for tensor \`${t.name}\``, s > at ? `tensor ${name} begins at data byte ${s}, but the tensors before it end at ${at}: ${s - at} bytes no tensor covers` : `tensor ${name} begins at data byte ${s}, inside the tensor before it (which ends at ${at}): they overlap`);
    }
    if (e < s) throw refused(`invalid offset for tensor \`${t.name}\``, `tensor ${name} ends (data byte ${e}) before it begins (${s})`);
    if (e - s !== t.bytes) throw refused('invalid shape, data type, or offset for tensor', `tensor ${name} is ${t.dtype} of shape [${t.shape.join(', ')}]: ${t.bytes} bytes, but its data_offsets span ${e - s}`);
    at = e;
  }
  return at;
}

/** The header at once (safetensorsHeaderSteps run to its end). */
export function readSafetensorsHeader(src: Pieces): SafetensorsHeader {
  const steps = safetensorsHeaderSteps(src);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
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
