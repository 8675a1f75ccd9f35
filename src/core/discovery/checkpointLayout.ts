/**
 * Which entry names are checkpoints, and which files are metrics logs. Pure functions over names: the
 * listing parser (listParse.ts) calls them for every entry it sees, tests call them with names alone.
 *
 * Decisions, so nobody has to rediscover them:
 * - A checkpoint FOLDER (`step_N`, `checkpoint-N`, `global_stepN`, `ckpt_N`) is one checkpoint; the files inside
 *   it (`checkpoint.pt`, `model.safetensors`, `optimizer.pt`, shards…) are that folder's files, never
 *   checkpoints of their own. The parser does not call `parseCheckpointName` below a checkpoint folder.
 * - A checkpoint FILE with a step number in its name is a step checkpoint. The number following
 *   step/iter/it/checkpoint/ckpt wins; otherwise the last number standing on its own (`weights_0300.pt`), never one
 *   glued to letters (`resnet50.pt`, `llama3.pt`) nor part of a decimal (`val_loss=0.25`).
 * - Names a framework gives that are NOT steps say what their number counts instead (CheckpointKind): fairseq's
 *   `checkpoint3.pt` is epoch 3, Keras' `model.03-0.51.keras` epoch 3, accelerate's `checkpoint_2/` the third save.
 * - `last`/`best`/`latest` names (`last.ckpt`, `last-v1.ckpt`, `checkpoint_best.pt`, `latest-rank0.pt`, NeMo's
 *   `…step=2000…-last.ckpt`) are aliases: listed, addressable by name, beside the step they hold when known.
 * - `final` names (`model_final.pth`, `final.pt`) are final weights; so is the Hugging Face `save_pretrained` output
 *   in a run folder (finalWeightFiles below). Other files with no number (`model.pt`) are not checkpoints: a listing
 *   without any says `no-checkpoints` and shows their names.
 * - Files that sit next to checkpoints but are not one (`optimizer_0.pt`, `rng_state_3.pth`,
 *   `model-00001-of-00004.safetensors`, DeepSpeed `mp_rank_00_model_states.pt`) are refused by name.
 */
import type { CheckpointAlias, CheckpointKind, CheckpointLayout } from '../types';

export interface ParsedCheckpointName {
  kind: CheckpointKind;
  /** The training step (kind `step`), null otherwise. */
  step: number | null;
  epoch?: number;
  save?: number;
  alias?: CheckpointAlias;
  layout: CheckpointLayout;
}

/**
 * Patterns of the hot paths, made once: a regular expression literal is a new RegExp object each time it is evaluated,
 * and these run for every entry of a listing.
 */
const LIGHTNING_EXT = /\.ckpt$/i;
const KERAS_EXT = /\.(keras|weights\.h5)$/i;
const EPOCH_WORD = /(?:^|[^a-z])epoch[_=-]?(\d+)(?![\d.]*\d)/i;
const ACCELERATE_FOLDER = /^checkpoint_(\d+)$/;
const DISTCP_FILE = /\.distcp$/i;
/**
 * An Orbax step being saved: `N.orbax-checkpoint-tmp` (orbax-checkpoint 0.12.4, orbax/checkpoint/_src/path/
 * atomicity.py _get_tmp_directory: the final name plus TMP_DIR_SUFFIX) or `N.orbax-checkpoint-tmp-<timestamp>`
 * (older releases, as temporary_paths.py's docstring still shows); step.py's TMP_DIR_STEP_PATTERN accepts both.
 */
const ORBAX_TMP = /^(\d+)\.orbax-checkpoint-tmp(?:-\d+)?$/;
const DIGITS = /^\d+$/;
const JSONL_FILE = /\.jsonl$/i;
const LOG_CSV = /^(metrics[^/]*|progress|log[^/]*)\.csv$/i;
const INDEX_JSON = /\.index\.json$/i;

const FOLDER_PATTERNS: ReadonlyArray<readonly [RegExp, CheckpointLayout]> = [
  [/^step[_-]?(\d+)$/i, 'step_N'],
  // transformers Trainer: f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}" with PREFIX_CHECKPOINT_DIR = "checkpoint"
  // (transformers/trainer.py, _save_checkpoint; trainer_utils.py). `checkpoint_N` folders are accelerate's when they
  // hold its random_states_N.pkl (accelerateSave below), a step otherwise.
  [/^checkpoint[-_](\d+)$/i, 'checkpoint-N'],
  // DeepSpeed: tag = f"global_step{self.global_steps}" (deepspeed/runtime/engine.py, save_checkpoint).
  [/^global[_-]?step[_-]?(\d+)$/i, 'global_stepN'],
  [/^ckpt[_-]?(\d+)$/i, 'ckpt_N'],
  // Megatron-LM: `iter_{:07d}` (megatron/training/checkpointing.py, get_checkpoint_name), holding mp_rank_XX/
  // model_optim_rng.pt, beside latest_checkpointed_iteration.txt. Its `iter_…_tmp` staging folders are no checkpoint.
  [/^iter_(\d+)$/, 'iter_N'],
];
/** MosaicML Composer's sharded (FSDP) saves are folders named like its files without the rank: `ep1-ba20`. */
const COMPOSER_FOLDER = /^ep(\d+)-ba(\d+)$/;

