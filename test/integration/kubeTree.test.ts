/**
 * A Kubernetes cluster in the tree, through the core the tree uses (tree/model.ts over service.ts and the one listing
 * cache), against the real kubectl on PATH and the test API server the harness starts (test/harness/kubeApi.ts):
 * cluster → namespace → job → pod by rank → container → run → checkpoints, the run written in a container's sandbox
 * `/workspace` and listed by the same list script as over SSH, through `kubectl exec`. Every failure the cluster or
 * kubectl gives is its own row with kubectl's own words: RBAC denying `list` on pods and `create` on `pods/exec`,
 * 401, a credential plugin that fails or is not installed, a closed port, a context or kubeconfig that is not there,
 * a pod not scheduled, a container not started, a pod deleted since it was listed, an image without `sh`.
 * The pods are the fixtures of test/fixtures/kube/ (copied from what the Training Operator, JobSet and Kueue create).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RemoteRunsCore } from '../../src/core/service';
import { RemoteRunsError, type ClusterConfig } from '../../src/core/types';
import { RunsTreeModel, type HostEntry } from '../../src/core/tree/model';
import type { CheckpointNode, HostNode, JobNode, NamespaceNode, PodNode, RunNode, StateNode, TargetNode, TreeNode } from '../../src/core/tree/nodes';
import { listContexts } from '../../src/core/kube/contexts';
import { windowListings } from '../../src/extension/lsp/answers';
import type { KubeApi } from '../harness/kubeApi';
import { startFixtureCluster, type FixtureCluster } from '../builders/kubeCluster';
import { writtenAgo } from '../harness/mtimes';

const HF_TRAINER = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'hf_trainer');

let api: KubeApi;
let kubeconfig = '';
let clusters: ClusterConfig[] = [];
let core: RemoteRunsCore;

before(async () => {
  let entry: FixtureCluster['entry'];
  ({ api, kubeconfig, entry } = await startFixtureCluster());
  clusters = [
    entry('prod', 'admin'),
    entry('team', 'admin', { namespace: 'ml-team' }),
    entry('reader', 'reader', { namespace: 'ml-team' }),
    entry('nobody', 'nobody', { namespace: 'ml-team' }),
    entry('nobody-everywhere', 'nobody'),
    entry('stale', 'stale-token', { namespace: 'ml-team' }),
    entry('plugin-fails', 'plugin-fails', { namespace: 'ml-team' }),
    entry('plugin-missing', 'plugin-missing', { namespace: 'ml-team' }),
    entry('closed', 'closed', { namespace: 'ml-team' }),
    entry('no-context', 'not-in-the-kubeconfig', { namespace: 'ml-team' }),
    entry('no-file', 'admin', { namespace: 'ml-team', kubeconfig: path.join(api.dir, 'no-such-kubeconfig') }),
  ];
  core = new RemoteRunsCore({
    hosts: () => [],
    executorFor: () => {
      throw new Error('a cluster is never reached over SSH');
    },
    clusters: () => clusters,
  });

  // A Hugging Face Trainer run (written by the real transformers: test/fixtures/real/written) in the master's sandbox.
  const run = path.join(api.container('ml-team', 'bert-master-0', 'pytorch').workspace, 'bert-run');
  fs.cpSync(HF_TRAINER, run, { recursive: true });
  // Written an hour ago, as a finished run's are (a copy made now would be taken for a save in progress).
  writtenAgo(run, 3_600_000);
  api.container('ml-team', 'typo-image', 'main'); // a sandbox made, the container never started
  api.container('ml-team', 'llama-trainer-node-0-0-x7k2p', 'trainer').withoutShell();
});

after(async () => {
  await api?.stop();
});

function model(): RunsTreeModel {
  const entries: HostEntry[] = clusters.map((c) => ({ name: c.name, source: 'settings', cluster: { context: c.context, ...(c.namespace ? { namespace: c.namespace } : {}) } }));
  // The window's one listing cache, as the extension builds it (extension.ts: windowListings, shared with the
  // language server's answers), so its run roots are asked of a cluster as the extension asks them.
  return new RunsTreeModel({ hosts: () => entries, listTargets: (h) => core.listTargets(h), listTarget: (h, t) => core.listTarget(h, t) }, 5, undefined, windowListings(core));
}

async function child<T extends TreeNode>(m: RunsTreeModel, parent: TreeNode | undefined, pick: (n: TreeNode) => boolean, what: string): Promise<T> {
  const children = await m.childrenOf(parent);
  const found = children.find(pick);
  assert.ok(found, `${what} among ${JSON.stringify(children.map(rowText))}`);
  return found as T;
}

function rowText(n: TreeNode): string {
  switch (n.type) {
    case 'host':
      return `host ${n.hostName}`;
    case 'namespace':
      return `namespace ${n.namespace}`;
    case 'job':
      return `job ${n.workload.name} (${n.workload.state})`;
    case 'pod':
      return `pod ${n.pod.label} (${n.pod.state})`;
    case 'target':
      return `container ${n.target.id} (${n.target.state})`;
    case 'state':
      return `state ${n.kind}: ${n.label} — ${n.message}`;
    case 'run':
      return `run ${n.run.name}`;
    case 'checkpoint':
      return `checkpoint ${n.checkpoint.name}`;
    default:
      return n.type;
  }
}

const host = (m: RunsTreeModel, name: string): Promise<HostNode> => child<HostNode>(m, undefined, (n) => n.type === 'host' && n.hostName === name, `cluster ${name}`);

/** The one row a cluster with a broken connection shows: a state of this kind, naming the cause. */
async function clusterState(m: RunsTreeModel, name: string): Promise<StateNode> {
  const rows = await m.childrenOf(await host(m, name));
  assert.equal(rows.length, 1, `${name}: one row, not ${JSON.stringify(rows.map(rowText))}`);
  assert.equal(rows[0].type, 'state', rowText(rows[0]));
  return rows[0] as StateNode;
}

