/**
 * A live run on the test SSH host: while a writer appends lines to the story run's logs/train.jsonl inside
 * pct:200 (in bursts, cutting lines in half across writes), the run's feed polls it over the real sshd
 * through the pct shim. Every line is seen exactly once and in order, a half-written line is never counted as
 * bad, each poll is one remote command, a resumed run (steps going back) starts a new segment, and a log
 * replaced by a restarted run is read again from its start.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../../src/core/service';
import type { Executor } from '../../src/core/remote';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { toRunRef } from '../../src/core/runRef';
import { eventually } from '../harness/assertKind';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let execs = 0;

before(async () => {
  host = await startTestHost();
  const hosts = [host.hostConfig('testbox')];
  pool = testPool(host, { connectTimeoutMs: 30_000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  core = new RemoteRunsCore({
    hosts: () => hosts,
    executorFor: (h): Executor => {
      const inner = pool.executor(dir.resolve(h), { idempotent: true });
      return { exec: (line, opts) => (execs++, inner.exec(line, opts)) };
    },
  });
});

after(async () => {
  pool?.dispose();
  await host?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long to wait for the feed before giving up: generous, the machine may be shared and loaded. */
const PATIENCE_MS = 180_000;

test('a live run: every appended line exactly once, in order, half-written lines held back, one command per poll', async () => {
  const listing = await core.listTarget('testbox', { kind: 'pct', id: '200' });
  const run = runsOf(listing).find((r) => r.path === '/workspace');
  assert.ok(run, 'the story run is listed');
  const log = path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl');
  assert.deepEqual(run.metrics, ['/workspace/logs/train.jsonl']);
  const initial = fs.readFileSync(log, 'utf8').trim().split('\n').length;

  const feed = new RunFeed(toRunRef('testbox', listing.target, run), { executor: () => core.executor('testbox'), intervalMs: () => 15 });
  let changes = 0;
  feed.onDidChange(() => changes++);
  feed.start();
  try {
    await eventually(() => (feed.series().get('loss')?.length ?? 0) === initial, 'the existing log', PATIENCE_MS);
    // Count from a quiet moment: once pollNow's round (or the one it joined) has ended, the next is only a timer,
    // so no command is counted here whose round is counted later (that made this check flaky under load).
    await feed.pollNow();
    const roundsBefore = feed.roundCount;
    const execsBefore = execs;
    const relistsBefore = feed.relistCount;

    // The writer: 600 lines with unique steps, in bursts of up to 20 lines, each burst cut at an arbitrary byte so
    // the feed often sees half a line (the rest follows after a pause).
    const N = 600;
    const firstStep = 1_000_000;
    let text = '';
    for (let i = 0; i < N; i++) text += `${JSON.stringify({ step: firstStep + i, loss: i / 1000, tag: 'live' })}\n`;
    let at = 0;
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    while (at < text.length) {
      const burst = Math.min(text.length, at + 1 + Math.floor(rand() * 20 * 55));
      fs.appendFileSync(log, text.slice(at, burst));
      at = burst;
      await sleep(20 + Math.floor(rand() * 100));
    }
    await eventually(() => (feed.series().get('loss')?.length ?? 0) === initial + N, 'every appended line', PATIENCE_MS);
    // One more poll must not add anything twice (and ends at a quiet moment, for the count below).
    await feed.pollNow();

    const loss = feed.series().get('loss')!;
    const step = feed.series().get('step');
    assert.equal(step, undefined, 'the x key is not a metric');
    assert.equal(loss.length, initial + N, 'each line once');
    const tail = [...loss.x.subarray(initial)];
    assert.deepEqual(tail, Array.from({ length: N }, (_, i) => firstStep + i), 'in order, none missing, none twice');
    assert.deepEqual([...loss.y.subarray(initial)], Array.from({ length: N }, (_, i) => i / 1000));
    assert.equal(feed.badLines, 0, 'half-written lines are never counted as bad');
    assert.equal(loss.segments.length, 1);
    assert.equal(feed.status, 'following');
    assert.ok(changes > 2, `the feed reported changes as they came (${changes})`);
    const rounds = feed.roundCount - roundsBefore;
    // Plus the run folder's listings of the re-discovery (runFeed.ts RELIST_EVERY, STOPPED_ROUNDS): a writer pausing
    // between bursts is not one that stopped, so at most one per 5 polls and one after each real stop.
    const relists = feed.relistCount - relistsBefore;
    assert.ok(relists <= Math.ceil(rounds / 5) + 2, `${relists} listings in ${rounds} polls`);
    assert.equal(execs - execsBefore, rounds + relists, `one remote command per poll (${rounds} polls) and one per listing (${relists})`);

    // A resumed run: it goes on from an earlier step, in the same log.
    fs.appendFileSync(log, `${JSON.stringify({ step: firstStep + 100, loss: 9 })}\n${JSON.stringify({ step: firstStep + 101, loss: 8 })}\n`);
    // The later process wins from its first step on (series.ts): the first 100 live lines stay, the other 500 are replaced.
    await eventually(() => feed.series().get('loss')!.restartCount === 1 && feed.series().get('loss')!.length === initial + 100 + 2, 'the resumed lines', PATIENCE_MS);
    assert.deepEqual(feed.series().get('loss')!.segments.map((s) => s.start), [0, initial + 100], 'a new segment, no line drawn back');
    assert.deepEqual(feed.series().get('loss')!.restarts, [{ step: firstStep + 100, index: initial + 100, replaced: N - 100 }]);

    // A restarted run replaces the log (new file, new inode): read again from its start.
    const fresh = `${JSON.stringify({ step: 1, loss: 5 })}\n${JSON.stringify({ step: 2, loss: 4 })}\n`;
    fs.writeFileSync(`${log}.new`, fresh, { mode: 0o644 });
    fs.renameSync(`${log}.new`, log);
    await eventually(() => feed.series().get('loss')?.length === 2, 'the replaced log', PATIENCE_MS);
    assert.deepEqual([...feed.series().get('loss')!.y], [5, 4]);
  } finally {
    feed.dispose();
  }
});

test('a missing log says so in the status, without stopping the feed', async () => {
  const listing = await core.listTarget('testbox', { kind: 'pct', id: '200' });
  const run = runsOf(listing).find((r) => r.path === '/workspace')!;
  const ref = { ...toRunRef('testbox', listing.target, run), metrics: ['/workspace/logs/gone.jsonl'] };
  const feed = new RunFeed(ref, { executor: () => core.executor('testbox'), intervalMs: () => 15 });
  try {
    assert.equal(await feed.pollNow(), false);
    assert.equal(feed.status, 'missing: /workspace/logs/gone.jsonl');
    const gone = path.join(host.containers.pct200.workspace, 'logs', 'gone.jsonl');
    fs.writeFileSync(gone, '{"step": 1, "loss": 1}\n', { mode: 0o644 });
    assert.equal(await feed.pollNow(), true);
    assert.equal(feed.status, 'following');
  } finally {
    feed.dispose();
  }
});
