/**
 * Pods grouped as training users think of them: jobs, then replica types and ranks, each with its state. Pure: the
 * pods come from kube/pods.ts, the owner objects (when listed) from ownerObjects below.
 *
 * Every label key and field is the controller's own, cited beside it:
 * - Kubeflow Training Operator v1 (PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob):
 *   kubeflow/training-operator `pkg/apis/kubeflow.org/v1/common_types.go` (branch release-1.9): JobNameLabel,
 *   ReplicaTypeLabel (the replica type in lower case: pkg/core/job.go), ReplicaIndexLabel, JobRoleLabel; the
 *   env of a PyTorchJob's pods (RANK, PET_NODE_RANK, WORLD_SIZE, MASTER_ADDR): pkg/controller.v1/pytorch/envvar.go
 *   and master.go; RunPolicy.Suspend.
 * - JobSet (and Kubeflow Trainer v2's TrainJob, which runs as a JobSet: kubeflow/trainer `pkg/constants/constants.go`
 *   JobSetKind): kubernetes-sigs/jobset `api/jobset/v1alpha2/jobset_types.go` JobSetNameKey, ReplicatedJobNameKey,
 *   JobIndexKey, JobGlobalIndexKey; JobSetSpec.Suspend.
 * - Kubernetes Job: kubernetes `pkg/apis/batch/types.go` JobNameLabel `batch.kubernetes.io/job-name`,
 *   LegacyJobNameLabel `job-name`, JobCompletionIndexAnnotation `batch.kubernetes.io/job-completion-index` (also a
 *   label since 1.28, PodIndexLabel); JobSpec.Suspend.
 * - Kueue: kubernetes-sigs/kueue `pkg/controller/constants/constants.go` QueueLabel `kueue.x-k8s.io/queue-name`;
 *   `pkg/controller/jobs/pod/constants/constants.go` SchedulingGateName `kueue.x-k8s.io/admission` (plain pods
 *   wait behind it); a Job, JobSet or PyTorchJob waits with `suspend: true` until admitted, and has no pods then.
 * - Pod states: kubernetes `staging/src/k8s.io/api/core/v1/types.go` (PodScheduled condition, reasons
 *   `Unschedulable` and `SchedulingGated`: PodReasonUnschedulable, PodReasonSchedulingGated), the kubelet's eviction
 *   (`pkg/kubelet/eviction/helpers.go` Reason = "Evicted") and its container reasons (ContainerCreating,
 *   PodInitializing, ErrImagePull, ImagePullBackOff, CrashLoopBackOff, OOMKilled, Error, Completed).
 */
import type { ContainerInfo, PodInfo } from './pods';

/** Training Operator v1 (common_types.go). */
export const KUBEFLOW_JOB_NAME = 'training.kubeflow.org/job-name';
export const KUBEFLOW_REPLICA_TYPE = 'training.kubeflow.org/replica-type';
export const KUBEFLOW_REPLICA_INDEX = 'training.kubeflow.org/replica-index';
export const KUBEFLOW_OPERATOR_NAME = 'training.kubeflow.org/operator-name';
/** JobSet (jobset_types.go). */
export const JOBSET_NAME = 'jobset.sigs.k8s.io/jobset-name';
export const JOBSET_REPLICATED_JOB = 'jobset.sigs.k8s.io/replicatedjob-name';
export const JOBSET_JOB_INDEX = 'jobset.sigs.k8s.io/job-index';
export const JOBSET_GLOBAL_INDEX = 'jobset.sigs.k8s.io/job-global-index';
/** Kubernetes Job (pkg/apis/batch/types.go). */
export const BATCH_JOB_NAME = 'batch.kubernetes.io/job-name';
export const LEGACY_JOB_NAME = 'job-name';
export const BATCH_COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';
/** Kueue. */
export const KUEUE_QUEUE_NAME = 'kueue.x-k8s.io/queue-name';
export const KUEUE_ADMISSION_GATE = 'kueue.x-k8s.io/admission';

export type WorkloadState = 'queued' | 'creating' | 'running' | 'succeeded' | 'failed' | 'evicted' | 'unknown';

export interface StateOf {
  state: WorkloadState;
  /** The cause in one word where the cluster gives one: Unschedulable, ImagePullBackOff, OOMKilled, Evicted, CrashLoopBackOff… */
  reason?: string;
  /** The cluster's own words (the scheduler's, the kubelet's), or what we could tell. */
  message?: string;
  /** A failed container that the kubelet restarts (CrashLoopBackOff): failed now, not for good. */
  restarting?: true;
}

