/**
 * The logs of a job (kube/logs.ts) through the built CLI, `remote-runs logs CLUSTER/JOB --follow`, run by the real
 * kubectl on PATH against the test API server (its `pods/log` follows the CRI log files the test writes, as the
 * kubelet does): lines written into the pods while they are followed come out in the order they were written, each
 * with its rank; a container that restarts and a pod replaced by one of another name keep their rank's place.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startFixtureCluster, type FixtureCluster } from '../builders/kubeCluster';
import { CLI, ensureBuiltCli, runBuiltCliAsync } from '../harness/builtCli';

let cluster: FixtureCluster;
let config = '';

before(async () => {
  ensureBuiltCli();
  cluster = await startFixtureCluster();
  config = path.join(cluster.api.dir, 'config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [cluster.entry('team', 'admin', { namespace: 'ml-team' })] }));
});

after(async () => {
  await cluster?.api.stop();
});

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Shown {
  rank: string;
  pod: string;
  container: string;
  time: string;
  text: string;
}

test('a job\'s logs followed: merged in the order written with rank prefixes; a restarted container and a replaced pod keep their rank', { timeout: 90_000 }, async () => {
  const { api } = cluster;
  const master = api.container('ml-team', 'bert-master-0', 'pytorch');
  const worker = api.container('ml-team', 'bert-worker-0', 'pytorch');
  master.log('master up\n');
  await pause(5);
  worker.log('worker up\n');

  const child = spawn(process.execPath, [CLI, 'logs', 'team/bert', '--follow', '--json', '--config', config], { env: { PATH: process.env.PATH, HOME: api.dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  const shown: Shown[] = [];
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => {
    out += b.toString();
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const l of lines) shown.push(JSON.parse(l));
  });
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  const until = async (what: string, ok: () => boolean, ms = 20_000): Promise<void> => {
    for (const end = Date.now() + ms; Date.now() < end; await pause(50)) if (ok()) return;
    assert.fail(`${what}: shown ${JSON.stringify(shown.map((s) => `[${s.rank}] ${s.text}`))}; stderr ${err}`);
  };
  const has = (text: string): boolean => shown.some((s) => s.text === text);
  try {
    await until('the lines already there', () => has('master up') && has('worker up'));
    assert.deepEqual(shown.map((s) => `[${s.rank}] ${s.text}`), ['[master-0] master up', '[worker-0] worker up']);

    // Written alternately into two pods while followed: shown in the order written, whichever stream delivers first.
    const written: string[] = [];
    for (let i = 0; i < 6; i++) {
      master.log(`master step ${i}\n`);
      written.push(`[master-0] master step ${i}`);
      await pause(15);
      worker.log(`worker step ${i}\n`);
      written.push(`[worker-0] worker step ${i}`);
      await pause(15);
    }
    await until('the steps', () => has('worker step 5'));
    assert.deepEqual(shown.slice(2).map((s) => `[${s.rank}] ${s.text}`), written);
    const times = shown.map((s) => Date.parse(s.time));
    assert.deepEqual(times, [...times].sort((a, b) => a - b), 'in time order');
    // worker-1 crash-loops: its logs cannot be read now, which is said in kubectl's words, never silently.
    assert.match(err, /\[worker-1\] .*waiting to start: CrashLoopBackOff/);

    // worker-0's container restarts: its follow ends with the old instance, and its new instance is followed in its place.
    worker.restart();
    await pause(20);
    worker.log('worker after restart\n');
    await until('the restarted container', () => has('worker after restart'));
    assert.equal(shown.find((s) => s.text === 'worker after restart')?.rank, 'worker-0');
    assert.match(err, /\[worker-0\] bert-worker-0 restarted \(\d+ restarts?\)/);

    // master-0 is replaced by a pod of another name (as a JobSet's would be): its lines keep the master-0 place.
    const old = api.pod('ml-team', 'bert-master-0')!;
    api.deletePod('ml-team', 'bert-master-0');
    const replacement = JSON.parse(JSON.stringify(old));
    replacement.metadata.name = 'bert-master-0-b';
    replacement.metadata.uid = '00000000-0000-4000-8000-00000000b0b0';
    api.updatePod(replacement);
    api.container('ml-team', 'bert-master-0-b', 'pytorch').log('master replaced\n');
    await until('the replacement pod', () => has('master replaced'));
    const replaced = shown.find((s) => s.text === 'master replaced')!;
    assert.deepEqual([replaced.rank, replaced.pod], ['master-0', 'bert-master-0-b']);
    assert.match(err, /\[master-0\] bert-master-0 was replaced by bert-master-0-b/);
    master.log('never shown: its pod is gone\n');

    // Nothing was shown twice across the restarts and the replacement.
    const texts = shown.map((s) => s.text);
    assert.deepEqual(texts, [...new Set(texts)]);
    api.deletePod('ml-team', 'bert-master-0-b');
    api.updatePod(old);
  } finally {
    child.kill('SIGINT');
  }
  assert.equal(await exited, 0, err);
  // Ctrl-C ended every kubectl the follow started (each in its own process group, kube/kubectl.ts).
  assert.deepEqual(kubectlsOf(cluster.kubeconfig), [], 'no kubectl left running');
});

/** kubectl processes still running with this kubeconfig (unique to this suite's server). */
function kubectlsOf(kubeconfig: string): string[] {
  const r = spawnSync('pgrep', ['-a', '-f', `--kubeconfig=${kubeconfig}`], { encoding: 'utf8' });
  return r.stdout.split('\n').filter((l) => l && !l.includes('pgrep'));
}

