/**
 * A checkpoint is complete only when its framework says so (checkpointLayout.ts trainerUnfinished, accelerateSave,
 * committedAtomically, inPlaceMarker; runTree.ts megatronUnfinished, markFreshWrites), and `latest` for pull and eval says which newer
 * checkpoints it skipped (service.ts pickCheckpointWithNote). The last test replays the stages that
 * test/fixtures/real/make_livesaves.py caught while the real writers were writing (SIGSTOP at each file).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FRESH_WRITE_MS, findRuns, type Entry } from '../../src/core/discovery/runTree';
import { pickCheckpointWithNote } from '../../src/core/service';
import { latestCheckpoint, type Run } from '../../src/core/types';

const NOW = 10_000_000;
/** Written an hour before the listing unless said otherwise. */
const f = (rel: string, bytes = 10, mtime = NOW - 3_600_000, extra: Partial<Entry> = {}): Entry => ({ type: 'f', bytes, mtime, rel, ...extra });
const d = (rel: string, mtime = NOW - 3_600_000): Entry => ({ type: 'd', bytes: 0, mtime, rel });
const one = (entries: Entry[], now = NOW): Run => {
  const runs = findRuns('/r', entries, now);
  assert.equal(runs.length, 1, runs.map((r) => r.name).join(', '));
  return runs[0];
};
const byName = (run: Run, name: string) => run.checkpoints.find((c) => c.name === name)!;
const TRAINER_FILES = ['config.json', 'generation_config.json', 'model.safetensors', 'training_args.bin', 'optimizer.pt', 'scheduler.pt', 'rng_state.pth', 'trainer_state.json'];
const trainerCheckpoint = (name: string, files = TRAINER_FILES): Entry[] => [d(`run/${name}`), ...files.map((n) => f(`run/${name}/${n}`))];

test('Trainer: checkpoint-N holding Trainer files but no trainer_state.json is incomplete, never latest (transformers 5.18.0 trainer.py Trainer._save_checkpoint writes trainer_state.json last)', () => {
  // The order _save_checkpoint writes in: save_model (config, weights, training_args.bin), optimizer, scheduler, rng state, trainer state.
  for (let k = 1; k < TRAINER_FILES.length; k++) {
    const run = one([d('run'), ...trainerCheckpoint('checkpoint-20'), ...trainerCheckpoint('checkpoint-30', TRAINER_FILES.slice(0, k))]);
    const saving = byName(run, 'checkpoint-30');
    assert.match(saving.incomplete ?? '', /trainer_state\.json not written yet: the Trainer is still saving/, `with ${TRAINER_FILES.slice(0, k).join(', ')}`);
    assert.equal(latestCheckpoint(run)?.name, 'checkpoint-20');
    const { checkpoint, note, skipped } = pickCheckpointWithNote(run, 'latest');
    assert.equal(checkpoint.name, 'checkpoint-20');
    assert.match(note ?? '', /^latest is checkpoint-20; skipped checkpoint-30: trainer_state\.json not written yet/);
    assert.deepEqual(skipped?.map((s) => s.name), ['checkpoint-30']);
  }
  const done = one([d('run'), ...trainerCheckpoint('checkpoint-20'), ...trainerCheckpoint('checkpoint-30')]);
  assert.equal(byName(done, 'checkpoint-30').incomplete, undefined);
  assert.equal(latestCheckpoint(done)?.name, 'checkpoint-30');
  assert.equal(pickCheckpointWithNote(done, 'latest').note, undefined);
});

test('Trainer: the first save (no siblings) is known by the files only the Trainer writes; HF weights alone then say nothing (Trainer._save / _save_optimizer_and_scheduler)', () => {
  const withArgs = one([d('run'), ...trainerCheckpoint('checkpoint-10', ['config.json', 'model.safetensors', 'training_args.bin'])]);
  assert.match(byName(withArgs, 'checkpoint-10').incomplete ?? '', /trainer_state\.json not written yet/);
  const weightsOnly = one([d('run'), ...trainerCheckpoint('checkpoint-10', ['config.json', 'model.safetensors'])]);
  assert.equal(byName(weightsOnly, 'checkpoint-10').incomplete, undefined);
});

test("Trainer: a checkpoint-N/ of another script (only model.pt) is not the Trainer's and stays complete, even beside Trainer checkpoints", () => {
  const run = one([d('run'), ...trainerCheckpoint('checkpoint-20'), d('run/checkpoint-30'), f('run/checkpoint-30/model.pt')]);
  assert.equal(byName(run, 'checkpoint-30').incomplete, undefined);
  assert.equal(latestCheckpoint(run)?.name, 'checkpoint-30');
});