export interface RankedPod extends StateOf {
  pod: PodInfo;
  /** The replica type (`master`, `worker`) or replicated job (`workers`, `trainer-node`). */
  replicaType?: string;
  /** The index within the replica type (Training Operator) or the completion index (a Job's, a JobSet's). */
  index?: number;
  /** A JobSet's job index within its replicated job. */
  jobIndex?: number;
  /** The global rank the job gives the pod (RANK, else PET_NODE_RANK, set literally in its env). */
  rank?: number;
  /** How the pod is shown and addressed within its job: `master-0`, `workers-0-2`, `3`, or the pod's name. */
  label: string;
  restarts: number;
}

export type JobKind = 'training-operator' | 'jobset' | 'job' | 'owner' | 'pod';

export interface Workload extends StateOf {
  namespace: string;
  name: string;
  /** What grouped it: a Training Operator job, a JobSet, a Job, another controller, or a bare pod. */
  grouping: JobKind;
  /** The controller's kind where known (PyTorchJob, JobSet, Job, StatefulSet…; `Pod` for a bare pod). */
  kind: string;
  /** The Kueue queue (`kueue.x-k8s.io/queue-name`) of the job or its pods. */
  queue?: string;
  pods: RankedPod[];
  /** Restarts of every container of every pod. */
  restarts: number;
  /** How many pods are in each state. */
  counts: Partial<Record<WorkloadState, number>>;
}

/** A Job, JobSet, PyTorchJob or TrainJob object, as far as its state goes (ownerObjects reads them). */
export interface OwnerObject {
  namespace: string;
  name: string;
  kind: string;
  /** `spec.suspend` (Job, JobSet, TrainJob) or `spec.runPolicy.suspend` (Training Operator v1). */
  suspended: boolean;
  labels: Record<string, string>;
  /** The terminal condition, when it has one (`Complete`/`Succeeded`/`Completed`, `Failed`) with its reason and message. */
  finished?: { ok: boolean; reason?: string; message?: string };
}

/** Order of replica types within a job: the coordinating ones first, then by name. */
const LEADERS = ['master', 'chief', 'launcher', 'coordinator', 'leader', 'driver'];

/** Where a pod belongs: the first of the keys it carries. */
function jobKey(pod: PodInfo): { grouping: JobKind; name: string; kind: string } {
  const l = pod.labels;
  const ctl = pod.controller;
  if (l[KUBEFLOW_JOB_NAME]) return { grouping: 'training-operator', name: l[KUBEFLOW_JOB_NAME], kind: ctl?.kind ?? operatorKind(l[KUBEFLOW_OPERATOR_NAME]) };
  if (l[JOBSET_NAME]) return { grouping: 'jobset', name: l[JOBSET_NAME], kind: 'JobSet' };
  if (l[BATCH_JOB_NAME]) return { grouping: 'job', name: l[BATCH_JOB_NAME], kind: 'Job' };
  if (l[LEGACY_JOB_NAME]) return { grouping: 'job', name: l[LEGACY_JOB_NAME], kind: 'Job' };
  if (ctl) return { grouping: 'owner', name: ctl.name, kind: ctl.kind };
  return { grouping: 'pod', name: pod.name, kind: 'Pod' };
}

/** `pytorchjob-controller` → PyTorchJob (the operator names its controllers by kind, lower case). */
function operatorKind(operator: string | undefined): string {
  const known: Record<string, string> = { pytorchjob: 'PyTorchJob', tfjob: 'TFJob', mpijob: 'MPIJob', xgboostjob: 'XGBoostJob', paddlejob: 'PaddleJob', jaxjob: 'JAXJob' };
  const base = operator?.replace(/-controller$/, '') ?? '';
  return known[base] ?? 'TrainingJob';
}

/** A non-negative integer label or annotation value; anything else is not an index. */
function index(v: string | undefined): number | undefined {
  return v !== undefined && /^\d{1,9}$/.test(v) ? Number(v) : undefined;
}

function rankOf(pod: PodInfo): number | undefined {
  for (const c of pod.containers) {
    const r = index(c.env.RANK) ?? index(c.env.PET_NODE_RANK);
    if (r !== undefined) return r;
  }
  return undefined;
}