test('RBAC that lets a user list pods but not read their logs: forbidden, naming get on pods/log, and the command ends', async () => {
  const { api } = cluster;
  api.addIdentity({ name: 'lister', token: 'lister-token', rules: [{ verbs: ['get', 'list', 'watch'], resources: ['pods'] }] });
  const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'lister', user: { token: 'lister-token' } }] });
  const cfg = path.join(api.dir, 'config-lister.json');
  fs.writeFileSync(cfg, JSON.stringify({ hosts: [{ kind: 'kubernetes', name: 'lister', context: 'lister', namespace: 'ml-team', kubeconfig }] }));
  // Asynchronously: the API server answers from this process.
  const r = await runBuiltCliAsync(['logs', 'lister/bert', '--follow', '--json', '--config', cfg], api.dir);
  assert.equal(r.code, 2, `${r.stdout}\n${r.stderr}`);
  const e = JSON.parse(r.stdout.trim().split('\n').pop()!).error;
  assert.equal(e.kind, 'forbidden', JSON.stringify(e));
  assert.match(`${e.message} ${e.kubectl ?? ''}`, /pods\/log/);
  assert.match(e.kubectl ?? e.message, /cannot get resource "pods\/log"/);
  assert.deepEqual(kubectlsOf(kubeconfig), [], 'no kubectl left running');
});

test('without --follow: what the pods hold now, merged, and the command ends', async () => {
  const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [CLI, 'logs', 'team/bert/worker-0', '--config', config], { env: { PATH: process.env.PATH, HOME: cluster.api.dir }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.ok(lines.length > 0 && lines.every((l) => l.startsWith('[worker-0] ')), r.stdout);
  assert.ok(lines.includes('[worker-0] worker after restart'), r.stdout);
});

test('--all-containers: every container of the rank, each line named by its container; without it, the job\'s own (pytorch)', async () => {
  const { api } = cluster;
  const before = api.pod('ml-team', 'bert-worker-0')!;
  const pod = JSON.parse(JSON.stringify(before));
  pod.spec.containers.push({ name: 'sidecar', image: 'busybox' });
  pod.status.containerStatuses.push({ name: 'sidecar', ready: true, restartCount: 0, state: { running: { startedAt: new Date().toISOString() } } });
  api.updatePod(pod);
  try {
    api.container('ml-team', 'bert-worker-0', 'pytorch').log('trainer line\n');
    await pause(5);
    api.container('ml-team', 'bert-worker-0', 'sidecar').log('sidecar line\n');
    const all = await runBuiltCliAsync(['logs', 'team/bert/worker-0', '--all-containers', '--config', config], api.dir);
    assert.equal(all.code, 0, all.stderr);
    const tail = all.stdout.trim().split('\n').slice(-2);
    assert.deepEqual(tail, ['[worker-0:pytorch] trainer line', '[worker-0:sidecar] sidecar line'], all.stderr);
    const own = await runBuiltCliAsync(['logs', 'team/bert/worker-0', '--config', config], api.dir);
    assert.equal(own.code, 0, own.stderr);
    assert.ok(own.stdout.includes('[worker-0] trainer line\n') && !own.stdout.includes('sidecar line'), own.stdout);
  } finally {
    api.updatePod(before);
  }
});