async function container(m: RunsTreeModel, cluster: string, job: string, rank: string): Promise<TargetNode> {
  const h = await host(m, cluster);
  const j = await child<JobNode>(m, h, (n) => n.type === 'job' && n.workload.name === job, `job ${job}`);
  const p = await child<PodNode>(m, j, (n) => n.type === 'pod' && n.pod.label === rank, `pod ${rank}`);
  return child<TargetNode>(m, p, (n) => n.type === 'target', 'a container');
}

/** The rows under a container: one state row of this kind. */
async function containerState(m: RunsTreeModel, node: TargetNode): Promise<StateNode> {
  const rows = await m.childrenOf(node);
  assert.equal(rows.length, 1, `${node.target.id}: one row, not ${JSON.stringify(rows.map(rowText))}`);
  assert.equal(rows[0].type, 'state', rowText(rows[0]));
  return rows[0] as StateNode;
}

test('cluster → namespace → job → pod by rank → container → run → checkpoints, listed through kubectl exec', async () => {
  const m = model();
  try {
    const prod = await host(m, 'prod');
    const namespaces = (await m.childrenOf(prod)) as NamespaceNode[];
    assert.deepEqual(namespaces.map((n) => `${n.type}:${(n as NamespaceNode).namespace}`), ['namespace:ml-team', 'namespace:research']);
    const team = namespaces[0];
    const jobs = (await m.childrenOf(team)) as JobNode[];
    const byName = new Map(jobs.map((j) => [j.workload.name, j.workload]));
    // The PyTorchJob grouped by training.kubeflow.org/job-name, running with worker-1 in CrashLoopBackOff.
    assert.equal(byName.get('bert')?.kind, 'PyTorchJob');
    assert.equal(byName.get('bert')?.state, 'running');
    assert.ok((byName.get('bert')?.restarts ?? 0) > 0, 'bert has restarts');
    // Pods waiting for the scheduler are queued with the scheduler's reason.
    assert.equal(byName.get('gpu-hungry')?.state, 'queued');
    assert.equal(byName.get('gpu-hungry')?.reason, 'Unschedulable');

    const bert = jobs.find((j) => j.workload.name === 'bert')!;
    const pods = (await m.childrenOf(bert)) as PodNode[];
    assert.deepEqual(pods.map((p) => `${p.pod.label}:${p.pod.state}`), ['master-0:running', 'worker-0:running', 'worker-1:failed']);
    const [master] = (await m.childrenOf(pods[0])) as TargetNode[];
    assert.equal(master.type, 'target');
    assert.deepEqual({ kind: master.target.kind, id: master.target.id, state: master.target.state }, { kind: 'pod', id: 'ml-team/bert-master-0:pytorch', state: 'running' });

    const runs = (await m.childrenOf(master)) as RunNode[];
    assert.deepEqual(runs.map(rowText), ['run bert-run']);
    const checkpoints = (await m.childrenOf(runs[0])) as CheckpointNode[];
    // Newest first, the run's final weights (model.safetensors beside the checkpoints) on top, as over SSH.
    assert.deepEqual(checkpoints.map((c) => c.checkpoint.name), ['final', 'checkpoint-30', 'checkpoint-20']);
    const step30 = checkpoints[1];
    assert.equal(step30.checkpoint.path, '/workspace/bert-run/checkpoint-30');
    assert.equal(step30.checkpoint.step, 30);
    assert.ok(step30.checkpoint.files.some((f) => f.name === 'model.safetensors' && f.bytes > 0), 'the checkpoint lists its files with sizes');
    // Listed through kubectl exec into that container, nothing else.
    assert.ok(api.requests.some((r) => /^GET \/api\/v1\/namespaces\/ml-team\/pods\/bert-master-0\/exec\?.*container=pytorch/.test(r)), 'kubectl exec into bert-master-0');
  } finally {
    m.dispose();
  }
});

