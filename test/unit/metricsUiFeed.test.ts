/**
 * RunFeed over the real tail script run by the local `sh` (the same command line the pool would send, without
 * ssh): a backlog larger than one read arrives whole in one pollNow (also on a feed whose timer never started),
 * several logs of a run are merged with colliding keys kept apart, and FeedRegistry shares and stops feeds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Executor } from '../../src/core/remote';
import { FeedRegistry, RunFeed } from '../../src/core/metrics/follow/runFeed';
import type { RunRefWire } from '../../src/shared/metricsProtocol';
import { LocalExecutor } from '../../src/core/eval/localExecutor';

/** Runs command lines with the local sh, as sshd would run them with the login shell. */
/** Commands run by a local sh: the product's own LocalExecutor (the eval runner's). */
const localSh: Executor = new LocalExecutor();

function tmpRun(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'rr-feed-'));
}

const refOf = (dir: string, metrics: string[]): RunRefWire => ({
  hostName: 'local', target: { kind: 'host', id: '' }, runPath: dir, runName: path.basename(dir), metrics, checkpoints: [],
});

test('a backlog of many reads comes in one pollNow, even before the timer starts; then only new lines', async () => {
  const dir = tmpRun();
  try {
    const log = path.join(dir, 'train.jsonl');
    const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ step: i, loss: 1 / (i + 1) }));
    fs.writeFileSync(log, `${lines.join('\n')}\n`);
    const feed = new RunFeed(refOf(dir, [log]), { executor: () => localSh, intervalMs: () => 1e9, maxBytesPerRead: 4096 });
    assert.equal(await feed.pollNow(), true);
    assert.equal(feed.series().get('loss')!.length, 2000, 'every line, over ~10 reads of 4 KiB');
    assert.equal(feed.latestStep(), 1999);
    assert.equal(feed.status, 'following');
    assert.equal(await feed.pollNow(), false, 'nothing new');
    fs.appendFileSync(log, '{"step": 2000, "loss": 0.1}\n{"step": 2001, "lo');
    assert.equal(await feed.pollNow(), true);
    assert.equal(feed.series().get('loss')!.length, 2001, 'the half-written line waits');
    assert.equal(feed.badLines, 0);
    feed.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('several logs: merged, a key in two files keeps the first name and gets the file name in the other; skipped lines named per file', async () => {
  const dir = tmpRun();
  try {
    const train = path.join(dir, 'train.jsonl');
    const evalLog = path.join(dir, 'eval.csv');
    fs.writeFileSync(train, '{"step": 1, "loss": 2}\nnot json\n');
    fs.writeFileSync(evalLog, 'step,loss,acc\n1,3,0.5\n');
    const feed = new RunFeed(refOf(dir, [train, evalLog, path.join(dir, 'notes.txt')]), { executor: () => localSh, intervalMs: () => 1e9 });
    await feed.pollNow();
    // The first by path keeps the name (docs/runs-and-logs.md), whatever order the logs were found in.
    assert.deepEqual([...feed.series().keys()], ['loss', 'acc', 'train.jsonl:loss']);
    assert.equal(feed.series().get('loss')!.yAt(0), 3, "eval.csv's");
    assert.match(feed.skipped!, /^train\.jsonl: Skipped 1 bad line \(first at line 2/);
    feed.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a run without metrics logs says so', () => {
  const feed = new RunFeed(refOf('/nowhere', []), { executor: () => localSh, intervalMs: () => 1e9 });
  assert.equal(feed.status, 'no metrics logs found in this run');
});

test('FeedRegistry: one feed per run shared by its users, disposed with the last', () => {
  const created: RunFeed[] = [];
  const registry = new FeedRegistry((ref) => {
    const f = new RunFeed(ref, { executor: () => localSh, intervalMs: () => 1e9 });
    created.push(f);
    return f;
  });
  const ref = refOf('/nowhere', []);
  const a = registry.acquire('k', ref);
  const b = registry.acquire('k', ref);
  assert.equal(a.feed, b.feed);
  a.release();
  a.release();
  const c = registry.acquire('k', ref);
  assert.equal(c.feed, a.feed, 'still held by b');
  b.release();
  c.release();
  const d = registry.acquire('k', ref);
  assert.notEqual(d.feed, a.feed, 'a new feed after the last release');
  assert.equal(created.length, 2);
  registry.dispose();
});

test("x: the feed says which column is x, and the user's pick re-reads the logs with another one", async () => {
  const dir = tmpRun();
  try {
    const log = path.join(dir, 'history.csv');
    fs.writeFileSync(log, 'epoch,lr,loss\n0,0.1,2\n1,0.05,1\n');
    const feed = new RunFeed(refOf(dir, [log]), { executor: () => localSh, intervalMs: () => 1e9 });
    await feed.pollNow();
    assert.equal(feed.xAxis, 'epoch');
    assert.deepEqual([...feed.series().keys()], ['lr', 'loss']);
    assert.deepEqual(feed.xChoices(), ['epoch', 'lr', 'loss']);
    let changes = 0;
    feed.onDidChange(() => changes++);
    const before = feed.revision;
    feed.setXPick('lr');
    assert.ok(changes > 0 && feed.revision > before, 'a pick is a change the views hear of');
    await feed.pollNow();
    assert.equal(feed.xPick, 'lr');
    assert.equal(feed.xAxis, 'lr');
    assert.deepEqual([...feed.series().get('loss')!.x], [0.1, 0.05]);
    assert.deepEqual([...feed.series().keys()], ['epoch', 'loss']);
    feed.setXPick('tokens');
    await feed.pollNow();
    assert.equal(feed.xAxis, 'line number (no "tokens" in this log)');
    feed.setXPick(undefined);
    await feed.pollNow();
    assert.equal(feed.xAxis, 'epoch');
    feed.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a log that holds no numbers at all is said to be no metrics log', async () => {
  const dir = tmpRun();
  try {
    const log = path.join(dir, 'training.log');
    fs.writeFileSync(log, 'starting training\nepoch one done\n');
    const feed = new RunFeed(refOf(dir, [log]), { executor: () => localSh, intervalMs: () => 1e9 });
    await feed.pollNow();
    assert.match(feed.skipped ?? '', /^training\.log: no numeric values in 1 line: not a metrics log$/);
    feed.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a checkpoint-only Hugging Face run follows the newest checkpoint; the old data stays until the new file parsed', async () => {
  const dir = tmpRun();
  try {
    const state = (steps: number[]) => JSON.stringify({ log_history: steps.map((step) => ({ step, loss: 1 / step })) });
    const ck = (n: number) => path.join(dir, `checkpoint-${n}`, 'trainer_state.json');
    fs.mkdirSync(path.dirname(ck(5)));
    fs.writeFileSync(ck(5), state([1, 5]));
    const feed = new RunFeed(refOf(dir, [ck(5)]), { executor: () => localSh, intervalMs: () => 1e9 });
    await feed.pollNow();
    assert.equal(feed.series().get('loss')!.length, 2);
    // checkpoint-10 appears (half-written first: not JSON yet), then checkpoint-5 is rotated away.
    fs.mkdirSync(path.dirname(ck(10)));
    fs.writeFileSync(ck(10), '{"log_history": [');
    await feed.pollNow();
    assert.deepEqual(feed.paths, [ck(5)], 'a newer file that does not parse yet does not replace the one that does');
    assert.equal(feed.series().get('loss')!.length, 2);
    fs.writeFileSync(ck(10), state([1, 5, 10]));
    fs.rmSync(path.dirname(ck(5)), { recursive: true });
    assert.equal(await feed.pollNow(), true);
    assert.deepEqual(feed.paths, [ck(10)]);
    assert.equal(feed.series().get('loss')!.length, 3);
    assert.equal(feed.status, 'following');
    feed.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

const WRITTEN = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'metrics');

test('a resumed run: the new event file a re-listing finds is added to the feed, and the curve continues', async () => {
  const dir = tmpRun();
  try {
    const src = path.join(WRITTEN, 'torch_tb', 'resumed');
    const files = fs.readdirSync(src).filter((f) => f.startsWith('events.')).sort();
    assert.equal(files.length, 2);
    fs.copyFileSync(path.join(src, files[0]), path.join(dir, files[0]));
    const registry = new FeedRegistry((ref) => new RunFeed(ref, { executor: () => localSh, intervalMs: () => 1e9 }));
    const { feed, release } = registry.acquire('k', refOf(dir, [path.join(dir, files[0])]));
    await feed.pollNow();
    assert.equal(feed.series().get('train/loss')!.length, 50);
    fs.copyFileSync(path.join(src, files[1]), path.join(dir, files[1]));
    registry.refresh((key) => (key === 'k' ? refOf(dir, files.map((f) => path.join(dir, f))) : undefined));
    await feed.pollNow();
    const s = feed.series().get('train/loss')!;
    assert.equal(s.length, 100);
    assert.equal(s.segments.length, 1, 'a resume is one curve');
    assert.deepEqual([s.x[0], s.x[99]], [0, 99]);
    release();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('11 event files of a restarted run: all followed, older files polled less often, nothing lost over many rounds', async () => {
  const src = path.join(WRITTEN, 'restarted', 'run');
  const files = fs.readdirSync(src).filter((f) => f.startsWith('events.')).map((f) => path.join(src, f));
  let commands = 0;
  const counting: Executor = { exec: (line, opts) => (commands++, localSh.exec(line, opts)) };
  const feed = new RunFeed(refOf(src, files), { executor: () => counting, intervalMs: () => 1e9 });
  await feed.pollNow();
  const first = commands;
  assert.equal(first, 11, 'the first round reads every file');
  // 11 writers of 30 steps, each resumed 10 steps back: the later wins where steps repeat (series.ts).
  assert.equal(feed.series().get('loss')!.length, 230);
  assert.equal(feed.series().get('loss')!.segments.length, 11);
  assert.equal(feed.series().get('loss')!.replaced, 100);
  // Said for the panel's status line: where, and how many points the later processes replaced.
  assert.equal(feed.resumed, '10 restarts (resumed at step 20: 10 earlier points replaced; …; resumed at step 200: 10 earlier points replaced), 100 earlier points replaced in all (loss)');
  for (let i = 0; i < 20; i++) await feed.pollNow();
  assert.ok(commands - first < 20 * 11, `settled files are not read every round (${commands - first} reads in 20 rounds)`);
  assert.equal(feed.series().get('loss')!.length, 230);
  feed.dispose();
});

test("an MLflow run: keys logged later and nested below the listing's depth are found by the feed", async () => {
  const dir = tmpRun();
  try {
    const metrics = path.join(dir, 'metrics');
    fs.mkdirSync(path.join(metrics, 'eval', 'per_class'), { recursive: true });
    fs.writeFileSync(path.join(metrics, 'loss'), '1750000000000 0.5 0\n1750000001000 0.25 1\n');
    fs.writeFileSync(path.join(metrics, 'eval', 'per_class', 'cat'), '1750000000000 0.9 1\n');
    const feed = new RunFeed(refOf(dir, [path.join(metrics, 'loss')]), { executor: () => localSh, intervalMs: () => 1e9 });
    await feed.pollNow();
    assert.deepEqual([...feed.series().keys()].sort(), ['eval/per_class/cat', 'loss']);
    fs.writeFileSync(path.join(metrics, 'lr'), '1750000002000 0.001 2\n');
    assert.equal(await feed.pollNow(), true);
    assert.deepEqual([...feed.series().get('lr')!.x], [2]);
    assert.equal(feed.status, 'following');
    assert.equal(feed.xAxis, 'step');
    feed.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
