/**
 * What findRuns makes of the frameworks' names beyond steps (aliases, final weights, epochs, saves, pointer files),
 * and how pickCheckpoint addresses them. Entries are built as the listing gives them (link/text included).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findRuns, type Entry } from '../../src/core/discovery/runTree';
import { pickCheckpoint, pickCheckpointWithNote } from '../../src/core/service';
import { isRemoteRunsError, latestCheckpoint } from '../../src/core/types';

const f = (rel: string, bytes = 10, extra: Partial<Entry> = {}): Entry => ({ type: 'f', bytes, mtime: 1000, rel, ...extra });
const d = (rel: string, extra: Partial<Entry> = {}): Entry => ({ type: 'd', bytes: 0, mtime: 1000, rel, ...extra });
/** The listing's remote clock: a minute after the files were written (past FRESH_WRITE_MS, so no write is in progress). */
const NOW = 61_000;
const one = (entries: Entry[]) => {
  const runs = findRuns('/r', entries, NOW);
  assert.equal(runs.length, 1, runs.map((r) => r.name).join(', '));
  return runs[0];
};
const kind = (err: unknown): string => (isRemoteRunsError(err) ? err.kind : String(err));

test("a finished Hugging Face run: checkpoint-N folders and the step-less final weights, which are 'final' and not latest", () => {
  const run = one([
    d('run'),
    d('run/checkpoint-20'),
    f('run/checkpoint-20/model.safetensors'),
    d('run/checkpoint-30'),
    f('run/checkpoint-30/model.safetensors'),
    f('run/model.safetensors', 5744),
    f('run/config.json', 823),
    f('run/training_args.bin', 5201),
    f('run/notes.md'),
  ]);
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.step]), [
    ['checkpoint-20', 'step', 20],
    ['checkpoint-30', 'step', 30],
    ['final', 'final', null],
  ]);
  const final = run.checkpoints[2];
  assert.equal(final.path, '/r/run');
  assert.deepEqual(final.files.map((x) => x.name), ['config.json', 'model.safetensors', 'training_args.bin']);
  assert.equal(final.bytes, 5744 + 823 + 5201);
  assert.equal(latestCheckpoint(run)?.name, 'checkpoint-30', 'latest stays the newest step checkpoint');
  assert.equal(pickCheckpoint(run, 'final'), final);
});

test('a run of final weights only (save_pretrained, sharded) is a run; latest is its final weights; a missing shard marks them', () => {
  const shards = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
  const run = one([d('m'), f('m/config.json'), f('m/model.safetensors.index.json'), ...shards.map((s) => f(`m/${s}`))]);
  assert.equal(run.checkpoints.length, 1);
  assert.equal(latestCheckpoint(run)?.name, 'final');
  const broken = one([d('m'), f('m/config.json'), f('m/model.safetensors.index.json'), f(`m/${shards[0]}`)]);
  assert.equal(broken.checkpoints[0].incomplete, '1 of 2 shards of model.safetensors are there');
  assert.equal(latestCheckpoint(broken), undefined);
});

test("Lightning's last.ckpt: a copy says it cannot tell which save it holds; save_last='link' names it and pull takes it", () => {
  const copy = one([d('l'), d('l/checkpoints'), f('l/checkpoints/epoch=0-step=20.ckpt'), f('l/checkpoints/epoch=0-step=30.ckpt'), f('l/checkpoints/last.ckpt')]);
  const last = copy.checkpoints.find((c) => c.name === 'last.ckpt');
  assert.deepEqual(last?.alias, { role: 'last', how: 'unknown' });
  assert.equal(latestCheckpoint(copy)?.name, 'epoch=0-step=30.ckpt', 'an alias is never latest');
  assert.equal(pickCheckpoint(copy, 'last'), last, 'the short form');
  assert.equal(pickCheckpoint(copy, 'last.ckpt'), last);

  const linked = one([d('l'), d('l/checkpoints'), f('l/checkpoints/epoch=0-step=10.ckpt'), f('l/checkpoints/epoch=0-step=20.ckpt'), f('l/checkpoints/last.ckpt', 10, { link: 'epoch=0-step=20.ckpt' })]);
  const alias = linked.checkpoints.find((c) => c.name === 'last.ckpt');
  assert.deepEqual(alias?.alias, { role: 'last', of: 'epoch=0-step=20.ckpt', step: 20, how: 'symlink' });
  assert.deepEqual(linked.checkpoints.find((c) => c.name === 'epoch=0-step=20.ckpt')?.pointedBy, ['last.ckpt']);
  const picked = pickCheckpointWithNote(linked, 'last');
  assert.equal(picked.checkpoint.name, 'epoch=0-step=20.ckpt');
  assert.match(picked.note ?? '', /last\.ckpt is a symlink to epoch=0-step=20\.ckpt/);
});

