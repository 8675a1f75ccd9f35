/**
 * The pure checkpoint readers against files the real writers wrote (test/fixtures/real/make_inspect.py: torch
 * 2.13.0+cpu, safetensors 0.8.0, transformers 5.18.0, lightning 2.6.6): each file read whole gives the tensors the
 * writer reports (name, dtype, shape, in the writer's order), its parameter count, its entries; the hostile files end
 * in what they are (an opaque global, a refused length, a depth bound), incomplete ones in why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspectFiles, Pieces, summaryLine, totals, inspectCompleteness, diffInspections, groupTensors, type FileBytes, type Inspection } from '../../src/core/inspect';

const DIR = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
const expected = JSON.parse(fs.readFileSync(path.join(DIR, 'expected.json'), 'utf8')) as Record<string, Record<string, unknown>>;

interface ExpTensor {
  name: string;
  dtype: string;
  shape: number[];
  role: string;
}

/** A checkpoint as a run holds it: a file, or a folder of files, read whole. */
export function readWhole(name: string): FileBytes[] {
  const p = path.join(DIR, name);
  if (!fs.statSync(p).isDirectory()) return [{ name, size: fs.statSync(p).size, pieces: Pieces.whole(fs.readFileSync(p)) }];
  return fs.readdirSync(p).map((f) => ({ name: f, size: fs.statSync(path.join(p, f)).size, pieces: Pieces.whole(fs.readFileSync(path.join(p, f))) }));
}

function inspect(name: string): Inspection {
  const { inspection, needMore } = inspectFiles(readWhole(name));
  assert.deepEqual(needMore, []);
  return inspection;
}

const plain = (ts: { name: string; dtype: string; shape: number[]; role: string }[]): ExpTensor[] => ts.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, role: t.role }));
const byName = (a: ExpTensor, b: ExpTensor): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

for (const name of ['state_dict.pt', 'train_state.pt', 'lightning.ckpt']) {
  test(`${name}: the tensors torch.save wrote, in its order, and the parameter count`, () => {
    const ins = inspect(name);
    const exp = expected[name];
    assert.equal(ins.format, 'torch-zip');
    assert.deepEqual(plain(ins.tensors), exp.tensors);
    assert.equal(totals(ins).params, exp.params);
    assert.deepEqual(ins.incomplete, []);
    assert.deepEqual(ins.opaque, []);
    for (const [k, v] of Object.entries(exp.scalars as Record<string, unknown>)) {
      assert.deepEqual(ins.entries.find((e) => e.name === k)?.value, v, k);
    }
  });
}

test('train_state.pt: the optimizer is named with its state, and the step', () => {
  const ins = inspect('train_state.pt');
  assert.equal(ins.step, 20000);
  assert.equal(ins.epoch, 3);
  const opt = ins.entries.find((e) => e.name === 'optimizer');
  assert.equal(opt?.kind, 'optimizer');
  assert.match(opt!.what, /^AdamW state \(exp_avg, exp_avg_sq\) for 17 parameters, 1 param group \(lr 0\.001\)$/);
  assert.equal(summaryLine(ins), '266 params · fp32 · 18 tensors · optimizer: AdamW state (exp_avg, exp_avg_sq) · step 20000');
  assert.deepEqual(inspectCompleteness(ins), { state: 'complete', reasons: [] });
});

test('lightning.ckpt: hyper-parameters, optimizer_states and loops are named for what they are', () => {
  const ins = inspect('lightning.ckpt');
  const kinds = Object.fromEntries(ins.entries.map((e) => [e.name, e.kind]));
  assert.equal(kinds.hyper_parameters, 'hyper-parameters');
  assert.equal(kinds.optimizer_states, 'optimizer');
  assert.equal(kinds.state_dict, 'state-dict');
  assert.equal(ins.step, expected['lightning.ckpt'].global_step);
  assert.deepEqual(ins.entries.map((e) => e.name).sort(), (expected['lightning.ckpt'].keys as string[]).sort());
});