const CHECKPOINT_FILE_EXT = /\.(pt|pth|safetensors|bin|ckpt|keras|weights\.h5|pth\.tar|pt\.tar)$/i;
/**
 * fairseq's mid-epoch saves, `checkpoint_{epoch}_{updates}{suffix}.pt` (fairseq/checkpoint_utils.py,
 * save_checkpoint): the step is the update count, not the epoch.
 */
const FAIRSEQ_UPDATES = /^checkpoint_(\d+)_(\d+)(?:[-_.][^/]*)?\.pt$/i;
/**
 * fairseq's end-of-epoch saves, `checkpoint{epoch}{suffix}.pt` (same function): the number is the epoch, the update
 * count is only inside the file. The suffix is the trainer's checkpoint_suffix (`-shard0`, `-rank-1`).
 */
const FAIRSEQ_EPOCH = /^checkpoint(\d+)(?:-[^/]*)?\.pt$/i;
/** Lightning's default `epoch=E-step=S.ckpt`, also with a `-v1` suffix from a name clash. */
const LIGHTNING = /^epoch=(\d+)-step=(\d+)(?:-v\d+)?\.ckpt$/i;
/**
 * MosaicML Composer's default save_filename 'ep{epoch}-ba{batch}-rank{rank}.pt' (composer/trainer/trainer.py,
 * Trainer.__init__; composer/callbacks/checkpoint_saver.py): the batch count is the step.
 */
const COMPOSER = /^ep(\d+)-ba(\d+)-rank(\d+)\.pt(?:\.tar)?$/i;
/**
 * `last`/`best`/`latest` as a word of the name: Lightning's CHECKPOINT_NAME_LAST = "last" (+ `-v{n}` from
 * STARTING_VERSION = 1 on a clash, lightning/pytorch/callbacks/model_checkpoint.py), NeMo's `<name>-last.ckpt`
 * (nemo/utils/callbacks/nemo_model_checkpoint.py skips `-last.ckpt` among its top-k), fairseq's checkpoint_best.pt,
 * checkpoint_last.pt and checkpoint.best_<metric>_<value>.pt (fairseq/checkpoint_utils.py, save_checkpoint: copies of
 * the save just written), Composer's save_latest_filename 'latest-rank{rank}.pt' (a symlink), Keras' `best.keras`
 * from save_best_only, timm-style `model_best.pth.tar`.
 */
const ALIAS_WORD = /(?:^|[-_.])(best|last|latest)(?=$|[-_.])/i;
/** Folders named as an alias: `checkpoint-best`, `checkpoint_last`, `best_checkpoint`, `last_model`. */
const ALIAS_FOLDER = /^(?:(?:checkpoint|ckpt)[-_](best|last|latest)|(best|last|latest)[-_](?:checkpoint|ckpt|model))$/i;
/** `final` as a word of the name: detectron2's `model_final.pth`, `final.pt`, `final_model.safetensors`. */
const FINAL_WORD = /(?:^|[-_.])final(?=$|[-_.])/i;
/** A number that follows a step-like word: `model_step_500`, `step=300`, `iter1000`, `checkpoint_12000`. */
const KEYWORD_NUMBER = /(?:^|[^a-z])(?:step|iter|it|checkpoint|ckpt)[_=-]?(\d+)(?![\d.]*\d)/gi;
/** Names that are a checkpoint's companions or shards, not a checkpoint. */
const NOT_A_CHECKPOINT = /(rng_state|optim|scheduler|scaler|mp_rank|pp_rank|zero_|\d+-of-\d+|training_args|tokenizer)/i;

const step = (n: number, layout: CheckpointLayout, epoch?: number): ParsedCheckpointName =>
  epoch !== undefined ? { kind: 'step', step: n, layout, epoch } : { kind: 'step', step: n, layout };

/**
 * The number a name ends with, as Number() reads those digits (every FOLDER_PATTERNS step is the name's last digits):
 * read here without a match array or a slice, a listing holds thousands of step folders.
 */
function trailingNumber(name: string): number {
  let k = name.length;
  while (k > 0 && name.charCodeAt(k - 1) >= 0x30 && name.charCodeAt(k - 1) <= 0x39) k--;
  if (name.length - k > 15) return Number(name.slice(k)); // beyond what adding digits keeps exact
  let n = 0;
  for (let i = k; i < name.length; i++) n = n * 10 + (name.charCodeAt(i) - 0x30);
  return n;
}