test('a -v1 clash at the same step is ambiguous; two last aliases make `last` ambiguous, each still taken by name', () => {
  const run = one([d('l'), d('l/checkpoints'), ...['epoch=0-step=20.ckpt', 'epoch=0-step=20-v1.ckpt', 'last.ckpt', 'last-v1.ckpt'].map((n) => f(`l/checkpoints/${n}`))]);
  assert.throws(() => pickCheckpoint(run, '20'), (e) => kind(e) === 'ambiguous' && /epoch=0-step=20-v1\.ckpt/.test(String(e)));
  assert.throws(() => pickCheckpoint(run, 'last'), (e) => kind(e) === 'ambiguous' && /last-v1\.ckpt, last\.ckpt/.test(String(e)));
  assert.equal(pickCheckpoint(run, 'last-v1.ckpt').name, 'last-v1.ckpt');
});

test("NeMo: …-last.ckpt holds the step its name says and does not make the step ambiguous; an -unfinished marker marks its save", () => {
  const run = one([
    d('n'),
    d('n/checkpoints'),
    f('n/checkpoints/gpt--val_loss=2.10-step=2000-consumed_samples=4000.0.ckpt'),
    f('n/checkpoints/gpt--val_loss=2.10-step=2000-consumed_samples=4000.0-last.ckpt'),
    f('n/checkpoints/gpt--val_loss=2.00-step=3000-consumed_samples=6000.0.ckpt'),
    f('n/checkpoints/gpt--val_loss=2.00-step=3000-consumed_samples=6000.0-unfinished', 0),
  ]);
  assert.equal(pickCheckpoint(run, '2000').name, 'gpt--val_loss=2.10-step=2000-consumed_samples=4000.0.ckpt', 'the step checkpoint, not its -last alias');
  assert.deepEqual(run.checkpoints.find((c) => c.name.endsWith('-last.ckpt'))?.alias, { role: 'last', step: 2000, how: 'name' });
  const unfinished = run.checkpoints.find((c) => c.step === 3000);
  assert.match(unfinished?.incomplete ?? '', /-unfinished marker is beside it/);
  assert.equal(latestCheckpoint(run)?.step, 2000);
});

test("fairseq: checkpoint3.pt is epoch 3, never taken for step 3 silently; best/last are copies", () => {
  const run = one([d('fs'), d('fs/checkpoints'), ...['checkpoint_1_3.pt', 'checkpoint3.pt', 'checkpoint_best.pt', 'checkpoint_last.pt'].map((n) => f(`fs/checkpoints/${n}`))]);
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind]), [
    ['checkpoint_1_3.pt', 'step'],
    ['checkpoint3.pt', 'epoch'],
    ['checkpoint_best.pt', 'alias'],
    ['checkpoint_last.pt', 'alias'],
  ]);
  assert.equal(pickCheckpoint(run, '3').name, 'checkpoint_1_3.pt', 'step 3 is the update count');
  const epochOnly = one([d('fs'), d('fs/checkpoints'), f('fs/checkpoints/checkpoint3.pt'), f('fs/checkpoints/checkpoint2.pt')]);
  assert.throws(() => pickCheckpoint(epochOnly, '3'), (e) => kind(e) === 'not-found' && /checkpoint3\.pt \(epoch 3/.test(String(e)));
  assert.equal(latestCheckpoint(epochOnly)?.name, 'checkpoint3.pt', 'without step checkpoints, the highest epoch');
  assert.equal(pickCheckpoint(run, 'best').name, 'checkpoint_best.pt');
});

test("accelerate's saves are numbered saves, latest is the highest; one complete beside a temporary name at the same step is the clear choice", () => {
  const acc = one([d('a'), d('a/checkpoints'), ...[1, 2].flatMap((n) => [d(`a/checkpoints/checkpoint_${n}`), f(`a/checkpoints/checkpoint_${n}/model.safetensors`), f(`a/checkpoints/checkpoint_${n}/random_states_0.pkl`)])]);
  assert.deepEqual(acc.checkpoints.map((c) => [c.name, c.kind, c.save]), [
    ['checkpoint_1', 'save', 1],
    ['checkpoint_2', 'save', 2],
  ]);
  assert.equal(latestCheckpoint(acc)?.name, 'checkpoint_2');
  const tmp = one([d('t'), f('t/model_step_5.pt'), f('t/model_step_5.pt.tmp')]);
  assert.match(tmp.checkpoints.find((c) => c.name.endsWith('.tmp'))?.incomplete ?? '', /temporary name/);
  const picked = pickCheckpointWithNote(tmp, '5');
  assert.equal(picked.checkpoint.name, 'model_step_5.pt');
  assert.match(picked.note ?? '', /the only complete one/);
});

