/**
 * Between the metrics views and the Remote Runs tree: which run a tree node means, a quick pick over the runs
 * the tree knows, and selecting a checkpoint in the tree (expanding its ancestors first when needed).
 */
import * as vscode from 'vscode';
import { RemoteRunsError, formatTarget } from '../../core/types';
import type { RunRefWire } from '../../shared/metricsProtocol';
import { childId, hostId, runId, targetId, type TreeNode } from '../../core/tree/nodes';
import type { RunsTreeProvider } from '../tree/treeProvider';
import { runKeyOf, toRunRef } from '../../core/runRef';

/** The run a node is or belongs to (run or checkpoint); undefined for other nodes. */
export function runRefOfNode(node: TreeNode | undefined): RunRefWire | undefined {
  if (!node) return undefined;
  if (node.type === 'run' || node.type === 'checkpoint') return toRunRef(node.hostName, node.target, node.run);
  if (node.type === 'file' && node.parent?.type === 'checkpoint') return runRefOfNode(node.parent);
  return undefined;
}

/** Accept a tree node, a RunRefWire (from the status bar) or nothing. */
export function runRefOfArg(arg: unknown): RunRefWire | undefined {
  if (!arg || typeof arg !== 'object') return undefined;
  if ('type' in arg) return runRefOfNode(arg as TreeNode);
  if ('runPath' in arg && 'hostName' in arg) return arg as RunRefWire;
  return undefined;
}

/** A quick pick of every run the tree has listed (minus `exclude`, by key). */
export async function pickRun(tree: RunsTreeProvider, title: string, exclude: readonly string[] = []): Promise<RunRefWire | undefined> {
  const runs = tree.knownRuns().filter((n) => !exclude.includes(n.id));
  if (runs.length === 0) {
    throw new RemoteRunsError('not-found', 'No runs are listed yet: expand a host and a container in the Remote Runs tree first');
  }
  const items = runs.map((n) => ({
    label: n.run.name,
    description: `${n.hostName}/${formatTarget(n.target)}`,
    detail: `${n.run.path} · ${n.run.metrics.length ? n.run.metrics.map((m) => m.slice(m.lastIndexOf('/') + 1)).join(', ') : 'no metrics logs'}`,
    node: n,
  }));
  const chosen = await vscode.window.showQuickPick(items, { title, matchOnDescription: true, matchOnDetail: true });
  return chosen ? toRunRef(chosen.node.hostName, chosen.node.target, chosen.node.run) : undefined;
}

/**
 * Select (and show) the checkpoint at `step` of the run in the tree. Elements must be the very objects the
 * tree handed to VS Code, so each level is looked up by id, and a level not listed yet is expanded first.
 */
export async function revealCheckpoint(tree: RunsTreeProvider, view: vscode.TreeView<TreeNode>, run: RunRefWire, step: number): Promise<void> {
  const runNode = await nodeFor(tree, view, [hostId(run.hostName), targetId(run.hostName, run.target), runId(run.hostName, run.target, run.runPath)]);
  if (!runNode || runNode.type !== 'run') {
    throw new RemoteRunsError('not-found', `${run.runName} is not in the Remote Runs tree (is its host still configured?)`);
  }
  const checkpoint = runNode.run.checkpoints.find((c) => c.step === step) ?? run.checkpoints.find((c) => c.step === step);
  if (!checkpoint) throw new RemoteRunsError('not-found', `${run.runName} has no checkpoint at step ${step} any more`);
  const node = await nodeFor(tree, view, [runNode.id, childId(runNode, 'c', checkpoint.path)]);
  if (!node) throw new RemoteRunsError('not-found', `The checkpoint ${checkpoint.name} is no longer listed`);
  await view.reveal(node, { select: true, focus: false, expand: false });
}

/** The node at the end of an id path, expanding each level that is not listed yet. */
async function nodeFor(tree: RunsTreeProvider, view: vscode.TreeView<TreeNode>, ids: string[]): Promise<TreeNode | undefined> {
  let parent: TreeNode | undefined;
  for (const id of ids) {
    let node = tree.nodeById(id);
    if (!node && parent) {
      await view.reveal(parent, { select: false, focus: false, expand: true });
      node = await waitFor(() => tree.nodeById(id), 10_000);
    }
    if (!node) return undefined;
    parent = node;
  }
  return parent;
}

async function waitFor<T>(get: () => T | undefined, ms: number): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = get();
    if (v !== undefined || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The step of the selected checkpoint if it belongs to this run. */
export function selectedStepOf(view: vscode.TreeView<TreeNode>, runKey: string): number | null {
  const node = view.selection[0];
  if (node?.type !== 'checkpoint') return null;
  return runKeyOf(toRunRef(node.hostName, node.target, node.run)) === runKey ? node.checkpoint.step : null;
}