/** Where a pod sits in its job, and its label. */
function placeOf(pod: PodInfo, grouping: JobKind): Pick<RankedPod, 'replicaType' | 'index' | 'jobIndex' | 'label'> {
  const l = pod.labels;
  const completion = index(l[BATCH_COMPLETION_INDEX] ?? pod.annotations[BATCH_COMPLETION_INDEX]);
  if (grouping === 'training-operator') {
    const type = l[KUBEFLOW_REPLICA_TYPE]?.toLowerCase();
    const i = index(l[KUBEFLOW_REPLICA_INDEX]);
    return { ...(type ? { replicaType: type } : {}), ...(i !== undefined ? { index: i } : {}), label: type && i !== undefined ? `${type}-${i}` : pod.name };
  }
  if (grouping === 'jobset') {
    const type = l[JOBSET_REPLICATED_JOB];
    const j = index(l[JOBSET_JOB_INDEX]);
    const label = type && j !== undefined ? `${type}-${j}${completion !== undefined ? `-${completion}` : ''}` : pod.name;
    return { ...(type ? { replicaType: type } : {}), ...(j !== undefined ? { jobIndex: j } : {}), ...(completion !== undefined ? { index: completion } : {}), label };
  }
  if (grouping === 'job' && completion !== undefined) return { index: completion, label: String(completion) };
  return { label: pod.name };
}

function containerRestarts(pod: PodInfo): number {
  return [...pod.containers, ...pod.initContainers].reduce((n, c) => n + c.restarts, 0);
}

/** Reasons of a waiting container that mean it will not start by itself (the image or its config is wrong). */
const STUCK = new Set(['ErrImagePull', 'ImagePullBackOff', 'InvalidImageName', 'ErrImageNeverPull', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);

/** A container's end in words: `OOMKilled (exit code 137)`. */
function ended(c: ContainerInfo): string {
  const code = c.exitCode ?? c.last?.exitCode;
  const reason = c.state === 'terminated' ? c.reason : c.last?.reason;
  return `${c.name}: ${reason ?? 'terminated'}${code !== undefined ? ` (exit code ${code})` : ''}`;
}

/** The state of one pod. */
export function podState(pod: PodInfo): StateOf {
  // kubelet eviction (pkg/kubelet/eviction/helpers.go): phase Failed, status.reason "Evicted", its message says why.
  if (pod.reason === 'Evicted') return { state: 'evicted', reason: 'Evicted', ...(pod.message ? { message: pod.message } : {}) };
  if (pod.phase === 'Succeeded') return { state: 'succeeded' };
  if (pod.phase === 'Failed') {
    const bad = [...pod.initContainers, ...pod.containers].find((c) => c.state === 'terminated' && c.exitCode !== 0);
    const reason = pod.reason ?? bad?.reason ?? 'Failed';
    const message = pod.message ?? (bad ? ended(bad) : undefined);
    return { state: 'failed', reason, ...(message ? { message } : {}) };
  }
  if (pod.phase === 'Pending') {
    const gates = pod.schedulingGates;
    if (gates.includes(KUEUE_ADMISSION_GATE)) {
      const q = pod.labels[KUEUE_QUEUE_NAME];
      return { state: 'queued', reason: 'SchedulingGated', message: `waiting for Kueue to admit it${q ? ` (queue ${q})` : ''}` };
    }
    if (gates.length) return { state: 'queued', reason: 'SchedulingGated', message: `held by the scheduling gate${gates.length > 1 ? 's' : ''} ${gates.join(', ')}` };
    const scheduled = pod.conditions.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status === 'False') return { state: 'queued', reason: scheduled.reason ?? 'Unschedulable', ...(scheduled.message ? { message: scheduled.message } : {}) };
    if (!pod.nodeName) return { state: 'queued', reason: 'Pending', message: 'waiting for the scheduler' };
    const stuck = [...pod.initContainers, ...pod.containers].find((c) => c.state === 'waiting' && c.reason && STUCK.has(c.reason));
    if (stuck) return { state: 'creating', reason: stuck.reason, message: `${stuck.name}: ${stuck.message ?? stuck.reason}` };
    const initRunning = pod.initContainers.find((c) => c.state !== 'terminated' || c.exitCode !== 0);
    if (initRunning && pod.initContainers.length) {
      const done = pod.initContainers.filter((c) => c.state === 'terminated' && c.exitCode === 0).length;
      return { state: 'creating', reason: `Init:${done}/${pod.initContainers.length}`, message: `init container ${initRunning.name} ${initRunning.state}${initRunning.reason ? ` (${initRunning.reason})` : ''}` };
    }
    const waiting = pod.containers.find((c) => c.state === 'waiting' && c.reason);
    return { state: 'creating', reason: waiting?.reason ?? 'ContainerCreating', ...(waiting?.message ? { message: waiting.message } : {}) };
  }
  if (pod.phase === 'Running') {
    const crashing = pod.containers.find((c) => c.state === 'waiting' && c.reason === 'CrashLoopBackOff');
    if (crashing) return { state: 'failed', reason: 'CrashLoopBackOff', message: `${ended(crashing)}; restarted ${crashing.restarts} time${crashing.restarts === 1 ? '' : 's'}`, restarting: true };
    return { state: 'running' };
  }
  // Unknown: the node stopped reporting (kubernetes core/v1 PodUnknown).
  return { state: 'unknown', reason: pod.phase, ...(pod.message ? { message: pod.message } : {}) };
}

