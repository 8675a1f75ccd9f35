/**
 * The pure readers on test/fixtures/real/make_inspect_more.py's checkpoints: transformers 4.57.6's sharded `.bin`
 * save read through its index, DeepSpeed ZeRO-2 tag folders in the layout DeepSpeed 0.16.5's engine.py writes, and an
 * edited architecture against its base. Each gives the tensor list its writer reports (expected.json).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { diffInspections, inspectCompleteness, inspectFiles, Pieces, summaryLine, totals, type FileBytes, type Inspection } from '../../src/core/inspect';

const DIR = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect_more');
const expected = JSON.parse(fs.readFileSync(path.join(DIR, 'expected.json'), 'utf8')) as Record<string, Record<string, unknown>>;

function readWhole(name: string): FileBytes[] {
  const p = path.join(DIR, name);
  if (!fs.statSync(p).isDirectory()) return [{ name: path.basename(name), size: fs.statSync(p).size, pieces: Pieces.whole(fs.readFileSync(p)) }];
  return fs.readdirSync(p).map((f) => ({ name: f, size: fs.statSync(path.join(p, f)).size, pieces: Pieces.whole(fs.readFileSync(path.join(p, f))) }));
}

function inspect(name: string, drop: string[] = []): Inspection {
  const { inspection, needMore } = inspectFiles(readWhole(name).filter((f) => !drop.includes(f.name)));
  assert.deepEqual(needMore, []);
  return inspection;
}

type T = { name: string; dtype: string; shape: number[]; role: string; file?: string };
const plain = (ts: T[], withFile = true): T[] => ts.map((t) => ({ dtype: t.dtype, ...(withFile ? { file: t.file } : {}), name: t.name, role: t.role, shape: t.shape }));
const byName = (a: T, b: T): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

test('hf_bin: save_pretrained(safe_serialization=False) shards read through pytorch_model.bin.index.json', () => {
  const ins = inspect('hf_bin');
  const exp = expected.hf_bin as { tensors: T[]; params: number; hf_params: number; total_size: number; shards: string[] };
  assert.equal(ins.format, 'torch-zip-sharded');
  assert.equal(JSON.stringify(plain(ins.tensors).sort(byName)), JSON.stringify(exp.tensors));
  assert.equal(totals(ins).params, exp.hf_params);
  assert.equal(totals(ins).bytes, exp.total_size);
  assert.deepEqual(inspectCompleteness(ins), { state: 'complete', reasons: [] });
  const index = ins.files.find((f) => f.name === 'pytorch_model.bin.index.json');
  assert.equal(index?.note, `a shard index: ${exp.tensors.length} tensors in ${exp.shards.length} shards, total_size ${exp.total_size} bytes (the shards hold that)`);
});

test('hf_bin_broken: the shard the index names that is not there, with how many of its tensors it holds', () => {
  const ins = inspect('hf_bin_broken');
  const exp = expected.hf_bin_broken as { missing: string[]; missing_tensors: string[] };
  const c = inspectCompleteness(ins);
  assert.equal(c.state, 'incomplete');
  assert.deepEqual(c.reasons, [`4 of 5 shards named by pytorch_model.bin.index.json are there (missing: ${exp.missing[0]}; ${exp.missing_tensors.length} of the 21 tensors its weight_map names are in it)`]);
  assert.match(summaryLine(ins), /^INCOMPLETE/);
  assert.deepEqual(
    diffInspections(inspect('hf_bin'), ins).removed.map((t) => t.name).sort(),
    exp.missing_tensors,
  );
});

test('a shard whose tensors are not the ones the index names for it is incomplete, saying which', () => {
  // The index of hf_bin over the shards of hf_bin with one shard's bytes swapped for another's: the names move.
  const files = readWhole('hf_bin').map((f) => (f.name === 'pytorch_model-00003-of-00005.bin' ? { ...readWhole('hf_bin').find((g) => g.name === 'pytorch_model-00004-of-00005.bin')!, name: f.name } : f));
  const c = inspectCompleteness(inspectFiles(files).inspection);
  assert.equal(c.state, 'incomplete');
  assert.match(c.reasons[0], /^\d+ tensors named by pytorch_model\.bin\.index\.json are not in the shard it names \(model\.\S+ in pytorch_model-00003-of-00005\.bin/);
});

for (const tag of ['global_step20', 'global_step30']) {
  test(`deepspeed/${tag}: module tensors as params, ZeRO shards as optimizer state, the step, shards counted`, () => {
    const ins = inspect(`deepspeed/${tag}`);
    const exp = expected[`deepspeed/${tag}`] as { tensors: T[]; params: number; step: number; zero_shards: number; dp_world_size: number; model_keys: string[] };
    assert.equal(ins.format, 'torch-zip');
    assert.equal(JSON.stringify(plain(ins.tensors)), JSON.stringify(exp.tensors));
    assert.equal(totals(ins).params, exp.params);
    assert.equal(ins.step, exp.step);
    assert.deepEqual(ins.entries.filter((e) => e.file === 'mp_rank_00_model_states.pt').map((e) => e.name).sort(), exp.model_keys);
    const zero = ins.entries.find((e) => e.name === 'ZeRO optimizer shards');
    assert.equal(zero?.kind, 'optimizer');
    assert.equal(zero?.what, `ZeRO stage 2 AdamW state (exp_avg, exp_avg_sq) in ${exp.zero_shards} of ${exp.dp_world_size} data-parallel shards`);
    assert.ok(ins.entries.filter((e) => e.name === 'optimizer_state_dict').every((e) => e.kind === 'optimizer' && /^ZeRO stage 2 partition \(one of 2 data-parallel ranks\) of AdamW state/.test(e.what)));
    assert.equal(ins.entries.find((e) => e.name === 'global_steps')?.kind, 'step');
    assert.match(summaryLine(ins), new RegExp(`^324 params · fp32 · 9 tensors · optimizer: ZeRO stage 2 AdamW state \\(exp_avg, exp_avg_sq\\) in 2 of 2 data-parallel shards · step ${exp.step} · `));
    // DeepSpeed's own classes are named, never built.
    assert.deepEqual(ins.opaque.map((o) => o.name).filter((n) => n.startsWith('deepspeed.')).sort(), [
      'deepspeed.runtime.fp16.loss_scaler.LossScaler',
      'deepspeed.runtime.fp16.loss_scaler.LossScaler',
      'deepspeed.runtime.zero.config.ZeroStageEnum',
      'deepspeed.runtime.zero.config.ZeroStageEnum',
      'deepspeed.utils.tensor_fragment.fragment_address',
      'deepspeed.utils.tensor_fragment.fragment_address',
    ]);
    assert.deepEqual(inspectCompleteness(ins), { state: 'complete', reasons: [] });
  });
}

test('deepspeed/global_step40: a save in progress (rank 1 has not written its shard) is incomplete, saying which', () => {
  const ins = inspect('deepspeed/global_step40');
  assert.deepEqual(inspectCompleteness(ins).reasons, ['1 of 2 ZeRO optimizer shards are there (dp_world_size 2 in mp_rank_00_model_states.pt; missing: zero_pp_rank_1_mp_rank_00_optim_states.pt): a save not finished']);
  assert.equal(ins.step, 40);
});

test('edited.pt against base.pt: the tensors added, removed and changed that the writer edited', () => {
  const d = diffInspections(inspect('base.pt'), inspect('edited.pt'));
  const exp = (expected['edited.pt'] as { against_base: { added: string[]; removed: string[]; changed: string[] } }).against_base;
  assert.deepEqual(d.added.map((t) => t.name).sort(), exp.added);
  assert.deepEqual(d.removed.map((t) => t.name).sort(), exp.removed);
  assert.deepEqual(d.changed.map((c) => c.name).sort(), exp.changed);
  assert.deepEqual(d.changed.map((c) => [c.name, c.changed]).sort(), [['embed_tokens.weight', ['shape']], ['layers.1.norm.weight', ['dtype']]]);
  assert.equal(d.totals.a.params, (expected['base.pt'] as { params: number }).params);
  assert.equal(d.totals.b.params, (expected['edited.pt'] as { params: number }).params);
});
