/**
 * A long JSONL backlog parsed in a worker thread (src/core/metrics/formats/parseOffload.ts), over the real sshd: the same
 * series as parsing every read on this thread; the thread kept warm once the backlog is read (the next backlog runs on
 * it, and it exits after its idle wait), ended at once when the feed is disposed in the middle of a backlog or its
 * connection dies; a worker that dies (killed: its thread exits; or crashes: an uncaught error) fails
 * the round with an error that says so, keeps what was read, and the next poll reads the rest again, every line
 * exactly once. Reads are made small (64 KiB) so a 2 MB log is a long backlog.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { busyParseWorkers, closeIdleParseWorkers, liveParseWorkers, noParseWorkers, parseWorkersStarted, parsingParseWorkers, PARSE_WORKER_IDLE_MS, setParseWorkerIdleMs } from '../../src/core/metrics/formats/parseOffload';
import type { RunRefWire } from '../../src/shared/metricsProtocol';
import type { Series } from '../../src/core/metrics';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let ref: RunRefWire;
let scripts: string;
/** Lines with a loss value (every line but the bad ones). */
let lossPoints = 0;
const LINES = 20_000;
const READ = 64 * 1024;

before(async () => {
  host = await startTestHost();
  const runDir = path.join(host.dir, 'worker-runs', 'long');
  fs.mkdirSync(path.join(runDir, 'logs'), { recursive: true });
  const log = path.join(runDir, 'logs', 'train.jsonl');
  // Flat lines (the worker's fast path), with a line for the general path (a string value) and a bad one now and then.
  let text = '';
  for (let s = 0; s < LINES; s++) {
    if (s % 997 === 5) text += `{"step":${s},"loss":${(1 / (s + 1)).toFixed(6)},"phase":"train"}\n`;
    else if (s % 1999 === 7) {
      text += `not json at ${s}\n`;
      continue;
    }
    else text += `{"step":${s},"loss":${(1 / (s + 1)).toFixed(6)},"lr":${(3e-4 * (1 - s / LINES)).toExponential(4)},"time":${1.7e9 + s}}\n`;
    lossPoints++;
  }
  fs.writeFileSync(log, text);
  execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, 'worker-runs')]);
  const hosts = [host.hostConfig('testbox', { targets: ['host'], runRoots: [path.dirname(runDir)] })];
  pool = testPool(host, { connectTimeoutMs: 30_000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) });
  ref = { hostName: 'testbox', target: { kind: 'host', id: '' }, runPath: runDir, runName: 'long', metrics: [log], checkpoints: [] };
  scripts = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-parse-worker-'));
});

after(async () => {
  delete process.env.REMOTE_RUNS_METRICS_WORKER;
  closeIdleParseWorkers();
  pool?.dispose();
  await host?.stop();
  if (scripts) fs.rmSync(scripts, { recursive: true, force: true });
});

const feedOf = (workerAbove: number) => new RunFeed(ref, { executor: () => core.executor('testbox'), intervalMs: () => 1e9, maxBytesPerRead: READ, workerAbove });

/** Every point of every series, and the skipped-line figures: what two reads of the same log must agree on. */
function seen(feed: RunFeed): string {
  const dump = (s: Series) => ({ x: [...s.x], y: [...s.y], t: s.time ? [...s.time] : null, segments: s.segments });
  return JSON.stringify({ series: [...feed.series()].map(([k, s]) => [k, dump(s)]), bad: feed.badLines, skipped: feed.skipped ?? null });
}

/**
 * Resolves once no parse thread runs, or fails after a generous wait (CI may be a loaded 2-core machine). Idle threads
 * count: a test that means "ended at once" first makes the idle wait longer than this one.
 */