test('accelerate: checkpoint_N without random_states_0.pkl beside finished saves is a save still being written, kind save, never step or latest (accelerate 1.15.0 checkpointing.py save_accelerator_state writes random_states last)', () => {
  const save = (n: number, files: string[]): Entry[] => [d(`p/checkpoints/checkpoint_${n}`), ...files.map((x) => f(`p/checkpoints/checkpoint_${n}/${x}`))];
  const all = ['model.safetensors', 'optimizer.bin', 'scheduler.bin', 'random_states_0.pkl'];
  for (let k = 0; k < all.length; k++) {
    const run = one([d('p'), d('p/checkpoints'), ...save(0, all), ...save(1, all.slice(0, k))]);
    const saving = byName(run, 'checkpoint_1');
    assert.equal(saving.kind, 'save', `with ${all.slice(0, k).join(', ') || 'nothing'}`);
    assert.equal(saving.save, 1);
    assert.match(saving.incomplete ?? '', k === 0 ? /holds no files yet/ : /random_states_0\.pkl not written yet: accelerate is still saving/);
    assert.equal(latestCheckpoint(run)?.name, 'checkpoint_0');
    assert.match(pickCheckpointWithNote(run, 'latest').note ?? '', /^latest is checkpoint_0; skipped checkpoint_1: /);
  }
  // Its first save, alone: accelerate's own optimizer.bin says whose it is; a model file alone does not.
  const first = one([d('p'), d('p/checkpoints'), ...save(0, ['model.safetensors', 'optimizer.bin'])]);
  assert.deepEqual([first.checkpoints[0].kind, /random_states_0/.test(first.checkpoints[0].incomplete ?? '')], ['save', true]);
  const other = one([d('p'), d('p/checkpoints'), ...save(3, ['model.safetensors'])]);
  assert.deepEqual([other.checkpoints[0].kind, other.checkpoints[0].step, other.checkpoints[0].incomplete], ['step', 3, undefined]);
});

test('Megatron-LM: an iter_N newer than latest_checkpointed_iteration.txt is still being saved (megatron/training/checkpointing.py save_checkpoint writes the tracker in iter_finalize_fn, after the save)', () => {
  const iter = (n: string): Entry[] => [d(`m/iter_${n}`), d(`m/iter_${n}/mp_rank_00`), f(`m/iter_${n}/mp_rank_00/model_optim_rng.pt`, 2048)];
  const run = one([d('m'), ...iter('0001000'), ...iter('0002000'), ...iter('0003000'), f('m/latest_checkpointed_iteration.txt', 4, NOW - 3_600_000, { text: '2000' })]);
  assert.match(byName(run, 'iter_0003000').incomplete ?? '', /newer than iteration 2000, which latest_checkpointed_iteration\.txt names: Megatron-LM is still saving it/);
  assert.equal(byName(run, 'iter_0002000').incomplete, undefined);
  assert.equal(latestCheckpoint(run)?.name, 'iter_0002000');
  const saved = one([d('m'), ...iter('0002000'), ...iter('0003000'), f('m/latest_checkpointed_iteration.txt', 4, NOW - 3_600_000, { text: '3000' })]);
  assert.equal(latestCheckpoint(saved)?.name, 'iter_0003000');
});

test('a checkpoint without a marker changed less than FRESH_WRITE_MS before the listing is being written, not latest (torch.save, Keras model.save and a cross-device Lightning _atomic_save write under the final name)', () => {
  for (const [name, kind] of [['step_200.pt', 'flat'], ['epoch=0-step=10.ckpt', 'lightning'], ['model.02.keras', 'keras']] as const) {
    const entries = (age: number): Entry[] => [d('t'), d('t/checkpoints'), f('t/checkpoints/step_100.pt', 100), f(`t/checkpoints/${name}`, 50, NOW - age)];
    const fresh = one(entries(1200));
    const c = byName(fresh, name);
    assert.match(c.incomplete ?? '', /^being written: changed 1\.2 s before the listing, and no marker of its framework says the save is done/, kind);
    assert.equal(latestCheckpoint(fresh)?.name, 'step_100.pt');
    const settled = one(entries(FRESH_WRITE_MS + 1000));
    assert.equal(byName(settled, name).incomplete, undefined, kind);
  }
  // A file system clock ahead of the host's (NFS) stamps a write in progress slightly in the future: still fresh.
  const ahead = one([d('t'), f('t/step_5.pt', 10, NOW + 2000)]);
  assert.match(ahead.checkpoints[0].incomplete ?? '', /^being written/);
});

