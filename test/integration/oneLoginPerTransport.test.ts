/**
 * Issue 36 item 1: the pool owns every link to a host. What a window does to one host (list its runs, follow a run's
 * metrics, inspect a checkpoint, pull it, open the metrics again) goes through one pool, and the real sshd's log says
 * how many logins that took, by client: at most one over ssh2 (the pool's connection: listings, tail reads, inspect,
 * the pull's control commands) and at most one over OpenSSH (the host's session: the metrics stream and the pull's
 * byte streams share it). Before the pool owned the session, the pull started one of its own beside the metrics
 * session: two OpenSSH logins.
 *
 * The run is a Hugging Face Trainer's output (test/fixtures/real/written/hf_trainer, written by transformers: see its
 * MANIFEST) with a JSONL metrics log long enough to be read as a stream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { closeIdleParseWorkers } from '../../src/core/metrics/formats/parseOffload';
import { BulkLinks } from '../../src/core/metrics/follow/bulkLinks';
import { inspectRemote, listedFilesOf, InspectCache } from '../../src/core/inspect/remoteRead';
import { pullCheckpoint } from '../../src/core/transfer';
import type { HostConfig, TargetRef } from '../../src/core/types';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'hf_trainer');
const LINES = 60_000;
const TARGET: TargetRef = { kind: 'host', id: '' };

let host: TestHost;
let pool: ConnectionPool;
let links: BulkLinks;
let core: RemoteRunsCore;
let local: string;
const log: string[] = [];

before(async () => {
  // DEBUG1: sshd names each client's software, so logins can be told apart by transport.
  host = await startTestHost({ logLevel: 'DEBUG1' });
  const root = path.join(host.dir, 'window-runs');
  const run = path.join(root, 'hf');
  fs.mkdirSync(root, { recursive: true });
  fs.cpSync(FIXTURE, run, { recursive: true });
  fs.mkdirSync(path.join(run, 'logs'));
  let text = '';
  for (let s = 0; s < LINES; s++) text += `{"step":${s},"loss":${(1 / (s + 1)).toFixed(6)},"time":${1.7e9 + s}}\n`;
  fs.writeFileSync(path.join(run, 'logs', 'train.jsonl'), text);
  execFileSync('chmod', ['-R', 'a+rX', root]);
  const hosts: HostConfig[] = [host.hostConfig('window', { targets: ['host'], runRoots: [root] })];
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  const logger = { info: (m: string) => log.push(m), warn: (m: string) => log.push(m), error: (m: string) => log.push(m) };
  pool = testPool(host, { connectTimeoutMs: 30_000, logger });
  // The extension's wiring (extension.ts): the metrics streams ask the pool for the host's session.
  links = new BulkLinks(pool, { logger });
  core = new RemoteRunsCore({
    hosts: () => hosts,
    executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }),
    streamFor: (h, target) => links.runner(dir.resolve(h), target),
  });
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-window-'));
});

after(async () => {
  await links?.dispose();
  closeIdleParseWorkers();
  await pool?.close();
  await host?.stop();
  if (local) fs.rmSync(local, { recursive: true, force: true });
});

/** Open the run's metrics as the chart does, read the backlog, and say how many bytes came as a stream. */
async function openMetrics(runPath: string, metrics: string[]): Promise<{ points: number; streamed: number }> {
  let streamed = 0;
  const feed = new RunFeed(
    { hostName: 'window', target: TARGET, runPath, runName: 'hf', metrics, checkpoints: [] },
    {
      executor: () => core.executor('window'),
      stream: (target: TargetRef) => {
        const r = core.stream('window', target);
        return r && Object.assign((argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => r(argv, (c) => ((streamed += c.length), sink(c)), signal), { ready: r.ready, prepare: r.prepare });
      },
      streamAbove: 256 * 1024,
      intervalMs: () => 1e9,
      log: (m) => log.push(m),
    },
  );
  try {
    await feed.pollNow();
    assert.equal(feed.status, 'following', log.join('\n'));
    return { points: feed.series().get('loss')?.length ?? 0, streamed };
  } finally {
    feed.dispose();
  }
}

test('a window that lists a host, follows its metrics, inspects and pulls a checkpoint, then opens the metrics again logs in once per transport', async () => {
  const before = host.sshd.acceptedLogins();
  // Expand the host: its runs listed.
  const { run } = await core.resolveRun('window', TARGET, ['hf'], 'none');
  const checkpoint = run.checkpoints.find((c) => c.name === 'checkpoint-30');
  assert.ok(checkpoint, `checkpoint-30 listed: ${run.checkpoints.map((c) => c.name).join(', ')}`);
  assert.equal(run.metrics.length, 1, `the metrics log found: ${run.metrics.join(', ')}`);
  // The tree expanding a target starts the metrics login beside it (core.prepareMetrics), as the extension does.
  core.prepareMetrics('window', TARGET);

  // Open the metrics: the backlog comes as an OpenSSH stream (control: the stream was used at all).
  const first = await openMetrics(run.path, run.metrics);
  assert.equal(first.points, LINES);
  assert.ok(first.streamed > 0, `the backlog came as a stream; log: ${log.join(' | ')}`);

  // Inspect the checkpoint: over the pool's connection.
  const inspected = await inspectRemote(core.executor('window'), TARGET, listedFilesOf(checkpoint), { cache: new InspectCache(), host: 'window' });
  assert.ok(inspected.commands >= 1, 'the inspection read the checkpoint');

  // Pull it: its bytes through OpenSSH (control: not the ssh2 fallback).
  const h = new HostDirectory({ hosts: () => [core.host('window')], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' }).resolve(core.host('window'));
  const pulled = await pullCheckpoint({ pool, host: h, target: TARGET }, checkpoint, { root: local, run: 'hf' }, { logger: { info: (m) => log.push(m), warn: (m) => log.push(m), error: (m) => log.push(m) } });
  assert.equal(pulled.result.client, 'openssh', `${pulled.summary}; log: ${log.join(' | ')}`);
  for (const f of fs.readdirSync(path.join(FIXTURE, 'checkpoint-30'))) {
    assert.deepEqual(fs.readFileSync(path.join(local, 'hf', 'checkpoint-30', f)), fs.readFileSync(path.join(FIXTURE, 'checkpoint-30', f)), f);
  }

  // The metrics again, after the pull: the same session still serves them.
  const again = await openMetrics(run.path, run.metrics);
  assert.equal(again.points, LINES);
  assert.ok(again.streamed > 0, 'the second open streamed too');

  const byClient = host.sshd.acceptedLoginsByClient();
  assert.equal(host.sshd.acceptedLogins() - before, 2, `two logins in all: ${JSON.stringify(byClient)}`);
  assert.deepEqual(byClient, { ssh2js: 1, OpenSSH: 1 }, 'one login per transport');
});
