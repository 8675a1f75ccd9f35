/**
 * The built CLI on a Kubernetes cluster: addresses `CLUSTER/[NAMESPACE/]JOB/RANK[:CONTAINER]/RUN/CHECKPOINT`
 * (docs/kubernetes.md) in ls, metrics, inspect and eval, run by the real kubectl on PATH against the test API server
 * (test/builders/kubeCluster.ts: the fixture pods copied from what the Training Operator, JobSet and Kueue create), the
 * runs written in the pods' sandboxes and read through `kubectl exec`; and every failure of item 5 of issue 37 as
 * the CLI says it (kind, exit status 2, kubectl's own words).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startFixtureCluster, type FixtureCluster } from '../builders/kubeCluster';
import { ensureBuiltCli, runBuiltCliAsync } from '../harness/builtCli';
import { writtenAgo } from '../harness/mtimes';
import type { ClusterConfig } from '../../src/core/types';

const HF_TRAINER = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'hf_trainer');

let cluster: FixtureCluster;
let config = '';
let home = '';

async function cli(...args: string[]): ReturnType<typeof runBuiltCliAsync> {
  return runBuiltCliAsync([...args, '--config', config], home);
}

before(async () => {
  ensureBuiltCli();
  cluster = await startFixtureCluster();
  const { api, entry } = cluster;
  home = path.join(api.dir, 'home');
  fs.mkdirSync(home);
  const entries: ClusterConfig[] = [
    entry('prod', 'admin'),
    entry('team', 'admin', { namespace: 'ml-team' }),
    entry('reader', 'reader', { namespace: 'ml-team' }),
    entry('nobody', 'nobody', { namespace: 'ml-team' }),
    entry('stale', 'stale-token', { namespace: 'ml-team' }),
    entry('plugin-fails', 'plugin-fails', { namespace: 'ml-team' }),
    entry('plugin-missing', 'plugin-missing', { namespace: 'ml-team' }),
    entry('closed', 'closed', { namespace: 'ml-team' }),
    entry('no-context', 'not-in-the-kubeconfig', { namespace: 'ml-team' }),
    entry('no-file', 'admin', { namespace: 'ml-team', kubeconfig: path.join(api.dir, 'no-such-kubeconfig') }),
  ];
  config = path.join(api.dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: entries,
      evalProfiles: [
        { name: 'acceptance', where: 'target', command: 'echo eval of step ${step} at ${checkpoint}; echo \'{"acceptance_length": 6.4}\'' },
        { name: 'local-copy', where: 'local', command: 'b=$(basename ${localCheckpoint}); echo "evaluating $b"; ls ${localCheckpoint}' },
      ],
    }),
  );

  // A Hugging Face Trainer run (written by the real transformers: test/fixtures/real/written) in the master's sandbox,
  // beside a run with a JSON-lines metrics log.
  const ws = api.container('ml-team', 'bert-master-0', 'pytorch').workspace;
  fs.cpSync(HF_TRAINER, path.join(ws, 'bert-run'), { recursive: true });
  fs.mkdirSync(path.join(ws, 'seed1', 'logs'), { recursive: true });
  fs.writeFileSync(path.join(ws, 'seed1', 'logs', 'train.jsonl'), '{"step":1,"loss":0.9}\n{"step":2,"loss":0.7}\n{"step":3,"loss":0.4}\n');
  writtenAgo(ws, 3_600_000);
  api.container('ml-team', 'typo-image', 'main'); // a sandbox made, the container never started
});

after(async () => {
  await cluster?.api.stop();
});

describe('remote-runs on a cluster: addresses', () => {
  test('ls CLUSTER: namespaces, jobs and pods by rank with their states, as the tree shows them', async () => {
    const r = await cli('ls', 'prod');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ml-team {2}\d+ jobs · \d+ running$/m);
    assert.match(r.stdout, /^ {2}bert +PyTorchJob · running · 3 pods · \d+ restarts? · queue /m);
    assert.match(r.stdout, /^ {4}master-0 +running · rank 0 {2}bert-master-0: pytorch$/m);
    assert.match(r.stdout, /^ {4}worker-1 +failed \(CrashLoopBackOff\) · rank 2/m);
    assert.match(r.stdout, /^research {2}/m);
    const j = await cli('ls', 'prod', '--json');
    assert.equal(j.code, 0, j.stderr);
    const bert = j.json.jobs.find((x: { name: string }) => x.name === 'bert');
    assert.equal(bert.address, 'prod/ml-team/bert');
    assert.deepEqual(
      bert.pods.map((p: { label: string; containers: { address: string }[] }) => `${p.label} ${p.containers.map((c) => c.address).join(',')}`),
      ['master-0 prod/ml-team/bert/master-0', 'worker-0 prod/ml-team/bert/worker-0', 'worker-1 prod/ml-team/bert/worker-1'],
    );
  });

  test('ls of a job and of a pod; with a namespace in the entry the address leaves it out', async () => {
    const job = await cli('ls', 'team/bert', '--json');
    assert.equal(job.code, 0, job.stderr);
    assert.deepEqual(job.json.job.pods.map((p: { label: string; rank: number; state: string }) => `${p.label}:${p.rank}:${p.state}`), ['master-0:0:running', 'worker-0:1:running', 'worker-1:2:failed']);
    const queued = await cli('ls', 'prod/research');
    assert.equal(queued.code, 0, queued.stderr);
    assert.match(queued.stdout, /No pods: queued \(Suspended\)/);
  });

  test('ls of a container lists its runs through kubectl exec, whether the rank is a label, rankN, the pod name, with or without the container', async () => {
    for (const address of ['prod/ml-team/bert/master-0', 'team/bert/master-0:pytorch', 'team/bert/rank0', 'team/bert/bert-master-0', 'team/pod:ml-team/bert-master-0:pytorch']) {
      const r = await cli('ls', address, '--json');
      assert.equal(r.code, 0, `${address}: ${r.stderr}`);
      assert.deepEqual(r.json.runs.map((x: { name: string }) => x.name).sort(), ['bert-run', 'seed1'], address);
    }
    assert.ok(cluster.api.requests.some((r) => /^GET \/api\/v1\/namespaces\/ml-team\/pods\/bert-master-0\/exec\?.*container=pytorch/.test(r)), 'kubectl exec into bert-master-0');
    const run = await cli('ls', 'team/bert/master-0/bert-run');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^ +30 {2}checkpoint-30 /m);
  });

  test('a part that names nothing is not-found listing what is there; the container of a pod with one is never needed', async () => {
    const rank = await cli('ls', 'team/bert/worker-9');
    assert.equal(rank.code, 2);
    assert.match(rank.stderr, /not-found: No pod "worker-9" in job team\/bert \(pods: master-0 \(bert-master-0, rank 0\), worker-0 \(bert-worker-0, rank 1\), worker-1 \(bert-worker-1, rank 2\)\)/);
    const job = await cli('ls', 'team/bart');
    assert.equal(job.code, 2);
    assert.match(job.stderr, /not-found: No job "bart" in team\/ \(jobs there: .*bert.*\)/);
    const ns = await cli('ls', 'prod/ml-teem', '--json');
    assert.equal(ns.code, 2);
    assert.equal(ns.json.error.kind, 'not-found');
    assert.match(ns.json.error.message, /namespaces with pods or jobs: ml-team, research/);
    const container = await cli('ls', 'team/bert/master-0:trainer');
    assert.equal(container.code, 2);
    assert.match(container.stderr, /not-found: Pod bert-master-0 \(master-0 of team\/bert\) has no container "trainer" \(containers: pytorch\)/);
    const run = await cli('ls', 'team/bert/master-0/no-such-run');
    assert.equal(run.code, 2);
    assert.match(run.stderr, /not-found: No run named "no-such-run" on team\/pod:ml-team\/bert-master-0:pytorch \(runs there: /);
  });

  test('a bad cluster address is bad-address with the forms', async () => {
    const r = await cli('ls', 'team/bert/:pytorch');
    assert.equal(r.code, 2);
    assert.match(r.stderr, /bad-address: Bad address "team\/bert\/:pytorch": the rank part is empty before ":"\. Expected CLUSTER\[\/NAMESPACE/);
    const m = await cli('metrics', 'team/bert');
    assert.equal(m.code, 2);
    assert.match(m.stderr, /bad-address: metrics needs a pod container and a run on team: it names a job; add RANK and the run/);
  });

  test('metrics of a run in a pod, read through kubectl exec', async () => {
    const r = await cli('metrics', 'team/bert/master-0/seed1', '--csv');
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split('\n').slice(1).map((l) => l.split(',').slice(0, 3).join(',')), ['loss,1,0.9', 'loss,2,0.7', 'loss,3,0.4']);
  });

  test('inspect a checkpoint in a pod; the address it prints is one the CLI takes back', async () => {
    const r = await cli('inspect', 'team/bert/rank0/bert-run/latest', '--json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.address, 'team/pod:ml-team/bert-master-0:pytorch/bert-run/checkpoint-30');
    // The safetensors header the real transformers wrote, read in the pod: its parameters counted, the step from trainer_state.json.
    assert.ok(r.json.totals.params > 0 && r.json.totals.tensors > 0, JSON.stringify(r.json.totals));
    assert.equal(r.json.step, 30);
    const again = await cli('inspect', r.json.address, '--json');
    assert.equal(again.code, 0, again.stderr);
    assert.equal(again.json.address, r.json.address);
  });

  test('eval of a checkpoint in a pod: started in the container through kubectl exec, its log followed to its end', async () => {
    const r = await cli('eval', 'acceptance', 'team/bert/master-0/bert-run/latest', '--follow');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /eval of step 30 at \/workspace\/bert-run\/checkpoint-30/);
    assert.match(r.stderr, /of team\/pod:ml-team\/bert-master-0:pytorch\/bert-run\/checkpoint-30/);
  });

  test('pull of a checkpoint in a pod: through kubectl exec, verified by SHA-256 on both sides, the bytes the container holds', async () => {
    const to = path.join(cluster.api.dir, 'dl');
    const r = await cli('pull', 'team/bert/master-0/bert-run/latest', '--to', to);
    assert.equal(r.code, 0, r.stderr);
    const local = r.stdout.trim();
    assert.equal(local, path.join(to, 'bert-run', 'checkpoint-30'));
    assert.match(r.stderr, /verified by SHA-256 on both sides/);
    const remote = path.join(cluster.api.container('ml-team', 'bert-master-0', 'pytorch').workspace, 'bert-run', 'checkpoint-30');
    const names = fs.readdirSync(remote).sort();
    assert.deepEqual(fs.readdirSync(local).sort(), names);
    for (const n of names) {
      if (!fs.statSync(path.join(remote, n)).isFile()) continue;
      assert.ok(fs.readFileSync(path.join(local, n)).equals(fs.readFileSync(path.join(remote, n))), `${n}: the local bytes are the container's`);
    }
    // An eval profile using ${localCheckpoint} gets that copy, checked against the pod through kubectl exec.
    const e = await cli('eval', 'local-copy', 'team/bert/master-0/bert-run/latest', '--to', to, '--follow');
    assert.equal(e.code, 0, e.stderr);
    assert.match(e.stdout, /^evaluating checkpoint-30$/m);
    assert.match(e.stdout, /^trainer_state\.json$/m);
  });
});

/** A failed CLI run: exit status 2, the error's kind, cause and kubectl's words in --json, the same on stderr. */
async function failure(...args: string[]): Promise<{ kind: string; message: string; cause?: string; kubectl?: string; stderr: string }> {
  const r = await cli(...args, '--json');
  assert.equal(r.code, 2, `${args.join(' ')}: exit ${r.code}\n${r.stdout}\n${r.stderr}`);
  assert.ok(r.json?.error, r.stdout);
  assert.match(r.stderr, new RegExp(`^remote-runs: ${r.json.error.kind}: `, 'm'));
  if (r.json.error.kubectl && !r.json.error.message.includes(r.json.error.kubectl)) assert.ok(r.stderr.includes(`remote-runs: kubectl said: ${r.json.error.kubectl}`), r.stderr);
  return { ...r.json.error, stderr: r.stderr };
}