/**
 * Recognise a checkpoint by its entry name. `isDir` tells folder layouts from flat files.
 * Returns undefined for anything that is not a checkpoint. Numbers are numbers, never strings.
 */
export function parseCheckpointName(name: string, isDir: boolean): ParsedCheckpointName | undefined {
  if (isDir) {
    for (const [pattern, layout] of FOLDER_PATTERNS) if (pattern.test(name)) return step(trailingNumber(name), layout);
    const composer = COMPOSER_FOLDER.exec(name);
    if (composer) return step(Number(composer[2]), 'composer', Number(composer[1]));
    const alias = ALIAS_FOLDER.exec(name);
    if (alias) return { kind: 'alias', step: null, layout: 'flat', alias: { role: (alias[1] ?? alias[2]).toLowerCase() as CheckpointAlias['role'], how: 'unknown' } };
    return undefined;
  }
  const fairseq = FAIRSEQ_UPDATES.exec(name);
  if (fairseq) return step(Number(fairseq[2]), 'flat', Number(fairseq[1]));
  const fairseqEpoch = FAIRSEQ_EPOCH.exec(name);
  if (fairseqEpoch) return { kind: 'epoch', step: null, epoch: Number(fairseqEpoch[1]), layout: 'flat' };
  const lightning = LIGHTNING.exec(name);
  if (lightning) return step(Number(lightning[2]), 'lightning', Number(lightning[1]));
  const composer = COMPOSER.exec(name);
  if (composer) return step(Number(composer[2]), 'composer', Number(composer[1]));
  if (!CHECKPOINT_FILE_EXT.test(name) || NOT_A_CHECKPOINT.test(name)) return undefined;
  const stem = name.replace(CHECKPOINT_FILE_EXT, '');
  const isLightning = LIGHTNING_EXT.test(name);
  const isKeras = KERAS_EXT.test(name);
  const layout: CheckpointLayout = isKeras ? 'keras' : isLightning && /(^|[-_])epoch=\d+/i.test(stem) ? 'lightning' : 'flat';
  const alias = ALIAS_WORD.exec(stem);
  if (alias) {
    const role = alias[1].toLowerCase() as CheckpointAlias['role'];
    const held = keywordNumber(stem);
    return { kind: 'alias', step: null, layout, alias: held !== undefined ? { role, step: held, how: 'name' } : { role, how: 'unknown' } };
  }
  const keyword = keywordNumber(stem);
  // `final` with no step in the name: the weights a run ends with (`model_final_step_100.pt` is step 100).
  if (FINAL_WORD.test(stem) && keyword === undefined) return { kind: 'final', step: null, layout };
  const epochWord = EPOCH_WORD.exec(stem);
  if (keyword !== undefined) return step(keyword, layout, epochWord ? Number(epochWord[1]) : undefined);
  // Keras' ModelCheckpoint formats its filepath with epoch (1-based) and the logs (keras/src/callbacks/
  // model_checkpoint.py, _get_file_path): a bare number in a .keras name is the epoch, as in its docs' examples.
  const bare = lastStandingNumber(stem);
  if (isKeras || epochWord) {
    const epoch = epochWord ? Number(epochWord[1]) : bare;
    return epoch === undefined ? undefined : { kind: 'epoch', step: null, epoch, layout };
  }
  return bare === undefined ? undefined : step(bare, layout);
}

function keywordNumber(stem: string): number | undefined {
  let keyword: string | undefined;
  for (const m of stem.matchAll(KEYWORD_NUMBER)) keyword = m[1];
  return keyword === undefined ? undefined : Number(keyword);
}

function lastStandingNumber(stem: string): number | undefined {
  // Drop decimals first so `loss=0.25` gives no 25; then numbers must stand alone between separators.
  const withoutDecimals = stem.replace(/\d+\.\d+/g, ' ');
  let last: string | undefined;
  for (const m of withoutDecimals.matchAll(/(?:^|[^a-z0-9])(\d+)(?=$|[^a-z0-9])/gi)) last = m[1];
  return last === undefined ? undefined : Number(last);
}

/**
 * accelerate's save_state with automatic_checkpoint_naming writes `<project_dir>/checkpoints/checkpoint_{save_iteration}`
 * (accelerate/accelerator.py, save_state), and in it `random_states_{process_index}.pkl` (RNG_STATE_NAME =
 * "random_states", accelerate/utils/constants.py). Its number counts saves (0, 1, 2…), not training steps: said as
 * such, never shown as a step. `childNames` are the names directly inside the folder.
 */