test('a namespace in the entry: its jobs right under the cluster; a job Kueue holds suspended says so instead of an empty list', async () => {
  const m = model();
  try {
    const rows = await m.childrenOf(await host(m, 'team'));
    assert.ok(rows.every((r) => r.type === 'job'), JSON.stringify(rows.map(rowText)));
    const prod = await host(m, 'prod');
    const research = await child<NamespaceNode>(m, prod, (n) => n.type === 'namespace' && n.namespace === 'research', 'research');
    const jobs = (await m.childrenOf(research)) as JobNode[];
    const suspended = jobs.find((j) => j.workload.pods.length === 0 && j.workload.state === 'queued');
    assert.ok(suspended, `a suspended job without pods among ${JSON.stringify(jobs.map(rowText))}`);
    const [none] = await m.childrenOf(suspended);
    assert.equal(none.type, 'state');
    assert.match((none as StateNode).label, /^No pods: queued/);
    assert.match((none as StateNode).message, /has no pods: queued/);
  } finally {
    m.dispose();
  }
});

test('a container that is not running says why in kubectl\'s words: not scheduled, not started, crash-looping', async () => {
  const m = model();
  try {
    const unscheduled = await containerState(m, await container(m, 'team', 'gpu-hungry', 'gpu-hungry'));
    assert.equal(unscheduled.kind, 'container-stopped');
    assert.match(unscheduled.message, /not scheduled to a node/);
    assert.match(unscheduled.message, /does not have a host assigned/, 'kubectl\'s own words are kept');
    const imagePull = await containerState(m, await container(m, 'team', 'typo-image', 'typo-image'));
    assert.equal(imagePull.kind, 'container-stopped');
    assert.match(imagePull.message, /container not found \("main"\)/);
    const crashing = await containerState(m, await container(m, 'team', 'bert', 'worker-1'));
    assert.equal(crashing.kind, 'container-stopped');
  } finally {
    m.dispose();
  }
});

test('an image without sh, and a pod deleted since it was listed, each its own row', async () => {
  const m = model();
  try {
    const noShell = await containerState(m, await container(m, 'team', 'llama', 'trainer-node-0-0'));
    assert.equal(noShell.kind, 'command-failed');
    assert.match(noShell.message, /has no sh/);
    const worker = await container(m, 'team', 'bert', 'worker-0');
    const pod = api.pod('ml-team', 'bert-worker-0')!;
    api.deletePod('ml-team', 'bert-worker-0');
    try {
      const gone = await containerState(m, worker);
      assert.equal(gone.kind, 'container-missing');
      assert.match(gone.message, /pods "bert-worker-0" not found/);
    } finally {
      api.updatePod(pod);
    }
  } finally {
    m.dispose();
  }
});

