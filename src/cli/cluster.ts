/**
 * The CLI on a Kubernetes cluster: an address on a cluster (address.ts parseClusterAddress) resolved against the
 * cluster's listing (core listTargets → its jobs, kube/podAddress.ts) to a pod container, which then is a target as
 * any other (`ls`, `metrics`, `inspect`, `eval` run their commands through core.targetExecutor: `kubectl exec`); and
 * `ls` of what is above a container (the cluster, a namespace, a job, a pod), shown as the tree shows it.
 */
import type { RemoteRunsCore } from '../core/service';
import { parseClusterAddress, type Address } from '../core/address';
import { RemoteRunsError, type ClusterConfig, type TargetRef } from '../core/types';
import { clusterPlaceAddress, defaultContainer, resolveClusterAddress, type ClusterPlace } from '../core/kube/podAddress';
import { jobDescription, podDescription, stateText } from '../core/tree/clusterNodes';
import type { RankedPod, Workload } from '../core/kube/workloads';
import { displayName } from '../shared/display';
import type { CommandOutput } from './ls';
import { followJobLogs, formatLogLine } from '../core/kube/logs';

/** A cluster address resolved: the place it names, and for a container the Address the run commands take. */
export interface ResolvedClusterAddress {
  place: ClusterPlace;
  /** Set when the address names a container: `host` the cluster, `target` the pod container, the run parts after it. */
  address?: Address;
  /** Problems of the listing that did not stop it (pods or job objects left out), said on stderr. */
  problems: string[];
}

/**
 * Parse and resolve `text` on `cluster`. A `pod:NS/POD:CONTAINER` address needs no listing; any other asks the
 * cluster for its pods and jobs (one `kubectl get pods` and the job objects: kube/clusterTargets.ts).
 */
export async function resolveClusterCliAddress(core: RemoteRunsCore, cluster: ClusterConfig, text: string, signal?: AbortSignal): Promise<ResolvedClusterAddress> {
  const parsed = parseClusterAddress(text, cluster.namespace !== undefined);
  const listing = parsed.target ? { workloads: [], problems: [] } : await core.listTargets(cluster.name, signal);
  const place = resolveClusterAddress(cluster, listing.workloads ?? [], parsed);
  if (place.level !== 'container') return { place, problems: listing.problems };
  return { place, address: containerAddress(cluster.name, place.target, place.segments), problems: listing.problems };
}

function containerAddress(host: string, target: TargetRef, segments: string[]): Address {
  const address: Address = { host, target };
  if (segments.length > 0) {
    address.segments = segments;
    address.run = segments[0];
    if (segments.length > 1) address.checkpoint = segments[1];
  }
  return address;
}

/** What a command other than `ls` needs: a container; a place above one is `bad-address` saying what to add. */
export function needContainer(verb: string, cluster: ClusterConfig, r: ResolvedClusterAddress): Address {
  if (r.address) return r.address;
  const p = r.place;
  const more =
    p.level === 'pod'
      ? `${p.pod.label} has ${p.pod.pod.containers.length} containers and none is its default: name one, ${clusterPlaceAddress(cluster, p.job, p.pod)}:${p.pod.pod.containers[0]?.name ?? 'CONTAINER'}`
      : `it names a ${p.level}; add ${p.level === 'cluster' ? 'NAMESPACE/JOB/RANK' : p.level === 'namespace' ? 'JOB/RANK' : 'RANK'} and the run (remote-runs ls shows them)`;
  throw new RemoteRunsError('bad-address', `${verb} needs a pod container and a run on ${cluster.name}: ${more}`);
}

/** The JSON of one pod: its label, name, state and containers, each with the address that reaches it. */
function podJson(cluster: ClusterConfig, job: Workload, p: RankedPod): unknown {
  return {
    label: p.label,
    pod: p.pod.name,
    state: p.state,
    ...(p.reason ? { reason: p.reason } : {}),
    ...(p.message ? { message: p.message } : {}),
    ...(p.rank !== undefined ? { rank: p.rank } : {}),
    restarts: p.restarts,
    containers: p.pod.containers.map((c) => ({ name: c.name, state: c.state, address: clusterPlaceAddress(cluster, job, p, c.name), ...(c.name === defaultContainer(job, p) ? { default: true } : {}) })),
  };
}

function jobJson(cluster: ClusterConfig, w: Workload): unknown {
  return {
    namespace: w.namespace,
    name: w.name,
    kind: w.kind,
    address: clusterPlaceAddress(cluster, w),
    state: w.state,
    ...(w.reason ? { reason: w.reason } : {}),
    ...(w.message ? { message: w.message } : {}),
    restarts: w.restarts,
    ...(w.queue ? { queue: w.queue } : {}),
    pods: w.pods.map((p) => podJson(cluster, w, p)),
  };
}

/** A job's rows: `bert  PyTorchJob · running · 3 pods`, then its pods (and their containers) indented. */
function jobLines(cluster: ClusterConfig, w: Workload, indent: string, depth: 'job' | 'pods'): string[] {
  const lines = [`${indent}${displayName(w.name).padEnd(28 - indent.length)} ${displayName(jobDescription(w))}${w.message ? `  (${displayName(w.message)})` : ''}`];
  if (depth === 'job') return lines;
  if (w.pods.length === 0) lines.push(`${indent}  No pods: ${displayName(stateText(w))}`);
  for (const p of w.pods) lines.push(...podLines(cluster, w, p, `${indent}  `));
  return lines;
}

