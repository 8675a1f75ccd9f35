/**
 * The tree's elements: one discriminated union. `getTreeItem` maps each kind; `contextValue` (the `type`,
 * plus qualifiers) drives the menus in package.json. Ids are stable across refreshes so VS Code keeps
 * expansion and selection.
 */
import type { Checkpoint, CheckpointFile, ErrorKind, Run, Target, TargetRef } from '../types';
import type { EntryInfo, TensorInfo } from '../inspect/types';
import type { TensorGroup } from '../inspect/summary';
import type { ContainerInfo } from '../kube/pods';
import type { RankedPod, Workload } from '../kube/workloads';
import { ID_SEP as SEP, targetId } from '../identity';
export { hostId, runId, targetId } from '../identity';

interface Base {
  /** Stable id: the path from the host down, NUL-joined (names may contain anything else). */
  id: string;
  parent?: TreeNode;
}

export interface HostNode extends Base {
  type: 'host';
  hostName: string;
  /** Where the host came from, shown in the tooltip. */
  source: 'settings' | 'ssh-config';
  /** A Kubernetes cluster (a `"kind": "kubernetes"` entry): its rows are namespaces, jobs and pods, not SSH targets. */
  cluster?: ClusterFacts;
}

/** What the tree shows of a cluster entry. */
export interface ClusterFacts {
  context: string;
  /** The entry's one namespace: its jobs sit right under the cluster, without a namespace row. */
  namespace?: string;
  selector?: string;
}

/** A namespace of a cluster whose entry names none: the jobs of its pods. */
export interface NamespaceNode extends Base {
  type: 'namespace';
  hostName: string;
  namespace: string;
  workloads: Workload[];
}

/** A job of a cluster (kube/workloads.ts: a Training Operator job, a JobSet, a Job, another controller, a bare pod). */
export interface JobNode extends Base {
  type: 'job';
  hostName: string;
  workload: Workload;
}

/** A pod of a job, by replica type and rank: its containers below. */
export interface PodNode extends Base {
  type: 'pod';
  hostName: string;
  /** The job's name (the pod row's tooltip). */
  job: string;
  pod: RankedPod;
}

export interface TargetNode extends Base {
  type: 'target';
  hostName: string;
  target: Target;
  /** A pod's container (target kind `pod`): its status as the cluster reports it. */
  container?: ContainerInfo;
}

export interface RunNode extends Base {
  type: 'run';
  hostName: string;
  target: TargetRef;
  run: Run;
  /** Why the run may be missing checkpoints or logs: its root was listed in part (service.ts runListedInPart). */
  listedInPart?: string;
}

export interface CheckpointNode extends Base {
  type: 'checkpoint';
  hostName: string;
  target: TargetRef;
  run: Run;
  checkpoint: Checkpoint;
}

export interface FileNode extends Base {
  type: 'file';
  hostName: string;
  target: TargetRef;
  file: CheckpointFile;
}

/** An empty or failed listing: says exactly which case it is. */
export interface StateNode extends Base {
  type: 'state';
  kind: ErrorKind;
  /** e.g. "/workspace: Path does not exist". */
  label: string;
  message: string;
  /** Names seen (no-checkpoints), shown in the tooltip. */
  seen: string[];
  /** The node whose listing this state belongs to; Retry refreshes it. */
  scope?: HostNode | TargetNode;
  /** What to do about it, where the kind's own hint (emptyStates.ts) does not fit this case. */
  hint?: string;
}

/**
 * What a checkpoint holds, read from its headers (core/inspect): the first child of a checkpoint, expanded on demand
 * (its children cost one remote command, then come from the inspect cache).
 */
export interface ContentsNode extends Base {
  type: 'contents';
  hostName: string;
  target: TargetRef;
  checkpoint: Checkpoint;
}

/** Tensors of one module (`model › layers › 0 › self_attn`), with its parameter count and bytes. */
export interface TensorGroupNode extends Base {
  type: 'tensor-group';
  group: TensorGroup;
}

export interface TensorNode extends Base {
  type: 'tensor';
  tensor: TensorInfo;
}

/**
 * A line of what the inspection found that is not a tensor: an entry (epoch, optimizer state, hyper-parameters), an
 * opaque global, a reason the checkpoint is incomplete, the state beside the model's (optimizer, scheduler, RNG,
 * callbacks: summary.ts stateParts) counted apart, or a file that was not read.
 */
export interface InspectNoteNode extends Base {
  type: 'inspect-note';
  kind: 'entry' | 'opaque' | 'incomplete' | 'state' | 'file';
  label: string;
  description: string;
  entry?: EntryInfo;
}

export type InspectNode = ContentsNode | TensorGroupNode | TensorNode | InspectNoteNode;

export type ClusterNode = NamespaceNode | JobNode | PodNode;

export type TreeNode = HostNode | ClusterNode | TargetNode | RunNode | CheckpointNode | FileNode | StateNode | InspectNode;

export function childId(parent: TreeNode, kind: string, key: string): string {
  return `${parent.id}${SEP}${kind}${SEP}${key}`;
}

/** Whether the node `id` is `ancestor` or lies below it (an id is the path from its host down). */
export function isAtOrBelow(id: string, ancestor: string): boolean {
  return id === ancestor || id.startsWith(`${ancestor}${SEP}`);
}

/** Host/target key of the listing a node belongs to. */
export function listingKey(hostName: string, target: TargetRef): string {
  return targetId(hostName, target);
}

/**
 * Whether the row `id` is `node` or may lie below it. A cluster's namespace, job and pod rows hold container rows
 * whose ids are their targets' (identity.ts targetId, the key of their listings and runs), not paths below them:
 * a container `pod:NS/POD:C` lies below its pod, its pod's job and its namespace.
 */
export function mayHold(node: TreeNode, id: string): boolean {
  if (isAtOrBelow(id, node.id)) return true;
  switch (node.type) {
    case 'namespace':
      return id.startsWith(`${targetId(node.hostName, { kind: 'pod', id: `${node.namespace}/` })}`);
    case 'job':
      return node.workload.pods.some((p) => id.startsWith(podPrefix(node.hostName, p.pod.namespace, p.pod.name)));
    case 'pod':
      return id.startsWith(podPrefix(node.hostName, node.pod.pod.namespace, node.pod.pod.name));
    default:
      return false;
  }
}

function podPrefix(hostName: string, namespace: string, pod: string): string {
  return targetId(hostName, { kind: 'pod', id: `${namespace}/${pod}:` });
}
