/**
 * A cluster's rows in the tree (core/tree/clusterNodes.ts, and the model routing a cluster to them): namespaces when
 * the entry names none, jobs, pods by replica type and rank, containers as `pod` targets whose ids are the listing's
 * keys, a job without pods and a cluster without any each one row saying why, never an empty list. The pods are the
 * fixtures of test/fixtures/kube/ (copied from what the Training Operator, JobSet and Kueue create); the listing of a
 * container is the test's own (test/integration/kubeTree.test.ts lists through the real kubectl).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { clusterChildren, jobChildren, jobDescription, namespaceChildren, podChildren, podDescription, stateText } from '../../src/core/tree/clusterNodes';
import { hostId, mayHold, runId, targetId, type HostNode, type JobNode, type NamespaceNode, type PodNode, type StateNode, type TargetNode, type TreeNode } from '../../src/core/tree/nodes';
import { RunsTreeModel } from '../../src/core/tree/model';
import { parsePodList } from '../../src/core/kube/pods';
import { groupWorkloads, ownerObjects } from '../../src/core/kube/workloads';
import { containerTarget } from '../../src/core/kube/clusterTargets';
import type { HostTargets } from '../../src/core/service';
import type { TargetListing, TargetRef } from '../../src/core/types';

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'kube');
const read = (f: string): string => fs.readFileSync(path.join(FIXTURES, f), 'utf8');

/** What listClusterTargets makes of these fixtures (kube/clusterTargets.ts), without kubectl. */
function listing(files: string[], ownerFiles: string[] = []): HostTargets {
  const pods = files.flatMap((f) => parsePodList(read(f)).pods);
  const owners = ownerFiles.flatMap((f) => ownerObjects(JSON.parse(read(f)).items));
  const workloads = groupWorkloads(pods, owners);
  const targets = workloads.flatMap((w) => w.pods.flatMap((p) => p.pod.containers.map((c) => containerTarget(w, p.pod, p.label, c))));
  return { targets, problems: [], workloads };
}

function host(name: string, namespace?: string, selector?: string): HostNode {
  return { type: 'host', id: hostId(name), hostName: name, source: 'settings', cluster: { context: 'ctx', ...(namespace ? { namespace } : {}), ...(selector ? { selector } : {}) } };
}

const ALL = ['pytorchjob.json', 'pending.json', 'kueue-queued.json', 'jobset-trainjob.json', 'job-indexed.json'];
const OWNERS = ['pytorchjob-owner.json', 'kueue-queued-owners.json', 'jobset-trainjob-owners.json'];

test('an entry without a namespace: one row per namespace, each holding its jobs', () => {
  const h = host('prod');
  const rows = clusterChildren(h, listing(ALL, OWNERS));
  assert.deepEqual(rows.map((r) => `${r.type}:${(r as NamespaceNode).namespace}`), ['namespace:ml-team', 'namespace:research']);
  const research = rows[1] as NamespaceNode;
  assert.equal(research.parent, h);
  const jobs = namespaceChildren(research) as JobNode[];
  assert.deepEqual(jobs.map((j) => `${j.workload.kind} ${j.workload.name} ${j.workload.state}`).sort(), ['Job sweep-7 queued', 'JobSet big-run queued', 'Pod notebook-eval queued']);
  // Ids: the path from the host down, so expansion and selection survive refreshes.
  assert.ok(jobs.every((j) => j.id.startsWith(`${research.id}\u0000`)));
});

test('an entry with a namespace: its jobs right under the cluster, with state, restarts and queue in the description', () => {
  const rows = clusterChildren(host('team', 'ml-team'), listing(['pytorchjob.json'], ['pytorchjob-owner.json'])) as JobNode[];
  assert.deepEqual(rows.map((r) => r.type), ['job']);
  const bert = rows[0];
  assert.equal(bert.workload.name, 'bert');
  assert.match(jobDescription(bert.workload), /^PyTorchJob · running · 3 pods · \d+ restarts? · queue /);
  const pods = jobChildren(bert, host('team', 'ml-team')) as PodNode[];
  assert.deepEqual(pods.map((p) => p.pod.label), ['master-0', 'worker-0', 'worker-1']);
  assert.equal(stateText(pods[2].pod), 'failed (CrashLoopBackOff)');
  assert.match(podDescription(pods[1].pod), /^running · rank 1 · 1 restart$/);
});