test('RBAC: a user who may not list pods sees the verb and resource denied; one who may not exec sees pods/exec', async () => {
  const m = model();
  try {
    const denied = await clusterState(m, 'nobody');
    assert.equal(denied.kind, 'forbidden');
    assert.match(denied.message, /RBAC denied nobody "list" on pods .*in the namespace ml-team/);
    assert.equal(denied.hint, undefined, 'the kind\'s own hint: ask for a Role');
    // Without a namespace in the entry, every namespace is listed: denied at the cluster scope, and the row says
    // that naming a namespace is the way out.
    const everywhere = await clusterState(m, 'nobody-everywhere');
    assert.equal(everywhere.kind, 'forbidden');
    assert.match(everywhere.message, /"list" on pods at the cluster scope/);
    assert.match(everywhere.hint ?? '', /name the namespace you work in/);
    const noExec = await containerState(m, await container(m, 'reader', 'bert', 'master-0'));
    assert.equal(noExec.kind, 'forbidden');
    assert.match(noExec.message, /pods\/exec/);
    assert.match(noExec.message, /cannot (create|get) resource "pods\/exec"/);
  } finally {
    m.dispose();
  }
});

test('the cluster cannot be reached or logged in to: 401, credential plugin failing or missing, closed port, no context, no kubeconfig', async () => {
  const m = model();
  try {
    const cases: [string, RemoteRunsError['kind'], RegExp][] = [
      ['stale', 'auth-failed', /401/],
      ['plugin-fails', 'credential-plugin', /token expired, run: cloud auth login/],
      ['plugin-missing', 'credential-plugin', /not installed/],
      ['closed', 'unreachable', /refused/],
      ['no-context', 'kube-config', /no context "not-in-the-kubeconfig"/],
      ['no-file', 'kube-config', /no-such-kubeconfig does not exist/],
    ];
    for (const [name, kind, text] of cases) {
      const row = await clusterState(m, name);
      assert.equal(row.kind, kind, `${name}: ${row.message}`);
      assert.match(row.message, text, name);
      assert.equal(row.scope?.type, 'host', `${name}: Retry lists the cluster again`);
    }
  } finally {
    m.dispose();
  }
});

test('"Use Contexts from ~/.kube/config" reads the contexts through the real kubectl; no contexts, a missing or broken kubeconfig each said', async () => {
  const names = await listContexts({ kubeconfig });
  // In kubectl's order (get_contexts.go sorts them by name).
  assert.deepEqual(names, ['admin', 'closed', 'nobody', 'plugin-fails', 'plugin-missing', 'reader', 'stale-token']);
  // kubectl's own resolution: $KUBECONFIG, as the clusters will use it.
  assert.deepEqual(await listContexts({}, { env: { ...process.env, KUBECONFIG: kubeconfig } }), names);
  const empty = path.join(api.dir, 'empty-kubeconfig');
  fs.writeFileSync(empty, 'apiVersion: v1\nkind: Config\ncontexts: []\n');
  await assert.rejects(listContexts({ kubeconfig: empty }), (e: RemoteRunsError) => e.kind === 'kube-config' && /has no contexts/.test(e.message));
  await assert.rejects(listContexts({ kubeconfig: path.join(api.dir, 'not-there') }), (e: RemoteRunsError) => e.kind === 'kube-config' && /not-there does not exist/.test(e.message));
  const broken = path.join(api.dir, 'broken-kubeconfig');
  fs.writeFileSync(broken, 'contexts: [this is: not: yaml\n');
  await assert.rejects(listContexts({ kubeconfig: broken }), (e: RemoteRunsError) => e.kind === 'kube-config' && /cannot read the kubeconfig/.test(e.message));
  await assert.rejects(listContexts({ kubectl: path.join(api.dir, 'no-kubectl-here') }), (e: RemoteRunsError) => e.kind === 'kubectl-missing');
});