function podLines(cluster: ClusterConfig, w: Workload, p: RankedPod, indent: string): string[] {
  const containers = p.pod.containers.map((c) => `${c.name}${c.name === defaultContainer(w, p) && p.pod.containers.length > 1 ? ' (default)' : ''}`);
  return [`${indent}${displayName(p.label).padEnd(Math.max(1, 28 - indent.length))} ${displayName(podDescription(p))}  ${displayName(p.pod.name)}: ${displayName(containers.join(', '))}${p.message ? `  (${displayName(p.message)})` : ''}`];
}

/**
 * `ls` of a cluster, a namespace, a job or a pod: what the tree shows there, with states (kube/workloads.ts) and,
 * in JSON, the address of every job and container. Nothing is an empty list: a cluster or namespace without pods or
 * jobs says where it looked.
 */
export function lsClusterPlace(cluster: ClusterConfig, r: ResolvedClusterAddress): CommandOutput {
  const p = r.place;
  const lines: string[] = [];
  let json: unknown;
  if (p.level === 'cluster' || p.level === 'namespace') {
    const byNamespace = new Map<string, Workload[]>();
    for (const w of p.workloads) byNamespace.set(w.namespace, [...(byNamespace.get(w.namespace) ?? []), w]);
    if (p.workloads.length === 0) {
      const where = p.level === 'namespace' ? `namespace ${p.namespace}` : 'any namespace you may list';
      lines.push(`No pods or jobs in ${where} on ${cluster.name}${cluster.selector ? ` with selector ${cluster.selector}` : ''}`);
    }
    for (const [ns, jobs] of byNamespace) {
      const running = jobs.filter((j) => j.state === 'running').length;
      // With a namespace in the entry (or named), its jobs stand at the top, as in the tree.
      const indent = cluster.namespace || p.level === 'namespace' ? '' : '  ';
      if (indent) lines.push(`${displayName(ns)}  ${jobs.length} job${jobs.length === 1 ? '' : 's'} · ${running} running`);
      for (const w of jobs) lines.push(...jobLines(cluster, w, indent, 'pods'));
    }
    json = { cluster: cluster.name, ...(p.level === 'namespace' ? { namespace: p.namespace } : {}), jobs: p.workloads.map((w) => jobJson(cluster, w)) };
  } else if (p.level === 'job') {
    lines.push(...jobLines(cluster, p.job, '', 'pods'));
    json = { job: jobJson(cluster, p.job) };
  } else if (p.level === 'pod') {
    lines.push(...podLines(cluster, p.job, p.pod, ''));
    for (const c of p.pod.pod.containers) lines.push(`  ${clusterPlaceAddress(cluster, p.job, p.pod, c.name)}  ${c.state}`);
    json = { pod: podJson(cluster, p.job, p.pod) };
  } else throw new RemoteRunsError('internal', 'a container is listed by its runs (lsCommand)');
  for (const problem of r.problems) lines.push(`! ${displayName(problem)}`);
  return { json: { ...(json as object), problems: r.problems }, text: `${lines.join('\n')}\n`, exitCode: 0 };
}

/**
 * `remote-runs logs CLUSTER/[NAMESPACE/]JOB[/RANK[:CONTAINER]] [--follow] [--all-containers] [--json]`: the job's
 * logs (or one rank's) merged in time order with rank prefixes (kube/logs.ts), one line each on stdout (`--json`:
 * one object per line), notes (restarted, replaced, not started) on stderr. With --follow, until Ctrl-C or every pod
 * has ended.
 */
export async function logsCommand(
  core: RemoteRunsCore,
  cluster: ClusterConfig,
  r: ResolvedClusterAddress,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream; signal: AbortSignal },
  options: { follow: boolean; allContainers: boolean; json: boolean },
): Promise<number> {
  const p = r.place;
  if (p.level === 'cluster' || p.level === 'namespace') throw new RemoteRunsError('bad-address', `logs needs a job (or one pod of it) on ${cluster.name}: add ${p.level === 'cluster' ? 'NAMESPACE/JOB' : 'JOB'} (remote-runs ls ${cluster.name} shows them)`);
  if (p.level === 'container' && !p.job) throw new RemoteRunsError('bad-address', `logs names a pod by its job and rank (${cluster.name}/${cluster.namespace ? '' : 'NAMESPACE/'}JOB[/RANK[:CONTAINER]]), not by pod:…`);
  const job = p.level === 'job' ? p.job : p.job!;
  // One rank: only its place, followed through restarts and replacement as in the whole job.
  // A container the address named is the only one shown; one it took by default gives way to --all-containers.
  const only = p.level === 'job' ? undefined : { label: p.pod!.label, ...(p.level === 'container' && (p.containerNamed || !options.allContainers) ? { container: p.container } : {}) };
  const several = options.allContainers && job.pods.some((x) => x.pod.containers.length > 1);
  const access = core.kubectlAccess(cluster);
  try {
    await followJobLogs(access, job, {
      ...(only ? { only } : {}),
      follow: options.follow,
      containers: options.allContainers ? 'all' : 'default',
      signal: io.signal,
      onLine: (l) => {
        io.stdout.write(options.json ? `${JSON.stringify({ rank: l.label, pod: l.pod, container: l.container, time: l.time, text: l.text })}\n` : `${formatLogLine(l, several)}\n`);
      },
      onNote: (label, text) => io.stderr.write(`remote-runs: [${label}] ${text}\n`),
    });
  } catch (e) {
    // Ctrl-C ends a follow, as it ends `metrics --follow`: what was read is shown (followJobLogs flushes it).
    if (options.follow && io.signal.aborted && e instanceof RemoteRunsError && e.kind === 'cancelled') return 0;
    throw e;
  }
  return 0;
}
