/**
 * Whose state a tensor is: the model's, or the training's (optimizer, LR scheduler, RNG, callbacks, loops, other),
 * decided from each writer's own structure, in this one place. Only `model` tensors are parameters: totals, groups
 * and `diff` count them alone, and every other role is listed apart (summary.ts stateLine).
 *
 * Three things say it, strongest first:
 * 1. the file's name, where the writer gives each kind of state its own file (fileRole);
 * 2. the top-level keys, where the writer puts each kind of state under its own key of one dict (writerOf, then
 *    roleOf by the path from the root);
 * 3. the structure of a dict wherever it is: torch's `Optimizer.state_dict()` (`state` + `param_groups`,
 *    torch/optim/optimizer.py), `LRScheduler.state_dict()` (`base_lrs` + `last_epoch`, torch/optim/lr_scheduler.py),
 *    and keys naming RNG state.
 * What none of them claims is the model's (a plain `torch.save(model.state_dict())`, a safetensors file).
 */
import type { TensorRole } from './types';

/**
 * Writers whose top-level keys are known, each from its own source:
 * - `lightning`: lightning/pytorch/trainer/connectors/checkpoint_connector.py `_CheckpointConnector.dump_checkpoint`:
 *   `{epoch, global_step, pytorch-lightning_version, state_dict, loops, callbacks, optimizer_states, lr_schedulers,
 *   [hparams_name, hyper_parameters, datamodule_hyper_parameters], [precision plugin state]}`;
 * - `deepspeed`: deepspeed/runtime/engine.py `DeepSpeedEngine._save_checkpoint`: `{module, buffer_names, optimizer,
 *   param_shapes, frozen_param_shapes, shared_params, frozen_param_fragments, lr_scheduler, data_sampler, random_ltd,
 *   sparse_tensor_module_names, skipped_steps, global_steps, global_samples, dp_world_size, mp_world_size, ds_config,
 *   ds_version}` in `mp_rank_XX_model_states.pt`: only `module` is the model;
 * - `composer`: composer/utils/checkpoint.py `save_checkpoint`: `{state: State.state_dict(), rng:
 *   reproducibility.get_rng_state()}`, State.state_dict (composer/core/state.py) keyed `model`, `optimizers`,
 *   `schedulers`, `callbacks`, `algorithms`, `timestamp`, `train_metrics`, `eval_metrics`, `rank_zero_seed`, …;
 * - `dcp`: a torch.distributed.checkpoint `.metadata`, whose keys are flattened paths of the saved dict. torchtitan
 *   (torchtitan/components/checkpoint.py `CheckpointManager`) saves `{model, optimizer, lr_scheduler, dataloader,
 *   train_state}` with the model's own keys flattened to the top (`_flattened_model_states_sd`), so a top key that is
 *   none of the others is the model's.
 */
export type Writer = 'lightning' | 'deepspeed' | 'composer' | 'dcp';

/** The writer a pickle's top-level keys name, if they name one. */
export function writerOf(topKeys: ReadonlySet<string>): Writer | undefined {
  if (topKeys.has('pytorch-lightning_version') || (topKeys.has('state_dict') && (topKeys.has('loops') || topKeys.has('optimizer_states')))) return 'lightning';
  if (topKeys.has('module') && (topKeys.has('ds_version') || topKeys.has('ds_config') || topKeys.has('global_steps'))) return 'deepspeed';
  if (topKeys.has('state') && topKeys.has('rng') && !topKeys.has('param_groups')) return 'composer';
  return undefined;
}

const LIGHTNING_TOP: Readonly<Record<string, TensorRole>> = { state_dict: 'model', optimizer_states: 'optimizer', lr_schedulers: 'scheduler', callbacks: 'callback', loops: 'loop' };
const DEEPSPEED_TOP: Readonly<Record<string, TensorRole>> = { module: 'model', optimizer: 'optimizer', lr_scheduler: 'scheduler' };
const COMPOSER_TOP: Readonly<Record<string, TensorRole>> = { state: 'model', rng: 'rng' };
const COMPOSER_STATE: Readonly<Record<string, TensorRole>> = { model: 'model', optimizers: 'optimizer', schedulers: 'scheduler', callbacks: 'callback', timestamp: 'loop' };
const DCP_TOP: Readonly<Record<string, TensorRole>> = { model: 'model', optimizer: 'optimizer', optimizers: 'optimizer', optim: 'optimizer', lr_scheduler: 'scheduler', lr_schedulers: 'scheduler', scheduler: 'scheduler', dataloader: 'other', train_state: 'loop', rng: 'rng' };

/** Keys naming RNG state (Trainer's `python`/`numpy`/`cpu` are told by their file instead). */
export const RNG_KEY = /rng|random|generator|seed_state|manual_seed/i;

