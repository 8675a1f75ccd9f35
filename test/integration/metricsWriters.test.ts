/**
 * Metrics logs written by the real writers (test/fixtures/real/make_metrics.py: tensorboardX, torch.utils.tensorboard,
 * Keras 3 CSVLogger + TensorBoard, transformers Trainer, tf.summary; Stable-Baselines3's progress.csv and MLflow's
 * file store written from their source), listed over the real test sshd and read through the real feed: the runs
 * and their metrics logs are the ones expected, and each run's series have the names TensorBoard gives them and
 * the point counts and first/last (step, value) the writer recorded (expected.json). A live Hugging Face run whose
 * only log is a checkpoint's trainer_state.json follows the newest checkpoint as checkpoints appear and rotate.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import type { Series } from '../../src/core/metrics';
import { toRunRef } from '../../src/core/runRef';
import type { Run, TargetListing } from '../../src/core/types';
import { ROOT } from '../harness/builtCli';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

const WRITTEN = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'metrics');

interface SeriesFacts {
  count: number;
  first: [number, number];
  last: [number, number];
}
interface Case {
  runs: Record<string, string[]>;
  series?: Record<string, Record<string, SeriesFacts>>;
  segments?: Record<string, Record<string, number>>;
  x?: Record<string, string>;
  checkpoints?: Record<string, string[]> | string[];
  perCheckpoint?: Record<string, Record<string, SeriesFacts>>;
}
/** The facts a series holds: values as float32 (src/core/metrics/series/compact.ts), steps exactly. */
function held(f: SeriesFacts | undefined): SeriesFacts | undefined {
  return f && { count: f.count, first: [f.first[0], Math.fround(f.first[1])], last: [f.last[0], Math.fround(f.last[1])] };
}

function pointFacts(s: Series): SeriesFacts {
  return { count: s.length, first: [s.xAt(0), s.yAt(0)], last: [s.xAt(s.length - 1), s.yAt(s.length - 1)] };
}

const expected = JSON.parse(fs.readFileSync(path.join(WRITTEN, 'expected.json'), 'utf8')) as Record<string, Case>;
const CASES = Object.keys(expected).filter((c) => c !== 'hf_state');

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let base: string;
const HOST = { kind: 'host' as const, id: '' };

before(async () => {
  host = await startTestHost();
  base = path.join(host.dir, 'writers');
  for (const c of Object.keys(expected)) fs.cpSync(path.join(WRITTEN, c), path.join(base, c), { recursive: true });
  // The live case starts with its first two checkpoints; the test adds and rotates the others.
  const live = path.join(base, 'hf_state', 'output_dir');
  for (const c of fs.readdirSync(live)) if (!['checkpoint-5', 'checkpoint-10'].includes(c)) fs.rmSync(path.join(live, c), { recursive: true });
  execFileSync('chmod', ['-R', 'a+rwX', base]);
  const hosts = [host.hostConfig('w', { runRoots: Object.keys(expected).map((c) => path.join(base, c)) })];
  pool = testPool(host, { connectTimeoutMs: 30_000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) });
});

after(async () => {
  pool?.dispose();
  await host?.stop();
});

let listing: TargetListing | undefined;
async function runsIn(c: string): Promise<Run[]> {
  listing ??= await core.listTarget('w', HOST);
  const root = listing.roots.find((r) => r.path === path.join(base, c));
  assert.ok(root, `root ${c} listed`);
  assert.equal(root.state, 'ok', `root ${c}: ${JSON.stringify(root)}`);
  return root.state === 'ok' ? root.runs : [];
}

function feedOf(run: Run): RunFeed {
  return new RunFeed(toRunRef('w', HOST, run), { executor: () => core.executor('w'), intervalMs: () => 60_000 });
}

for (const c of CASES) {
  test(`${c}: the listing finds the runs and logs the writer made, and the feed reads the series it wrote`, async () => {
    const want = expected[c];
    const runs = await runsIn(c);
    const rootPath = path.join(base, c);
    assert.deepEqual(
      Object.fromEntries(runs.map((r) => [r.name, r.metrics.map((m) => path.relative(rootPath, m))])),
      want.runs,
      'runs and their metrics logs',
    );
    for (const run of runs) {
      if (want.checkpoints && !Array.isArray(want.checkpoints)) assert.deepEqual(run.checkpoints.map((k) => k.name), want.checkpoints[run.name]);
      const feed = feedOf(run);
      try {
        await feed.pollNow();
        assert.equal(feed.status, 'following', `${run.name}: ${feed.status}`);
        assert.equal(feed.skipped, undefined, `${run.name}: nothing skipped`);
        const series = feed.series();
        const names = [...series.keys()];
        assert.ok(!names.some((n) => n.includes('events.out.tfevents')), `no series is named by its event file: ${names.join(', ')}`);
        for (const [name, facts] of Object.entries(want.series?.[run.name] ?? {})) {
          const s = series.get(name);
          assert.ok(s, `${run.name}: series ${name} among ${names.join(', ')}`);
          assert.deepEqual(pointFacts(s), held(facts), `${run.name}: ${name}`);
        }
        for (const [name, n] of Object.entries(want.segments?.[run.name] ?? {})) {
          assert.equal(series.get(name)?.segments.length, n, `${run.name}: ${name} segments (a resume continues, a restart from an earlier step is a new segment)`);
        }
        assert.equal(feed.xAxis, want.x?.[run.name] ?? 'step', `${run.name}: what x is`);
      } finally {
        feed.dispose();
      }
    }
  });
}

test('a live Hugging Face run with only checkpoint-N/trainer_state.json follows the newest checkpoint as they appear and rotate', async () => {
  const want = expected.hf_state;
  const per = want.perCheckpoint!;
  const runs = await runsIn('hf_state');
  assert.deepEqual(runs.map((r) => [r.name, r.metrics.map((m) => path.relative(path.join(base, 'hf_state'), m))]), [['output_dir', ['output_dir/checkpoint-10/trainer_state.json']]]);
  const out = path.join(base, 'hf_state', 'output_dir');
  const feed = feedOf(runs[0]);
  const loss = () => {
    const s = feed.series().get('loss');
    return s ? pointFacts(s) : undefined;
  };
  try {
    await feed.pollNow();
    assert.deepEqual(loss(), held(per['checkpoint-10'].loss));
    // The Trainer saves checkpoint-15 and, with save_total_limit, deletes the oldest ones.
    for (const [add, remove] of [
      ['checkpoint-15', ['checkpoint-5', 'checkpoint-10']],
      ['checkpoint-20', ['checkpoint-15']],
    ] as const) {
      fs.cpSync(path.join(WRITTEN, 'hf_state', 'output_dir', add), path.join(out, add), { recursive: true });
      execFileSync('chmod', ['-R', 'a+rwX', out]);
      for (const r of remove) fs.rmSync(path.join(out, r), { recursive: true });
      assert.equal(await feed.pollNow(), true, `the feed sees ${add}`);
      assert.deepEqual(feed.paths, [path.join(out, add, 'trainer_state.json')]);
      assert.equal(feed.status, 'following');
      assert.deepEqual(loss(), held(per[add].loss), `the series of ${add}`);
    }
  } finally {
    feed.dispose();
  }
});
