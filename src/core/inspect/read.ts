/**
 * From the bytes read of a checkpoint's files to one Inspection: each file by its magic bytes and name, then the
 * checkpoint as a whole (a sharded save's index against its shards, a DCP folder's .metadata). Pure: the bytes come
 * in as Pieces; a header not wholly inside them is a `need-more` error with the range, which inspectFiles collects
 * (needMore) so the caller reads them all in one more command and calls again.
 */
import * as zlib from 'node:zlib';
import { InspectError, isInspectError } from './errors';
import { RemoteRunsError } from '../types';
import { LoopTurns } from '../util/delay';
import type { Pieces } from './pieces';
import { readPickle } from './pickle';
import { DTYPE_SIZE, walkTorchPickle, type WalkLimits } from './torchPickle';
import { safetensorsHeaderSteps, readShardIndex, MAX_SAFETENSORS_HEADER } from './safetensors';
import { entryDataRange, findEndRecord, firstLocalEntry, readCentralDirectory, type ZipEntry } from './zip';
import { readDcpMetadata, type DcpStorage } from './dcp';
import { DEEPSPEED_ZERO_SHARD } from '../discovery/checkpointLayout';
import type { CheckpointFormat, EntryInfo, FileFormat, FileInspection, Inspection, OpaqueGlobal, TensorInfo } from './types';

/** The most a pickle or index is read to (data.pkl of a huge optimizer state is a few MB). */
export const MAX_PICKLE_BYTES = 64 * 1024 * 1024;

/** One file of a checkpoint as the caller has it: the parts read, or why none were. */
export interface FileBytes {
  /** Relative to the checkpoint folder; a flat-file checkpoint's one file by its own name. */
  name: string;
  size: number;
  /** The parts read; undefined when the file was not read (see `unread`). */
  pieces?: Pieces;
  /** Why it was not read: `missing` (named by an index, not there), `skipped` (not a file inspect reads), or a message. */
  unread?: string;
}

interface FileResult {
  file: FileInspection;
  tensors: TensorInfo[];
  entries: EntryInfo[];
  opaque: OpaqueGlobal[];
  step?: number;
  epoch?: number;
  /** safetensors: the size a whole file has at least (its header's last data offset). */
  expectedSize?: number;
  /** A shard index's weight map. */
  index?: ReturnType<typeof readShardIndex>;
  /** DCP .metadata: where each item's bytes are in the .distcp shards. */
  dcpStorage?: DcpStorage[];
}

const LEGACY_MAGIC = Buffer.from([0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19]);