export function accelerateSave(name: string, childNames: Iterable<string>, siblingsAreAccelerate = false): (ParsedCheckpointName & { incomplete?: string }) | undefined {
  const m = ACCELERATE_FOLDER.exec(name);
  if (!m) return undefined;
  const save = { kind: 'save' as const, step: null, save: Number(m[1]), layout: 'accelerate' as const };
  if (someOf(childNames, (c) => ACCELERATE_RNG.test(c))) return save;
  // save_state writes into the folder in this order (accelerate 1.15.0, accelerate/checkpointing.py,
  // save_accelerator_state): the models (`model.safetensors`, `model_1.safetensors`… or `pytorch_model.bin`),
  // `optimizer.bin`, `scheduler.bin`, `sampler.bin`/`dl_state_dict.bin`, `scaler.pt`, then RNG_STATE_NAME's
  // `random_states_{process_index}.pkl` last; save_state (accelerate/accelerator.py) makes the folder first and
  // writes `custom_checkpoint_{i}.pkl` of registered objects after it. A `checkpoint_N/` holding accelerate's own
  // names, or beside accelerate saves, without its random states is a save still being written. A model file alone
  // in a folder with no accelerate save beside it says nothing (any script writes `model.safetensors`).
  const names = [...childNames];
  const own = names.some((c) => ACCELERATE_OWN.test(c));
  if (own || (siblingsAreAccelerate && (names.length === 0 || names.some((c) => ACCELERATE_MODEL.test(c))))) {
    return { ...save, incomplete: names.length === 0 ? 'holds no files yet: accelerate is still saving' : 'random_states_0.pkl not written yet: accelerate is still saving (save_state writes it last)' };
  }
  return undefined;
}

/** accelerate's RNG_STATE_NAME file of one process (accelerate/utils/constants.py: RNG_STATE_NAME = "random_states"). */
const ACCELERATE_RNG = /^random_states_\d+\.pkl$/;
/** Names only accelerate's save_accelerator_state writes (OPTIMIZER_NAME, SCHEDULER_NAME, SAMPLER_NAME + `.bin`). */
const ACCELERATE_OWN = /^(?:optimizer|scheduler|sampler|dl_state_dict)(?:_\d+)?\.bin$/;
/** Its model files (SAFE_WEIGHTS_NAME / WEIGHTS_NAME, `_{i}` for the i-th model). */
const ACCELERATE_MODEL = /^(?:model|pytorch_model)(?:_\d+)?\.(?:safetensors|bin)$/;

/** Is this listed folder an accelerate save (it holds its random states)? For the sibling rule of accelerateSave. */
export function isAccelerateSave(name: string, childNames: Iterable<string>): boolean {
  return ACCELERATE_FOLDER.test(name) && someOf(childNames, (c) => ACCELERATE_RNG.test(c));
}

/**
 * The Hugging Face Trainer writes `checkpoint-{global_step}/` in place, file by file (transformers 5.18.0,
 * transformers/trainer.py, Trainer._save_checkpoint): save_model (config.json, generation_config.json,
 * model.safetensors or its shards, then training_args.bin in Trainer._save), then optimizer.pt and scheduler.pt
 * (_save_optimizer_and_scheduler), scaler.pt, rng_state.pth (_save_rng_state; `rng_state_{rank}.pth` with several
 * processes), and TRAINER_STATE_NAME `trainer_state.json` last (TrainerState.save_to_json), before it rotates old
 * checkpoints. So a Trainer checkpoint without trainer_state.json is one still being saved (or a save that died).
 * A folder is taken for the Trainer's when it holds a file only the Trainer writes there, or when its siblings are
 * Trainer checkpoints (they hold trainer_state.json) and it holds Hugging Face model files. A `checkpoint-N/` of
 * some other script (only `model.pt`) is not the Trainer's and is left as it is. `childNames` are the folder's names.
 */
export function trainerUnfinished(name: string, children: Iterable<string>, siblingsAreTrainer: boolean): string | undefined {
  if (!TRAINER_FOLDER.test(name)) return undefined; // the names are read only for the Trainer's folder names
  const childNames = [...children];
  if (childNames.length === 0 || childNames.includes(TRAINER_STATE)) return undefined;
  const trainer = childNames.some((c) => TRAINER_ONLY.test(c)) || (siblingsAreTrainer && childNames.some((c) => FINAL_WEIGHTS.test(c) || FINAL_COMPANIONS.has(c) || SHARD.test(c)));
  return trainer ? `${TRAINER_STATE} not written yet: the Trainer is still saving (it writes ${TRAINER_STATE} last)` : undefined;
}

/** The Trainer's TRAINER_STATE_NAME (transformers/trainer.py). */
export const TRAINER_STATE = 'trainer_state.json';
/** Trainer's PREFIX_CHECKPOINT_DIR + "-" + global_step (transformers/trainer_utils.py). */
const TRAINER_FOLDER = /^checkpoint-\d+$/;
/**
 * Files only the Trainer writes into its checkpoint folder: TRAINING_ARGS_NAME, OPTIMIZER_NAME "optimizer.pt",
 * SCHEDULER_NAME "scheduler.pt", SCALER_NAME "scaler.pt", `rng_state.pth` / `rng_state_{process_index}.pth`.
 */