test("a fresh checkpoint is complete when a marker put in place whole says so: DCP .metadata (FileSystemWriter.finish renames it), TensorFlow's .index, DeepSpeed's latest naming it", () => {
  const fresh = NOW - 500;
  const dcp = one([d('x'), d('x/step_5', fresh), f('x/step_5/__0_0.distcp', 10, fresh), f('x/step_5/.metadata', 10, fresh)]);
  assert.equal(latestCheckpoint(dcp)?.name, 'step_5');
  const tf = one([d('x'), f('x/ckpt-3.data-00000-of-00001', 10, fresh), f('x/ckpt-3.index', 10, fresh), f('x/checkpoint', 10, fresh, { text: 'model_checkpoint_path: "ckpt-3"' })]);
  assert.equal(latestCheckpoint(tf)?.name, 'ckpt-3');
  const ds = one([d('x'), d('x/global_step5', fresh), f('x/global_step5/mp_rank_00_model_states.pt', 10, fresh), f('x/latest', 11, fresh, { text: 'global_step5' })]);
  assert.equal(latestCheckpoint(ds)?.name, 'global_step5');
  const dsNewer = one([d('x'), d('x/global_step5'), f('x/global_step5/mp_rank_00_model_states.pt'), d('x/global_step6', fresh), f('x/global_step6/mp_rank_00_model_states.pt', 10, fresh), f('x/latest', 11, NOW - 3_600_000, { text: 'global_step5' })]);
  assert.match(byName(dsNewer, 'global_step6').incomplete ?? '', /^being written/);
});

test('the Trainer\'s trainer_state.json and accelerate\'s random_states are written last but in place: while fresh they may not be whole (make_livesaves.py caught random_states_0.pkl at 8,052 of 14,561 bytes), so the save is being written until they settle', () => {
  const fresh = NOW - 500;
  const trainer = (at: number) => one([d('run'), d('run/checkpoint-10', at), ...TRAINER_FILES.map((n) => f(`run/checkpoint-10/${n}`, 10, at))]);
  assert.match(trainer(fresh).checkpoints[0].incomplete ?? '', /^being written: changed 0\.5 s before the listing: trainer_state\.json, which its framework writes last and in place, may not be whole yet$/);
  assert.equal(latestCheckpoint(trainer(NOW - FRESH_WRITE_MS - 1))?.name, 'checkpoint-10');
  const acc = (bytes: number, at: number) => one([d('p'), d('p/checkpoints'), d('p/checkpoints/checkpoint_0', at), f('p/checkpoints/checkpoint_0/model.safetensors', 10, at), f('p/checkpoints/checkpoint_0/random_states_0.pkl', bytes, at)]);
  assert.match(acc(8052, fresh).checkpoints[0].incomplete ?? '', /random_states_0\.pkl, which its framework writes last and in place, may not be whole yet/);
  assert.equal(latestCheckpoint(acc(14561, NOW - FRESH_WRITE_MS - 1))?.name, 'checkpoint_0');
});

test("safetensors' temporary file (the Rust tempfile crate's .tmpXXXXXX beside model.safetensors, caught in the Trainer's folder by make_livesaves.py) marks its folder as being written", () => {
  const run = one([d('x'), d('x/step_5'), f('x/step_5/model.safetensors'), d('x/step_6'), f('x/step_6/config.json'), f('x/step_6/.tmpMdbL0h', 4096)]);
  assert.equal(byName(run, 'step_6').incomplete, '.tmpMdbL0h is still being written');
  assert.equal(latestCheckpoint(run)?.name, 'step_5');
  // Not every dot-file is one: `.tmprc` is no tempfile name, and a checkpoint folder's own `.hidden` files stay.
  const other = one([d('x'), d('x/step_5'), f('x/step_5/model.safetensors'), f('x/step_5/.tmprc')]);
  assert.equal(other.checkpoints[0].incomplete, undefined);
});