/** What a file is by its first bytes, for files this reader does not read. */
export function magicOf(head: Uint8Array): string | undefined {
  const b = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (b.subarray(0, LEGACY_MAGIC.length).equals(LEGACY_MAGIC)) {
    return 'a torch.save file in the legacy format (before torch 1.6, or _use_new_zipfile_serialization=False): a pickle stream followed by raw storages, whose tensors cannot be listed without loading it';
  }
  if (b[0] === 0x80 && b.length > 1 && b[1] <= 5) return `a Python pickle (protocol ${b[1]}), not a torch archive: it cannot be read without loading it`;
  if (b.subarray(0, 4).toString('latin1') === 'GGUF') return 'a GGUF model file (llama.cpp), not read here';
  if (b.subarray(0, 8).equals(Buffer.from([0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'an HDF5 file (Keras .h5 weights?), not read here';
  if (b.subarray(0, 6).toString('latin1') === '\x93NUMPY') return 'a NumPy .npy array, not read here';
  if (b[0] === 0x1f && b[1] === 0x8b) return 'a gzip-compressed file, not read here';
  if (b.subarray(0, 4).toString('latin1') === 'PK\x03\x04') return undefined;
  return undefined;
}

function looksLikeSafetensors(name: string, head: Uint8Array): boolean {
  if (name.endsWith('.safetensors')) return true;
  if (head.length < 9) return false;
  const n = new DataView(head.buffer, head.byteOffset, 8).getBigUint64(0, true);
  return n > 1n && n <= BigInt(MAX_SAFETENSORS_HEADER) && head[8] === 0x7b;
}

function formatOfName(name: string): FileFormat | undefined {
  const base = name.split('/').pop() ?? name;
  if (base === '.metadata') return 'dcp-metadata';
  if (base.endsWith('.distcp')) return 'dcp-shard';
  if (base.endsWith('.index.json')) return 'safetensors-index';
  if (base.endsWith('.json')) return 'json';
  return undefined;
}

/** Which files of a checkpoint folder inspect reads (the rest are listed as not read, with their size). */
export function isInspectable(name: string): boolean {
  const base = name.split('/').pop() ?? name;
  return base === '.metadata' || /\.(safetensors|pt|pth|bin|ckpt|pkl)$/.test(base) || base.endsWith('.index.json') || isTrainerState(base);
}

/** transformers Trainer's state beside the weights (trainer.py `_save_checkpoint`, TRAINER_STATE_NAME). */
function isTrainerState(name: string): boolean {
  return (name.split('/').pop() ?? name) === 'trainer_state.json';
}

/**
 * The training step and epoch of a trainer_state.json (transformers/trainer_callback.py `TrainerState.save_to_json`:
 * `global_step` the optimizer steps taken, `epoch` a float). A file that does not parse says so on its row.
 */
function trainerStep(text: string): { step?: number; epoch?: number } {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch (e) {
    throw new InspectError('bad-format', `trainer_state.json is not JSON: ${(e as Error).message}`);
  }
  const o = typeof j === 'object' && j !== null ? (j as Record<string, unknown>) : {};
  const step = typeof o.global_step === 'number' && Number.isSafeInteger(o.global_step) ? o.global_step : undefined;
  const epoch = typeof o.epoch === 'number' && Number.isFinite(o.epoch) ? o.epoch : undefined;
  return { ...(step !== undefined ? { step } : {}), ...(epoch !== undefined ? { epoch } : {}) };
}

function decode(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
}

function* readFile(f: FileBytes & { pieces: Pieces }, limits: WalkLimits): Generator<void, FileResult, void> {
  const src = f.pieces;
  const base: FileInspection = { name: f.name, size: f.size, format: 'unknown', tensors: 0 };
  const empty = { tensors: [], entries: [], opaque: [] };
  const byName = formatOfName(f.name);
  if (byName === 'dcp-shard') return { file: { ...base, format: 'dcp-shard', note: 'a torch.distributed.checkpoint shard: its tensors are listed by .metadata' }, ...empty };
  if (byName === 'json' || byName === 'safetensors-index') {
    if (f.size > MAX_PICKLE_BYTES) throw new InspectError('absurd-length', `${f.size} bytes of JSON: not read`);
    const text = decode(src.range(0, f.size, f.name));
    if (byName === 'safetensors-index') return { file: { ...base, format: 'safetensors-index' }, ...empty, index: readShardIndex(text) };
    if (isTrainerState(f.name)) return { file: { ...base, format: 'json' }, ...empty, ...trainerStep(text) };
    return { file: { ...base, format: 'json' }, ...empty };
  }
  if (f.size === 0) return { file: { ...base, note: 'an empty file', incomplete: 'is empty (0 bytes)' }, ...empty };
  const head = src.range(0, Math.min(f.size, 16, Math.max(1, src.contiguousEnd(0))), `the first bytes of ${f.name}`);
  if (byName === 'dcp-metadata') {
    if (f.size > MAX_PICKLE_BYTES) throw new InspectError('absurd-length', `a .metadata of ${f.size} bytes: not read`);
    const { value } = readPickle(src.range(0, f.size, '.metadata'));
    const md = readDcpMetadata(value);
    return { file: { ...base, format: 'dcp-metadata', tensors: md.tensors.length }, tensors: md.tensors, entries: md.entries, opaque: [], dcpStorage: md.storage };
  }
  if (looksLikeSafetensors(f.name, head)) {
    const h = yield* safetensorsHeaderSteps(src);
    const file: FileInspection = { ...base, format: 'safetensors', tensors: h.tensors.length, ...(h.metadata ? { metadata: h.metadata } : {}) };
    // The safetensors library refuses such a file (MetadataIncompleteBuffer); a writer still writing leaves one too.
    if (h.expectedSize > f.size) file.incomplete = `is ${f.size} bytes, its header says ${h.expectedSize}: cut short or still being written (the safetensors library refuses it: "incomplete metadata, file not fully covered")`;
    // Tagged in place: a copy of each would double what a header of a million tensors costs.
    for (const t of h.tensors) t.file = f.name;
    return { file, tensors: h.tensors, entries: [], opaque: [], expectedSize: h.expectedSize };
  }
  if (head[0] === 0x50 && head[1] === 0x4b) return readTorchZip(f as FileBytes & { pieces: Pieces }, base, limits);
  const magic = magicOf(head);
  const legacy = magic?.startsWith('a torch.save file in the legacy');
  return {
    file: { ...base, format: legacy ? 'legacy-torch' : magic?.startsWith('a Python pickle') ? 'pickle' : 'unknown', note: magic ?? `not a format inspect knows (first bytes ${Buffer.from(head).subarray(0, 8).toString('hex')}): it cannot be read without loading it` },
    ...empty,
  };
}

function readTorchZip(f: FileBytes & { pieces: Pieces }, base: FileInspection, limits: WalkLimits): FileResult {
  const src = f.pieces;
  const file: FileInspection = { ...base, format: 'torch-zip' };
  const dir = findEndRecord(src);
  let pkl: { name: string; from: number; to: number; method: number } | undefined;
  let entries: ZipEntry[] | undefined;
  if (!dir) {
    file.incomplete = 'has no zip end record: still being written, or cut short';
    // torch writes data.pkl first: what it holds can still be said from the head of the file.
    const first = firstLocalEntry(src);
    if (!first || !first.name.endsWith('data.pkl') || first.method !== 0) {
      return { file: { ...file, note: 'its first entry is not a stored data.pkl, and without the central directory nothing else can be found' }, tensors: [], entries: [], opaque: [] };
    }
    // Without its size (a data descriptor follows the data), the pickle is read up to its STOP: from the bytes read
    // at the head, asking for more (four times as much, up to the file's end) when it runs past them.
    const have = first.to ?? Math.min(src.size, src.contiguousEnd(0));
    try {
      readPickle(src.range(first.from, have, first.name));
    } catch (e) {
      if (isInspectError(e) && e.code === 'truncated' && first.to === undefined && have < src.size) {
        throw new InspectError('need-more', `${first.name} runs past the bytes read`, { from: have, to: Math.min(src.size, Math.max(have * 4, have + 65_536)) });
      }
      if (!(isInspectError(e) && e.code === 'need-more')) throw e;
    }
    pkl = { name: first.name, from: first.from, to: have, method: 0 };
  } else {
    try {
      entries = readCentralDirectory(src, dir);
    } catch (e) {
      // A central directory past the tail read: data.pkl will be needed next; when it runs past the head too, ask
      // for both now (one more command, not two).
      if (isInspectError(e) && e.code === 'need-more' && e.need) throw new InspectError('need-more', e.message, e.need, pickleHeadNeed(src, dir.cdOffset));
      throw e;
    }
    const candidates = entries.filter((e) => e.name === 'data.pkl' || /^[^/]+\/data\.pkl$/.test(e.name));
    if (candidates.length !== 1) {
      const what = candidates.length === 0 ? 'holds no data.pkl' : `holds ${candidates.length} data.pkl (${candidates.map((c) => c.name).join(', ')})`;
      return { file: { ...file, format: 'unknown', note: `a zip archive that ${what}: not a torch.save archive` }, tensors: [], entries: [], opaque: [] };
    }
    const e = candidates[0];
    pkl = { name: e.name, ...entryDataRange(src, e), method: e.method };
  }
  if (pkl.to - pkl.from > MAX_PICKLE_BYTES) throw new InspectError('absurd-length', `data.pkl is ${pkl.to - pkl.from} bytes, over ${MAX_PICKLE_BYTES}: not read`);
  let bytes = src.range(pkl.from, pkl.to, pkl.name);
  if (pkl.method === 8) {
    try {
      bytes = zlib.inflateRawSync(bytes, { maxOutputLength: MAX_PICKLE_BYTES });
    } catch (e) {
      throw new InspectError('bad-format', `data.pkl does not inflate: ${(e as Error).message}`);
    }
  } else if (pkl.method !== 0) throw new InspectError('unsupported', `data.pkl is compressed with zip method ${pkl.method}`);
  const { value } = readPickle(bytes);
  // A file its writer gives to one kind of state (Trainer's rng_state.pth, accelerate's random_states_0.pkl, DeepSpeed's
  // ZeRO shards…) is wholly that state: roles.ts fileRole.
  const walk = walkTorchPickle(value, limits, { fileName: f.name });
  const tensors = walk.tensors.map((t) => ({ ...t, file: f.name }));
  if (entries) {
    // Every storage the pickle names must be in the archive; a missing one is a save that did not finish.
    const prefix = pkl.name.slice(0, -'data.pkl'.length);
    const names = new Set(entries.map((e) => e.name));
    const missing = [...new Set(tensors.flatMap((t) => (t.storage !== undefined && !names.has(`${prefix}data/${t.storage}`) ? [t.storage] : [])))];
    if (missing.length) file.incomplete = `names ${missing.length} storage${missing.length === 1 ? '' : 's'} the archive does not hold (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''})`;
    checkStorages(tensors, new Map(entries.map((e) => [e.name, e])), prefix);
  }
  file.tensors = tensors.length;
  const fileTag = { file: f.name };
  return {
    file,
    tensors,
    entries: walk.entries.map((e) => ({ ...e, ...fileTag })),
    opaque: walk.opaque.map((o) => ({ ...o, ...fileTag })),
    ...(walk.step !== undefined ? { step: walk.step } : {}),
    ...(walk.epoch !== undefined ? { epoch: walk.epoch } : {}),
  };
}

/**
 * What torch.load refuses of a torch archive's storages, refused here too in its words: a storage record whose size
 * is not the element count its persistent id names × the dtype's size (torch/serialization.py `_load`'s load_tensor
 * asks `get_storage_from_record(name, numel * element_size)`, which fails "record size (…) does not match expected
 * size (…)", torch/csrc/jit/python/init.cpp), and a tensor whose offset, sizes and strides reach past its storage
 * (torch/_utils.py `_rebuild_tensor` sets the view with `set_`, which would grow the storage, and a loaded storage
 * cannot grow: "Trying to resize storage that is not resizable"). test/fixtures/real/make_refused.py records both
 * from torch.load. A storage the archive does not hold is a save not finished (the caller's `incomplete`).
 */
function checkStorages(tensors: TensorInfo[], entries: Map<string, ZipEntry>, prefix: string): void {
  const seen = new Set<string>();
  for (const t of tensors) {
    if (t.storage === undefined || t.storageNumel === undefined) continue;
    const size1 = DTYPE_SIZE[t.dtype];
    const e = entries.get(`${prefix}data/${t.storage}`);
    if (e && size1 !== undefined && !seen.has(t.storage)) {
      seen.add(t.storage);
      const want = t.storageNumel * size1;
      if (e.size !== want) {
        throw new InspectError('bad-format', `refused, as torch.load refuses it ("record size (${e.size} bytes) does not match expected size (${want} bytes …)"): storage ${t.storage} of ${JSON.stringify(t.name)} is ${t.storageNumel} ${t.dtype} elements in the pickle, ${e.size} bytes in the archive`);
      }
    }
    if (t.storageNeeds !== undefined && t.storageNeeds > t.storageNumel) {
      throw new InspectError('bad-format', `refused, as torch.load refuses it ("Trying to resize storage that is not resizable"): ${JSON.stringify(t.name)} reaches element ${t.storageNeeds} of storage ${t.storage}, which holds ${t.storageNumel}`);
    }
  }
}

/**
 * A DCP .metadata whose `storage_data` places an item's bytes past the end of its shard: dcp.load reads
 * [offset, offset + length) of the shard and torch.load's that slice (FileSystemReader.read_data,
 * torch/distributed/checkpoint/filesystem.py), which fails (EOFError; make_refused.py records it). A shard the
 * folder does not hold is not this: the files listed decide (a save not finished is told by the missing .metadata).
 */
function dcpStoragePastShards(r: FileResult, files: FileBytes[]): string | undefined {
  const dirOf = r.file.name.includes('/') ? r.file.name.slice(0, r.file.name.lastIndexOf('/') + 1) : '';
  const sizes = new Map(files.map((f) => [f.name, f.size]));
  for (const s of r.dcpStorage ?? []) {
    const size = sizes.get(dirOf + s.path);
    if (size !== undefined && s.offset + s.length > size) {
      return `refused, as dcp.load refuses it (reading ${JSON.stringify(s.fqn)} fails: EOFError): .metadata puts its bytes at ${s.offset}..${s.offset + s.length} of ${s.path}, which has ${size}`;
    }
  }
  return undefined;
}

/** The range that would complete data.pkl when torch wrote it first and it runs past the head read (else none). */
function pickleHeadNeed(src: Pieces, limit: number): { from: number; to: number }[] {
  try {
    const first = firstLocalEntry(src);
    if (!first || !first.name.endsWith('data.pkl') || first.method !== 0) return [];
    const have = src.contiguousEnd(0);
    if (first.to !== undefined) return first.to > have ? [{ from: have, to: Math.min(first.to, limit) }] : [];
    try {
      readPickle(src.range(first.from, have, first.name));
      return [];
    } catch (e) {
      return isInspectError(e) && e.code === 'truncated' ? [{ from: have, to: Math.min(limit, Math.max(have * 4, have + 65_536)) }] : [];
    }
  } catch {
    return [];
  }
}

export interface InspectOutcome {
  inspection: Inspection;
  /** Byte ranges still needed, by file name: read them, add them to the pieces and call again. */
  needMore: { name: string; from: number; to: number }[];
}

/**
 * Inspect the files of one checkpoint. A file whose header lies outside what was read asks for the range
 * (needMore) instead of failing; every other failure is the file's `problem`, never a thrown error.
 */
export function inspectFiles(files: FileBytes[], limits: WalkLimits = {}): InspectOutcome {
  const steps = inspectSteps(files, limits);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * inspectFiles in steps that let this thread do other work between them (a header of a million tensors is seconds
 * of parsing): a Ctrl-C or SIGTERM handler runs, and `signal` ending stops the work with `cancelled`.
 */
export async function inspectFilesAsync(files: FileBytes[], limits: WalkLimits = {}, signal?: AbortSignal): Promise<InspectOutcome> {
  const steps = inspectSteps(files, limits);
  // A turn of the event loop every ~20 ms of work, not at every step (each costs a macrotask).
  const turns = new LoopTurns(20);
  for (;;) {
    if (signal?.aborted) throw new RemoteRunsError('cancelled', 'inspect was cancelled while it read the headers');
    const r = steps.next();
    if (r.done) return r.value;
    await turns.maybe();
  }
}

function* inspectSteps(files: FileBytes[], limits: WalkLimits): Generator<void, InspectOutcome, void> {
  const results: FileResult[] = [];
  const needMore: InspectOutcome['needMore'] = [];
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const f of sorted) {
    const base: FileInspection = { name: f.name, size: f.size, format: formatOfName(f.name) ?? 'unknown', tensors: 0 };
    if (!f.pieces) {
      results.push({ file: { ...base, note: f.unread ?? 'not read' }, tensors: [], entries: [], opaque: [] });
      continue;
    }
    try {
      results.push(yield* readFile(f as FileBytes & { pieces: Pieces }, limits));
    } catch (e) {
      if (isInspectError(e) && e.code === 'need-more' && e.need) {
        needMore.push({ name: f.name, ...e.need });
        for (const m of e.more) if (m.to > m.from) needMore.push({ name: f.name, ...m });
        results.push({ file: { ...base, problem: { code: e.code, message: e.message } }, tensors: [], entries: [], opaque: [] });
        continue;
      }
      const err = isInspectError(e) ? e : new InspectError('bad-format', e instanceof Error ? e.message : String(e));
      const file: FileInspection = { ...base, problem: { code: err.code, message: err.message } };
      if (err.code === 'truncated') file.incomplete = `is cut short: ${err.message}`;
      results.push({ file, tensors: [], entries: [], opaque: [] });
    }
  }
  for (let i = 0; i < results.length; i++) {
    const bad = results[i].dcpStorage && dcpStoragePastShards(results[i], sorted);
    if (bad) results[i] = { file: { ...results[i].file, tensors: 0, problem: { code: 'bad-format', message: bad } }, tensors: [], entries: [], opaque: [] };
  }
  return { inspection: combine(results, files), needMore };
}

function combine(results: FileResult[], files: FileBytes[]): Inspection {
  const incomplete: string[] = [];
  const tensors: TensorInfo[] = [];
  const entries: EntryInfo[] = [];
  const opaque: OpaqueGlobal[] = [];
  let step: number | undefined;
  let epoch: number | undefined;
  const present = new Set(files.filter((f) => f.unread !== 'missing').map((f) => f.name));
  const kinds = new Set<FileFormat>();
  for (const r of results) {
    kinds.add(r.file.format);
    // One at a time: a spread passes every element as an argument, and a million tensors overflow the stack.
    for (const t of r.tensors) tensors.push(t);
    for (const e of r.entries) entries.push(e);
    for (const o of r.opaque) opaque.push(o);
    step ??= r.step;
    epoch ??= r.epoch;
    if (r.file.incomplete) incomplete.push(`${r.file.name || 'the file'} ${r.file.incomplete}`);
    if (r.index) {
      const dirOf = r.file.name.includes('/') ? r.file.name.slice(0, r.file.name.lastIndexOf('/') + 1) : '';
      const missing = r.index.shards.filter((s) => !present.has(dirOf + s));
      if (missing.length) {
        const gone = new Set(missing);
        const lost = r.index.weightMap.filter(([, f]) => gone.has(f)).length;
        incomplete.push(`${r.index.shards.length - missing.length} of ${r.index.shards.length} shards named by ${r.file.name} are there (missing: ${missing.slice(0, 4).join(', ')}${missing.length > 4 ? ', …' : ''}; ${lost} of the ${r.index.weightMap.length} tensors its weight_map names are in ${missing.length === 1 ? 'it' : 'them'})`);
      }
    }
  }
  // The index against the shards read: every tensor its weight_map names is in the shard it names, and its
  // metadata.total_size is what they hold (said on the index's row; a writer may count shared storage once).
  for (const r of results) {
    if (!r.index) continue;
    const dirOf = r.file.name.includes('/') ? r.file.name.slice(0, r.file.name.lastIndexOf('/') + 1) : '';
    const readOk = new Set(results.filter((x) => !x.file.problem && x.file.tensors > 0).map((x) => x.file.name));
    const inFile = new Set(tensors.map((t) => `${t.file ?? ''}\0${t.name}`));
    const notThere = r.index.weightMap.filter(([name, f]) => readOk.has(dirOf + f) && !inFile.has(`${dirOf + f}\0${name}`));
    if (notThere.length) incomplete.push(`${notThere.length} tensor${notThere.length === 1 ? '' : 's'} named by ${r.file.name} ${notThere.length === 1 ? 'is' : 'are'} not in the shard it names (${notThere.slice(0, 3).map(([n, f]) => `${n} in ${f}`).join(', ')}${notThere.length > 3 ? ', …' : ''})`);
    const shardBytes = tensors.filter((t) => t.file !== undefined && r.index!.shards.some((sh) => dirOf + sh === t.file)).reduce<number | null>((a, t) => (a === null || t.bytes === null ? null : a + t.bytes), 0);
    const total = r.index.totalSize;
    r.file.note = `a shard index: ${r.index.weightMap.length} tensors in ${r.index.shards.length} shards${total !== undefined ? `, total_size ${total} bytes` : ''}${total !== undefined && shardBytes !== null && r.index.shards.every((sh) => readOk.has(dirOf + sh)) ? (shardBytes === total ? ' (the shards hold that)' : ` (the shards' tensors hold ${shardBytes})`) : ''}`;
  }
  const zero = deepspeedZeroShards(results);
  if (zero) {
    // First among the optimizer entries: the summary line names the checkpoint's optimizer by it.
    const firstOpt = entries.findIndex((e) => e.kind === 'optimizer');
    entries.splice(firstOpt < 0 ? entries.length : firstOpt, 0, zero.entry);
    if (zero.incomplete) incomplete.push(zero.incomplete);
  }
  const dcpShards = results.some((r) => r.file.format === 'dcp-shard');
  if (dcpShards && !results.some((r) => r.file.format === 'dcp-metadata')) incomplete.push('torch.distributed.checkpoint shards without their .metadata (written last)');
  let format: CheckpointFormat = 'unknown';
  const tensorFiles = results.filter((r) => r.tensors.length > 0 || r.file.format === 'legacy-torch');
  const tf = new Set(tensorFiles.map((r) => r.file.format));
  if (kinds.has('dcp-metadata') || dcpShards) format = 'dcp';
  else if (tf.size === 1 && tf.has('safetensors')) format = kinds.has('safetensors-index') || tensorFiles.length > 1 ? 'safetensors-sharded' : 'safetensors';
  else if (tf.size === 1 && tf.has('torch-zip')) format = kinds.has('safetensors-index') ? 'torch-zip-sharded' : 'torch-zip';
  else if (tf.size === 1 && tf.has('legacy-torch')) format = 'legacy-torch';
  else if (tf.size > 1) format = 'mixed';
  else if (kinds.has('safetensors-index')) format = 'safetensors-sharded';
  else if (kinds.has('torch-zip')) format = 'torch-zip';
  else if (kinds.has('legacy-torch')) format = 'legacy-torch';
  return {
    format,
    files: results.map((r) => r.file),
    tensors,
    entries,
    opaque,
    incomplete,
    ...(step !== undefined ? { step } : {}),
    ...(epoch !== undefined ? { epoch } : {}),
  };
}

/** DeepSpeed's model states (engine.py _get_ckpt_name): `mp_rank_00_model_states.pt`, per rank under ZeRO-3. */
const DS_MODEL_STATES = /^(?:.*\/)?(?:zero_pp_rank_\d+_)?mp_rank_\d+_model_states\.pt$/;

/**
 * A DeepSpeed tag folder (`global_stepN/`): its ZeRO optimizer shards counted against the data-parallel world size
 * the model states file records (`dp_world_size`, engine.py _save_checkpoint), as one optimizer entry; fewer shards
 * than ranks is a save not finished (each rank writes its own shard; `latest` is written after all of them).
 */
function deepspeedZeroShards(results: FileResult[]): { entry: EntryInfo; incomplete?: string } | undefined {
  const shards = results.flatMap((r) => {
    const m = DEEPSPEED_ZERO_SHARD.exec(r.file.name);
    return m ? [{ r, rank: Number(m[1]), mp: m[2] }] : [];
  });
  const model = results.find((r) => DS_MODEL_STATES.test(r.file.name));
  if (shards.length === 0 || !model) return undefined;
  const worldEntry = model.entries.find((e) => e.name === 'dp_world_size' && typeof e.value === 'number');
  const world = worldEntry ? (worldEntry.value as number) : undefined;
  const ranksPerMp = new Map<string, Set<number>>();
  for (const s of shards) ranksPerMp.set(s.mp, (ranksPerMp.get(s.mp) ?? new Set()).add(s.rank));
  const have = Math.min(...[...ranksPerMp.values()].map((s) => s.size));
  // What one shard holds, as torchPickle's zeroOptimizerOf says it: `ZeRO stage 2 partition (…) of AdamW state (…) for …`.
  const what = shards.map((s) => s.r.entries.find((e) => e.kind === 'optimizer')?.what).find((w) => w !== undefined);
  const m = what ? /^ZeRO( stage \d+)? partition(?: \([^)]*\))? of (.*)$/.exec(what) : null;
  // Per shard it is state `for 1 parameter` (the rank's flat partition): said of the whole, that would mislead.
  const inner = m ? m[2].replace(/ for \d+ parameters?.*$/, '') : 'optimizer state';
  const count = world !== undefined ? `${have} of ${world} data-parallel shards` : `${have} data-parallel shard${have === 1 ? '' : 's'}`;
  const entry: EntryInfo = { name: 'ZeRO optimizer shards', kind: 'optimizer', what: `ZeRO${m?.[1] ?? ''} ${inner} in ${count}` };
  if (world === undefined || have >= world) return { entry };
  const missing: string[] = [];
  for (const [mp, ranks] of ranksPerMp) for (let r = 0; r < world; r++) if (!ranks.has(r)) missing.push(`zero_pp_rank_${r}_mp_rank_${mp}_optim_states.pt`);
  return { entry, incomplete: `${have} of ${world} ZeRO optimizer shards are there (dp_world_size ${world} in ${model.file.name}; missing: ${missing.slice(0, 4).join(', ')}${missing.length > 4 ? ', …' : ''}): a save not finished` };
}
