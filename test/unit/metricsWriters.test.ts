/**
 * The reading rules for the writers' layouts: x falls back through step-like keys to timesteps and epoch (and
 * says which), the user's x pick, MLflow metric files, and how a run's event files merge and are named
 * (runSeries.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CsvParser, JsonlParser, MlflowMetricParser, RunMetrics, describeX, mlflowKeyOf, detectFormat } from '../../src/core/metrics';
import { JsonlParser as J } from '../../src/core/metrics/formats/jsonl';
import { RunSeries, compareEventFiles, eventSeriesName } from '../../src/core/metrics/series/runSeries';
import { MetricsFollower } from '../../src/core/metrics/follow/follow';
import { eventStreamOf } from '../../src/core/discovery/logdirNames';

const enc = (s: string) => new TextEncoder().encode(s);
const points = (m: RunMetrics, key: string) => {
  const s = m.get(key)!;
  return [...s.x].map((x, i) => [x, s.y[i]]);
};

test("Keras' CSVLogger (epoch, no step): x is epoch, and epoch is not a series", () => {
  const m = new RunMetrics();
  const p = new CsvParser(m);
  p.push(enc('epoch,accuracy,loss,val_loss\n0,0.5,1.2,1.3\n1,0.6,0.9,1.0\n'));
  assert.equal(m.xKey, 'epoch');
  assert.equal(describeX(m), 'epoch');
  assert.deepEqual(m.keys(), ['accuracy', 'loss', 'val_loss']);
  assert.deepEqual(points(m, 'loss'), [[0, 1.2], [1, 0.9]]);
});

test("Stable-Baselines3's progress.csv: x is time/total_timesteps", () => {
  const m = new RunMetrics();
  new CsvParser(m).push(enc('time/fps,time/iterations,time/total_timesteps,rollout/ep_rew_mean\n100,1,2048,10.5\n98,2,4096,12\n'));
  assert.equal(m.xKey, 'time/total_timesteps');
  assert.deepEqual(points(m, 'rollout/ep_rew_mean'), [[2048, 10.5], [4096, 12]]);
  assert.ok(m.has('time/iterations'));
});

test('a step column wins over epoch, and epoch is then a series of its own', () => {
  const m = new RunMetrics();
  new CsvParser(m).push(enc('epoch,step,loss\n0,10,1\n0,20,0.5\n'));
  assert.equal(m.xKey, 'step');
  assert.deepEqual(points(m, 'epoch'), [[10, 0], [20, 0]]);
});

test('no x column at all: line numbers, and describeX says so', () => {
  const m = new RunMetrics();
  new CsvParser(m).push(enc('a,b\n1,2\n3,4\n'));
  assert.equal(m.xKey, undefined);
  assert.equal(describeX(m), 'line number');
  assert.deepEqual(points(m, 'a'), [[2, 1], [3, 3]]);
});

test('epoch-only JSONL takes epoch as x on both the fast path and the general one', () => {
  for (const flatFastPath of [true, false]) {
    const m = new RunMetrics();
    const p = new J(m, { flatFastPath });
    p.push(enc('{"epoch": 1, "loss": 0.9}\n{"epoch": 2, "loss": 0.7, "note": "x"}\n'));
    assert.equal(m.xKey, 'epoch', String(flatFastPath));
    assert.deepEqual(m.keys(), ['loss']);
    assert.deepEqual(points(m, 'loss'), [[1, 0.9], [2, 0.7]]);
  }
});

test('JSONL: once a line had a step, a later epoch-only line takes the last step, not its epoch', () => {
  const m = new RunMetrics();
  new JsonlParser(m).push(enc('{"step": 100, "loss": 1, "epoch": 0}\n{"epoch": 1, "val_loss": 2}\n'));
  assert.equal(m.xKey, 'step');
  assert.deepEqual(points(m, 'val_loss'), [[100, 2]]);
  assert.deepEqual(points(m, 'epoch'), [[100, 0], [100, 1]]);
});

test("the user's x pick is the only x: other columns are series, a log without it uses line numbers", () => {
  const m = new RunMetrics('line', 'epoch');
  new CsvParser(m).push(enc('step,epoch,loss\n10,0,1\n20,1,0.5\n'));
  assert.equal(m.xKey, 'epoch');
  assert.deepEqual(points(m, 'loss'), [[0, 1], [1, 0.5]]);
  const j = new RunMetrics('line', 'tokens');
  new JsonlParser(j).push(enc('{"step": 1, "loss": 2}\n'));
  assert.equal(describeX(j), 'line number (no "tokens" in this log)');
});

test('MLflow metric files: "timestamp value step", two-field lines are step 0, bad lines counted', () => {
  const m = new RunMetrics();
  const p = new MlflowMetricParser(m, 'train/loss');
  p.push(enc('1750000000000 0.5 0\n1750000001000 0.25 10\n1750000002000 nan 20\nnot a line\n1750000003000 0.125 30\n1750000004000 0.0625\n17500000040'));
  p.end();
  // The unterminated last line does not parse: cut off mid-write, dropped without counting.
  assert.deepEqual(points(m, 'train/loss'), [[0, 0.0625]]);
  assert.equal(m.get('train/loss')!.time![0], 1750000004000);
  assert.equal(m.badValues, 1);
  assert.equal(m.badLines, 1);
  assert.equal(m.xKey, 'step');
  // A two-field line is step 0: after step 30 that is a step back, where the later point wins (series.ts).
  assert.deepEqual(m.get('train/loss')!.restarts, [{ step: 0, index: 0, replaced: 3 }]);
});

test('MLflow keys and format come from the run path', () => {
  assert.equal(mlflowKeyOf('/m/0/abc/metrics/train/loss', '/m/0/abc'), 'train/loss');
  assert.equal(mlflowKeyOf('/x/metrics/runs/abc/metrics/acc', '/x/metrics/runs/abc'), 'acc');
  assert.equal(detectFormat('/m/0/abc/metrics/train/loss', '/m/0/abc'), 'mlflow');
  assert.equal(detectFormat('/m/0/abc/metrics/train/loss'), undefined);
  assert.equal(detectFormat('/k/training.log'), 'csv');
  assert.equal(detectFormat('/k/history.csv'), 'csv');
});

test('event files sort by the creation time in their names, then by name', () => {
  const names = ['events.out.tfevents.1750000100.h.1.10', 'events.out.tfevents.999999999.h.9.0', 'events.out.tfevents.1750000100.h.1.9', 'events.out.tfevents.x'];
  assert.deepEqual([...names].sort(compareEventFiles), [
    'events.out.tfevents.999999999.h.9.0',
    'events.out.tfevents.1750000100.h.1.9',
    'events.out.tfevents.1750000100.h.1.10',
    'events.out.tfevents.x',
  ]);
});

test('series names: the home tag as is, add_scalars folders as main/sub, other folders as folder/tag', () => {
  assert.equal(eventSeriesName('', 'loss'), 'loss');
  assert.equal(eventSeriesName('loss_cmp_train', 'loss_cmp'), 'loss_cmp/train');
  assert.equal(eventSeriesName('loss_cmp/train', 'loss_cmp'), 'loss_cmp/train', 'tensorboardX nests main_tag/tag');
  assert.equal(eventSeriesName('a/b/val', 'a/b'), 'a/b/val');
  assert.equal(eventSeriesName('a_b_val', 'a/b'), 'a/b/val');
  assert.equal(eventSeriesName('validation', 'epoch_loss'), 'validation/epoch_loss');
  assert.equal(eventSeriesName('1750000000.5', 'hparam/acc'), '1750000000.5/hparam/acc');
});

test("event streams are named from the run's fixed home, whatever other logs exist", () => {
  assert.equal(eventStreamOf('/r/tb', '/r/tb'), '');
  assert.equal(eventStreamOf('/r/tb', '/r/tb/loss_cmp_train'), 'loss_cmp_train');
  // Keras: logs/train alone (before the first validation pass) and beside logs/validation.
  assert.equal(eventStreamOf('/r/fit', '/r/fit/logs/train'), 'train');
  assert.equal(eventStreamOf('/r/fit/logs', '/r/fit/logs/validation'), 'validation');
  // Trainer: every default-named runs/<time>_<host>/ is the one stream of the run (a resume writes a second).
  assert.equal(eventStreamOf('/r/out', '/r/out/runs/Dec03_16-11-14_vm'), '');
  assert.equal(eventStreamOf('/r/out', '/r/out/runs/Dec03_18-40-02_vm'), '');
  assert.equal(eventStreamOf('/r/out', '/r/out/runs/Dec03_16-11-14_gpu-node.cluster/acc_train'), 'acc_train');
  // A logdir the user named keeps its name.
  assert.equal(eventStreamOf('/r/out', '/r/out/runs/sweep-a'), 'runs/sweep-a');
  assert.equal(eventStreamOf('/', '/logs/train'), 'train');
  assert.equal(eventStreamOf('/r/a', '/elsewhere/x'), '/elsewhere/x');
});

test('a merged stream is rebuilt when its last file restarts inside itself, even when it grew past what was taken', () => {
  const a = new MetricsFollower('/r/events.out.tfevents.100.h.1.0', 'tfevents');
  const b = new MetricsFollower('/r/events.out.tfevents.200.h.2.0', 'tfevents');
  for (const x of [1, 2, 3]) a.metrics.add('loss', x, x);
  b.metrics.add('loss', 4, 4);
  b.metrics.add('loss', 5, 5);
  const run = new RunSeries([a, b], '/r');
  const pts = () => {
    const s = run.series().get('loss')!;
    return Array.from({ length: s.length }, (_, i) => [s.xAt(i), s.yAt(i)]);
  };
  assert.deepEqual(pts(), [[1, 1], [2, 2], [3, 3], [4, 4], [5, 5]]);
  // The second process restarts from step 2 in its own file and writes on past the length already taken.
  b.metrics.add('loss', 2, 9);
  b.metrics.add('loss', 6, 6);
  b.metrics.add('loss', 7, 7);
  assert.deepEqual(pts(), [[1, 1], [2, 9], [6, 6], [7, 7]], 'the later wins from step 2; nothing of the replaced points is left');
  assert.deepEqual(run.series().get('loss')!.restarts.map((r) => [r.step, r.replaced]), [[2, 2]]);
});