const TRAINER_ONLY = /^(?:training_args\.bin|optimizer\.pt|scheduler\.pt|scaler\.pt|rng_state(?:_\d+)?\.pth)$/;

/**
 * The Hugging Face `save_pretrained` files of final weights (transformers/utils/__init__.py: WEIGHTS_NAME
 * "pytorch_model.bin", WEIGHTS_INDEX_NAME, SAFE_WEIGHTS_NAME "model.safetensors", SAFE_WEIGHTS_INDEX_NAME; shards
 * `model-00001-of-00002.safetensors`; PEFT's adapter_model.*), and the companions a `save_model` writes beside them.
 * A run folder holding weights by these names, outside any checkpoint folder, holds its final weights: that is what
 * `Trainer.save_model()` at the end of training leaves (no step anywhere in the names).
 */
const FINAL_WEIGHTS = /^(?:(?:model|pytorch_model|adapter_model)(?:-\d+-of-\d+)?\.(?:safetensors|bin)|(?:model\.safetensors|pytorch_model\.bin)\.index\.json)$/;
const FINAL_COMPANIONS = new Set([
  'config.json',
  'generation_config.json',
  'adapter_config.json',
  'training_args.bin',
  'tokenizer.json',
  'tokenizer_config.json',
  'special_tokens_map.json',
  'added_tokens.json',
  'vocab.json',
  'vocab.txt',
  'merges.txt',
  'tokenizer.model',
  'spiece.model',
  'chat_template.jinja',
  'preprocessor_config.json',
]);

/** Which of a folder's own file names are final weights with their companions (empty when no weights are there). */
export function finalWeightFiles(names: readonly string[]): string[] {
  if (!names.some((n) => FINAL_WEIGHTS.test(n))) return [];
  return names.filter((n) => FINAL_WEIGHTS.test(n) || FINAL_COMPANIONS.has(n));
}

/**
 * DeepSpeed's ZeRO optimizer shard of one data-parallel rank inside a tag folder (deepspeed/runtime/engine.py,
 * _get_rank_zero_ckpt_name: `{bf16_}zero_pp_rank_{dp_rank}_mp_rank_{mp_rank:02d}_optim_states.pt`). Groups: rank, mp rank.
 */
export const DEEPSPEED_ZERO_SHARD = /^(?:.*\/)?(?:bf16_|fp16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt$/;

/**
 * The pointer files frameworks keep beside their checkpoints, whose contents name the one they consider latest:
 * DeepSpeed's `latest` (the tag, `global_step500`: deepspeed/runtime/engine.py, save_checkpoint writes it when
 * save_latest) and Megatron-LM's `latest_checkpointed_iteration.txt` (the iteration, `1000`, or `release`:
 * megatron/training/checkpointing.py, get_checkpoint_tracker_filename). Returns which checkpoint name the text means,
 * as a predicate over listed names.
 */
export function pointerNames(file: string, text: string): ((checkpointName: string) => boolean) | undefined {
  const says = text.trim();
  if (file === 'latest') return says && !says.includes('/') ? (n) => n === says : undefined;
  if (file === 'checkpoint') {
    // TensorFlow's CheckpointState text proto (tensorflow/python/checkpoint/checkpoint_management.py,
    // update_checkpoint_state_internal): `model_checkpoint_path: "ckpt-3"`, relative to the folder or absolute.
    const m = /^model_checkpoint_path:\s*"([^"\n]+)"/m.exec(says);
    if (!m) return undefined;
    const named = m[1].slice(m[1].lastIndexOf('/') + 1);
    return (n) => n === named;
  }
  if (file === 'latest_checkpointed_iteration.txt') {
    if (!/^\d+$/.test(says)) return says === 'release' ? (n) => n === 'release' : undefined;
    return (n) => n === `iter_${says.padStart(7, '0')}`;
  }
  return undefined;
}

/**
 * Names of files a writer has not finished: a checkpoint folder holding one is still being written. `.tmp` is what
 * torch.distributed.checkpoint's FileSystemWriter writes `.metadata` as before renaming it (and what most atomic
 * writers do); `.partial`, `.incomplete`, `.temp` and `.part` are the other spellings in use. `.tmpXXXXXX` (six
 * letters or digits) is the Rust tempfile crate's default name, which safetensors 0.8.0's save_file writes the
 * weights into beside their final name before renaming them (caught in the Trainer's checkpoint folder by
 * test/fixtures/real/make_livesaves.py).
 */
export const TEMPORARY_FILE = /(?:\.(tmp|temp|partial|incomplete|part)|(?:^|\/)\.tmp[A-Za-z0-9]{6})$/i;
/**
 * NeMo marks a save in progress with a file beside it: the checkpoint's path without `.ckpt`/`.nemo`/`-EMA` plus
 * UNFINISHED_CHECKPOINT_SUFFIX "-unfinished" (nemo/utils/callbacks/nemo_model_checkpoint.py,
 * format_checkpoint_unfinished_marker_path); it is removed when the save is finalized.
 */
