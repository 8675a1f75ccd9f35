/**
 * Which namespace, job, pod and container a cluster address names (address.ts parseClusterAddress), decided against
 * the cluster's listing (kube/clusterTargets.ts: its pods grouped into jobs by kube/workloads.ts), and how a place is
 * spelled back as an address. Pure: the listing is the caller's.
 *
 * - RANK is the pod's label in its job as the tree shows it (`master-0`, `workers-0-2`, `3`: workloads.ts placeOf),
 *   `rankN` for the global rank the job gives the pod (RANK/PET_NODE_RANK in its env), or the pod's own name.
 * - `:CONTAINER` may be left out when the pod has one container, when kubectl's own default names one (the
 *   `kubectl.kubernetes.io/default-container` annotation: kubernetes `staging/src/k8s.io/kubectl/pkg/cmd/util/podcmd/
 *   podcmd.go` DefaultContainerAnnotationName), or when the pod is a PyTorchJob's and has the container the Training
 *   Operator requires (`pytorch`: kubeflow/training-operator `pkg/apis/kubeflow.org/v1/pytorch_types.go`
 *   PyTorchJobDefaultContainerName, which its webhook requires in every replica).
 * A part that names nothing is `not-found` listing what is there; one that names several is `ambiguous` listing them.
 */
import { RemoteRunsError, type ClusterConfig, type TargetRef } from '../types';
import type { ClusterAddress } from '../address';
import { displayName } from '../../shared/display';
import { podTarget } from './names';
import type { RankedPod, Workload } from './workloads';

/** kubectl's default container annotation (podcmd.go DefaultContainerAnnotationName). */
export const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';

/** The container a Training Operator kind requires in its pods (pytorch_types.go PyTorchJobDefaultContainerName). */
const OPERATOR_CONTAINER: Record<string, string> = { PyTorchJob: 'pytorch' };

/** What a cluster address names, from the whole cluster down to a container (with the run parts after it). */
export type ClusterPlace =
  | { level: 'cluster'; workloads: Workload[] }
  | { level: 'namespace'; namespace: string; workloads: Workload[] }
  | { level: 'job'; job: Workload }
  /** A pod whose container the address did not say and that has no default: `ls` lists its containers. */
  | { level: 'pod'; job: Workload; pod: RankedPod }
  /** `containerNamed`: the address said the container (`:CONTAINER` or a pod target), rather than taking the default. */
  | { level: 'container'; target: TargetRef; job?: Workload; pod?: RankedPod; container: string; containerNamed: boolean; segments: string[] };

/** How many pods a few names are shown up to, in a not-found or ambiguous message. */
const SHOWN = 20;

function listed(names: readonly string[]): string {
  return names.length ? names.slice(0, SHOWN).map(displayName).join(', ') + (names.length > SHOWN ? `, … (${names.length} in all)` : '') : 'none';
}

/**
 * Resolve `addr` on `cluster` against its jobs. A `pod:NS/POD:CONTAINER` address is taken as it is (kubectl says if
 * the pod or container is not there). Throws `not-found` or `ambiguous`, naming what exists.
 */
