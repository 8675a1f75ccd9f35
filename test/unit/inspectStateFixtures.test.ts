/**
 * Parameters are the model's: the pure readers on test/fixtures/real/make_inspect_state.py's checkpoints, where
 * Lightning, accelerate and transformers' Trainer each saved training state beside one 321-parameter module. The
 * params count is the module's own `sum(p.numel())`, the step is the one the writer recorded (or none), and callback,
 * optimizer, scheduler and RNG state is listed apart, never counted or diffed as model tensors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { diffInspections, inspectFiles, Pieces, stateParts, summaryLine, totals, type FileBytes, type Inspection } from '../../src/core/inspect';
import { diffText, inspectionJson, inspectionText, type InspectedCheckpoint } from '../../src/cli/inspect';
import { fileRole } from '../../src/core/inspect/roles';
import type { Checkpoint } from '../../src/core/types';

const DIR = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect_state');
type Expected = {
  params: number;
  lightning: Record<string, { global_step: number; params: number; state_dict: string[]; callback_tensors: string[] }>;
  'plain.pt': { params: number; tensors: string[] };
  accelerate_state: { params: number; training_step: number | null; rng_pickle_step: number; rng_tensors: string[]; files: string[] };
  accelerate_custom: { params: number; training_step: number | null; rng_pickle_step: number };
  trainer: { params: number; global_step: number; files: string[] };
  'custom_loop.pt': { params: number; step: number; scheduler_last_epoch: number };
  composer: { file: string; params: number; batch: number; model: string[] };
  'torchtitan_step-4': { params: number; model: string[]; optimizer_tensors: string[]; other_tensors: string[] };
};
const expected = JSON.parse(fs.readFileSync(path.join(DIR, 'expected.json'), 'utf8')) as Expected;

function inspect(name: string): Inspection {
  const p = path.join(DIR, name);
  const files: FileBytes[] = fs.statSync(p).isDirectory()
    ? fs.readdirSync(p).map((f) => ({ name: f, size: fs.statSync(path.join(p, f)).size, pieces: Pieces.whole(fs.readFileSync(path.join(p, f))) }))
    : [{ name: path.basename(p), size: fs.statSync(p).size, pieces: Pieces.whole(fs.readFileSync(p)) }];
  const { inspection, needMore } = inspectFiles(files);
  assert.deepEqual(needMore, []);
  return inspection;
}

const model = (ins: Inspection): string[] => ins.tensors.filter((t) => t.role === 'model').map((t) => t.name).sort();

test('Lightning ModelCheckpoint(monitor="val_loss"): the callback\'s scores and best_k_models are callback state, not params', () => {
  for (const [name, exp] of Object.entries(expected.lightning)) {
    const ins = inspect(name);
    assert.equal(exp.params, expected.params);
    assert.equal(totals(ins).params, exp.params, name);
    assert.deepEqual(model(ins), exp.state_dict.map((k) => `state_dict.${k}`));
    const cb = ins.tensors.filter((t) => t.role === 'callback');
    assert.equal(cb.length, exp.callback_tensors.length);
    assert.ok(cb.every((t) => t.name.startsWith('callbacks.ModelCheckpoint{')));
    // Adam's exp_avg and exp_avg_sq for each parameter, plus its scalar `step`s: optimizer state, listed apart.
    assert.equal(totals(ins).state.optimizer?.numel, 2 * exp.params + 6);
    assert.equal(ins.step, exp.global_step);
    assert.equal(summaryLine(ins), `${exp.params} params · fp32 · 6 tensors · optimizer: Adam state (exp_avg, exp_avg_sq) · step ${exp.global_step}`);
    assert.deepEqual(stateParts(ins), [`optimizer 2 × ${exp.params}`, 'scheduler', 'callbacks: ModelCheckpoint(best_model_score, current_score, best_k_models, kth_value)']);
  }
});

test('diff of two Lightning runs of the same module: no callback state added or removed, every model tensor the same', () => {
  const d = diffInspections(inspect('lightning_a.ckpt'), inspect('lightning_b.ckpt'));
  assert.deepEqual(d.added, []);
  assert.deepEqual(d.removed, []);
  assert.deepEqual(d.changed, []);
  assert.equal(d.same, expected.lightning['lightning_a.ckpt'].state_dict.length);
  assert.equal(d.totals.a.params, expected.params);
  assert.equal(d.totals.b.params, expected.params);
});

test('diff of a Lightning checkpoint against the module\'s plain state dict keeps the `state_dict.` alignment', () => {
  const d = diffInspections(inspect('lightning_a.ckpt'), inspect('plain.pt'));
  assert.deepEqual(d.aligned, { side: 'a', prefix: 'state_dict.' });
  assert.deepEqual(d.added, []);
  assert.deepEqual(d.removed, []);
  assert.equal(d.same, expected['plain.pt'].tensors.length);
  assert.equal(d.totals.b.params, expected['plain.pt'].params);
});

test('accelerate save_state: the RNG pickle is not counted, and its counter is not the step', () => {
  const ins = inspect('accelerate_state');
  const exp = expected.accelerate_state;
  assert.equal(exp.training_step, null);
  assert.equal(totals(ins).params, exp.params);
  assert.deepEqual(model(ins), ['hidden.bias', 'hidden.weight', 'inp.bias', 'inp.weight', 'out.bias', 'out.weight']);
  assert.ok(model(ins).every((n) => !exp.rng_tensors.includes(n)));
  const rng = ins.tensors.filter((t) => t.role === 'rng');
  assert.deepEqual(rng.map((t) => `${t.file}:${t.name}`), exp.rng_tensors.map((n) => `random_states_0.pkl:${n}`));
  assert.ok(ins.tensors.filter((t) => t.file === 'optimizer.bin').every((t) => t.role === 'optimizer'));
  // random_states_0.pkl's `step` (accelerate's gradient-accumulation counter, 0 here) is no training step.
  assert.equal(exp.rng_pickle_step, 0);
  assert.equal(ins.step, undefined);
  assert.doesNotMatch(summaryLine(ins), /step/);
  assert.deepEqual(stateParts(ins), [`optimizer 2 × ${exp.params}`, 'scheduler', 'RNG 5.1 KB']);
  assert.equal(ins.entries.find((e) => e.file === 'scheduler.bin')?.kind, 'scheduler');
});

test('accelerate save_state with a custom object holding the step: that step is shown', () => {
  const ins = inspect('accelerate_custom');
  assert.equal(totals(ins).params, expected.accelerate_custom.params);
  assert.equal(ins.step, expected.accelerate_custom.training_step);
  assert.notEqual(ins.step, expected.accelerate_custom.rng_pickle_step);
});

test('Trainer checkpoint: the step is trainer_state.json\'s global_step; optimizer, scheduler and RNG files are not params', () => {
  const ins = inspect(path.join('trainer', 'checkpoint-6'));
  const exp = expected.trainer;
  assert.equal(totals(ins).params, exp.params);
  assert.equal(ins.step, exp.global_step);
  const roleOfFile = (f: string): string[] => [...new Set(ins.tensors.filter((t) => t.file === f).map((t) => t.role))];
  assert.deepEqual(roleOfFile('model.safetensors'), ['model']);
  assert.deepEqual(roleOfFile('optimizer.pt'), ['optimizer']);
  assert.deepEqual(roleOfFile('rng_state.pth'), ['rng']);
  assert.ok(ins.files.some((f) => f.name === 'trainer_state.json' && f.format === 'json' && !f.problem));
  assert.match(summaryLine(ins), new RegExp(`^${exp.params} params · fp32 · 6 tensors · optimizer: AdamW state \\(exp_avg, exp_avg_sq\\) · step ${exp.global_step} · `));
  assert.deepEqual(stateParts(ins), [`optimizer 2 × ${exp.params}`, 'scheduler', 'RNG 5.1 KB']);
});

test('a trainer_state.json that is not JSON is that file\'s problem, and the rest is still read', () => {
  const p = path.join(DIR, 'trainer', 'checkpoint-6');
  const files: FileBytes[] = fs.readdirSync(p).map((f) => {
    const bytes = f === 'trainer_state.json' ? Buffer.from('{"global_step": 6, "epo') : fs.readFileSync(path.join(p, f));
    return { name: f, size: bytes.length, pieces: Pieces.whole(bytes) };
  });
  const ins = inspectFiles(files).inspection;
  assert.match(ins.files.find((f) => f.name === 'trainer_state.json')?.problem?.message ?? '', /^trainer_state\.json is not JSON/);
  assert.equal(ins.step, undefined);
  assert.equal(totals(ins).params, expected.trainer.params);
});

test('the CLI: the totals line counts model parameters, the other state is listed apart; --json says the same; diff adds nothing', () => {
  const at = (name: string): InspectedCheckpoint => {
    const ins = inspect(name);
    return { address: `h/host/run/${name}`, checkpoint: { name, kind: 'step', step: ins.step ?? null, layout: 'flat', path: `/r/${name}`, isDir: false, bytes: 0 } as unknown as Checkpoint, result: { inspection: ins, commands: 1, bytesRead: 0 } };
  };
  const a = at('lightning_a.ckpt');
  const text = inspectionText(a);
  assert.match(text, /^tensors \(6, 321 params, 1\.3 KB\):$/m);
  assert.match(text, /^other state \(not counted in params\): optimizer 2 × 321 · scheduler · callbacks: ModelCheckpoint\(best_model_score, current_score, best_k_models, kth_value\)$/m);
  assert.doesNotMatch(text, /best_k_models\.\/.*float32/, 'callback tensors are not listed among the model tensors');
  const j = inspectionJson(a) as { totals: { params: number; tensors: number; state: Record<string, { tensors: number }> }; state: string[]; groups: { params: number }[] };
  assert.equal(j.totals.params, expected.params);
  assert.equal(j.totals.tensors, 6);
  assert.equal(j.totals.state.callback.tensors, expected.lightning['lightning_a.ckpt'].callback_tensors.length);
  assert.equal(j.groups.reduce((s, g) => s + g.params, 0), expected.params);
  assert.deepEqual(j.state, stateParts(a.result.inspection));
  const acc = inspectionText(at('accelerate_state'));
  assert.match(acc, /^h\/host\/run\/accelerate_state: 321 params · fp32 · 6 tensors · optimizer: AdamW state \(exp_avg, exp_avg_sq\) · 4 opaque/m);
  assert.match(acc, /^other state \(not counted in params\): optimizer 2 × 321 · scheduler · RNG 5\.1 KB$/m);
  const b = at('lightning_b.ckpt');
  const diff = diffText(a, b, diffInspections(a.result.inspection, b.result.inspection));
  assert.match(diff, /^params: 321 → 321 \(\+0\) · tensors: 6 → 6/m);
  assert.match(diff, /^added \(in B only\): 0$/m);
  assert.match(diff, /^removed \(in A only\): 0$/m);
  assert.match(diff, /^same: 6$/m);
});

test("torch.distributed.checkpoint in torchtitan's layout: the model's flattened keys are params, `optimizer.*` is not", () => {
  const ins = inspect('torchtitan_step-4');
  const exp = expected['torchtitan_step-4'];
  assert.equal(ins.format, 'dcp');
  assert.equal(totals(ins).params, exp.params);
  assert.deepEqual(model(ins), exp.model);
  assert.deepEqual(ins.tensors.filter((t) => t.role === 'optimizer').map((t) => t.name).sort(), exp.optimizer_tensors);
  assert.deepEqual(exp.other_tensors, []);
  assert.deepEqual(stateParts(ins), [`optimizer 2 × ${exp.params}`, 'scheduler']);
  // Its step is pickled bytes in the shard (not read): none is shown rather than a guess.
  assert.equal(ins.step, undefined);
  assert.equal(ins.entries.find((e) => e.name === 'lr_scheduler.last_epoch')?.kind, 'scheduler');
  assert.equal(ins.entries.find((e) => e.name === 'train_state.step')?.kind, 'step');
});

test("Composer's checkpoint layout: state.model is the params, its timestamp's batch is the step, the rest is listed apart", () => {
  const exp = expected.composer;
  const ins = inspect(exp.file);
  assert.equal(totals(ins).params, exp.params);
  assert.deepEqual(model(ins), exp.model.map((k) => `state.model.${k}`));
  assert.equal(ins.step, exp.batch);
  assert.equal(ins.entries.find((e) => e.name === 'state.optimizers')?.kind, 'optimizer');
  assert.match(summaryLine(ins), new RegExp(`^${exp.params} params · fp32 · 6 tensors · optimizer: AdamW state \\(exp_avg, exp_avg_sq\\) · step ${exp.batch} · `));
  assert.deepEqual(stateParts(ins), [`optimizer 2 × ${exp.params}`, 'scheduler', 'RNG 5.1 KB', 'callbacks: CheckpointSaver']);
});

test("a hand-written loop's torch.save: the optimizer and the scheduler are told by their state dicts' shape, the step is its own", () => {
  const exp = expected['custom_loop.pt'];
  const ins = inspect('custom_loop.pt');
  assert.equal(totals(ins).params, exp.params);
  assert.equal(ins.step, exp.step);
  assert.deepEqual(ins.entries.find((e) => e.name === 'scheduler'), { name: 'scheduler', kind: 'scheduler', what: `LR scheduler state (last_epoch ${exp.scheduler_last_epoch})`, file: 'custom_loop.pt' });
  assert.deepEqual(stateParts(ins), [`optimizer 2 × ${exp.params}`, 'scheduler']);
});

test("file names a writer gives one kind of state (accelerate/utils/constants.py, transformers trainer.py), and others' are the model's", () => {
  const role = (n: string): string | undefined => fileRole(n)?.role;
  assert.deepEqual(
    ['optimizer_1.bin', 'scheduler_1.bin', 'sampler.bin', 'dl_state_dict_1.bin', 'random_states_3.pkl', 'rng_state_3.pth', 'scaler.pt', 'custom_checkpoint_0.pkl', 'ckpt/zero_pp_rank_1_mp_rank_00_optim_states.pt'].map(role),
    ['optimizer', 'scheduler', 'other', 'other', 'rng', 'rng', 'other', 'other', 'optimizer'],
  );
  assert.deepEqual(['model.safetensors', 'pytorch_model.bin', 'pytorch_model-00001-of-00002.bin', 'optimizer_state.pt', 'my_rng_state.pth', 'mp_rank_00_model_states.pt'].map(role), [undefined, undefined, undefined, undefined, undefined, undefined]);
  // Only a custom object's step is the user's training step; the counters of RNG, optimizer and scheduler files are not.
  assert.deepEqual(['custom_checkpoint_0.pkl', 'random_states_0.pkl', 'optimizer.pt', 'scheduler.bin'].map((n) => fileRole(n)?.step), [true, false, false, false]);
});