test('hf_shards: save_pretrained with max_shard_size: every shard header, the writer tensor list and params', () => {
  const ins = inspect('hf_shards');
  const exp = expected.hf_shards;
  assert.equal(ins.format, 'safetensors-sharded');
  assert.deepEqual(ins.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, role: t.role, file: t.file })).sort(byName), exp.tensors);
  assert.equal(totals(ins).params, exp.params);
  assert.equal(totals(ins).params, exp.hf_params);
  assert.equal(totals(ins).bytes, exp.total_size);
  assert.equal(inspectCompleteness(ins).state, 'complete');
});

test('hf_shards_broken: a shard the index names that is not there, and one shorter than its header says', () => {
  const ins = inspect('hf_shards_broken');
  const exp = expected.hf_shards_broken as { missing: string[]; short: string[] };
  const c = inspectCompleteness(ins);
  assert.equal(c.state, 'incomplete');
  assert.equal(c.reasons.length, 2);
  assert.ok(c.reasons.some((r) => r.includes(exp.short[0]) && /header says/.test(r)), c.reasons.join('\n'));
  assert.ok(c.reasons.some((r) => r.includes(`missing: ${exp.missing[0]}`) && /4 of 5 shards/.test(r)), c.reasons.join('\n'));
});

test('dcp: .metadata gives every key, global shape and dtype; step is a bytes entry', () => {
  const ins = inspect('dcp');
  const exp = expected.dcp;
  assert.equal(ins.format, 'dcp');
  assert.deepEqual(plain(ins.tensors).sort(byName), exp.tensors);
  assert.equal(totals(ins).params, exp.params);
  assert.deepEqual(ins.entries.map((e) => e.name), exp.bytes_entries);
  const noMeta = readWhole('dcp').filter((f) => f.name !== '.metadata');
  assert.deepEqual(inspectCompleteness(inspectFiles(noMeta).inspection).reasons, ['torch.distributed.checkpoint shards without their .metadata (written last)']);
});

test('truncated.pt: no end record is incomplete, and the pickle at its head is still read', () => {
  const ins = inspect('truncated.pt');
  assert.deepEqual(ins.incomplete, ['truncated.pt has no zip end record: still being written, or cut short']);
  assert.deepEqual(plain(ins.tensors), expected['train_state.pt'].tensors);
  assert.equal(inspectCompleteness(ins).state, 'incomplete');
});

test('legacy.pt: said to be the legacy format, not read', () => {
  const ins = inspect('legacy.pt');
  assert.equal(ins.format, 'legacy-torch');
  assert.match(ins.files[0].note!, /legacy format.*cannot be listed without loading it/);
  assert.equal(inspectCompleteness(ins).state, 'unknown');
});

test('evil.pt: the os.system call is an opaque global, never called', () => {
  const canary = expected['evil.pt'].canary as string;
  fs.rmSync(canary, { force: true });
  const ins = inspect('evil.pt');
  assert.deepEqual(ins.opaque.map((o) => [o.name, o.at]), [[expected['evil.pt'].opaque, 'weights']]);
  assert.match(ins.entries.find((e) => e.name === 'weights')!.what, /posix\.system\(…\).*not called/);
  assert.equal(fs.existsSync(canary), false);
});

test('huge_header.safetensors: a header length of 2^64-1 is refused, saying so', () => {
  const ins = inspect('huge_header.safetensors');
  assert.deepEqual(ins.files[0].problem, { code: 'absurd-length', message: 'the header claims 18446744073709551615 bytes (the safetensors library refuses over 100000000): not read' });
});

test('deep.pt: lists nested 100000 deep end in the depth bound, not a stack overflow', () => {
  const ins = inspect('deep.pt');
  assert.equal(ins.files[0].problem?.code, 'too-large');
  assert.match(ins.files[0].problem!.message, /nests deeper than 256 levels/);
});