test('a pod\'s containers are pod targets keyed as the listing is; one that does not run is stopped', () => {
  const h = host('team', 'ml-team');
  const [bert] = clusterChildren(h, listing(['pytorchjob.json'])) as JobNode[];
  const [master, , crashing] = jobChildren(bert, h) as PodNode[];
  const [c] = podChildren(master);
  const ref: TargetRef = { kind: 'pod', id: 'ml-team/bert-master-0:pytorch' };
  assert.equal(c.type, 'target');
  assert.equal(c.id, targetId('team', ref));
  assert.deepEqual({ kind: c.target.kind, id: c.target.id, state: c.target.state, label: c.target.label }, { ...ref, state: 'running', label: 'bert/master-0:pytorch' });
  assert.equal(c.container?.name, 'pytorch');
  assert.equal(c.parent, master);
  assert.equal(podChildren(crashing)[0].target.state, 'stopped');
});

test('a job without pods, and a cluster without any, each one row that says why', () => {
  const h = host('prod');
  const research = clusterChildren(h, listing(['kueue-queued.json'], ['kueue-queued-owners.json']))[0] as NamespaceNode;
  const sweep = (namespaceChildren(research) as JobNode[]).find((j) => j.workload.name === 'sweep-7')!;
  const [row] = jobChildren(sweep, h) as StateNode[];
  assert.equal(row.type, 'state');
  assert.equal(row.label, 'No pods: queued (Suspended)');
  assert.match(row.message, /^Job research\/sweep-7 has no pods: queued \(Suspended\): waiting for Kueue to admit it \(queue /);
  assert.match(row.hint ?? '', /admitted/);
  assert.equal(row.scope, h, 'Retry lists the cluster again');

  const empty = clusterChildren(host('team', 'ml-team', 'team=nlp'), { targets: [], problems: [], workloads: [] });
  assert.equal(empty.length, 1);
  assert.equal((empty[0] as StateNode).kind, 'empty');
  assert.match((empty[0] as StateNode).message, /in the namespace ml-team matching the selector team=nlp/);
  const problems = clusterChildren(host('team', 'ml-team'), { targets: [], problems: ['item 3: not a pod name: "Bad"; left out'], workloads: [] });
  assert.deepEqual(problems.map((r) => (r as StateNode).label), ['No pods or jobs', 'item 3: not a pod name: "Bad"; left out']);
});

test('mayHold: a run in a container lies below its pod, job and namespace, not below another pod\'s', () => {
  const h = host('prod');
  const ml = clusterChildren(h, listing(['pytorchjob.json', 'pending.json']))[0] as NamespaceNode;
  const jobs = namespaceChildren(ml) as JobNode[];
  const bert = jobs.find((j) => j.workload.name === 'bert')!;
  const other = jobs.find((j) => j.workload.name === 'gpu-hungry')!;
  const [master, worker] = jobChildren(bert, h) as PodNode[];
  const run = runId('prod', { kind: 'pod', id: 'ml-team/bert-master-0:pytorch' }, '/workspace/bert-run');
  assert.ok(mayHold(ml, run));
  assert.ok(mayHold(bert, run));
  assert.ok(mayHold(master, run));
  assert.ok(!mayHold(worker, run));
  assert.ok(!mayHold(other, run));
  // A pod whose name starts as another's does not hold it (the `:` ends the pod's name).
  const masterish = { ...master, pod: { ...master.pod, pod: { ...master.pod.pod, name: 'bert-master' } } };
  assert.ok(!mayHold(masterish, run));
});

test('the model: a cluster host lists its rows from its targets; a stopped pod container is still asked (kubectl says why)', async () => {
  const asked: string[] = [];
  const data = listing(['pytorchjob.json']);
  const empty = (target: TargetRef): TargetListing => ({ target, roots: [{ root: '/workspace', path: '/workspace', state: 'empty', message: 'empty', seen: [], truncated: false }], remoteNow: 0 });
  const m = new RunsTreeModel(
    {
      hosts: () => [{ name: 'team', source: 'settings', cluster: { context: 'ctx', namespace: 'ml-team' } }],
      listTargets: async () => data,
      listTarget: async (_h, t) => {
        asked.push(t.id);
        return empty(t);
      },
    },
    5,
  );
  try {
    const [h] = await m.childrenOf();
    assert.deepEqual((h as HostNode).cluster, { context: 'ctx', namespace: 'ml-team' });
    const [bert] = await m.childrenOf(h);
    const pods = (await m.childrenOf(bert)) as PodNode[];
    const crashing = (await m.childrenOf(pods[2]))[0] as TargetNode;
    assert.equal(crashing.target.state, 'stopped');
    const rows: TreeNode[] = await m.childrenOf(crashing);
    assert.deepEqual(asked, ['ml-team/bert-worker-1:pytorch']);
    assert.equal((rows[0] as StateNode).kind, 'empty');
    assert.equal(m.nodeAt(crashing.id), crashing, 'the container row is registered for reveal and commands');
  } finally {
    m.dispose();
  }
});