export function unfinishedMarker(checkpointName: string): string {
  return `${checkpointName.replace(/\.(nemo|ckpt)$/i, '').replace(/-EMA$/, '')}-unfinished`;
}
/**
 * Does a folder checkpoint hold a marker that is put in place whole after everything else, so that the save is done
 * whatever its clock says? torch.distributed.checkpoint's `.metadata` (written by the coordinator after every rank's
 * shards as `.metadata.tmp`, then renamed: torch/distributed/checkpoint/filesystem.py, FileSystemWriter.finish),
 * Orbax's `_CHECKPOINT_METADATA` / `commit_success.txt` (in a step folder renamed from its temporary name: orbaxStep).
 * Names relative to the folder.
 *
 * The Trainer's trainer_state.json and accelerate's random_states_N.pkl are written last too, but in place (json
 * into an open file, torch.save), so they are not here (inPlaceMarker): make_livesaves.py caught
 * random_states_0.pkl at 0 and at 8,052 of its 14,561 bytes while accelerate wrote it, and a long run's
 * trainer_state.json is megabytes written in chunks. While such a marker is fresh the clock rule still applies.
 */
export function committedAtomically(files: readonly { name: string }[]): boolean {
  return files.some(({ name: n }) => {
    const base = n.slice(n.lastIndexOf('/') + 1);
    return base === '.metadata' || base === '_CHECKPOINT_METADATA' || base === 'commit_success.txt';
  });
}

/** The marker a folder checkpoint holds that its framework writes last but in place (see committedAtomically), if any. */
export function inPlaceMarker(files: readonly { name: string }[]): string | undefined {
  return files.find(({ name: n }) => n === TRAINER_STATE || ACCELERATE_RNG.test(n))?.name;
}

/** Hugging Face shards: `model-00001-of-00004.safetensors`, `pytorch_model-00002-of-00003.bin` (transformers' save_pretrained). */
const SHARD = /^(.*)-(\d+)-of-(\d+)\.(safetensors|bin)$/i;

/**
 * Why a folder checkpoint is not complete, from the names and sizes of its files (relative to the folder), or
 * undefined when nothing says so:
 * - no file at all yet;
 * - a temporary file (TEMPORARY_FILE) anywhere in it;
 * - torch.distributed.checkpoint shards (`__R_N.distcp`) without the `.metadata` the coordinator writes last;
 * - Hugging Face shards `X-K-of-N` with fewer than N of them present.
 */
export function incompleteReason(files: readonly { name: string; bytes: number }[]): string | undefined {
  if (files.length === 0) return 'holds no files yet';
  // One pass finds what the checks below need; most checkpoints have none of it, and a listing has thousands.
  let distcp = false;
  let metadata = false;
  let named = false;
  for (const f of files) {
    const n = f.name;
    if (TEMPORARY_FILE.test(n)) return `${n} is still being written`;
    if (n.endsWith('.metadata') && (n === '.metadata' || n.endsWith('/.metadata'))) metadata = true;
    else if (DISTCP_FILE.test(n)) distcp = true;
    else if (n.includes('-of-') || INDEX_JSON.test(n)) named = true;
  }
  if (distcp && !metadata) return 'torch.distributed.checkpoint shards without their .metadata (written last)';
  if (!named) return undefined;
  const sets = new Map<string, { of: number; have: Set<number> }>();
  for (const f of files) {
    const m = SHARD.exec(f.name);
    if (!m) continue;
    const key = `${m[1]}.${m[4].toLowerCase()}`;
    const of = Number(m[3]);
    const set = sets.get(key) ?? { of, have: new Set<number>() };
    set.of = Math.max(set.of, of);
    set.have.add(Number(m[2]));
    sets.set(key, set);
  }
  for (const [key, set] of sets) {
    if (set.have.size < set.of) return `${set.have.size} of ${set.of} shards of ${key.slice(key.lastIndexOf('/') + 1)} are there`;
  }
  // An index (`model.safetensors.index.json`) is written with its shards; with none of them beside it they are not
  // there yet. Which shards an index names is only inside it: shards named other than `-K-of-N` cannot be checked
  // from a listing of names (reading checkpoint headers remotely is a later issue).
  for (const f of files) {
    const m = /^(.*)\.(safetensors|bin)\.index\.json$/i.exec(f.name);
    if (m && !sets.has(`${m[1]}.${m[2].toLowerCase()}`) && !files.some((g) => g !== f && g.name.startsWith(`${m[1]}`) && g.name.toLowerCase().endsWith(`.${m[2].toLowerCase()}`))) {
      return `${f.name.slice(f.name.lastIndexOf('/') + 1)} names shards, none of them is there`;
    }
  }
  return undefined;
}

