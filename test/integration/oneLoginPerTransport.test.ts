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
import type { ConnectionPool, PoolHost } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { closeIdleParseWorkers } from '../../src/core/metrics/formats/parseOffload';
import { BulkLinks } from '../../src/core/metrics/follow/bulkLinks';
import { inspectRemote, listedFilesOf, InspectCache } from '../../src/core/inspect/remoteRead';
import { download, planDownload, pullCheckpoint } from '../../src/core/transfer';
import type { HostConfig, TargetRef } from '../../src/core/types';
import { startTestHost, type TestHost } from '../harness/testHost';
import { silentLogger, testPool } from '../builders/pool';
import { eventually } from '../harness/assertKind';
import { opensshMasters } from '../harness/processes';
import { assertPartStill, stopPullQuarterIn } from '../builders/stoppedPull';

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

/** The test host as a pool host named `name` (a jump list and target as the host directory resolves them). */
function poolHost(name: string): PoolHost {
  const config = host.hostConfig(name);
  return new HostDirectory({ hosts: () => [config], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' }).resolve(config);
}

/** Our `ssh` masters (ControlMaster=yes) still running (harness/processes.ts). */
const masters = opensshMasters;

test("the pool's session rules: shared by two holders, kept while held, ended opensshIdleMs after the last lets go", async () => {
  const p = testPool(host, { connectTimeoutMs: 30_000, opensshIdleMs: 300 });
  try {
    const h = poolHost('rules');
    const logins = host.sshd.acceptedLogins();
    const [a, b] = await Promise.all([p.openSsh(h), p.openSsh(h)]);
    assert.equal(a.session, b.session, 'two holders asking at once get the one session');
    assert.equal(host.sshd.acceptedLogins() - logins, 2, 'one ssh2 login and one OpenSSH login');
    a.dispose();
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(p.openSshState('rules')?.up, true, 'kept while one holder remains');
    b.dispose();
    const until = Date.now() + 10_000;
    while (p.openSshState('rules') && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    assert.equal(p.openSshState('rules'), undefined, 'ended after the idle time');
    const again = await p.openSsh(h);
    assert.notEqual(again.session, a.session, 'the next holder gets a new session');
    again.dispose();
  } finally {
    await p.close();
  }
});

test('a refusal is remembered per host and ssh binary: the second ask fails at once, another binary is tried', async () => {
  const p = testPool(host, { connectTimeoutMs: 30_000, logger: silentLogger });
  try {
    const h = poolHost('refused');
    const bogus = path.join(host.dir, 'no-such-ssh');
    await assert.rejects(p.openSsh(h, { sshPath: bogus }), /no OpenSSH client at/);
    const refusal = p.openSshRefusal(h, bogus);
    assert.ok(refusal, 'remembered');
    const t0 = performance.now();
    await assert.rejects(p.openSsh(h, { sshPath: bogus }), (e) => e === refusal);
    assert.ok(performance.now() - t0 < 100, 'given again without trying');
    const lease = await p.openSsh(h);
    assert.ok(lease.session.lifelinePid, 'the PATH ssh is not refused for it');
    lease.dispose();
  } finally {
    await p.close();
  }
});

test("a host's settings changed: its session ends and the next holder logs in to the new settings; close() leaves no master", async () => {
  const p = testPool(host, { connectTimeoutMs: 30_000 });
  const before = masters();
  const h = poolHost('edited');
  const first = await p.openSsh(h);
  first.dispose();
  assert.equal(masters(), before + 1, 'its master runs');
  // Any change of the resolved host is one (a field that only messages read, so the login itself still works).
  const edited: PoolHost = { ...h, target: { ...h.target, unconfigured: { closest: 'edited' } } };
  const second = await p.openSsh(edited);
  assert.notEqual(second.session, first.session, 'a new session for the new settings');
  second.dispose();
  await p.close();
  assert.equal(masters(), before, 'no master left after close()');
});

test('another ssh program asked for (the sshPath setting changed): the next holder gets a session of that program; the old one ends once let go', async () => {
  const p = testPool(host, { connectTimeoutMs: 30_000 });
  try {
    const h = poolHost('program');
    const wrapper = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rr-ssh-wrapper-')), 'my-ssh');
    const ran = `${wrapper}.ran`;
    fs.writeFileSync(wrapper, `#!/bin/sh\necho "$@" >> '${ran}'\nexec ssh "$@"\n`, { mode: 0o755 });
    const before = masters();
    const first = await p.openSsh(h);
    assert.ok(!fs.existsSync(ran), 'the default ssh ran first');
    const second = await p.openSsh(h, { sshPath: wrapper });
    assert.notEqual(second.session, first.session, 'a session of the program asked for');
    assert.ok(fs.existsSync(ran), 'the program asked for logged in');
    assert.equal(masters(), before + 2, 'the first still runs while held');
    first.dispose();
    await eventually(() => masters() === before + 1, 'the first session ended once let go');
    second.dispose();
  } finally {
    await p.close();
  }
});

test("a pull stopped while ssh writes into its .part ends the host's session (only the master's exit stops its writes), and the next pull logs in again and completes", async () => {
  const { pool: p, stopped: s } = await stopPullQuarterIn(host, {
    folder: 'direct-runs',
    root: local,
    target: TARGET,
    makePool: () => testPool(host, { connectTimeoutMs: 30_000 }),
    options: { client: 'openssh' },
  });
  try {
    assert.match(s.lines.join('\n'), /1 OpenSSH stream per file/, 'control: one stream for the file, written by ssh into the .part');
    assert.equal(p.openSshState('direct'), undefined, "the host's session was ended with the stopped pull");
    await assertPartStill(s);

    const logins = host.sshd.acceptedLogins();
    const again = await download(await planDownload({ pool: p, host: s.host, target: TARGET }, s.checkpoint, s.dest), { client: 'openssh' });
    assert.equal(again.client, 'openssh');
    assert.equal(host.sshd.acceptedLogins() - logins, 1, 'a new OpenSSH login for the next pull');
    assert.deepEqual(fs.readFileSync(s.plan.files[0].localPath), s.data);
  } finally {
    await p.close();
  }
});