test('groups by module prefix: q_proj under model › layers › 0 › self_attn, with counts and bytes', () => {
  const groups = groupTensors(inspect('train_state.pt').tensors);
  const attn = groups.find((g) => g.label === 'model › layers › 0 › self_attn');
  assert.ok(attn, groups.map((g) => g.label).join('\n'));
  assert.deepEqual(attn.tensors.map((t) => t.name), ['q_proj', 'k_proj', 'v_proj', 'o_proj'].map((p) => `model.layers.0.self_attn.${p}.weight`));
  assert.equal(attn.params, 64);
  assert.equal(attn.bytes, 256);
  assert.equal(groups.reduce((a, g) => a + g.params, 0), 266);
});

test('diff: a state dict against the training state it came from lines up under model., dtype changed everywhere', () => {
  const d = diffInspections(inspect('train_state.pt'), inspect('state_dict.pt'));
  assert.deepEqual(d.aligned, { side: 'a', prefix: 'model.' });
  assert.equal(d.added.length, 0);
  assert.equal(d.removed.length, 0);
  assert.equal(d.changed.length, 18);
  assert.ok(d.changed.every((c) => c.changed.join() === 'dtype' && c.a.dtype === 'float32' && c.b.dtype === 'bfloat16'));
  assert.equal(d.totals.a.params, d.totals.b.params);
  const shards = diffInspections(inspect('hf_shards'), inspect('hf_shards_broken'));
  assert.equal(shards.removed.length, (expected.hf_shards.tensors as unknown[]).length - inspect('hf_shards_broken').tensors.length);
  assert.equal(shards.added.length, 0);
});

test('big_zip64: a 5 GiB archive from torch.save (zip64 records), read from its first 128 KiB and last 64 KiB only', () => {
  const exp = expected.big_zip64 as { size: number; tail_offset: number; tensors: ExpTensor[]; params: number };
  const pieces = new Pieces(exp.size, [
    { offset: 0, data: fs.readFileSync(path.join(DIR, 'big_zip64.head')) },
    { offset: exp.tail_offset, data: fs.readFileSync(path.join(DIR, 'big_zip64.tail')) },
  ]);
  const { inspection, needMore } = inspectFiles([{ name: 'big.pt', size: exp.size, pieces }]);
  assert.deepEqual(needMore, []);
  assert.deepEqual(inspection.incomplete, []);
  assert.deepEqual(plain(inspection.tensors), exp.tensors);
  assert.equal(totals(inspection).params, exp.params);
  assert.equal(inspection.step, 7);
});

test('a transformers Trainer checkpoint folder: weights from model.safetensors only; optimizer.pt is one optimizer entry; rng_state.pth is RNG state', () => {
  // test/fixtures/real/make_frameworks.py (transformers 5.18 Trainer, save_steps=10).
  const dir = path.join(DIR, '..', 'hf_trainer', 'checkpoint-20');
  const files = fs.readdirSync(dir).map((f) => ({ name: f, size: fs.statSync(path.join(dir, f)).size, pieces: Pieces.whole(fs.readFileSync(path.join(dir, f))) }));
  const ins = inspectFiles(files).inspection;
  const weights = inspectFiles(files.filter((f) => f.name === 'model.safetensors')).inspection;
  assert.equal(totals(ins).params, totals(weights).params, 'only the model weights count as params');
  assert.equal(totals(ins).tensors, weights.tensors.length);
  assert.ok(ins.tensors.filter((t) => t.file === 'rng_state.pth').every((t) => t.role === 'rng'));
  assert.ok(ins.tensors.filter((t) => t.file === 'optimizer.pt').every((t) => t.role === 'optimizer'));
  const opt = ins.entries.filter((e) => e.file === 'optimizer.pt');
  assert.deepEqual(opt.map((e) => [e.name, e.kind]), [['(root)', 'optimizer']]);
  assert.match(opt[0].what, /^Adam(W| or AdamW) state \(exp_avg, exp_avg_sq\)/);
  assert.ok(ins.entries.filter((e) => e.file === 'rng_state.pth').every((e) => e.kind === 'rng'));
  assert.match(summaryLine(ins), /^1\.1 K params · fp32 · 16 tensors · optimizer: Adam/);
  // TrainingArguments is named, never built.
  assert.ok(ins.opaque.some((o) => o.name === 'transformers.training_args.TrainingArguments' && o.file === 'training_args.bin'));
});
