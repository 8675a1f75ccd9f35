/**
 * Checkpoint downloads from a pod container, through the real kubectl on PATH against the test API server
 * (test/harness/kubeApi.ts), the checkpoint's files in the container's sandbox `/workspace`: the download of
 * transfer/download.ts with the pod source of transfer/podSource.ts (its commands through PodExecutor, each byte range
 * a `kubectl exec` of its own).
 * - bytes equal, the big file in several ranges streamed side by side, every byte proven by SHA-256 on both sides;
 * - a cancelled download keeps its `.part`, and the next one resumes from it with equal bytes;
 * - `kill -9` of the CLI (`remote-runs pull`) mid-transfer leaves no kubectl on this machine (its lifeline kills
 *   them) and no remote `cat`/`dd` of the checkpoint in the container (the test server's own list of exec processes),
 *   and the next pull resumes with equal bytes.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { downloadCheckpoint, pullCheckpoint } from '../../src/core/transfer';
import { podTransferSource } from '../../src/core/transfer/podSource';
import { RemoteRunsCore } from '../../src/core/service';
import type { Checkpoint, ClusterConfig } from '../../src/core/types';
import { startKubeApi, type KubeApi } from '../harness/kubeApi';
import { requireKubectl } from '../builders/kubeCluster';
import { eventually, rejectsWith } from '../harness/assertKind';
import { writtenAgo } from '../harness/mtimes';
import { CLI, ensureBuiltCli, runBuiltCliAsync } from '../harness/builtCli';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'kube');
const MiB = 1024 * 1024;
const NS = 'ml-team';
const POD = 'bert-master-0';
const CONTAINER = 'pytorch';
const TARGET = `${NS}/${POD}:${CONTAINER}`;

let api: KubeApi;
let kubeconfig = '';
let cluster: ClusterConfig;
let local = '';
let cliHome = '';

/** The CLI's config: the cluster entry the core tests use. */
function cliConfig(): string {
  const file = path.join(local, 'cli-config.json');
  fs.writeFileSync(file, JSON.stringify({ hosts: [cluster] }));
  return file;
}

/** Bytes written to a file (its allocated blocks: ranges are written side by side, so its size runs ahead). */
function allocated(file: string): number {
  try {
    return fs.statSync(file).blocks * 512;
  } catch {
    return 0;
  }
}

const sha = (b: Buffer | string): string => createHash('sha256').update(typeof b === 'string' ? fs.readFileSync(b) : b).digest('hex');

before(async () => {
  requireKubectl();
  api = await startKubeApi();
  api.setPods(JSON.parse(fs.readFileSync(path.join(FIXTURES, 'pytorchjob.json'), 'utf8')).items);
  kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'admin' }] });
  cluster = { kind: 'kubernetes', name: 'prod', context: 'admin', kubeconfig, runRoots: ['/workspace'] };
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-kubepull-'));
  cliHome = path.join(local, 'home');
  fs.mkdirSync(cliHome);
  ensureBuiltCli();
});

after(async () => {
  await api?.stop();
  if (local) fs.rmSync(local, { recursive: true, force: true });
});

/** A step folder in the container's sandbox holding `files`; the checkpoint as the listing would give it. */
function writeCheckpoint(run: string, files: Record<string, Buffer>): { checkpoint: Checkpoint; onDisk: string } {
  const onDisk = path.join(api.container(NS, POD, CONTAINER).workspace, run, 'checkpoints', 'step_100');
  fs.mkdirSync(onDisk, { recursive: true });
  for (const [name, data] of Object.entries(files)) fs.writeFileSync(path.join(onDisk, name), data);
  // Saved a minute ago, as a finished run leaves it.
  writtenAgo(onDisk);
  const remote = `/workspace/${run}/checkpoints/step_100`;
  const checkpoint: Checkpoint = { name: 'step_100', kind: 'step', step: 100, layout: 'step_N', path: remote, isDir: true, bytes: 0, mtime: 0, files: [], newest: true };
  return { checkpoint, onDisk };
}

function source() {
  return podTransferSource(cluster.name, { cluster }, TARGET);
}

/** The exec processes the server runs that read `file` (a range's `dd`/`cat`, its hash). */
function remoteReadersOf(file: string) {
  return api.running().filter((p) => p.argv.join(' ').includes(file));
}

