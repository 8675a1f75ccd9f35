/**
 * "Compare Checkpoints…" (issue 18): from the palette (A, then B, each through the host → target → run →
 * checkpoint picks), from a checkpoint's context menu in the tree (B picked: any run on any configured host), or on
 * two checkpoints selected together in the tree. Opens the compare panel (compareView.ts).
 */
import * as vscode from 'vscode';
import type { HostDirectory } from '../../core/hosts';
import type { Inspection } from '../../core/inspect';
import type { RemoteRunsCore } from '../../core/service';
import type { CheckpointNode, TreeNode } from '../../core/tree/nodes';
import { RemoteRunsError, type Checkpoint, type TargetRef } from '../../core/types';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import { pickCheckpoint, type PickedCheckpoint } from '../pickCheckpoint';
import { ComparePanels } from './compareView';

export interface CompareRegisterDeps {
  store: DisposableStore;
  core: RemoteRunsCore;
  hosts: HostDirectory;
  log: Logger;
  context: vscode.ExtensionContext;
  inspect(hostName: string, target: TargetRef, checkpoint: Checkpoint): Promise<Inspection>;
}

const refOf = (n: CheckpointNode): PickedCheckpoint => ({ hostName: n.hostName, target: n.target, run: n.run, checkpoint: n.checkpoint });

/**
 * The two checkpoints of a multi-selection, A first: of one run, the earlier step is A (the table reads as what
 * changed since); otherwise in the order selected. Undefined when the selection is not two checkpoints.
 */
export function pairOfSelection(nodes: readonly TreeNode[]): [PickedCheckpoint, PickedCheckpoint] | undefined {
  if (nodes.length !== 2 || nodes.some((n) => n.type !== 'checkpoint')) return undefined;
  const [x, y] = (nodes as CheckpointNode[]).map(refOf);
  const sameRun = x.hostName === y.hostName && x.target.kind === y.target.kind && x.target.id === y.target.id && x.run.path === y.run.path;
  if (sameRun && x.checkpoint.step !== null && y.checkpoint.step !== null && y.checkpoint.step < x.checkpoint.step) return [y, x];
  return [x, y];
}

export function registerCompare(deps: CompareRegisterDeps): void {
  const pick = (title: string): Promise<PickedCheckpoint | undefined> => pickCheckpoint(deps.core, deps.hosts, title);
  const panels = deps.store.register(new ComparePanels({ extensionUri: deps.context.extensionUri, log: deps.log, inspect: deps.inspect, pick }));
  deps.store.register(
    registerCommand(
      CommandIds.compareCheckpoints,
      async (node?: TreeNode, selected?: readonly TreeNode[]) => {
        // A context-menu click on a multi-selection passes the clicked node and the whole selection.
        if (selected && selected.length > 1) {
          const pair = pairOfSelection(selected);
          if (!pair) throw new RemoteRunsError('not-found', `Select two checkpoints to compare (the selection holds ${selected.length} rows${selected.some((n) => n.type !== 'checkpoint') ? ', not all of them checkpoints' : ''})`);
          panels.show(...pair);
          return;
        }
        let a: PickedCheckpoint | undefined;
        if (node?.type === 'checkpoint') a = refOf(node);
        else if (node === undefined) a = await pick('Compare Checkpoints: A');
        else throw new RemoteRunsError('not-found', 'Select a checkpoint in the Remote Runs tree to compare');
        if (!a) return;
        const b = await pick(`Compare ${a.checkpoint.name} with`);
        if (b) panels.show(a, b);
      },
      deps.log,
    ),
  );
}