describe('remote-runs on a cluster: every failure of issue 37 item 5, with kubectl\'s own words', () => {
  test('no context, no kubeconfig: kube-config, each its own cause', async () => {
    const context = await failure('ls', 'no-context');
    assert.deepEqual([context.kind, context.cause], ['kube-config', 'context-missing']);
    assert.match(context.message, /no context "not-in-the-kubeconfig"/);
    assert.match(context.kubectl ?? '', /context "not-in-the-kubeconfig" does not exist/);
    const file = await failure('ls', 'no-file/bert/master-0');
    assert.deepEqual([file.kind, file.cause], ['kube-config', 'kubeconfig-missing']);
    assert.match(file.message, /no-such-kubeconfig does not exist/);
  });

  test('a credential plugin that fails, one that is not installed: credential-plugin, the plugin\'s words kept', async () => {
    const fails = await failure('ls', 'plugin-fails');
    assert.deepEqual([fails.kind, fails.cause], ['credential-plugin', 'plugin-failed']);
    assert.match(fails.message, /token expired, run: cloud auth login/);
    const missing = await failure('metrics', 'plugin-missing/bert/master-0/seed1');
    assert.deepEqual([missing.kind, missing.cause], ['credential-plugin', 'plugin-missing']);
    assert.match(missing.message, /is not installed/);
  });

  test('a token the server does not know: auth-failed (401)', async () => {
    const e = await failure('ls', 'stale');
    assert.deepEqual([e.kind, e.cause], ['auth-failed', 'unauthorized']);
    assert.match(e.kubectl ?? e.message, /Unauthorized|provide credentials/);
  });

  test('RBAC: list on pods denied; create on pods/exec denied, each naming the verb and resource', async () => {
    const list = await failure('ls', 'nobody');
    assert.deepEqual([list.kind, list.cause], ['forbidden', 'forbidden']);
    assert.match(list.message, /RBAC denied nobody "list" on pods .*in the namespace ml-team/);
    assert.match(list.kubectl ?? '', /pods is forbidden: User "nobody" cannot list resource "pods"/);
    // The reader may list (the address resolves) but not exec into the pod.
    const exec = await failure('ls', 'reader/bert/master-0');
    assert.equal(exec.kind, 'forbidden');
    assert.match(exec.message, /pods\/exec/);
    assert.match(exec.kubectl ?? exec.message, /cannot (create|get) resource "pods\/exec"/);
  });

  test('a pod or a container that is not there: container-missing, as the API server says it', async () => {
    const pod = await failure('ls', 'team/pod:ml-team/bert-master-9:pytorch');
    assert.deepEqual([pod.kind, pod.cause], ['container-missing', 'pod-not-found']);
    assert.match(pod.kubectl ?? pod.message, /pods "bert-master-9" not found/);
    const container = await failure('ls', 'team/pod:ml-team/bert-master-0:trainer');
    assert.deepEqual([container.kind, container.cause], ['container-missing', 'container-not-found']);
    assert.match(container.kubectl ?? container.message, /container trainer is not valid for pod bert-master-0/);
  });

  test('a pod not running yet: container-stopped, not scheduled and not started each in kubectl\'s words', async () => {
    const unscheduled = await failure('ls', 'team/gpu-hungry/gpu-hungry');
    assert.deepEqual([unscheduled.kind, unscheduled.cause], ['container-stopped', 'pod-not-scheduled']);
    assert.match(unscheduled.kubectl ?? unscheduled.message, /pod gpu-hungry does not have a host assigned/);
    const notStarted = await failure('ls', 'team/typo-image/typo-image');
    assert.deepEqual([notStarted.kind, notStarted.cause], ['container-stopped', 'container-not-running']);
    assert.match(notStarted.kubectl ?? notStarted.message, /container not found \("main"\)/);
  });

  test('an API server that refuses the connection: unreachable', async () => {
    const e = await failure('ls', 'closed/bert/master-0');
    assert.deepEqual([e.kind, e.cause], ['unreachable', 'refused']);
    assert.match(e.kubectl ?? '', /The connection to the server 127\.0\.0\.1:\d+ was refused - did you specify the right host or port\?/);
  });

  test('an exec stream refused (the API server cannot dial the node\'s kubelet): exec-refused, kubectl\'s words kept', async () => {
    cluster.api.kubeletUnreachable('gpu-node-1');
    try {
      const e = await failure('inspect', 'team/bert/master-0/bert-run/latest');
      assert.deepEqual([e.kind, e.cause], ['exec-refused', 'exec-refused']);
      assert.match(e.message, /refused to open an exec stream.*error dialing backend: dial tcp 10\.0\.3\.7:10250: connect: connection refused/);
    } finally {
      cluster.api.kubeletUnreachable('gpu-node-1', false);
    }
  });
});