/** kubectl processes on this machine started with this test's kubeconfig (their parent may be gone: all of /proc). */
function ourKubectls(): number[] {
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (path.basename(argv[0]) === 'kubectl' && argv.some((a) => a.includes(kubeconfig))) pids.push(Number(d));
    } catch {
      // gone while we looked
    }
  }
  return pids;
}

describe('a checkpoint in a pod container', () => {
  test('downloaded through kubectl exec: bytes equal, the big file in ranges side by side, SHA-256 on both sides', async () => {
    const data = { 'model.safetensors': randomBytes(24 * MiB), 'optimizer.pt': randomBytes(3 * MiB + 17), 'config.json': Buffer.from('{"hidden_size": 8}\n') };
    const { checkpoint, onDisk } = writeCheckpoint('run-equal', data);
    // The most range readers of the big file the server ran at once, polled while the download runs.
    let most = 0;
    const poll = setInterval(() => (most = Math.max(most, remoteReadersOf(path.posix.join(checkpoint.path, 'model.safetensors')).length)), 20);
    const { plan, result } = await downloadCheckpoint(source(), checkpoint, { root: local, run: 'run-equal' }, { segmentBytes: 2 * MiB, streamsPerFile: 4 }).finally(() => clearInterval(poll));
    assert.equal(result.client, 'kubectl');
    assert.equal(result.transport, 'exec');
    assert.ok(result.lanes >= 2, `several streams: ${result.lanes} lanes`);
    assert.ok(most >= 2, `the server ran ${most} range reads of the big file at once`);
    for (const [name, bytes] of Object.entries(data)) {
      const got = path.join(plan.localRoot, name);
      assert.equal(sha(got), sha(bytes), `${name}: bytes equal`);
      assert.ok(fs.readFileSync(path.join(onDisk, name)).equals(fs.readFileSync(got)));
      const outcome = result.files.find((f) => f.relative === name);
      assert.equal(outcome?.verified, 'sha256', `${name} verified`);
      assert.equal(outcome?.outcome, 'downloaded');
    }
    // The big file came in ranges, each with the remote side's SHA-256 of what it sent (rangeArgv's hash).
    const bigReads = api.ended().filter((p) => p.argv.join(' ').includes('model.safetensors') && /sha256sum|shasum|openssl/.test(p.argv.join(' ')));
    assert.ok(bigReads.length >= 4, `the big file's ranges were hashed on the remote side as they streamed (${bigReads.length} commands)`);
    assert.deepEqual(fs.readdirSync(plan.localRoot).sort(), Object.keys(data).sort(), 'nothing but the files in the checkpoint folder');
    // Asked again: already there by its records, nothing fetched.
    const again = await pullCheckpoint(source(), checkpoint, { root: local, run: 'run-equal' });
    assert.ok(again.alreadyThere, again.summary);
    assert.equal(again.result.bytesFetched, 0);
  });

  test('a file replaced in the container after its download is found changed and fetched again (--force), bytes equal', async () => {
    const { checkpoint, onDisk } = writeCheckpoint('run-recheck', { 'weights.bin': randomBytes(MiB) });
    const first = await pullCheckpoint(source(), checkpoint, { root: local, run: 'run-recheck' });
    assert.match(first.summary, /by kubectl exec, verified by SHA-256 on both sides/);
    // The same size, other bytes, an mtime moved: a new version of the remote file.
    const other = randomBytes(MiB);
    fs.writeFileSync(path.join(onDisk, 'weights.bin'), other);
    writtenAgo(onDisk);
    const second = await pullCheckpoint(source(), checkpoint, { root: local, run: 'run-recheck' }, { force: true });
    assert.equal(sha(path.join(second.plan.localRoot, 'weights.bin')), sha(other));
  });

  test('cancelled mid-transfer: the .part stays, and the next download resumes from it with equal bytes', async () => {
    const big = randomBytes(96 * MiB);
    const { checkpoint } = writeCheckpoint('run-cancel', { 'model.bin': big });
    const ac = new AbortController();
    let seen = 0;
    await rejectsWith(
      downloadCheckpoint(source(), checkpoint, { root: local, run: 'run-cancel' }, {
        signal: ac.signal,
        onProgress: (p) => {
          seen = p.bytesDone;
          if (p.phase === 'transfer' && p.bytesDone >= 8 * MiB) ac.abort();
        },
      }),
      'cancelled',
    );
    assert.ok(seen > 0 && seen < big.length, `cancelled mid-transfer (${seen} bytes here)`);
    await eventually(() => ourKubectls().length === 0, 'no kubectl left after the cancel');
    await eventually(() => remoteReadersOf('run-cancel').length === 0, 'no remote read left after the cancel');
    const { plan, result } = await downloadCheckpoint(source(), checkpoint, { root: local, run: 'run-cancel' });
    const file = result.files[0];
    assert.equal(file.outcome, 'resumed');
    assert.ok(file.resumedBytes > 0, `resumed ${file.resumedBytes} bytes`);
    assert.ok(result.bytesFetched < big.length, `fetched ${result.bytesFetched} of ${big.length}`);
    assert.equal(file.verified, 'sha256');
    assert.equal(sha(path.join(plan.localRoot, 'model.bin')), sha(big));
  });

  test('kill -9 of the CLI mid-pull (remote-runs pull CLUSTER/pod:…): no kubectl and no remote read left within seconds, and the next pull resumes with equal bytes', () => killMidPull('run-kill'));
});