/** Job state from its pods (and its owner object, when listed): most telling first. */
function jobState(pods: RankedPod[], owner: OwnerObject | undefined): StateOf {
  if (owner?.finished) {
    const f = owner.finished;
    return { state: f.ok ? 'succeeded' : 'failed', ...(f.reason ? { reason: f.reason } : {}), ...(f.message ? { message: f.message } : {}) };
  }
  if (owner?.suspended) {
    const q = owner.labels[KUEUE_QUEUE_NAME];
    return { state: 'queued', reason: 'Suspended', message: q ? `waiting for Kueue to admit it (queue ${q})` : `${owner.kind} ${owner.name} is suspended (spec.suspend: true)` };
  }
  const has = (s: WorkloadState): RankedPod | undefined => pods.find((p) => p.state === s);
  const first = has('failed') ?? has('evicted');
  if (first && !has('running')) return { state: first.state, ...(first.reason ? { reason: first.reason } : {}), message: `${first.label}: ${first.message ?? first.reason ?? first.state}`, ...(first.restarting ? { restarting: true as const } : {}) };
  if (has('running')) {
    const trouble = first ?? has('creating') ?? has('queued');
    return { state: 'running', ...(trouble ? { message: `${trouble.label} is ${trouble.state}${trouble.reason ? ` (${trouble.reason})` : ''}` } : {}) };
  }
  for (const s of ['creating', 'queued', 'unknown'] as const) {
    const p = has(s);
    if (p) return { state: s, ...(p.reason ? { reason: p.reason } : {}), ...(p.message ? { message: `${p.label}: ${p.message}` } : {}) };
  }
  if (pods.length && pods.every((p) => p.state === 'succeeded')) return { state: 'succeeded' };
  return { state: 'unknown' };
}

function comparePods(a: RankedPod, b: RankedPod): number {
  const ta = a.replicaType ?? '';
  const tb = b.replicaType ?? '';
  if (ta !== tb) {
    const la = LEADERS.indexOf(ta);
    const lb = LEADERS.indexOf(tb);
    if (la !== lb) return (la < 0 ? LEADERS.length : la) - (lb < 0 ? LEADERS.length : lb);
    return ta < tb ? -1 : 1;
  }
  const d = (a.jobIndex ?? -1) - (b.jobIndex ?? -1) || (a.index ?? -1) - (b.index ?? -1);
  if (d) return d;
  return a.pod.name < b.pod.name ? -1 : a.pod.name > b.pod.name ? 1 : 0;
}

/**
 * Group pods into jobs (the first key a pod carries: Training Operator job, JobSet, Job, legacy Job, controller owner;
 * else a bare pod of its own), each job's pods ordered by replica type (master, chief, launcher… first) and index,
 * with states. `owners` (Jobs, JobSets, PyTorchJobs… from ownerObjects) add what only they know: a job Kueue has
 * suspended (it has no pods yet) and a job's own verdict. Jobs come sorted by namespace, then name.
 */