async function workersGone(): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${liveParseWorkers()} parse workers still running`)), 60_000)));
  try {
    await Promise.race([noParseWorkers(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A worker script that is the real parse worker (the sources, through tsx) and then dies at its `dieAt`-th read:
 * `exit` ends its thread (as a kill would), `throw` crashes it with an uncaught error.
 */
function dyingWorker(how: 'exit' | 'throw', dieAt: number): string {
  const file = path.join(scripts, `dying-${how}-${dieAt}.js`);
  const tsx = createRequire(__filename).resolve('tsx/cjs/api');
  const source = path.join(__dirname, '..', '..', 'src', 'core', 'metrics', 'formats', 'parseWorker.ts');
  fs.writeFileSync(
    file,
    `require(${JSON.stringify(tsx)}).register();
require(${JSON.stringify(source)});
const { parentPort } = require('node:worker_threads');
let reads = 0;
parentPort.on('message', (m) => {
  if (m.type !== 'chunk' || ++reads !== ${dieAt}) return;
  ${how === 'exit' ? 'process.exit(7);' : "throw new Error('a parser bug, for the test');"}
});
`,
  );
  return file;
}

test('a long backlog parsed in a worker gives the same series as parsing every read here; the thread is kept warm for the next backlog, then exits', async () => {
  delete process.env.REMOTE_RUNS_METRICS_WORKER;
  closeIdleParseWorkers();
  await workersGone();
  setParseWorkerIdleMs(PARSE_WORKER_IDLE_MS);
  const here = feedOf(Infinity);
  await here.pollNow();
  assert.equal(here.status, 'following');
  const viaWorker = feedOf(4 * READ);
  let sawWorker = false;
  const sub = viaWorker.onDidChange(() => (sawWorker ||= busyParseWorkers() > 0));
  const startedBefore = parseWorkersStarted();
  await viaWorker.pollNow();
  sub.dispose();
  assert.equal(viaWorker.status, 'following');
  assert.ok(sawWorker, 'a worker parsed the backlog');
  assert.equal(viaWorker.series().get('loss')?.length, lossPoints);
  assert.equal(seen(viaWorker), seen(here));
  assert.equal(parseWorkersStarted(), startedBefore + 1, 'one thread was started');
  // Read to the end: the thread waits idle, holding nothing of the backlog, for the next one.
  assert.equal(busyParseWorkers(), 0);
  assert.equal(liveParseWorkers(), 1, 'the thread is kept warm');
  const again = feedOf(4 * READ);
  await again.pollNow();
  assert.equal(again.status, 'following');
  assert.equal(seen(again), seen(here), 'a warm thread starts each backlog afresh');
  assert.equal(parseWorkersStarted(), startedBefore + 1, 'the second backlog ran on the warm thread');
  // The idle wait ends it.
  setParseWorkerIdleMs(50);
  await workersGone();
  setParseWorkerIdleMs(PARSE_WORKER_IDLE_MS);
  here.dispose();
  viaWorker.dispose();
  again.dispose();
});

test('two backlogs read at once run on two threads, and only one is kept warm after', async () => {
  delete process.env.REMOTE_RUNS_METRICS_WORKER;
  closeIdleParseWorkers();
  await workersGone();
  setParseWorkerIdleMs(10 * 60_000);
  const here = feedOf(Infinity);
  await here.pollNow();
  const feeds = [feedOf(4 * READ), feedOf(4 * READ)];
  let mostBusy = 0;
  const subs = feeds.map((f) => f.onDidChange(() => (mostBusy = Math.max(mostBusy, busyParseWorkers()))));
  const startedBefore = parseWorkersStarted();
  await Promise.all(feeds.map((f) => f.pollNow()));
  for (const s of subs) s.dispose();
  for (const f of feeds) assert.equal(seen(f), seen(here));
  // The two overlap (each is ~30 round trips of 64 KiB); should one end before the other's worker starts, the second
  // runs on the first's warm thread instead. Either way one thread per backlog at a time.
  const started = parseWorkersStarted() - startedBefore;
  assert.ok(started === 1 || started === 2, `${started} threads started`);
  assert.equal(mostBusy, started, 'the backlogs read at the same time ran on threads of their own');
  // The second thread given back is ended (it exits a moment later); one waits idle.
  const deadline = Date.now() + 60_000;
  while (liveParseWorkers() > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(liveParseWorkers(), 1);
  assert.equal(busyParseWorkers(), 0);
  closeIdleParseWorkers();
  await workersGone();
  setParseWorkerIdleMs(PARSE_WORKER_IDLE_MS);
  here.dispose();
  for (const f of feeds) f.dispose();
});

test('a feed disposed while its worker parses ends the thread at once (it is not kept warm)', async () => {
  delete process.env.REMOTE_RUNS_METRICS_WORKER;
  closeIdleParseWorkers();
  await workersGone();
  // Longer than workersGone waits: were the thread kept idle, the wait below would fail.
  setParseWorkerIdleMs(10 * 60_000);
  const feed = feedOf(4 * READ);
  let disposedWithWorker = false;
  // Disposed while the thread holds reads it has not parsed back (a thread with a backlog but nothing outstanding at
  // that moment is clean, and is rightly given back to wait idle).
  const sub = feed.onDidChange(() => {
    if (parsingParseWorkers() > 0 && !disposedWithWorker) {
      disposedWithWorker = true;
      feed.dispose();
    }
  });
  await feed.pollNow().catch(() => undefined);
  sub.dispose();
  assert.ok(disposedWithWorker, 'the feed was disposed while a worker ran');
  await workersGone();
  setParseWorkerIdleMs(PARSE_WORKER_IDLE_MS);
});

for (const how of ['exit', 'throw'] as const) {
  test(`a worker that dies (${how === 'exit' ? 'its thread killed' : 'an uncaught error'}) fails the round with a clear error; the next poll reads the rest, every line once`, async () => {
    delete process.env.REMOTE_RUNS_METRICS_WORKER;
    closeIdleParseWorkers();
    const here = feedOf(Infinity);
    await here.pollNow();
    process.env.REMOTE_RUNS_METRICS_WORKER = dyingWorker(how, 3);
    const feed = feedOf(4 * READ);
    await feed.pollNow();
    delete process.env.REMOTE_RUNS_METRICS_WORKER;
    assert.match(feed.status, how === 'exit' ? /The metrics parser thread stopped \(exit code 7\)/ : /The metrics parser thread failed: a parser bug, for the test/);
    assert.match(feed.status, /read again from byte \d+ at the next poll/);
    const kept = feed.series().get('loss')?.length ?? 0;
    assert.ok(kept > 0 && kept < LINES - 20, `what was read before the worker died is kept (${kept} points)`);
    await workersGone();
    await feed.pollNow();
    assert.equal(feed.status, 'following');
    assert.equal(seen(feed), seen(here));
    here.dispose();
    feed.dispose();
  });
}

test('the connection dying while a worker parses stops the worker; after the reconnect every line once', async () => {
  delete process.env.REMOTE_RUNS_METRICS_WORKER;
  const here = feedOf(Infinity);
  await here.pollNow();
  const feed = feedOf(4 * READ);
  let killed = 0;
  const sub = feed.onDidChange(() => {
    if (killed === 0 && busyParseWorkers() > 0) killed = host.sshd.killConnections();
  });
  await feed.pollNow();
  sub.dispose();
  assert.ok(killed > 0, 'the connection was killed while a worker ran');
  // Either the kill cut reads still in flight (the round fails, saying so, and the next polls read the rest), or on a
  // quiet machine every read had already arrived and only the worker's parse was left (the round ends well). Both end
  // with the worker gone and every line exactly once; which one happened is a race of the test, not of the feed.
  const lost = feed.status !== 'following';
  if (lost) assert.ok(feed.status.length > 0, 'the round says why it stopped');
  assert.equal(busyParseWorkers(), 0, 'no thread is left running the backlog');
  closeIdleParseWorkers();
  await workersGone();
  for (let i = 0; i < 5 && feed.status !== 'following'; i++) await feed.pollNow();
  assert.equal(feed.status, 'following');
  assert.equal(seen(feed), seen(here));
  here.dispose();
  feed.dispose();
});