export interface RoleContext {
  writer?: Writer;
  /** The keys from the root down to the entry, its own key last (unjoined: a key may hold dots). */
  path: readonly string[];
  /** The role of the value the entry is in: `model` at the root unless the file's name says otherwise. */
  parent: TensorRole;
  /** The keys of the dict the entry is in, when it is in a dict. */
  siblings?: ReadonlySet<string>;
}

/**
 * The role of one entry of a saved object (a dict value, a list item, a DCP key): what its container is, unless its
 * container is the model's and the writer's layout, the dict's structure or the key says otherwise.
 */
export function roleOf(ctx: RoleContext): TensorRole {
  const { writer, path, parent, siblings } = ctx;
  if (parent !== 'model') return parent;
  if (siblings?.has('state') && siblings.has('param_groups')) return 'optimizer';
  if (siblings?.has('base_lrs') && siblings.has('last_epoch')) return 'scheduler';
  const key = path[path.length - 1] ?? '';
  if (path.length === 1) {
    if (writer === 'lightning') return LIGHTNING_TOP[key] ?? 'other';
    if (writer === 'deepspeed') return DEEPSPEED_TOP[key] ?? 'other';
    if (writer === 'composer') return COMPOSER_TOP[key] ?? 'other';
    if (writer === 'dcp' && DCP_TOP[key]) return DCP_TOP[key];
  }
  if (writer === 'composer' && path.length === 2 && path[0] === 'state') return COMPOSER_STATE[key] ?? 'other';
  return RNG_KEY.test(key) ? 'rng' : 'model';
}

/** What a file is, by the name its writer gives it; `step`: whether a step it holds is the training step. */
export interface FileRole {
  role: TensorRole;
  /** Where the name comes from. */
  by: string;
  step: boolean;
}

const FILE_ROLES: readonly [RegExp, FileRole][] = [
  // transformers/trainer.py `_save_rng_state` (rng_state.pth, rng_state_{process_index}.pth) and
  // `_save_optimizer_and_scheduler` (OPTIMIZER_NAME optimizer.pt, SCHEDULER_NAME scheduler.pt, SCALER_NAME scaler.pt).
  [/^rng_state(_\d+)?\.pth$/, { role: 'rng', by: 'transformers Trainer', step: false }],
  [/^optimizer\.pt$/, { role: 'optimizer', by: 'transformers Trainer', step: false }],
  [/^scheduler\.pt$/, { role: 'scheduler', by: 'transformers Trainer', step: false }],
  [/^scaler\.pt$/, { role: 'other', by: 'transformers Trainer / accelerate (grad scaler)', step: false }],
  // accelerate/checkpointing.py `save_accelerator_state` with accelerate/utils/constants.py's names: OPTIMIZER_NAME
  // optimizer[_i].bin, SCHEDULER_NAME scheduler[_i].bin, SAMPLER_NAME sampler[_i].bin, dl_state_dict[_i].bin,
  // RNG_STATE_NAME random_states_{process_index}.pkl (its `step` is accelerator.py's `Accelerator.step`, the
  // gradient-accumulation counter `_do_sync` advances, not the training step); custom
  // objects (`register_for_checkpointing`) in custom_checkpoint_{i}.pkl, whose step, when they hold one, is the user's.
  [/^optimizer(_\d+)?\.bin$/, { role: 'optimizer', by: 'accelerate save_state', step: false }],
  [/^scheduler(_\d+)?\.bin$/, { role: 'scheduler', by: 'accelerate save_state', step: false }],
  [/^sampler(_\d+)?\.bin$/, { role: 'other', by: 'accelerate save_state (sampler)', step: false }],
  [/^dl_state_dict(_\d+)?\.bin$/, { role: 'other', by: 'accelerate save_state (stateful dataloader)', step: false }],
  [/^random_states_\d+\.pkl$/, { role: 'rng', by: 'accelerate save_state', step: false }],
  [/^custom_checkpoint_\d+\.pkl$/, { role: 'other', by: 'accelerate save_state (custom object)', step: true }],
  // deepspeed/runtime/engine.py `_get_zero_ckpt_name` / `_get_rank_zero_ckpt_name`: ZeRO shards hold optimizer state
  // only (the fp32 master partition too).
  [/_optim_states\.pt$/, { role: 'optimizer', by: 'DeepSpeed ZeRO', step: false }],
];

/** The role every tensor of a file has by the file's name, when the writer gives that state a file of its own. */
export function fileRole(name: string): FileRole | undefined {
  const base = name.split('/').pop() ?? name;
  return FILE_ROLES.find(([re]) => re.test(base))?.[1];
}

/** The roles, in the order they are listed apart from the model's. */
export const STATE_ROLES: readonly Exclude<TensorRole, 'model'>[] = ['optimizer', 'scheduler', 'rng', 'callback', 'loop', 'other'];