describe('a kubelet that stops reading the output of a dead exec (its copy blocks; the process is never killed)', () => {
  // The other reading of the runtime (test/harness/kubeApi.ts onDisconnect): the range read's writes block once the
  // pipe is full instead of failing, so only its lifeline (kube/lifeline.ts: kubectl's stdin) can end it.
  const saved: { api?: KubeApi; kubeconfig?: string; cluster?: ClusterConfig } = {};
  before(async () => {
    Object.assign(saved, { api, kubeconfig, cluster });
    api = await startKubeApi({ onDisconnect: 'stop-reading' });
    api.setPods(JSON.parse(fs.readFileSync(path.join(FIXTURES, 'pytorchjob.json'), 'utf8')).items);
    kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'admin' }] });
    cluster = { kind: 'kubernetes', name: 'prod', context: 'admin', kubeconfig, runRoots: ['/workspace'] };
  });
  after(async () => {
    await api?.stop();
    ({ api, kubeconfig, cluster } = saved as { api: KubeApi; kubeconfig: string; cluster: ClusterConfig });
  });

  test('kill -9 of the CLI mid-pull: no kubectl and no blocked remote read left within seconds, and the next pull resumes with equal bytes', () => killMidPull('run-kill-blocked'));
});

describe('what a pod gives back instead of bytes', () => {
  test('a checkpoint of 100 small files comes in batches (few kubectl execs, not one per file), bytes equal', async () => {
    const files: Record<string, Buffer> = {};
    for (let i = 0; i < 100; i++) files[`shard_${String(i).padStart(3, '0')}.bin`] = randomBytes(1000 + i);
    const { checkpoint } = writeCheckpoint('run-small', files);
    const before = api.ended().length;
    const { plan, result } = await downloadCheckpoint(source(), checkpoint, { root: local, run: 'run-small' });
    const execs = api.ended().length - before;
    assert.ok(execs < 20, `${execs} exec processes for 100 files`);
    for (const [name, data] of Object.entries(files)) assert.equal(sha(path.join(plan.localRoot, name)), sha(data), name);
    assert.ok(result.files.every((f) => f.verified === 'sha256'));
  });

  test('a pod that does not exist: container-missing naming it, with kubectl\'s words; nothing lands', async () => {
    const { checkpoint } = writeCheckpoint('run-gone', { 'a.bin': randomBytes(1000) });
    const src = podTransferSource(cluster.name, { cluster }, `${NS}/bert-master-9:${CONTAINER}`);
    const e = await rejectsWith(downloadCheckpoint(src, checkpoint, { root: local, run: 'run-gone' }), 'container-missing');
    assert.match(e.message, /bert-master-9/);
    assert.ok(!fs.existsSync(path.join(local, 'run-gone')), 'no checkpoint folder made');
  });

  test('an image without sh: command-failed saying so, not an empty checkpoint', async () => {
    const ws = api.container(NS, 'bert-worker-0', CONTAINER);
    fs.mkdirSync(path.join(ws.workspace, 'r', 'checkpoints', 'step_100'), { recursive: true });
    ws.withoutShell();
    const checkpoint: Checkpoint = { name: 'step_100', kind: 'step', step: 100, layout: 'step_N', path: '/workspace/r/checkpoints/step_100', isDir: true, bytes: 0, mtime: 0, files: [], newest: true };
    const e = await rejectsWith(downloadCheckpoint(podTransferSource(cluster.name, { cluster }, `${NS}/bert-worker-0:${CONTAINER}`), checkpoint, { root: local, run: 'run-noshell' }), 'command-failed');
    assert.match(e.message, /has no sh/);
  });
});

