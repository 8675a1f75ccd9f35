/**
 * The test cluster the Kubernetes suites share: the test API server (test/harness/kubeApi.ts) holding the fixture
 * pods and owner objects of test/fixtures/kube/ (copied from what the Training Operator, JobSet and Kueue create),
 * the identities RBAC tells apart, and one kubeconfig with a context for each way in or out item 5 of the issue
 * names (a user who may read but not exec, one who may do nothing, a token the server does not know, a credential
 * plugin that fails or is not installed, a closed port). Cluster entries name those contexts (`entry`).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startKubeApi, type KubeApi, type KubePod } from '../harness/kubeApi';
import { writtenAgo } from '../harness/mtimes';
import type { ClusterConfig } from '../../src/core/types';

export const KUBE_FIXTURES = path.join(__dirname, '..', 'fixtures', 'kube');

/* eslint-disable @typescript-eslint/no-explicit-any */
/** The `items` of a fixture list in test/fixtures/kube/. */
export function kubeFixtureItems(file: string): any[] {
  return JSON.parse(fs.readFileSync(path.join(KUBE_FIXTURES, file), 'utf8')).items;
}

/** The kubeconfig contexts of fixtureCluster's kubeconfig, by what they are. */
export const KUBE_CONTEXTS = ['admin', 'reader', 'nobody', 'stale-token', 'plugin-fails', 'plugin-missing', 'closed'] as const;

export interface FixtureCluster {
  api: KubeApi;
  /** The kubeconfig holding every context of KUBE_CONTEXTS. */
  kubeconfig: string;
  /** A cluster entry on one of its contexts (runRoots `/workspace`, as the sandboxes hold runs). */
  entry(name: string, context: string, more?: Partial<ClusterConfig>): ClusterConfig;
}

/** Fail the suite, saying why, when the real kubectl is not on PATH. */
export function requireKubectl(): void {
  try {
    execFileSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  } catch (e) {
    throw new Error(`these tests need the real kubectl (1.32) on PATH: ${(e as Error).message}`);
  }
}

/**
 * Start the test API server with the fixture pods (the PyTorchJob `bert`, pending pods, a Kueue-queued job, a
 * TrainJob's JobSet) and owner objects, the identities `reader` (get/list/watch on pods, pods/log and the job kinds;
 * no exec) and `nobody` (no rule), and a kubeconfig with a context for each of KUBE_CONTEXTS.
 */
export async function startFixtureCluster(options: Parameters<typeof startKubeApi>[0] = {}): Promise<FixtureCluster> {
  requireKubectl();
  const api = await startKubeApi(options);
  api.setPods([...kubeFixtureItems('pytorchjob.json'), ...kubeFixtureItems('pending.json'), ...kubeFixtureItems('kueue-queued.json'), ...kubeFixtureItems('jobset-trainjob.json')]);
  // The owner objects: the PyTorchJob with its queue, and a Job and a JobSet Kueue holds suspended (no pods yet).
  const owners = [...kubeFixtureItems('pytorchjob-owner.json'), ...kubeFixtureItems('kueue-queued-owners.json'), ...kubeFixtureItems('jobset-trainjob-owners.json')];
  const byResource: Record<string, any[]> = {};
  const gvr = (o: any): string => {
    const [group, version] = String(o.apiVersion).includes('/') ? String(o.apiVersion).split('/') : ['', o.apiVersion];
    return `${group}/${version}/${({ Job: 'jobs', JobSet: 'jobsets', PyTorchJob: 'pytorchjobs', TrainJob: 'trainjobs' } as Record<string, string>)[o.kind] ?? 'unknown'}`;
  };
  for (const o of owners) (byResource[gvr(o)] ??= []).push(o);
  for (const [k, v] of Object.entries(byResource)) api.setObjects(k, v);

  // A user who may read pods and jobs but not exec into them; one who may do nothing.
  api.addIdentity({ name: 'reader', token: 'reader-token', rules: [{ verbs: ['get', 'list', 'watch'], resources: ['pods', 'pods/log', 'jobs', 'pytorchjobs', 'jobsets', 'trainjobs'], apiGroups: ['', 'batch', 'kubeflow.org', 'jobset.x-k8s.io', 'trainer.kubeflow.org'] }] });
  api.addIdentity({ name: 'nobody', token: 'nobody-token', rules: [] });
  const kubeconfig = api.writeKubeconfig({
    contexts: [
      { name: 'admin' },
      { name: 'reader', user: { token: 'reader-token' } },
      { name: 'nobody', user: { token: 'nobody-token' } },
      { name: 'stale-token', user: { token: 'a-token-the-server-does-not-know' } },
      { name: 'plugin-fails', user: { execFails: 'error: token expired, run: cloud auth login' } },
      { name: 'plugin-missing', user: { execMissing: true } },
      { name: 'closed', server: 'closed' },
    ],
  });
  const entry = (name: string, context: string, more: Partial<ClusterConfig> = {}): ClusterConfig => ({ kind: 'kubernetes', name, context, kubeconfig, runRoots: ['/workspace'], ...more });
  return { api, kubeconfig, entry };
}

/**
 * The cluster the end-to-end tests click through: the test API server with the PyTorchJob `bert` (its pods and its
 * owner object) and, in the master's container, the Hugging Face Trainer run the real transformers wrote
 * (test/fixtures/real/written/hf_trainer) as `/workspace/bert-run`, written an hour ago as a finished run's files are
 * (a copy made now would be taken for a save in progress). `run` is that folder on this machine.
 */
export async function startBertCluster(): Promise<{ api: KubeApi; run: string }> {
  requireKubectl();
  const api = await startKubeApi();
  api.setPods(kubeFixtureItems('pytorchjob.json'));
  api.setObjects('kubeflow.org/v1/pytorchjobs', kubeFixtureItems('pytorchjob-owner.json'));
  const run = path.join(api.container('ml-team', 'bert-master-0', 'pytorch').workspace, 'bert-run');
  fs.cpSync(path.join(__dirname, '..', 'fixtures', 'real', 'written', 'hf_trainer'), run, { recursive: true });
  writtenAgo(run, 3_600_000);
  return { api, run };
}

/** The window's user settings for a cluster entry `prod` on `context` of `kubeconfig`, namespace ml-team, no SSH hosts. */
export function clusterSettings(kubeconfig: string, context = 'train-admin'): Record<string, unknown> {
  return {
    // In the user's settings: a kubeconfig is never taken from a workspace's (docs/workspace-trust.md).
    'remoteRuns.hosts': [{ name: 'prod', kind: 'kubernetes', context, namespace: 'ml-team', kubeconfig, runRoots: ['/workspace'] }],
    'remoteRuns.useSshConfigHosts': false,
    'remoteRuns.refreshIntervalSeconds': 0,
  };
}

/** A running pod `name` in namespace `ns`: the master (rank 0) of the PyTorchJob `job`, one container `pytorch`. */
export function runningPod(name: string, job: string, ns = 'ml-team'): KubePod {
  return {
    metadata: { name, namespace: ns, labels: { 'training.kubeflow.org/job-name': job, 'training.kubeflow.org/replica-type': 'master', 'training.kubeflow.org/replica-index': '0' } },
    spec: { nodeName: 'gpu-node-1', containers: [{ name: 'pytorch', image: 'pytorch/pytorch:2.4.0' }] },
    status: { phase: 'Running', podIP: '10.0.0.7', containerStatuses: [{ name: 'pytorch', ready: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }] },
  };
}
