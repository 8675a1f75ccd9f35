/**
 * Pods grouped into jobs and ranks, with their states, over Pod objects as the Training Operator, JobSet/Trainer v2,
 * Kueue and the Job controller create them (test/fixtures/kube/, make_fixtures.py cites each source), and over
 * answers no API server gives (hostile names, missing and ill-typed fields).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { listItems, parseNamespaceList, parsePodList } from '../../src/core/kube/pods';
import { groupWorkloads, ownerObjects, podState, type Workload } from '../../src/core/kube/workloads';
import { RemoteRunsError } from '../../src/core/types';

const DIR = path.join(__dirname, '..', 'fixtures', 'kube');
const read = (f: string): string => fs.readFileSync(path.join(DIR, f), 'utf8');

function jobs(podsFile: string, ownersFile?: string): Workload[] {
  const { pods, problems } = parsePodList(read(podsFile));
  assert.deepEqual(problems, [], podsFile);
  return groupWorkloads(pods, ownersFile ? ownerObjects(listItems(read(ownersFile), 'owners')) : []);
}

test('a PyTorchJob: one job by training.kubeflow.org/job-name, master first, ranks from the env, restarts summed', () => {
  const [job, ...rest] = jobs('pytorchjob.json', 'pytorchjob-owner.json');
  assert.equal(rest.length, 0);
  assert.equal(job.name, 'bert');
  assert.equal(job.kind, 'PyTorchJob');
  assert.equal(job.grouping, 'training-operator');
  assert.equal(job.queue, 'team-queue');
  assert.deepEqual(job.pods.map((p) => [p.label, p.replicaType, p.index, p.rank]), [
    ['master-0', 'master', 0, 0],
    ['worker-0', 'worker', 0, 1],
    ['worker-1', 'worker', 1, 2],
  ]);
  assert.deepEqual(job.pods.map((p) => [p.state, p.restarts]), [['running', 0], ['running', 1], ['failed', 3]]);
  const crashing = job.pods[2];
  assert.equal(crashing.reason, 'CrashLoopBackOff');
  assert.equal(crashing.restarting, true);
  assert.equal(crashing.message, 'pytorch: Error (exit code 1); restarted 3 times');
  // The job runs while a worker crash-loops, and says which.
  assert.equal(job.state, 'running');
  assert.equal(job.message, 'worker-1 is failed (CrashLoopBackOff)');
  assert.equal(job.restarts, 4);
  assert.deepEqual(job.counts, { running: 2, failed: 1 });
});

test('a TrainJob as its JobSet: grouped by jobset-name ahead of the batch job-name its pods also carry; ranks are replicated job, job index, completion index', () => {
  const all = jobs('jobset-trainjob.json', 'jobset-trainjob-owners.json');
  assert.equal(all.length, 1, 'the child Job is part of the JobSet, not a job of its own');
  const [job] = all;
  assert.equal(job.name, 'llama');
  assert.equal(job.kind, 'TrainJob');
  assert.equal(job.grouping, 'jobset');
  assert.deepEqual(job.pods.map((p) => [p.label, p.state, p.reason]), [
    ['initializer-0-0', 'succeeded', undefined],
    ['trainer-node-0-0', 'running', undefined],
    ['trainer-node-0-1', 'creating', 'ContainerCreating'],
  ]);
  // PET_NODE_RANK comes from a fieldRef, not a literal: no rank is made up.
  assert.equal(job.pods[1].rank, undefined);
  assert.equal(job.state, 'running');
});

test('without its owner objects, the JobSet is still one job', () => {
  const [job] = jobs('jobset-trainjob.json');
  assert.equal(job.kind, 'JobSet');
  assert.equal(job.pods.length, 3);
});

test('Kueue: a pod behind the admission gate and suspended Job/JobSet (no pods yet) are queued, naming the queue', () => {
  const all = jobs('kueue-queued.json', 'kueue-queued-owners.json');
  assert.deepEqual(all.map((j) => [j.name, j.kind, j.state, j.reason, j.message, j.queue, j.pods.length]), [
    ['big-run', 'JobSet', 'queued', 'Suspended', 'waiting for Kueue to admit it (queue research-queue)', 'research-queue', 0],
    ['notebook-eval', 'Pod', 'queued', 'SchedulingGated', 'notebook-eval: waiting for Kueue to admit it (queue research-queue)', 'research-queue', 1],
    ['sweep-7', 'Job', 'queued', 'Suspended', 'waiting for Kueue to admit it (queue research-queue)', 'research-queue', 0],
  ]);
});

test('Pending: unschedulable with the scheduler\'s own message; an image that does not pull; an init container running', () => {
  const byName = new Map(jobs('pending.json').map((j) => [j.name, j]));
  const unsched = byName.get('gpu-hungry')!;
  assert.equal(unsched.state, 'queued');
  assert.equal(unsched.reason, 'Unschedulable');
  assert.match(unsched.message ?? '', /^gpu-hungry: 0\/3 nodes are available: .*2 Insufficient nvidia\.com\/gpu/);
  const pull = byName.get('typo-image')!.pods[0];
  assert.equal(pull.state, 'creating');
  assert.equal(pull.reason, 'ImagePullBackOff');
  assert.match(pull.message ?? '', /^main: Back-off pulling image "ghcr\.io\/example\/bert-trian:1\.4"/);
  const init = byName.get('with-init')!.pods[0];
  assert.deepEqual([init.state, init.reason, init.message], ['creating', 'Init:0/1', 'init container fetch-data running']);
});

test('an Indexed Job (batch.kubernetes.io/job-name): ranks by completion index; succeeded, failed with exit code, evicted with the kubelet\'s words; other controllers and bare pods apart', () => {
  const all = jobs('job-indexed.json');
  assert.deepEqual(all.map((j) => [j.name, j.grouping, j.kind]), [
    ['debug-shell', 'pod', 'Pod'],
    ['eval-shards', 'job', 'Job'],
    ['lost-node', 'pod', 'Pod'],
    ['tensorboard', 'owner', 'StatefulSet'],
  ]);
  const job = all[1];
  assert.deepEqual(job.pods.map((p) => [p.label, p.index, p.state, p.reason]), [
    ['0', 0, 'succeeded', undefined],
    ['1', 1, 'failed', 'Error'],
    ['2', 2, 'evicted', 'Evicted'],
  ]);
  assert.equal(job.pods[1].message, 'eval: Error (exit code 1)');
  assert.match(job.pods[2].message ?? '', /^The node was low on resource: ephemeral-storage/);
  assert.equal(job.state, 'failed');
  assert.equal(job.message, '1: eval: Error (exit code 1)');
  assert.equal(all[2].state, 'unknown');
  assert.match(all[2].message ?? '', /is unresponsive/);
});

test('a job\'s own terminal condition wins over what its pods say', () => {
  const { pods } = parsePodList(read('job-indexed.json'));
  const owners = ownerObjects([{ kind: 'Job', metadata: { namespace: 'ml-team', name: 'eval-shards', labels: {} }, spec: {}, status: { conditions: [{ type: 'Failed', status: 'True', reason: 'BackoffLimitExceeded', message: 'Job has reached the specified backoff limit' }] } }]);
  const job = groupWorkloads(pods, owners).find((j) => j.name === 'eval-shards')!;
  assert.deepEqual([job.state, job.reason, job.message], ['failed', 'BackoffLimitExceeded', 'Job has reached the specified backoff limit']);
});

test('every state is reachable, each from a real-shaped pod', () => {
  const states = new Set<string>();
  for (const f of ['pytorchjob.json', 'jobset-trainjob.json', 'kueue-queued.json', 'pending.json', 'job-indexed.json']) {
    for (const p of parsePodList(read(f)).pods) states.add(podState(p).state);
  }
  assert.deepEqual([...states].sort(), ['creating', 'evicted', 'failed', 'queued', 'running', 'succeeded', 'unknown']);
});

test('hostile and broken answers: invalid names are reported and left out, ill-typed fields are not trusted, nothing throws', () => {
  const { pods, problems } = parsePodList(read('hostile.json'));
  assert.deepEqual(pods.map((p) => p.name), ['fine', 'odd-types']);
  assert.equal(problems.length, 9);
  assert.match(problems[0], /^item 1: not a pod name: "\$\(touch \/tmp\/pwned\)"; left out$/);
  assert.match(problems[1], /^item 2: not a pod name: "a\/b"/);
  assert.match(problems[2], /^item 3: not a namespace name: "Bad_NS"/);
  assert.match(problems[3], /^item 4: pod ok\/no-containers has no valid container names \(none\)/);
  assert.match(problems[4], /^item 5: pod ok\/bad-container has no valid container names \("c:d"\)/);
  assert.match(problems[5], /^item 6: not a pod name: "x{57}\.\.\."/);
  assert.match(problems[6], /^item 7: not a pod name: missing/);
  assert.match(problems[7], /^item 8: not a namespace name: missing/);
  const odd = pods[1];
  assert.equal(odd.phase, 'Unknown');
  assert.deepEqual(odd.schedulingGates, []);
  assert.deepEqual(odd.conditions, []);
  assert.deepEqual({ ...odd.containers[0].env }, { PET_NODE_RANK: 'x' }, 'RANK: 3 (a number) is not an env value');
  const [job] = groupWorkloads([odd]);
  // A number is not a label value; the legacy job-name groups it; "-1" is no completion index.
  assert.deepEqual([job.grouping, job.name, job.pods[0].label, job.pods[0].rank], ['job', 'j', 'odd-types', undefined]);
});

test('answers that are not a List are protocol errors naming what came', () => {
  assert.throws(() => parsePodList('<html>'), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol' && /not JSON/.test(e.message));
  assert.throws(() => parsePodList('{"kind":"Status","status":"Failure"}'), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol' && /without an items list \(kind "Status"\)/.test(e.message));
});

test('namespaces: names kept in order, a non-name reported', () => {
  const r = parseNamespaceList(JSON.stringify({ kind: 'NamespaceList', items: [{ metadata: { name: 'default' }, status: { phase: 'Active' } }, { metadata: { name: 'kube-system' } }, { metadata: { name: '../etc' } }] }));
  assert.deepEqual(r.namespaces, [{ name: 'default', phase: 'Active' }, { name: 'kube-system' }]);
  assert.deepEqual(r.problems, ['item 2: no valid namespace name ("../etc"); left out']);
});

test('a huge list: 20,000 pods of 200 jobs group in one pass', () => {
  const items = [];
  for (let i = 0; i < 20_000; i++) {
    const job = `job-${i % 200}`;
    items.push({ metadata: { namespace: 'big', name: `${job}-worker-${Math.floor(i / 200)}`, labels: { 'training.kubeflow.org/job-name': job, 'training.kubeflow.org/replica-type': 'worker', 'training.kubeflow.org/replica-index': String(Math.floor(i / 200)) } }, spec: { containers: [{ name: 'pytorch' }], nodeName: 'n' }, status: { phase: 'Running' } });
  }
  const { pods, problems } = parsePodList(JSON.stringify({ kind: 'List', items }));
  assert.equal(problems.length, 0);
  const all = groupWorkloads(pods);
  assert.equal(all.length, 200);
  assert.ok(all.every((j) => j.pods.length === 100 && j.pods[99].index === 99 && j.state === 'running'));
});

test('a PyTorchJob suspended by Kueue (spec.runPolicy.suspend) and a suspended TrainJob are queued jobs without pods', () => {
  const owners = ownerObjects([
    { apiVersion: 'kubeflow.org/v1', kind: 'PyTorchJob', metadata: { namespace: 'ml', name: 'gpt', labels: { 'kueue.x-k8s.io/queue-name': 'a100' } }, spec: { runPolicy: { suspend: true } } },
    { apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob', metadata: { namespace: 'ml', name: 'llm', labels: {} }, spec: { suspend: true } },
    { kind: 'Job', metadata: { namespace: 'ml' } },
    'junk',
  ]);
  assert.equal(owners.length, 2, 'items without a name are left out');
  assert.deepEqual(groupWorkloads([], owners).map((j) => [j.name, j.kind, j.grouping, j.state, j.message, j.queue ?? null]), [
    ['gpt', 'PyTorchJob', 'training-operator', 'queued', 'waiting for Kueue to admit it (queue a100)', 'a100'],
    ['llm', 'TrainJob', 'jobset', 'queued', 'TrainJob llm is suspended (spec.suspend: true)', null],
  ]);
});
