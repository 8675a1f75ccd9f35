/** What an inspection of a checkpoint finds: the typed results of the pure readers (no I/O, no vscode). */

/**
 * A tensor as the file describes it. `name` is its path in the saved object: dict keys and list indices joined by
 * `.` (`model.layers.0.self_attn.q_proj.weight`, `optimizer.state.0.exp_avg`); for safetensors and DCP, the key.
 */
export interface TensorInfo {
  name: string;
  /** torch's name without `torch.`: `float32`, `bfloat16`, `int64`…; safetensors' codes are mapped to these. */
  dtype: string;
  shape: number[];
  /** Elements (the product of shape). */
  numel: number;
  /** numel × the dtype's size; null when the dtype's size is not known. */
  bytes: number | null;
  /** Whose state it is (roles.ts roleOf / fileRole). Only `model` tensors count as parameters. */
  role: TensorRole;
  /** The file it is in, relative to the checkpoint (for a folder checkpoint). */
  file?: string;
  /** torch archives: the storage's key (`archive/data/<key>` in the zip). */
  storage?: string;
  /**
   * torch archives: the storage's size in elements as the pickle names it (its persistent id), and how many of its
   * elements the tensor's view reaches (storage offset + the last element its sizes and strides address, + 1).
   * Checked against the archive by read.ts; not part of the output.
   */
  storageNumel?: number;
  storageNeeds?: number;
}

/**
 * Whose state a tensor is, from its writer's structure (roles.ts): `model` the module's parameters and buffers;
 * `optimizer` an optimizer's state (moments, fp32 master copies); `scheduler` an LR scheduler's; `rng` random
 * generators' state; `callback` a training callback's (Lightning's ModelCheckpoint scores); `loop` the training loop's
 * progress (Lightning's `loops`, Composer's timestamp); `other` any other training state (a sampler, a grad scaler,
 * DeepSpeed's bookkeeping beside `module`).
 */
export type TensorRole = 'model' | 'optimizer' | 'scheduler' | 'rng' | 'callback' | 'loop' | 'other';

/** A non-tensor entry at the top of the saved object, named for what it is. */
export interface EntryInfo {
  name: string;
  /** What it is, in words: `int 20000`, `AdamW state (exp_avg, exp_avg_sq) for 24 tensors`, `dict of 3 keys: …`. */
  what: string;
  /** The value, for scalars. */
  value?: string | number | boolean | null;
  /** What it is: a role's state (`optimizer`, `scheduler`, `rng`, `callback`, `loop`), `hyper-parameters`, `step`, `epoch`, `opaque`, `state-dict`, `scalar`, `other`. */
  kind: EntryKind;
  file?: string;
}

export type EntryKind = 'optimizer' | 'scheduler' | 'rng' | 'callback' | 'loop' | 'hyper-parameters' | 'step' | 'epoch' | 'opaque' | 'state-dict' | 'scalar' | 'other';

/** A global the file names (a class or function it would call if loaded): shown, never called. */
export interface OpaqueGlobal {
  /** `module.name`, e.g. `posix.system`, `argparse.Namespace`. */
  name: string;
  /** Where in the object it is (first place seen). */
  at: string;
  count: number;
  file?: string;
}

export type FileFormat =
  | 'safetensors'
  | 'safetensors-index'
  | 'torch-zip'
  | 'dcp-metadata'
  | 'dcp-shard'
  | 'legacy-torch'
  | 'pickle'
  | 'json'
  | 'unknown';

/** One file of a checkpoint and what was made of it. */
export interface FileInspection {
  /** Relative to the checkpoint ('' for a flat-file checkpoint: the file itself). */
  name: string;
  size: number;
  format: FileFormat;
  /** What the file is when it cannot be read without loading it (legacy torch, unknown magic), or why it was not read. */
  note?: string;
  /** A read that failed: the reader's typed error code and message. */
  problem?: { code: string; message: string };
  /** Why the file is not whole (cut short, shorter than its header says, no end record). */
  incomplete?: string;
  /** safetensors `__metadata__`. */
  metadata?: Record<string, string>;
  tensors: number;
}

export type CheckpointFormat = 'safetensors' | 'safetensors-sharded' | 'torch-zip' | 'torch-zip-sharded' | 'dcp' | 'legacy-torch' | 'mixed' | 'unknown';

/** Everything an inspection found in one checkpoint (a file, or a folder of files). */
export interface Inspection {
  format: CheckpointFormat;
  files: FileInspection[];
  /** Every tensor, in the order the files list them (files in name order). */
  tensors: TensorInfo[];
  entries: EntryInfo[];
  opaque: OpaqueGlobal[];
  /** Why the checkpoint is not whole; empty when it is (as far as its headers tell). */
  incomplete: string[];
  /**
   * The training step its writer recorded (Lightning's `global_step`, DeepSpeed's `global_steps`, Trainer's
   * trainer_state.json `global_step`, Composer's timestamp batch, a top-level `step`), and the epoch; never a counter
   * of an RNG, optimizer or scheduler file.
   */
  step?: number;
  epoch?: number;
}
