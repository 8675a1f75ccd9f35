/**
 * The rows of a Kubernetes cluster in the tree, from its targets' listing (kube/clusterTargets.ts, kept in the one
 * listing cache as a host's targets are): namespaces (when the entry names none) → jobs → pods by replica type and
 * rank → containers. A container is a target row like any other: its runs and checkpoints are the same listing,
 * run through `kubectl exec` (service.ts listTarget). Pure: no listing here; each row holds what it shows.
 */
import type { HostTargets } from '../service';
import type { RemoteRunsError } from '../types';
import { containerTarget } from '../kube/clusterTargets';
import type { Workload, WorkloadState } from '../kube/workloads';
import { childId, targetId, type HostNode, type JobNode, type NamespaceNode, type PodNode, type StateNode, type TargetNode, type TreeNode } from './nodes';

/**
 * A cluster's rows: its namespaces, or with a namespace in its entry, that namespace's jobs; then what did not stop
 * the listing (pods or job objects that could not be read). No pod at all is one row saying where nothing was
 * found, never an empty list.
 */
export function clusterChildren(host: HostNode, listing: HostTargets): TreeNode[] {
  const workloads = listing.workloads ?? [];
  const problems = listing.problems.map(
    (p, i): StateNode => ({ type: 'state', id: childId(host, 'p', String(i)), parent: host, kind: 'command-failed', label: p, message: p, seen: [], scope: host }),
  );
  const own = host.cluster?.namespace;
  if (workloads.length === 0) {
    const where = own ? `in the namespace ${own}` : 'in any namespace you may list';
    const selector = host.cluster?.selector ? ` matching the selector ${host.cluster.selector}` : '';
    const empty: StateNode = {
      type: 'state',
      id: childId(host, 's', 'no-pods'),
      parent: host,
      kind: 'empty',
      label: 'No pods or jobs',
      message: `The cluster has no pods or jobs ${where}${selector} (context ${host.cluster?.context ?? '?'}).`,
      seen: [],
      scope: host,
      hint: `Check the entry's ${own ? 'namespace' : 'context'}${selector ? ' and selector' : ''}, or start a job.`,
    };
    return [empty, ...problems];
  }
  if (own) return [...workloads.map((w) => jobNode(host, w)), ...problems];
  const namespaces = new Map<string, Workload[]>();
  for (const w of workloads) namespaces.set(w.namespace, [...(namespaces.get(w.namespace) ?? []), w]);
  const rows = [...namespaces].map(([namespace, ws]): NamespaceNode => ({ type: 'namespace', id: childId(host, 'ns', namespace), parent: host, hostName: host.hostName, namespace, workloads: ws }));
  return [...rows, ...problems];
}

/**
 * The row of a cluster whose pods could not be listed, with what to do where the cluster's own case says more than
 * the kind: RBAC denying the list of pods in every namespace (an entry without a namespace lists with
 * `--all-namespaces`, which needs `list` on pods at the cluster scope, which most users of a shared cluster lack).
 */
export function clusterErrorNode(host: HostNode, row: StateNode, error: RemoteRunsError): StateNode {
  if (error.kind === 'forbidden' && !host.cluster?.namespace && error.detail.namespace === undefined && error.detail.resource === 'pods') {
    return { ...row, hint: 'Listing every namespace needs "list" on pods at the cluster scope: name the namespace you work in (the entry\'s "namespace"), or ask for a ClusterRole that grants it.' };
  }
  return row;
}

export function namespaceChildren(node: NamespaceNode): TreeNode[] {
  return node.workloads.map((w) => jobNode(node, w));
}

function jobNode(parent: HostNode | NamespaceNode, w: Workload): JobNode {
  return { type: 'job', id: childId(parent, 'job', `${w.grouping}/${w.name}`), parent, hostName: parent.hostName, workload: w };
}

/** A job's pods in rank order; a job without pods (suspended by Kueue, or its pods deleted) is one row saying why. */
export function jobChildren(node: JobNode, host: HostNode): TreeNode[] {
  const w = node.workload;
  if (w.pods.length === 0) {
    const why = `${w.state}${w.reason ? ` (${w.reason})` : ''}${w.message ? `: ${w.message}` : ''}`;
    const none: StateNode = {
      type: 'state',
      id: childId(node, 's', 'no-pods'),
      parent: node,
      kind: 'container-stopped',
      label: `No pods: ${w.state}${w.reason ? ` (${w.reason})` : ''}`,
      message: `${w.kind} ${w.namespace}/${w.name} has no pods: ${why}.`,
      seen: [],
      scope: host,
      hint: w.state === 'queued' ? 'Its pods are made once the job is admitted (Kueue) or resumed (spec.suspend: false).' : 'Its pods are gone (finished and cleaned up, or deleted): there is nothing to enter.',
    };
    return [none];
  }
  return w.pods.map((p): PodNode => ({ type: 'pod', id: childId(node, 'pod', p.pod.name), parent: node, hostName: node.hostName, job: w.name, pod: p }));
}

/** A pod's containers, each a target (kind `pod`) whose children are its runs. */
export function podChildren(node: PodNode): TargetNode[] {
  const p = node.pod;
  return p.pod.containers.map((c): TargetNode => {
    const target = containerTarget({ name: node.job }, p.pod, p.label, c);
    return { type: 'target', id: targetId(node.hostName, target), parent: node, hostName: node.hostName, target, container: c };
  });
}

/** `running`, `queued (Unschedulable)`, `failed (OOMKilled)`: a job's or pod's state with its reason. */
export function stateText(s: { state: WorkloadState; reason?: string }): string {
  return `${s.state}${s.reason && s.reason.toLowerCase() !== s.state ? ` (${s.reason})` : ''}`;
}

/** A job row's description: `PyTorchJob · running · 3 pods · 2 restarts · queue team-a`. */
export function jobDescription(w: Workload): string {
  const pods = w.pods.length;
  return [w.kind, stateText(w), pods ? `${pods} pod${pods === 1 ? '' : 's'}` : '', w.restarts ? `${w.restarts} restart${w.restarts === 1 ? '' : 's'}` : '', w.queue ? `queue ${w.queue}` : ''].filter(Boolean).join(' · ');
}

/** A pod row's description: `running · rank 1 · 1 restart`. */
export function podDescription(p: PodNode['pod']): string {
  return [stateText(p), p.rank !== undefined ? `rank ${p.rank}` : '', p.restarts ? `${p.restarts} restart${p.restarts === 1 ? '' : 's'}` : ''].filter(Boolean).join(' · ');
}

/** The codicon of a job or pod state. */
export function stateIcon(s: { state: WorkloadState; restarting?: true }): string {
  switch (s.state) {
    case 'queued':
      return 'clock';
    case 'creating':
      return 'loading~spin';
    case 'running':
      return 'play-circle';
    case 'succeeded':
      return 'pass';
    case 'failed':
      return s.restarting ? 'debug-restart' : 'error';
    case 'evicted':
      return 'warning';
    default:
      return 'question';
  }
}