test("DeepSpeed's latest file and Megatron's tracker: the checkpoint they name is marked; disagreement and dangling names are said", () => {
  const ds = one([d('ds'), d('ds/global_step500'), f('ds/global_step500/mp_rank_00_model_states.pt'), d('ds/global_step600'), f('ds/global_step600/mp_rank_00_model_states.pt'), f('ds/latest', 14, { text: 'global_step500' })]);
  assert.deepEqual(ds.checkpoints.find((c) => c.name === 'global_step500')?.pointedBy, ['latest']);
  assert.deepEqual(ds.pointers, [{ file: 'latest', says: 'global_step500', checkpoint: 'global_step500', note: "DeepSpeed's latest file names global_step500; the newest complete checkpoint listed is global_step600" }]);
  assert.equal(latestCheckpoint(ds)?.name, 'global_step600', 'ours is still ours; the difference is said');
  const mg = one([d('mg'), d('mg/iter_0001000'), f('mg/iter_0001000/mp_rank_00/model_optim_rng.pt'), f('mg/latest_checkpointed_iteration.txt', 4, { text: '2000' })]);
  assert.match(mg.pointers?.[0].note ?? '', /names "2000", which is not among the checkpoints listed/);
  const agree = one([d('mg'), d('mg/iter_0001000'), f('mg/iter_0001000/mp_rank_00/model_optim_rng.pt'), f('mg/latest_checkpointed_iteration.txt', 4, { text: '1000\n' })]);
  assert.deepEqual(agree.pointers, [{ file: 'latest_checkpointed_iteration.txt', says: '1000', checkpoint: 'iter_0001000' }]);
});

test('a `latest` symlink to a checkpoint folder is an alias of it, not a run of its own', () => {
  const runs = findRuns('/r', [d('x'), d('x/checkpoints'), d('x/checkpoints/step_10'), f('x/checkpoints/step_10/model.safetensors'), d('x/checkpoints/latest', { link: 'step_10' }), f('x/checkpoints/latest/model.safetensors')], NOW);
  assert.deepEqual(runs.map((r) => r.name), ['x']);
  const latest = runs[0].checkpoints.find((c) => c.name === 'latest');
  assert.deepEqual(latest?.alias, { role: 'latest', of: 'step_10', step: 10, how: 'symlink' });
  assert.equal(latestCheckpoint(runs[0])?.name, 'step_10');
});

test("TensorFlow's prefix checkpoints: ckpt-N (CheckpointManager, N counts saves) and model.ckpt-S (Saver, S a step) are one checkpoint each, index with shards; the checkpoint state file names the latest", () => {
  const tf = one([
    d('tf'),
    f('tf/ckpt-1.index', 300),
    f('tf/ckpt-1.data-00000-of-00001', 5000),
    f('tf/ckpt-2.index', 300),
    f('tf/ckpt-2.data-00000-of-00002', 2500),
    f('tf/ckpt-2.data-00001-of-00002', 2500),
    f('tf/ckpt-3.data-00000-of-00001', 4000),
    f('tf/checkpoint', 60, { text: 'model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-1"\nall_model_checkpoint_paths: "ckpt-2"\n' }),
  ]);
  assert.deepEqual(tf.checkpoints.map((c) => [c.name, c.kind, c.save ?? c.step, c.incomplete ?? '']), [
    ['ckpt-1', 'save', 1, ''],
    ['ckpt-2', 'save', 2, ''],
    ['ckpt-3', 'save', 3, 'ckpt-3.index is not there yet (TensorFlow writes it after the data)'],
  ]);
  const two = tf.checkpoints[1];
  assert.equal(two.path, '/r/tf', 'the folder, with the group as its files');
  assert.equal(two.fileGroup, true);
  assert.deepEqual(two.files.map((x) => x.name), ['ckpt-2.index', 'ckpt-2.data-00000-of-00002', 'ckpt-2.data-00001-of-00002']);
  assert.equal(two.bytes, 5300);
  assert.equal(latestCheckpoint(tf)?.name, 'ckpt-2', 'the one being written is never latest');
  assert.deepEqual(tf.checkpoints[1].pointedBy, ['checkpoint']);
  const saver = one([d('est'), f('est/model.ckpt-1000.index'), f('est/model.ckpt-1000.data-00000-of-00001'), f('est/model.ckpt-1000.meta')]);
  assert.deepEqual(saver.checkpoints.map((c) => [c.name, c.kind, c.step]), [['model.ckpt-1000', 'step', 1000]]);
  // A shard missing of its -of-N: incomplete.
  const gap = one([d('g'), f('g/ckpt-5.index'), f('g/ckpt-5.data-00001-of-00002')]);
  assert.equal(gap.checkpoints[0].incomplete, '1 of 2 data shards of ckpt-5 are there');
});
