/**
 * The demo's checkpoints in real formats, so inspect, the checkpoint hover and Compare Checkpoints show what they
 * show on a real run: the bytes are files the real writers made (torch.save's zip archive, safetensors, a
 * transformers sharded save with its `model.safetensors.index.json`), carried in realCheckpointBytes.ts (generated
 * by test/fixtures/demoCheckpoints.ts from test/fixtures/real/written). A few KB each.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { REAL_CHECKPOINT_FILES } from './realCheckpointBytes';

/** The torch.save archives: a small transformer's state dict, and the same model with its architecture edited. */
export type TorchModel = 'base' | 'edited';

const decoded = new Map<string, Buffer>();

/** The bytes of one carried file (`torch/base.pt`, `sharded/model.safetensors.index.json`, …). */
export function realCheckpointFile(name: string): Buffer {
  let bytes = decoded.get(name);
  if (!bytes) {
    const packed = REAL_CHECKPOINT_FILES[name];
    if (packed === undefined) throw new Error(`no demo checkpoint file ${name}`);
    bytes = zlib.gunzipSync(Buffer.from(packed, 'base64'));
    decoded.set(name, bytes);
  }
  return bytes;
}

/** The names under `group/` (`sharded`, `hf-trainer`), without the group. */
function filesOf(group: string): string[] {
  return Object.keys(REAL_CHECKPOINT_FILES)
    .filter((n) => n.startsWith(`${group}/`))
    .map((n) => n.slice(group.length + 1));
}

/** Write a torch.save archive (`torch.save(model.state_dict(), file)`) to `file`. */
export function writeTorchCheckpoint(file: string, model: TorchModel, mtimeMs?: number): void {
  writeBytes(file, realCheckpointFile(`torch/${model}.pt`), mtimeMs);
}

/** Write a transformers sharded save (5 safetensors shards, their index, config.json) into `dir`. */
export function writeShardedCheckpoint(dir: string, mtimeMs?: number): void {
  for (const name of filesOf('sharded')) writeBytes(path.join(dir, name), realCheckpointFile(`sharded/${name}`), mtimeMs);
}

/**
 * Write a Hugging Face Trainer checkpoint folder's files into `dir`: model.safetensors, optimizer.pt, scheduler.pt,
 * rng_state.pth, training_args.bin, config.json, generation_config.json (trainer_state.json is the caller's).
 */
export function writeTrainerCheckpoint(dir: string, mtimeMs?: number): void {
  for (const name of filesOf('hf-trainer')) writeBytes(path.join(dir, name), realCheckpointFile(`hf-trainer/${name}`), mtimeMs);
}

/**
 * Write `bytes` to `file` so a reader never sees a part of it: into a temporary name beside it, then renamed over
 * (the live run writes while the demo host is listed and inspected; a crash leaves at most a `.tmp`, which the
 * next start's rewrite of the whole tree removes).
 */
function writeBytes(file: string, bytes: Buffer, mtimeMs?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, bytes);
  if (mtimeMs !== undefined) fs.utimesSync(tmp, new Date(mtimeMs), new Date(mtimeMs));
  fs.renameSync(tmp, file);
}
