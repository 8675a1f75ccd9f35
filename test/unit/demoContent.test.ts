/** The demo's content as pure functions and plain files: curves, paths, the tree, the live trainer. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { learningRate, metricsAt, isSpike, LIVE_SCHEDULE } from '../../src/demo/metrics';
import { demoBaseDir } from '../../src/demo/paths';
import { writeDemoTree, LIVE_START_STEP, LIVE_CHECKPOINT_EVERY, LIVE_EDITED_FROM_STEP } from '../../src/demo/tree';
import { realCheckpointFile } from '../../src/demo/realCheckpoints';
import { LiveTrainer } from '../../src/demo/trainer';
import { parseCheckpointName } from '../../src/core/discovery/checkpointLayout';

test('curves: same step same line; loss falls, accuracy rises, spikes are rare; lr warms up then decays', () => {
  assert.deepEqual(metricsAt(12_345, 1), metricsAt(12_345, 1));
  const mean = (from: number, key: 'loss' | 'acc'): number => {
    let s = 0;
    for (let i = 0; i < 200; i++) s += metricsAt(from + i * 16, 0)[key];
    return s / 200;
  };
  assert.ok(mean(1000, 'loss') > mean(20_000, 'loss') + 0.5);
  assert.ok(mean(1000, 'acc') < mean(20_000, 'acc'));
  let spikes = 0;
  for (let step = 16; step <= 32_000; step += 16) if (isSpike(step)) spikes++;
  assert.ok(spikes > 0 && spikes < 2000 * 0.03, `spikes: ${spikes}`);
  assert.equal(learningRate(0), 0);
  assert.ok(learningRate(1000) < learningRate(2000));
  assert.equal(learningRate(2000), LIVE_SCHEDULE.peakLr);
  assert.ok(learningRate(30_000) < LIVE_SCHEDULE.peakLr && learningRate(30_000) > LIVE_SCHEDULE.minLr);
  assert.ok(Math.abs(learningRate(60_000) - LIVE_SCHEDULE.minLr) < 1e-12);
});

test('the demo folder: REMOTE_RUNS_DEMO_DIR, else $XDG_CACHE_HOME, else ~/.cache', () => {
  assert.equal(demoBaseDir({ REMOTE_RUNS_DEMO_DIR: '/x/d', XDG_CACHE_HOME: '/c', HOME: '/h' }), '/x/d');
  assert.equal(demoBaseDir({ XDG_CACHE_HOME: '/c', HOME: '/h' }), '/c/remote-runs-demo');
  assert.equal(demoBaseDir({ XDG_CACHE_HOME: 'relative', HOME: '/h' }), '/h/.cache/remote-runs-demo');
  assert.equal(demoBaseDir({ HOME: '/h' }), '/h/.cache/remote-runs-demo');
});

test('the tree: the story folder has 12 step folders and not one *.pt at its top; the live run logs and checkpoints', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-tree-'));
  try {
    const tree = writeDemoTree(path.join(dir, 'machine'));
    const top = fs.readdirSync(tree.storyFolder.dir);
    assert.equal(top.filter((n) => n.endsWith('.pt')).length, 0);
    assert.equal(top.filter((n) => parseCheckpointName(n, true)).length, 12);
    for (const n of top) assert.ok(fs.existsSync(path.join(tree.storyFolder.dir, n, 'checkpoint.pt')));
    const lines = fs.readFileSync(tree.live.log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(lines[lines.length - 1].step, LIVE_START_STEP);
    const ckpts = fs.readdirSync(tree.live.checkpoints);
    assert.equal(ckpts.length, Math.floor(LIVE_START_STEP / LIVE_CHECKPOINT_EVERY));
    // The story's checkpoints are sparse (gigabytes apparent, next to nothing on disk) for downloads; the live run's
    // are torch.save archives (a zip: `PK\x03\x04`), the base model's before LIVE_EDITED_FROM_STEP, the edited one's after.
    const st = fs.statSync(path.join(tree.storyFolder.dir, 'step_10000', 'checkpoint.pt'));
    assert.ok(st.size > 3e9 && st.blocks * 512 < 1e6);
    const liveFile = (step: number): Buffer => fs.readFileSync(path.join(tree.live.checkpoints, `step_${step}`, 'checkpoint.pt'));
    assert.equal(liveFile(2000).subarray(0, 4).toString('latin1'), 'PK\x03\x04');
    assert.deepEqual(liveFile(LIVE_EDITED_FROM_STEP - 2000), realCheckpointFile('torch/base.pt'));
    assert.deepEqual(liveFile(LIVE_EDITED_FROM_STEP), realCheckpointFile('torch/edited.pt'));

    const saved: number[] = [];
    const trainer = new LiveTrainer({ dir: tree.live.dir, onCheckpoint: (s) => saved.push(s) });
    for (let i = 0; i < 20; i++) trainer.tick(1_700_000_000_000 + i * 1000);
    const after = fs.readFileSync(tree.live.log, 'utf8').trim().split('\n');
    assert.equal(after.length, lines.length + 20);
    assert.equal(JSON.parse(after[after.length - 1]).step, LIVE_START_STEP + 20 * 16);
    assert.deepEqual(saved, [22_000]);
    assert.deepEqual(fs.readFileSync(path.join(tree.live.checkpoints, 'step_22000', 'checkpoint.pt')), realCheckpointFile('torch/edited.pt'));
    assert.deepEqual(fs.readdirSync(path.join(tree.live.checkpoints, 'step_22000')), ['checkpoint.pt'], 'no temporary file left');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
