/**
 * CLI addresses on a Kubernetes cluster (address.ts parseClusterAddress) and what they name in a cluster's jobs
 * (kube/podAddress.ts), against the fixture pods of test/fixtures/kube/ (copied from what the Training Operator,
 * JobSet and a Kubernetes Job create) grouped as the tree groups them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseClusterAddress } from '../../src/core/address';
import { clusterPlaceAddress, resolveClusterAddress, type ClusterPlace } from '../../src/core/kube/podAddress';
import { parsePodList, type PodInfo } from '../../src/core/kube/pods';
import { groupWorkloads } from '../../src/core/kube/workloads';
import { RemoteRunsError } from '../../src/core/types';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'kube');
const pods = ['pytorchjob.json', 'pending.json', 'jobset-trainjob.json', 'job-indexed.json'].flatMap((f) => parsePodList(fs.readFileSync(path.join(FIXTURES, f), 'utf8')).pods);
const team = { name: 'team', namespace: 'ml-team' };
const prod = { name: 'prod' };

function place(cluster: { name: string; namespace?: string }, address: string, list: PodInfo[] = pods): ClusterPlace {
  return resolveClusterAddress(cluster, groupWorkloads(list), parseClusterAddress(address, cluster.namespace !== undefined));
}

function container(p: ClusterPlace): string {
  assert.equal(p.level, 'container', JSON.stringify(p.level));
  return `${(p as Extract<ClusterPlace, { level: 'container' }>).target.id} ${JSON.stringify((p as Extract<ClusterPlace, { level: 'container' }>).segments)}`;
}

function fails(f: () => unknown, kind: string, text: RegExp): void {
  assert.throws(f, (e: unknown) => e instanceof RemoteRunsError && e.kind === kind && text.test(e.message), String(text));
}

test('the parts: namespace only when the entry names none, the container after ":", the run parts kept as typed names', () => {
  assert.deepEqual(parseClusterAddress('prod/ml-team/bert/worker-0:pytorch/run-7/latest', false), { host: 'prod', namespace: 'ml-team', job: 'bert', rank: 'worker-0', container: 'pytorch', segments: ['run-7', 'latest'] });
  assert.deepEqual(parseClusterAddress('team/bert/rank1/bad\\xff/', true), { host: 'team', job: 'bert', rank: 'rank1', segments: ['bad\udcff'] });
  assert.deepEqual(parseClusterAddress('team', true), { host: 'team' });
  assert.deepEqual(parseClusterAddress('team/pod:ml-team/bert-worker-0:pytorch/r/c', true), { host: 'team', target: { kind: 'pod', id: 'ml-team/bert-worker-0:pytorch' }, segments: ['r', 'c'] });
  for (const [bad, why] of [
    ['team/bert/:pytorch', /rank part is empty before ":"/],
    ['team/bert/master-0:', /container after ":" is empty/],
    ['team//master-0', /the job part is empty/],
    ['team/pod:ml-team', /pod:NAMESPACE\/POD:CONTAINER/],
    ['team/pod:ml-team/Bad_Pod:x', /not a Kubernetes pod name/],
    ['team/bert/master-0/..', /is not a run or checkpoint name/],
  ] as const) {
    fails(() => parseClusterAddress(bad, true), 'bad-address', why);
  }
});

test('a rank by its label, its global rank, or its pod\'s name; the one container taken without naming it', () => {
  assert.equal(container(place(team, 'team/bert/worker-1/run')), 'ml-team/bert-worker-1:pytorch ["run"]');
  assert.equal(container(place(team, 'team/bert/rank2')), 'ml-team/bert-worker-1:pytorch []');
  assert.equal(container(place(team, 'team/bert/bert-worker-1:pytorch')), 'ml-team/bert-worker-1:pytorch []');
  assert.equal(container(place(prod, 'prod/ml-team/llama/trainer-node-0-1')), 'ml-team/llama-trainer-node-0-1-x7k2p:trainer []');
  // An indexed Job's pods are ranked by their completion index.
  assert.equal(container(place(team, 'team/eval-shards/2')), 'ml-team/eval-shards-2-q9w8e:eval []');
});

test('above a container: the cluster, a namespace, a job; a pod of several containers without a default', () => {
  assert.equal(place(prod, 'prod').level, 'cluster');
  const ns = place(prod, 'prod/ml-team');
  assert.ok(ns.level === 'namespace' && ns.workloads.every((w) => w.namespace === 'ml-team') && ns.workloads.length > 0);
  const job = place(team, 'team/bert');
  assert.ok(job.level === 'job' && job.job.kind === 'PyTorchJob');
  // Two containers, neither the default: ls shows the pod; a run part after it is ambiguous.
  const master = pods.find((p) => p.name === 'bert-master-0')!;
  const twin: PodInfo = { ...master, containers: [...master.containers, { ...master.containers[0], name: 'sidecar' }], labels: { ...master.labels, 'training.kubeflow.org/job-name': 'twin' } };
  const withSidecar = { ...twin, controller: { apiVersion: 'v1', kind: 'Other', name: 'x' } };
  const owner = { ...withSidecar, labels: { 'batch.kubernetes.io/job-name': 'other' } };
  assert.equal(place(team, 'team/other/bert-master-0', [owner]).level, 'pod');
  fails(() => place(team, 'team/other/bert-master-0/run', [owner]), 'ambiguous', /has 2 containers \(pytorch, sidecar\) and none is its default: name one as bert-master-0:CONTAINER/);
  // A PyTorchJob's pod: the Training Operator's required `pytorch` container is its default (pytorch_types.go).
  assert.equal(container(place(team, 'team/twin/master-0/run', [twin])), 'ml-team/bert-master-0:pytorch ["run"]');
  // kubectl's default-container annotation names it for any pod (podcmd.go).
  const annotated = { ...owner, annotations: { ...owner.annotations, 'kubectl.kubernetes.io/default-container': 'sidecar' } };
  assert.equal(container(place(team, 'team/other/bert-master-0/run', [annotated])), 'ml-team/bert-master-0:sidecar ["run"]');
});

test('what is not there is not-found naming what is; two pods one rank could mean are ambiguous', () => {
  fails(() => place(prod, 'prod/ml-teem'), 'not-found', /namespaces with pods or jobs: ml-team/);
  fails(() => place(team, 'team/bart'), 'not-found', /No job "bart" in team\/ \(jobs there: .*bert/);
  fails(() => place(team, 'team/bert/worker-7'), 'not-found', /pods: master-0 \(bert-master-0, rank 0\), worker-0 \(bert-worker-0, rank 1\), worker-1 \(bert-worker-1, rank 2\)/);
  fails(() => place(team, 'team/bert/master-0:tensorflow'), 'not-found', /has no container "tensorflow" \(containers: pytorch\)/);
  // Two pods giving one global rank (a misconfigured job): rankN names both, so neither is taken.
  const w0 = pods.find((p) => p.name === 'bert-worker-0')!;
  const clash = { ...w0, name: 'bert-worker-0-copy', labels: { ...w0.labels, 'training.kubeflow.org/replica-index': '5' } };
  fails(() => place(team, 'team/bert/rank1', [...pods, clash]), 'ambiguous', /rank1 in job team\/bert could mean 2 pods/);
});

test('a place is spelled back as it is typed: the namespace only where the entry has none, the container only where needed', () => {
  const job = place(prod, 'prod/ml-team/bert');
  assert.ok(job.level === 'job');
  const master = job.job.pods[0];
  assert.equal(clusterPlaceAddress(prod, job.job, master, 'pytorch'), 'prod/ml-team/bert/master-0');
  assert.equal(clusterPlaceAddress(team, job.job, master, 'sidecar'), 'team/bert/master-0:sidecar');
  assert.equal(clusterPlaceAddress(team, job.job), 'team/bert');
});