describe('through the core the faces use', () => {
  test('core.podTransferSource is the pod source for a cluster and undefined for a host; a non-pod target of a cluster is bad-address', async () => {
    const core = new RemoteRunsCore({ hosts: () => [], executorFor: () => assert.fail('a cluster is never reached over SSH'), clusters: () => [cluster] });
    const src = core.podTransferSource('prod', { kind: 'pod', id: TARGET });
    assert.equal(src?.kind, 'pod');
    assert.equal(core.podTransferSource('not-a-cluster', { kind: 'host', id: '' }), undefined);
    assert.throws(() => core.podTransferSource('prod', { kind: 'docker', id: 'trainer' }), /pod containers/);
    const { checkpoint } = writeCheckpoint('run-core', { 'a.bin': randomBytes(MiB + 5) });
    const out = await pullCheckpoint(src!, checkpoint, { root: local, run: 'run-core' });
    assert.equal(sha(path.join(out.plan.localRoot, 'a.bin')), sha(path.join(api.container(NS, POD, CONTAINER).workspace, 'run-core', 'checkpoints', 'step_100', 'a.bin')));
  });
});

/**
 * `kill -9` of the CLI (`remote-runs pull CLUSTER/pod:…`) mid-transfer, then the next pull: no kubectl and no remote
 * read left within seconds, nothing that looks complete, and the next pull resumes with equal bytes.
 */
async function killMidPull(run: string): Promise<void> {
  const big = randomBytes(160 * MiB);
  writeCheckpoint(run, { 'model.bin': big });
  const to = fs.mkdtempSync(path.join(local, 'cli-'));
  const part = path.join(to, '.remote-runs', 'partial', run, 'step_100', 'model.bin.part');
  const address = `${cluster.name}/pod:${TARGET}/${run}/step_100`;
  const child = spawn(process.execPath, [CLI, 'pull', address, '--to', to, '--config', cliConfig()], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: cliHome } });
  let output = '';
  child.stdout.on('data', (b: Buffer) => (output += b));
  child.stderr.on('data', (b: Buffer) => (output += b));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ended = false;
  void exited.then(() => (ended = true));
  // Killed once a good part has arrived (so there is something to resume) and well before the end.
  await eventually(() => ended || allocated(part) >= 40 * MiB, 'the pull wrote 40 MiB of the .part', 60_000);
  assert.ok(!ended, `the pull ended by itself before the kill: ${output}`);
  assert.ok(ourKubectls().length > 0, 'kubectl streams were running at the kill');
  const inFlight = remoteReadersOf(run).map((p) => p.pid);
  assert.ok(inFlight.length > 0, 'range reads were running in the container at the kill');
  child.kill('SIGKILL');
  await exited;
  const at = allocated(part);
  assert.ok(at < big.length, `killed mid-transfer, at ${at} of ${big.length} bytes`);
  const t0 = Date.now();
  await eventually(() => ourKubectls().length === 0, 'no kubectl of the killed pull left on this machine', 5000);
  await eventually(() => remoteReadersOf(run).length === 0, `no remote read of the checkpoint left in the container: ${JSON.stringify(remoteReadersOf(run).map((p) => p.argv))}`, 5000);
  // Stopped, not run to their end: kubectl was killed under them (a read that finished its range exits 0; one may
  // have been finishing as the kill came, so not every one need be cut off, but the kill cut them short).
  const ends = api.ended().filter((p) => inFlight.includes(p.pid));
  assert.equal(ends.length, inFlight.length, 'every range read of the kill has ended');
  assert.ok(ends.filter((p) => p.code !== 0).length >= Math.max(1, ends.length - 1), `the reads in flight were cut off, not finished: ${JSON.stringify(ends.map((p) => ({ code: p.code, signal: p.signal })))}`);
  assert.ok(Date.now() - t0 < 5000, `gone within ${Date.now() - t0} ms`);
  assert.ok(!fs.existsSync(path.join(to, run, 'step_100', 'model.bin')), 'no file that looks complete');
  const last = await runBuiltCliAsync(['pull', address, '--to', to, '--config', cliConfig()], cliHome);
  assert.equal(last.code, 0, last.stderr);
  assert.equal(last.stdout.trim(), path.join(to, run, 'step_100'));
  assert.match(last.stderr, /resumed .*verified by SHA-256 on both sides/);
  assert.equal(sha(path.join(to, run, 'step_100', 'model.bin')), sha(big));
  assert.ok(!fs.existsSync(part), 'no partial state left once complete');
}