export function groupWorkloads(pods: readonly PodInfo[], owners: readonly OwnerObject[] = []): Workload[] {
  const jobs = new Map<string, Workload>();
  const ownerOf = new Map<string, OwnerObject>();
  for (const o of owners) {
    // A JobSet's (or a Training Operator's) own batch Jobs are parts of it, not jobs of their own.
    if (o.kind === 'Job' && (o.labels[JOBSET_NAME] || o.labels[KUBEFLOW_JOB_NAME])) continue;
    const id = `${o.namespace}\0${ownerGrouping(o.kind)}\0${o.name}`;
    // A TrainJob runs as the JobSet of its name: the TrainJob is the one shown.
    if (ownerOf.get(id)?.kind === 'TrainJob') continue;
    ownerOf.set(id, o);
  }
  for (const pod of pods) {
    const key = jobKey(pod);
    const id = `${pod.namespace}\0${key.grouping}\0${key.name}`;
    let job = jobs.get(id);
    if (!job) {
      job = { namespace: pod.namespace, name: key.name, grouping: key.grouping, kind: key.kind, pods: [], restarts: 0, counts: {}, state: 'unknown' };
      jobs.set(id, job);
    }
    const restarts = containerRestarts(pod);
    const rank = rankOf(pod);
    job.pods.push({ pod, ...placeOf(pod, key.grouping), ...podState(pod), restarts, ...(rank !== undefined ? { rank } : {}) });
    const q = pod.labels[KUEUE_QUEUE_NAME];
    if (q && !job.queue) job.queue = q;
  }
  // A suspended job has no pods: it is listed from its owner object alone.
  for (const [id, o] of ownerOf) {
    if (jobs.has(id)) continue;
    const grouping = ownerGrouping(o.kind);
    jobs.set(id, { namespace: o.namespace, name: o.name, grouping, kind: o.kind, pods: [], restarts: 0, counts: {}, state: 'unknown' });
  }
  const out = [...jobs.entries()].map(([id, job]) => {
    const owner = ownerOf.get(id);
    job.pods.sort(comparePods);
    job.restarts = job.pods.reduce((n, p) => n + p.restarts, 0);
    for (const p of job.pods) job.counts[p.state] = (job.counts[p.state] ?? 0) + 1;
    if (owner) {
      job.kind = owner.kind;
      const q = owner.labels[KUEUE_QUEUE_NAME];
      if (q) job.queue = q;
    }
    const s = jobState(job.pods, owner);
    delete job.reason;
    delete job.message;
    return Object.assign(job, s);
  });
  return out.sort((a, b) => (a.namespace !== b.namespace ? (a.namespace < b.namespace ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : a.grouping < b.grouping ? -1 : 1));
}

/** Which grouping an owner object's pods fall in. */
function ownerGrouping(kind: string): JobKind {
  if (kind === 'JobSet' || kind === 'TrainJob') return 'jobset';
  if (kind === 'Job') return 'job';
  if (/^(PyTorch|TF|MPI|XGBoost|Paddle|JAX)Job$/.test(kind)) return 'training-operator';
  return 'owner';
}

/**
 * Owner objects from `kubectl get jobs.batch,jobsets.jobset.x-k8s.io,pytorchjobs.kubeflow.org… -o json` items:
 * their suspension (Job/JobSet/TrainJob `spec.suspend`; Training Operator `spec.runPolicy.suspend`) and terminal
 * condition (Job `Complete`/`Failed`: kubernetes pkg/apis/batch/types.go JobConditionType; JobSet `Completed`/`Failed`:
 * jobset_types.go JobSetConditionType; Training Operator `Succeeded`/`Failed`: common_types.go JobConditionType).
 * Items that are not objects with a namespace and a name are left out.
 */
export function ownerObjects(items: readonly unknown[]): OwnerObject[] {
  const out: OwnerObject[] = [];
  for (const item of items) {
    if (!item || typeof item !== 'object') continue;
    const o = item as { kind?: unknown; metadata?: { namespace?: unknown; name?: unknown; labels?: unknown }; spec?: { suspend?: unknown; runPolicy?: { suspend?: unknown } }; status?: { conditions?: unknown } };
    const ns = o.metadata?.namespace;
    const name = o.metadata?.name;
    if (typeof o.kind !== 'string' || typeof ns !== 'string' || typeof name !== 'string') continue;
    const labels: Record<string, string> = {};
    if (o.metadata?.labels && typeof o.metadata.labels === 'object') {
      for (const [k, v] of Object.entries(o.metadata.labels as Record<string, unknown>)) if (typeof v === 'string') labels[k] = v;
    }
    const suspended = o.spec?.suspend === true || o.spec?.runPolicy?.suspend === true;
    const conditions = Array.isArray(o.status?.conditions) ? (o.status.conditions as { type?: unknown; status?: unknown; reason?: unknown; message?: unknown }[]) : [];
    const done = conditions.find((c) => c && c.status === 'True' && ['Complete', 'Completed', 'Succeeded', 'Failed'].includes(String(c.type)));
    const owner: OwnerObject = { namespace: ns, name, kind: o.kind, suspended, labels };
    if (done) owner.finished = { ok: done.type !== 'Failed', ...(typeof done.reason === 'string' ? { reason: done.reason } : {}), ...(typeof done.message === 'string' ? { message: done.message } : {}) };
    out.push(owner);
  }
  return out;
}

