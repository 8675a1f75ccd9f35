/**
 * A cluster's answer to "which targets has this host": its pods grouped into jobs (kube/workloads.ts), and every
 * container of every pod as a `pod` target (kube/names.ts), so the tree's cluster → namespace → job → pod →
 * container rows and the language server's places come from the one listing cache (discovery/listings.ts
 * `targets`), refreshed as a host's targets are. What runs inside a container is listed as in any target
 * (service.ts listTarget through kube/executor.ts PodExecutor).
 */
import { RemoteRunsError, type Target } from '../types';
import { listOwners, listPods } from './cluster';
import type { KubectlAccess, RunKubectlOptions } from './kubectl';
import { podTargetId } from './names';
import type { ContainerInfo, PodInfo } from './pods';
import { groupWorkloads, type Workload } from './workloads';

export interface ClusterTargets {
  /** Every container of every pod listed, as a `pod` target: `running` when the pod runs and the container does. */
  targets: Target[];
  /** What did not stop the listing: pods or owner kinds that could not be read, each said. */
  problems: string[];
  /** The pods grouped into jobs, each with its state (kube/workloads.ts groupWorkloads). */
  workloads: Workload[];
}

/**
 * The pods (in the entry's namespace, else every namespace, with its selector) and the owner objects that say what
 * pods cannot (a job Kueue holds suspended has no pods yet), grouped into jobs. A failure to list pods is the
 * cluster's failure, thrown as kubectl named it (kube/errors.ts); owner objects that cannot be read (RBAC lets many
 * users list pods but not jobs) are said in `problems`, and the jobs of the pods are still shown.
 */
export async function listClusterTargets(access: KubectlAccess, options: Pick<RunKubectlOptions, 'signal' | 'holder' | 'env'> = {}): Promise<ClusterTargets> {
  const [pods, owners] = await Promise.all([
    listPods(access, options),
    listOwners(access, options).catch((e: unknown) => {
      if (e instanceof RemoteRunsError && e.kind !== 'cancelled' && e.kind !== 'kubectl-missing') return { owners: [], problems: [`job objects not read, so jobs without pods (queued by Kueue) are not shown: ${e.message}`] };
      throw e;
    }),
  ]);
  const workloads = groupWorkloads(pods.pods, owners.owners);
  const targets = workloads.flatMap((w) => w.pods.flatMap((p) => p.pod.containers.map((c) => containerTarget(w, p.pod, p.label, c))));
  // listOwners' own problems are owner kinds the cluster does not serve (no JobSet or Training Operator CRD): what most
  // clusters are, not a problem to show under every cluster. Pods left out, and owners not read, are.
  const unread = owners.problems.filter((p) => !/not served by this cluster/.test(p));
  return { targets, problems: [...pods.problems, ...unread], workloads };
}

/** A pod's container as a target: `running` only when the pod is Running and the container's state is running. */
export function containerTarget(job: Pick<Workload, 'name'>, pod: PodInfo, rank: string, c: ContainerInfo): Target {
  const id = podTargetId({ namespace: pod.namespace, pod: pod.name, container: c.name });
  return { kind: 'pod', id, state: pod.phase === 'Running' && c.state === 'running' ? 'running' : 'stopped', label: `${job.name}/${rank}:${c.name}` };
}