/**
 * Orbax's CheckpointManager names a step's folder by the bare step (`1000/`) and writes `_CHECKPOINT_METADATA`
 * (orbax/checkpoint/_src/metadata/checkpoint.py) and `commit_success.txt` (orbax/checkpoint/_src/path/
 * atomicity_types.py) into it; a save in progress is `1000.orbax-checkpoint-tmp` or `1000.orbax-checkpoint-tmp-<n>`
 * (ORBAX_TMP) until renamed. A bare number alone is no checkpoint (seed folders are named `0`, `1`…): the marker files
 * decide. `childNames` are the names directly inside the folder.
 */
export function orbaxStep(name: string, childNames: Iterable<string>): (ParsedCheckpointName & { incomplete?: string }) | undefined {
  const tmp = ORBAX_TMP.exec(name);
  if (tmp) return { kind: 'step', step: Number(tmp[1]), layout: 'orbax', incomplete: 'Orbax is still writing it (a temporary folder until the save is renamed)' };
  if (!DIGITS.test(name)) return undefined;
  return someOf(childNames, (c) => c === '_CHECKPOINT_METADATA' || c === 'commit_success.txt') ? { kind: 'step', step: Number(name), layout: 'orbax' } : undefined;
}

/** Array.prototype.some over any iterable (a folder's child names come straight from its map, without an array). */
function someOf(items: Iterable<string>, test: (item: string) => boolean): boolean {
  for (const item of items) if (test(item)) return true;
  return false;
}

/** Where a metrics log candidate sits: in the run folder itself, or in its `logs/` folder. */
export type MetricsPlace = 'run' | 'logs';

/** Dataset split files look like logs by extension; in a run folder itself they are not taken for metrics. */
const DATASET_JSONL = /^((train|val|valid|validation|test|dev|eval|data|dataset)([-_.]?\d+)?|(shard|part)[-_.]?\d+)\.jsonl$/i;

/**
 * Is this file a metrics log that makes its folder a run? `*.jsonl`, `metrics*.csv`, `progress.csv`
 * (Stable-Baselines3's, stable_baselines3/common/logger.py `make_output_format("csv", …)` →
 * `progress.csv`), `log*.csv`, `trainer_state.json` (Hugging Face), `events.out.tfevents.*` (TensorBoard).
 * In the run folder itself (place `run`) a jsonl named like a dataset split (`train.jsonl`, `val.jsonl`)
 * is not taken for a log; inside `logs/` every jsonl is one (the story's `logs/train.jsonl`), and so is every
 * CSV not named like a dataset, and Keras' `training.log` (isExtraMetricsLog).
 */
export function isMetricsLog(name: string, place: MetricsPlace = 'logs'): boolean {
  if (JSONL_FILE.test(name)) return place === 'logs' || !DATASET_JSONL.test(name);
  if (LOG_CSV.test(name)) return true;
  if (name === 'trainer_state.json') return true;
  if (place === 'logs' && isExtraMetricsLog(name)) return true;
  return name.startsWith('events.out.tfevents.');
}

/** Dataset files by their names, which a run folder holds beside its logs. */
const DATASET_CSV = /^((train|val|valid|validation|test|dev|eval|data|dataset|labels?|predictions?|submission)([-_.]?\d+)?|(shard|part)[-_.]?\d+)\.csv$/i;

/**
 * A log that is taken only in a folder that is a run for other reasons (it has checkpoints or a metrics log),
 * since the name alone does not say it is one: any other CSV (Keras' `CSVLogger(filename)` writes whatever it is
 * given, e.g. `history.csv`), except dataset-like names (`train.csv`, `predictions.csv`), and Keras'
 * documented `training.log` (keras/src/callbacks/csv_logger.py, the docstring's `CSVLogger('training.log')`),
 * which is CSV. The parser says out loud when such a file has no numbers after all (a plain text log).
 */
export function isExtraMetricsLog(name: string): boolean {
  if (name === 'training.log') return true;
  return /\.csv$/i.test(name) && !DATASET_CSV.test(name) && !isMetricsLog(name, 'run');
}

/**
 * Folder names under a run that hold its checkpoints. `checkpoint` is torchtitan's (`<dump_folder>/checkpoint/
 * step-N`, torchtitan/components/checkpoint.py, _create_checkpoint_id): its run is the dump folder.
 */
export const CHECKPOINT_CONTAINERS: readonly string[] = ['checkpoints', 'checkpoint', 'ckpt', 'ckpts'];
/** Folder names under a run that hold its metrics logs. */
export const LOG_CONTAINERS: readonly string[] = ['logs'];
/**
 * Folder names under a folder that is a run for other reasons (it has checkpoints) that hold its TensorBoard
 * logs: Hugging Face Trainer's `logging_dir` defaults to `<output_dir>/runs/<%b%d_%H-%M-%S>_<host>`
 * (transformers/integrations/integration_utils.py, `default_logdir`, used by `TensorBoardCallback`). Not on its own: torch's SummaryWriter() writes the same
 * `runs/<date>_<host>/` for every new experiment, which TensorBoard shows as separate runs, and so do we.
 */
