/**
 * Which folders with metrics logs are runs, and which are series of the run that holds them (runTree.ts, the
 * file comment): TensorBoard logdirs with add_scalars / add_hparams sub-folders, Keras' train/validation,
 * Hugging Face's runs/<date>_<host>/ beside checkpoints, Lightning's version_N, sibling logdirs, MLflow's file
 * store, and the CSV names taken only beside a run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findRuns, type Entry } from '../../src/core/discovery/runTree';

const NOW = 1_750_000_000_000;

/** Entries of a tree given as paths; a path ending in `/` is a folder, parents are added. */
function tree(...paths: string[]): Entry[] {
  const out = new Map<string, Entry>();
  for (const p of paths) {
    const parts = p.replace(/\/$/, '').split('/');
    for (let i = 1; i < parts.length; i++) {
      const rel = parts.slice(0, i).join('/');
      if (!out.has(rel)) out.set(rel, { type: 'd', bytes: 4096, mtime: NOW - 3_600_000, rel });
    }
    const rel = parts.join('/');
    out.set(rel, { type: p.endsWith('/') ? 'd' : 'f', bytes: 100, mtime: NOW - 3_600_000, rel });
  }
  return [...out.values()];
}

const summary = (root: string, entries: Entry[]) => findRuns(root, entries, NOW).map((r) => ({ name: r.name, metrics: r.metrics.map((m) => m.slice(root.length + 1)) }));

const EV = 'events.out.tfevents.1750000000.host.1.0';
const EV2 = 'events.out.tfevents.1750000100.host.2.0';

test('a TB logdir with add_scalars and add_hparams sub-folders is one run', () => {
  const runs = summary('/r', tree(`tb/${EV}`, `tb/${EV2}`, `tb/loss_cmp_train/${EV}`, `tb/loss_cmp_val/${EV}`, `tb/1750000200.5/${EV}`));
  assert.deepEqual(runs, [{ name: 'tb', metrics: [`tb/1750000200.5/${EV}`, `tb/${EV}`, `tb/${EV2}`, `tb/loss_cmp_train/${EV}`, `tb/loss_cmp_val/${EV}`] }]);
});

test('two sibling logdirs without event files above them are two runs', () => {
  const runs = summary('/r', tree(`expA/${EV}`, `expB/${EV}`));
  assert.deepEqual(runs.map((r) => r.name), ['expA', 'expB']);
});

test("Keras' train/ and validation/ are one run, whether the root is the logdir or holds logs/", () => {
  assert.deepEqual(summary('/r/logs', tree(`train/${EV}`, `validation/${EV2}`)), [{ name: 'logs', metrics: [`train/${EV}`, `validation/${EV2}`] }]);
  const withLogs = summary('/r', tree(`keras/logs/train/${EV}`, `keras/logs/validation/${EV2}`, 'keras/training.log', 'keras/model.keras'));
  assert.deepEqual(withLogs, [{ name: 'keras', metrics: [`keras/logs/train/${EV}`, `keras/logs/validation/${EV2}`, 'keras/training.log'] }]);
});

test("Hugging Face's runs/<date>_<host>/ beside checkpoints is the output_dir's log; alone, runs/* are runs", () => {
  const hf = summary('/r', tree(`out/runs/May01_12-00-00_host/${EV}`, 'out/checkpoint-10/trainer_state.json', 'out/checkpoint-20/trainer_state.json'));
  assert.deepEqual(hf, [{ name: 'out', metrics: [`out/runs/May01_12-00-00_host/${EV}`] }]);
  const torchDefault = summary('/r', tree(`proj/runs/Dec01_10-00-00_a/${EV}`, `proj/runs/Dec02_10-00-00_a/${EV}`));
  assert.deepEqual(torchDefault.map((r) => r.name), ['Dec01_10-00-00_a', 'Dec02_10-00-00_a']);
});

test('a Trainer before its first save (runs/ holds one default-named logdir, nothing else) is named by its output_dir, as after the save', () => {
  // What the real Trainer had written when caught before its first save: only its logdir (written/livelogs/trainer/presave).
  const presave = summary('/r', tree(`out/runs/Dec04_21-10-30_vm/${EV}`));
  assert.deepEqual(presave, [{ name: 'out', metrics: [`out/runs/Dec04_21-10-30_vm/${EV}`] }]);
  const saved = summary('/r', tree(`out/runs/Dec04_21-10-30_vm/${EV}`, 'out/checkpoint-10/trainer_state.json'));
  assert.deepEqual(saved, presave, 'the first checkpoint changes neither the name nor the logs');
  // Not a default name, a logdir holding a checkpoint of its own, or something else in runs/: the logdir is the run.
  assert.deepEqual(summary('/r', tree(`out/runs/mine/${EV}`)).map((r) => r.name), ['mine']);
  assert.deepEqual(summary('/r', tree(`out/runs/Dec04_21-10-30_vm/${EV}`, 'out/runs/Dec04_21-10-30_vm/step_10/model.pt')).map((r) => r.name), ['Dec04_21-10-30_vm']);
  assert.deepEqual(summary('/r', tree(`out/runs/Dec04_21-10-30_vm/${EV}`, 'out/runs/notes.txt')).map((r) => r.name), ['Dec04_21-10-30_vm']);
});

test('a Hugging Face run without any log follows its newest checkpoint trainer_state.json', () => {
  const hf = summary('/r', tree('out/checkpoint-10/trainer_state.json', 'out/checkpoint-20/trainer_state.json'));
  assert.deepEqual(hf, [{ name: 'out', metrics: ['out/checkpoint-20/trainer_state.json'] }]);
});

test("Lightning's version_N is one run with its CSV and event logs", () => {
  const runs = summary('/r', tree('lightning_logs/version_0/metrics.csv', 'lightning_logs/version_0/hparams.yaml', `lightning_logs/version_0/${EV}`, 'lightning_logs/version_0/checkpoints/epoch=1-step=20.ckpt'));
  assert.deepEqual(runs, [{ name: 'version_0', metrics: [`lightning_logs/version_0/${EV}`, 'lightning_logs/version_0/metrics.csv'] }]);
});

test('other CSVs and training.log count beside checkpoints or logs, never alone; dataset CSVs never', () => {
  assert.deepEqual(summary('/r', tree('a/history.csv', 'b/training.log', 'c/data.csv')), []);
  const runs = summary('/r', tree('a/history.csv', 'a/train.csv', 'a/model_epoch_3.keras', 'a/step_100/model.pt'));
  assert.deepEqual(runs, [{ name: 'a', metrics: ['a/history.csv'] }]);
});

test("MLflow's file store: each run_id folder is a run of its metric files; artifacts/ and the experiment are not", () => {
  const id = '0123456789abcdef0123456789abcdef';
  const runs = findRuns('/r/mlruns', tree('0/meta.yaml', `0/${id}/meta.yaml`, `0/${id}/metrics/loss`, `0/${id}/metrics/train/acc`, `0/${id}/params/lr`, `0/${id}/tags/mlflow.runName`, `0/${id}/artifacts/metrics.jsonl`, `0/${id}/artifacts/model/step_10/model.pt`), NOW);
  assert.deepEqual(runs.map((r) => ({ name: r.name, metrics: r.metrics })), [{ name: id, metrics: [`/r/mlruns/0/${id}/metrics/loss`, `/r/mlruns/0/${id}/metrics/train/acc`] }]);
});
