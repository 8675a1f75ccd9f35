/**
 * The tree's elements: one discriminated union. `getTreeItem` maps each kind; `contextValue` (the `type`,
 * plus qualifiers) drives the menus in package.json. Ids are stable across refreshes so VS Code keeps
 * expansion and selection.
 */
import type { Checkpoint, CheckpointFile, ErrorKind, Run, Target, TargetRef } from '../types';
import type { EntryInfo, TensorInfo } from '../inspect/types';
import type { TensorGroup } from '../inspect/summary';
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
}

export interface TargetNode extends Base {
  type: 'target';
  hostName: string;
  target: Target;
}

export interface RunNode extends Base {
  type: 'run';
  hostName: string;
  target: TargetRef;
  run: Run;
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

export type TreeNode = HostNode | TargetNode | RunNode | CheckpointNode | FileNode | StateNode | InspectNode;

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