export const RUN_LOG_CONTAINERS: readonly string[] = ['runs'];
/**
 * Sub-folders of a TensorBoard logdir written per split, each a TensorBoard run of its own: Keras' TensorBoard
 * callback writes `<log_dir>/train/` and `<log_dir>/validation/` (keras/src/callbacks/tensorboard.py,
 * `_train_dir`, `_val_dir`). A folder holding such sub-folders with event files is one run.
 */
export const SPLIT_FOLDERS: readonly string[] = ['train', 'validation', 'val', 'eval', 'test'];
/**
 * MLflow's file store: a run is `<mlruns>/<experiment_id>/<run_id>/` holding `meta.yaml` and `metrics/<key>`
 * (one file per key; a key with `/` is a nested path), beside `params/`, `tags/`, `artifacts/`
 * (mlflow/store/tracking/file_store.py: `_get_run_dir`, `_get_metric_path`, `META_DATA_FILE_NAME`).
 */
export const MLFLOW_META = 'meta.yaml';
export const MLFLOW_METRICS = 'metrics';
export const MLFLOW_RUN_FOLDERS: readonly string[] = ['metrics', 'params', 'tags', 'artifacts'];

/**
 * TensorFlow's object-based checkpoints are a prefix's files, not a file or a folder: `tf.train.Checkpoint.write`
 * writes `<prefix>.data-<k>-of-<n>` shards and `<prefix>.index` (tensorflow/python/checkpoint/checkpoint.py;
 * tensorflow/core/util/tensor_bundle: the index is written after the data, by the MergeBundles step), beside the
 * `checkpoint` state file naming the latest. `tf.train.CheckpointManager.save()` names them `ckpt-<N>`
 * (tensorflow/python/checkpoint/checkpoint_management.py: `"%s-%d" % (self._prefix, checkpoint_number)`, with
 * checkpoint_number the checkpoint's save_counter unless given): N counts saves. The TF1 Saver / Estimator's
 * `model.ckpt-<global_step>` (tensorflow/python/training/saver.py, `save(..., global_step=...)`) is a step.
 * A prefix with data shards but no index is still being written; fewer shards than `-of-<n>` says, too.
 */
export interface TfCheckpointGroup {
  prefix: string;
  parsed: ParsedCheckpointName;
  /** The file names of the group, index first. */
  files: string[];
  incomplete?: string;
}

const TF_DATA = /^(.+)\.data-(\d+)-of-(\d+)$/;

export function tfCheckpointGroups(names: Iterable<string>): TfCheckpointGroup[] {
  const groups = new Map<string, { index?: string; data: Map<number, string>; of: number }>();
  const at = (prefix: string) => {
    let g = groups.get(prefix);
    if (!g) groups.set(prefix, (g = { data: new Map(), of: 0 }));
    return g;
  };
  for (const n of names) {
    const d = TF_DATA.exec(n);
    if (d) {
      const g = at(d[1]);
      g.data.set(Number(d[2]), n);
      g.of = Math.max(g.of, Number(d[3]));
    } else if (n.endsWith('.index') && n.length > 6) {
      const prefix = n.slice(0, -6);
      // Only a prefix that also has data shards is a TF checkpoint (an `.index` alone is anything).
      at(prefix).index = n;
    }
  }
  const out: TfCheckpointGroup[] = [];
  for (const [prefix, g] of groups) {
    if (g.data.size === 0) continue;
    const parsed = tfPrefixName(prefix);
    if (!parsed) continue;
    const files = [...(g.index ? [g.index] : []), ...[...g.data.entries()].sort((a, b) => a[0] - b[0]).map(([, n]) => n)];
    const incomplete = !g.index
      ? `${prefix}.index is not there yet (TensorFlow writes it after the data)`
      : g.data.size < g.of
        ? `${g.data.size} of ${g.of} data shards of ${prefix} are there`
        : undefined;
    out.push({ prefix, parsed, files, ...(incomplete ? { incomplete } : {}) });
  }
  return out;
}

/** `ckpt-3` → save 3; `model.ckpt-1000` → step 1000; other prefixes by the general name rules. */
function tfPrefixName(prefix: string): ParsedCheckpointName | undefined {
  const manager = /^ckpt-(\d+)$/.exec(prefix);
  if (manager) return { kind: 'save', step: null, save: Number(manager[1]), layout: 'tf' };
  const saver = /^(?:.*[-_.])?model\.ckpt-(\d+)$/.exec(prefix) ?? /^.+\.ckpt-(\d+)$/.exec(prefix);
  if (saver) return { kind: 'step', step: Number(saver[1]), layout: 'tf' };
  const other = parseCheckpointName(`${prefix}.ckpt`, false);
  return other ? { ...other, layout: 'tf' } : undefined;
}