export function resolveClusterAddress(cluster: Pick<ClusterConfig, 'name' | 'namespace'>, workloads: readonly Workload[], addr: ClusterAddress): ClusterPlace {
  if (addr.target) return { level: 'container', target: addr.target, container: addr.target.id.slice(addr.target.id.indexOf(':') + 1), containerNamed: true, segments: addr.segments ?? [] };
  const namespace = cluster.namespace ?? addr.namespace;
  if (namespace === undefined) return { level: 'cluster', workloads: [...workloads] };
  const inNamespace = workloads.filter((w) => w.namespace === namespace);
  if (!cluster.namespace && inNamespace.length === 0) {
    const there = [...new Set(workloads.map((w) => w.namespace))];
    throw new RemoteRunsError('not-found', `No pod or job in namespace ${JSON.stringify(namespace)} on ${cluster.name} (namespaces with pods or jobs: ${listed(there)})`, { seen: there.slice(0, SHOWN) });
  }
  if (addr.job === undefined) return { level: 'namespace', namespace, workloads: inNamespace };
  const where = `${cluster.name}/${cluster.namespace ? '' : `${namespace}/`}`;
  const jobs = inNamespace.filter((w) => w.name === addr.job);
  if (jobs.length === 0) {
    const names = inNamespace.map((w) => w.name);
    throw new RemoteRunsError('not-found', `No job ${JSON.stringify(addr.job)} in ${where} (jobs there: ${listed(names)})`, { seen: names.slice(0, SHOWN) });
  }
  if (jobs.length > 1) {
    // A Job and a bare pod (or another controller's pods) of one name: their kinds tell them apart, the pods' names do.
    throw new RemoteRunsError('ambiguous', `${where}${addr.job} is ${jobs.length} jobs: ${jobs.map((j) => `${j.kind} (pods ${listed(j.pods.map((p) => p.pod.name))})`).join('; ')}; name the pod as ${cluster.name}/pod:${namespace}/POD:CONTAINER`, {
      candidates: jobs.map((j) => j.kind),
    });
  }
  const job = jobs[0];
  if (addr.rank === undefined) return { level: 'job', job };
  const pod = pickPod(job, addr.rank, `${where}${job.name}`);
  const container = addr.container ?? defaultContainer(job, pod);
  const names = pod.pod.containers.map((c) => c.name);
  if (container === undefined) {
    if (addr.segments?.length) {
      throw new RemoteRunsError('ambiguous', `${pod.label} of ${where}${job.name} has ${names.length} containers (${listed(names)}) and none is its default: name one as ${pod.label}:CONTAINER`, { candidates: names });
    }
    return { level: 'pod', job, pod };
  }
  if (!names.includes(container)) {
    throw new RemoteRunsError('not-found', `Pod ${pod.pod.name} (${pod.label} of ${where}${job.name}) has no container ${JSON.stringify(container)} (containers: ${listed(names)})`, { seen: names });
  }
  return { level: 'container', target: podTarget({ namespace, pod: pod.pod.name, container }), job, pod, container, containerNamed: addr.container !== undefined, segments: addr.segments ?? [] };
}

/** The pod a rank part names: its label, `rankN`, or its own name; one, or `not-found`/`ambiguous` listing the pods. */
function pickPod(job: Workload, rank: string, where: string): RankedPod {
  const m = /^rank(\d{1,9})$/.exec(rank);
  const byLabel = job.pods.filter((p) => p.label === rank);
  const found = byLabel.length ? byLabel : job.pods.filter((p) => (m ? p.rank === Number(m[1]) : false) || p.pod.name === rank);
  if (found.length === 1) return found[0];
  const shown = (p: RankedPod): string => `${p.label}${p.label !== p.pod.name ? ` (${p.pod.name}${p.rank !== undefined ? `, rank ${p.rank}` : ''})` : ''}`;
  if (found.length === 0) {
    throw new RemoteRunsError('not-found', `No pod ${JSON.stringify(rank)} in job ${where} (pods: ${job.pods.length ? job.pods.map(shown).join(', ') : 'none'})`, { seen: job.pods.map((p) => p.label) });
  }
  throw new RemoteRunsError('ambiguous', `${rank} in job ${where} could mean ${found.length} pods: ${found.map(shown).join(', ')}; name one by its label or its pod's name`, { candidates: found.map((p) => p.pod.name) });
}

/** The container an address may leave out: the only one, kubectl's default annotation, or the operator's own. */
export function defaultContainer(job: Pick<Workload, 'kind'>, pod: RankedPod): string | undefined {
  const names = pod.pod.containers.map((c) => c.name);
  if (names.length === 1) return names[0];
  const annotated = pod.pod.annotations[DEFAULT_CONTAINER_ANNOTATION];
  if (annotated && names.includes(annotated)) return annotated;
  const operator = OPERATOR_CONTAINER[job.kind];
  if (operator && names.includes(operator)) return operator;
  return undefined;
}

/**
 * A place's address as typed: `CLUSTER/[NAMESPACE/]JOB/RANK[:CONTAINER]`, the container written only where the
 * address cannot leave it out (so it reads as the user would type it).
 */
export function clusterPlaceAddress(cluster: Pick<ClusterConfig, 'name' | 'namespace'>, job: Workload, pod?: RankedPod, container?: string): string {
  const head = `${cluster.name}/${cluster.namespace ? '' : `${job.namespace}/`}${job.name}`;
  if (!pod) return head;
  const shown = container !== undefined && container !== defaultContainer(job, pod) ? `:${container}` : '';
  return `${head}/${pod.label}${shown}`;
}