test('Orbax: a step being saved is its temporary folder, N.orbax-checkpoint-tmp (orbax-checkpoint 0.12.4, _src/path/atomicity.py _get_tmp_directory) or N.orbax-checkpoint-tmp-<timestamp> (older releases, temporary_paths.py): listed as step N, incomplete, never latest', () => {
  const step10: Entry[] = [d('o/10'), f('o/10/_CHECKPOINT_METADATA'), f('o/10/commit_success.txt'), d('o/10/default'), f('o/10/default/_METADATA')];
  for (const tmp of ['20.orbax-checkpoint-tmp', '20.orbax-checkpoint-tmp-1796424497']) {
    const run = one([d('o'), ...step10, d(`o/${tmp}`), f(`o/${tmp}/_CHECKPOINT_METADATA`), d(`o/${tmp}/default.orbax-checkpoint-tmp`)]);
    const saving = byName(run, tmp);
    assert.ok(saving, `${tmp} is not listed: ${run.checkpoints.map((c) => c.name).join(', ')}`);
    assert.deepEqual([saving.kind, saving.step], ['step', 20], tmp);
    assert.match(saving.incomplete ?? '', /^Orbax is still writing it/, tmp);
    assert.equal(latestCheckpoint(run)?.name, '10', tmp);
  }
});

test('naming an incomplete checkpoint takes it, with a warning that says why', () => {
  const run = one([d('run'), ...trainerCheckpoint('checkpoint-20'), ...trainerCheckpoint('checkpoint-30', TRAINER_FILES.slice(0, 4))]);
  const { checkpoint, note } = pickCheckpointWithNote(run, 'checkpoint-30');
  assert.equal(checkpoint.name, 'checkpoint-30');
  assert.match(note ?? '', /^checkpoint-30 is incomplete \(trainer_state\.json not written yet: the Trainer is still saving.*\): taking it because it was named$/);
  assert.equal(pickCheckpointWithNote(run, '30').checkpoint.name, 'checkpoint-30');
});

/** A stage recorded by make_livesaves.py: the output folder while the writer was stopped. */
interface Stage {
  event: string;
  path: string;
  files: { rel: string; type: 'f' | 'd'; bytes: number; mtimeOffsetMs: number }[];
}
const LIVE = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'livesaves');
const recorded = fs.existsSync(LIVE) ? fs.readdirSync(LIVE).filter((n) => n.endsWith('.json')) : [];

test('the stages caught while the real writers wrote (make_livesaves.py): the save in progress is incomplete and never latest; finished and settled, it is latest', () => {
  assert.ok(recorded.length >= 4, `recorded frameworks: ${recorded.join(', ')}`);
  for (const file of recorded) {
    const { framework, watched, stages, texts } = JSON.parse(fs.readFileSync(path.join(LIVE, file), 'utf8')) as { framework: string; watched: string; stages: Stage[]; texts: Record<string, string> };
    const finished = stages[stages.length - 1];
    const sig = (s: Stage) => JSON.stringify(s.files.filter((x) => x.type === 'f' && (x.rel === watched || x.rel.startsWith(`${watched}/`))).map((x) => [x.rel, x.bytes]));
    const name = watched.slice(watched.lastIndexOf('/') + 1);
    const listed = (s: Stage, later = 0): Run => one([d('run'), ...s.files.map((x) => (x.type === 'd' ? d(`run/${x.rel}`, NOW + x.mtimeOffsetMs - later) : f(`run/${x.rel}`, x.bytes, NOW + x.mtimeOffsetMs - later, texts[`${x.rel}@${x.bytes}`] !== undefined ? { text: texts[`${x.rel}@${x.bytes}`] } : {})))]);
    for (const stage of stages.slice(0, -1)) {
      const run = listed(stage);
      const c = run.checkpoints.find((x) => x.name === name || x.name === name.replace(/\.tmp.*$/, '') || x.name === `${name}.orbax-checkpoint-tmp`);
      // Orbax writes the step into its temporary folder: with a file in it, the save in progress is listed.
      if (stage.files.some((x) => x.type === 'f' && x.rel.startsWith(`${watched}.orbax-checkpoint-tmp/`))) assert.ok(c, `${framework} ${stage.event} ${stage.path}: the save in progress is not listed`);
      if (sig(stage) === sig(finished)) {
        // All its files are there: complete by its marker, or (no marker) being written while its clock is fresh.
        if (c?.incomplete !== undefined) assert.match(c.incomplete, /^being written/, `${framework} ${stage.event} ${stage.path}`);
        continue;
      }
      if (c) {
        assert.ok(c.incomplete !== undefined, `${framework} ${stage.event} ${stage.path}: ${name} is not marked incomplete`);
        assert.notEqual(c.kind, framework === 'accelerate' ? 'step' : 'none');
      }
      assert.notEqual(latestCheckpoint(run)?.name, name, `${framework} ${stage.event} ${stage.path}`);
    }
    // The finished folder as a listing sees it FRESH_WRITE_MS later.
    const done = listed(finished, FRESH_WRITE_MS);
    assert.equal(latestCheckpoint(done)?.name, name, framework);
  }
});
