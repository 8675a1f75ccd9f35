import * as vscode from 'vscode';
import type { RemoteRunsCore } from '../../core/service';
import { checkpointLabel, formatTarget, latestCheckpoint, latestPhrase } from '../../core/types';
import type { ConnectionState } from '../../core/ssh/types';
import { emptyStateText, stateReason } from '../../core/emptyStates';
import { formatAge, formatBytes, formatCheckpointBytes } from '../../core/util/format';
import type { Event } from '../../core/util/event';
import { hostId, mayHold, type CheckpointNode, type JobNode, type NamespaceNode, type PodNode, type FileNode, type HostNode, type InspectNoteNode, type RunNode, type StateNode, type TargetNode, type TensorGroupNode, type TensorNode, type TreeNode } from '../../core/tree/nodes';
import type { Listings } from '../../core/discovery/listings';
import { RunsTreeModel, groupDescription, type HostEntry, type TreeViewState } from '../../core/tree/model';
import type { Checkpoint, TargetRef } from '../../core/types';
import { summaryLine, type Inspection } from '../../core/inspect';
import type { Logger } from '../log';
import { partialPercent, type LocalCopy } from '../../core/transfer';
import { configSummary, type RunConfig } from '../../core/runs/config';
import { displayName, displayText } from '../../shared/display';
import { jobDescription, podDescription, stateIcon as workloadIcon, stateText } from '../../core/tree/clusterNodes';

export type { HostEntry };

export interface TreeDeps {
  core: RemoteRunsCore;
  hosts(): HostEntry[];
  connectionState(host: string): ConnectionState;
  onDidChangeConnectionState: Event<{ host: string; state: ConnectionState }>;
  log: Logger;
  /** See TreeSource.sshConfigProblems. */
  sshConfigProblems?(hostName: string): string[];
  /** Which client carries the host and why (describeTransport), for its tooltip; undefined when it cannot be said. */
  transport?(hostName: string): string | undefined;
  /** Extra text after a checkpoint's description (e.g. its evals' state); redraw with `redraw` when it changes. */
  checkpointDecoration?(node: CheckpointNode): string | undefined;
  /** An eval of this checkpoint is pending or running (Stop Eval is offered only then). */
  checkpointEvalRunning?(node: CheckpointNode): boolean;
  /** The checkpoint's local copy, when it is downloaded (download/downloadMarks.ts); redraw with `redraw` when it changes. */
  checkpointLocalCopy?(node: CheckpointNode): LocalCopy | undefined;
  /** A run's config files, for its hover (read when the pointer rests on it, cached by the reader). */
  runConfig?(node: RunNode): Promise<RunConfig>;
  /** What a checkpoint holds (its headers, read over one remote command, cached per file): its contents row and hover. */
  inspect?(hostName: string, target: TargetRef, checkpoint: Checkpoint): Promise<Inspection>;
  /** The window's one listing cache, shared with the language server's answers (default: the model's own). */
  listings?: Listings<unknown>;
  /** Where the user's place (rows open, the row selected) is kept for the next window: the workspace's state. */
  viewState?: { get(): unknown; set(state: TreeViewState): void };
}

/**
 * The hosts → targets → runs → checkpoints tree, rendered: the model (core/tree/model.ts) holds the listings,
 * the nodes and the refresh; this provider turns nodes into TreeItems and the model's changes into redraws. Stable
 * ids keep expansion and selection while rows stay; the model's record of what is open and selected brings them back
 * when rows are listed again (after a failed listing, in a reloaded window).
 */
export class RunsTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;

  readonly model: RunsTreeModel;
  /** The connection-state text each host item was last drawn with. */
  private readonly renderedHostState = new Map<string, string>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private view: vscode.TreeView<TreeNode> | undefined;
  /**
   * Whether the row the user selected is in the tree now. It leaves when its rows are listed again without it (a
   * listing failed above it; VS Code then drops the selection) and comes back selected when listed again.
   */
  private selectionShown = false;
  /**
   * Rows redrawn whose children VS Code has not asked for since. VS Code asks for a row's children only while it is
   * open, except for a row redrawn itself: the other rows asked for are open, whatever events were lost.
   */
  private readonly redrawn = new Set<string>();

  constructor(private readonly deps: TreeDeps) {
    this.model = new RunsTreeModel({
      hosts: () => deps.hosts(),
      listTargets: (h) => deps.core.listTargets(h),
      listTarget: (h, t) => deps.core.listTarget(h, t),
      sshConfigProblems: (h) => deps.sshConfigProblems?.(h) ?? [],
      ...(deps.inspect ? { inspect: deps.inspect } : {}),
    }, undefined, undefined, deps.listings);
    this.model.restoreViewState(deps.viewState?.get());
    const changed = this.model.onDidChange((node) => this.fire(node));
    const sub = deps.onDidChangeConnectionState(({ host }) => {
      const node = this.model.nodeAt(hostId(host));
      if (node) this.fire(node);
    });
    this.subscriptions.push({ dispose: () => sub.dispose() }, { dispose: () => changed.dispose() });
  }

  /**
   * Hook the view's expand, collapse and selection events: the model keeps what is open (for the timed refresh, and
   * to draw it open when listed again) and what is selected (to select it again), saved for the next window.
   */
  attach(view: vscode.TreeView<TreeNode>): void {
    this.view = view;
    const save = (): void => this.saveViewState();
    this.subscriptions.push(
      view.onDidExpandElement((e) => {
        this.model.setExpanded(e.element.id, true);
        save();
        this.prepareMetrics(e.element);
      }),
      view.onDidCollapseElement((e) => {
        this.model.setExpanded(e.element.id, false);
        save();
      }),
      view.onDidChangeSelection(() => this.noteSelection()),
    );
  }

  /**
   * The row selected, as the view has it now. Read from `view.selection`, not from the event: a click that lands
   * while its row is redrawn reaches the extension host before the row's new element, and the event then holds
   * nothing, while `view.selection` finds the element once it is there. An empty selection is the selected row gone
   * from the tree (or nothing chosen yet), not a choice to keep.
   */
  private noteSelection(): void {
    const [first] = this.view?.selection ?? [];
    // The same row again is no news (it may be an element VS Code no longer shows: followSelection decides).
    if (!first || first.id === this.model.selectedId) return;
    this.model.setSelected(first.id);
    this.selectionShown = true;
    this.saveViewState();
  }

  private saveViewState(): void {
    this.deps.viewState?.set(this.model.viewState());
  }

  /** Redraw a node (and what is open below it), or everything. */
  private fire(node?: TreeNode): void {
    if (node) this.redrawn.add(node.id);
    this.changeEmitter.fire(node);
  }

  /**
   * A target's runs, or a run, opened by the user: a metrics panel may follow, so what its backlog will need (the
   * host's OpenSSH login, a parse thread) starts now rather than when the panel opens (core.prepareMetrics). Only
   * where there is a metrics log to open: a run with one, or a target whose listing (the one the view asks for,
   * shared) holds such a run.
   */
  private prepareMetrics(node: TreeNode): void {
    if (node.type !== 'target' && node.type !== 'run') return;
    const prepare = (): void => {
      try {
        this.deps.core.prepareMetrics(node.hostName, { kind: node.target.kind, id: node.target.id });
      } catch (e) {
        // A host gone from the settings: its row says so when it is drawn again.
        this.deps.log.info(`not preparing metrics of ${node.hostName}: ${e instanceof Error ? e.message : String(e)}`);
      }
    };
    if (node.type === 'run') {
      if (node.run.metrics.length > 0) prepare();
      return;
    }
    void this.model.childrenOf(node).then(
      (children) => children.some((c) => c.type === 'run' && c.run.metrics.length > 0) && prepare(),
      () => undefined, // the listing failed: its row says why
    );
  }

  // ---- TreeDataProvider ----------------------------------------------------------------------------

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const item = this.item(node);
    // A row the user left open is drawn open when it is listed again (VS Code forgets it once the row was gone).
    if (item.collapsibleState === vscode.TreeItemCollapsibleState.Collapsed && this.model.isExpanded(node.id)) {
      item.collapsibleState = vscode.TreeItemCollapsibleState.Expanded;
    }
    return item;
  }

  private item(node: TreeNode): vscode.TreeItem {
    switch (node.type) {
      case 'host':
        return this.hostItem(node);
      case 'namespace':
        return namespaceItem(node);
      case 'job':
        return jobItem(node);
      case 'pod':
        return podItem(node);
      case 'target':
        return this.targetItem(node);
      case 'run':
        return this.runItem(node);
      case 'checkpoint':
        return this.checkpointItem(node);
      case 'file':
        return this.fileItem(node);
      case 'state':
        return this.stateItem(node);
      case 'contents': {
        const item = new vscode.TreeItem('contents', vscode.TreeItemCollapsibleState.Collapsed);
        item.id = node.id;
        item.description = 'tensors, parameters, optimizer state (read from the headers)';
        item.iconPath = new vscode.ThemeIcon('symbol-structure');
        item.tooltip = 'Expand to read what this checkpoint holds from its headers: one remote command, nothing downloaded or loaded';
        item.contextValue = 'contents';
        return item;
      }
      case 'tensor-group':
        return this.groupItem(node);
      case 'tensor':
        return this.tensorItem(node);
      case 'inspect-note':
        return this.noteItem(node);
    }
  }

  /**
   * A checkpoint's hover: its one-line summary, read (once, then from the inspect cache) when the pointer rests on it.
   * Called by VS Code only for items whose tooltip is unset.
   */
  async resolveTreeItem(item: vscode.TreeItem, node: TreeNode, token: vscode.CancellationToken): Promise<vscode.TreeItem> {
    if (node.type === 'run' && this.deps.runConfig) {
      let lines: string[];
      try {
        lines = configSummary(await this.deps.runConfig(node));
      } catch (e) {
        lines = [`Config not read: ${e instanceof Error ? e.message : String(e)}`];
      }
      if (token.isCancellationRequested) return item;
      const tip = new vscode.MarkdownString();
      tip.appendText(`${runTooltip(node.run)}\n${node.listedInPart ? `${node.listedInPart}\n` : ''}${lines.join('\n')}`);
      item.tooltip = tip;
      return item;
    }
    if (node.type !== 'checkpoint' || !this.deps.inspect) return item;
    let contents: string;
    try {
      const ins = await this.deps.inspect(node.hostName, node.target, node.checkpoint);
      if (token.isCancellationRequested) return item;
      contents = summaryLine(ins);
    } catch (e) {
      contents = `Contents not read: ${e instanceof Error ? e.message : String(e)}`;
    }
    item.tooltip = `${checkpointTooltip(node.checkpoint, this.deps.checkpointLocalCopy?.(node))}\n${contents}`;
    return item;
  }

  getParent(node: TreeNode): TreeNode | undefined {
    return node.parent;
  }

  async getChildren(node?: TreeNode): Promise<TreeNode[]> {
    // Asked for its children: the row is open (its expand event may have been lost to a redraw of its parent).
    if (node && !this.redrawn.delete(node.id) && !this.model.isExpanded(node.id)) {
      this.model.setExpanded(node.id, true);
      this.saveViewState();
    }
    const children = await this.model.childrenOf(node);
    if (node?.type === 'host') {
      // A state change fired while VS Code was still waiting for these children can be dropped by the view;
      // redraw the host once more if what it shows is no longer the pool's state.
      const shown = this.renderedHostState.get(node.hostName);
      if (shown !== undefined && shown !== stateLabel(this.deps.connectionState(node.hostName))) {
        setTimeout(() => this.fire(this.model.nodeAt(node.id) ?? node), 0);
      }
    }
    this.noteSelection();
    this.followSelection(node, children);
    return children;
  }

  /**
   * The selected row listed again after it was gone (a failed listing above it, a reloaded window) is selected
   * again: VS Code keeps a selection only while its row stays in the tree.
   */
  private followSelection(parent: TreeNode | undefined, children: TreeNode[]): void {
    const want = this.model.selectedId;
    if (!want || !this.view || (parent && !mayHold(parent, want))) return;
    const selected = children.find((c) => c.id === want);
    if (!selected) {
      // Listed without it, and without the rows it lies below: it is not in the tree any more.
      if (!children.some((c) => mayHold(c, want))) this.selectionShown = false;
      return;
    }
    if (this.selectionShown) return;
    this.selectionShown = true;
    const view = this.view;
    // After the children are handed to VS Code, so that the row to select is there.
    setTimeout(() => {
      view.reveal(selected, { select: true, focus: false, expand: false }).then(undefined, (e: unknown) => {
        this.selectionShown = false;
        this.deps.log.info(`not selecting ${selected.id.replace(/\u0000/g, '/')} again: ${e instanceof Error ? e.message : String(e)}`);
      });
    }, 0);
  }

  // ---- Refresh (the model's) -----------------------------------------------------------------------

  /** Ask for a refresh of a node's scope (or everything); coalesced by the model's queue. */
  refresh(node?: TreeNode): void {
    this.model.refresh(node);
  }

  /** Redraw a node and its children from what is cached (no re-listing): for decorations that changed. */
  redraw(node?: TreeNode): void {
    this.fire(node);
  }

  /** Refresh everything that is currently expanded (the timer's job). */
  refreshExpanded(): void {
    this.model.refreshExpanded();
  }

  /** Resolves once the queue has drained (for commands that must wait for fresh data). */
  whenIdle(): Promise<void> {
    return this.model.whenIdle();
  }

  /** Every run node the tree has shown so far (for pickers that offer "a run from the tree"). */
  knownRuns(): RunNode[] {
    return this.model.knownRuns();
  }

  /** The node last shown with this id (for reveal and for commands given an id). */
  nodeById(id: string): TreeNode | undefined {
    return this.model.nodeAt(id);
  }

  dispose(): void {
    this.model.dispose();
    this.changeEmitter.dispose();
    for (const s of this.subscriptions) s.dispose();
  }

  // ---- Items ---------------------------------------------------------------------------------------

  private hostItem(node: HostNode): vscode.TreeItem {
    if (node.cluster) return clusterItem(node, node.cluster);
    const item = new vscode.TreeItem(node.hostName, vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    const state = this.deps.connectionState(node.hostName);
    item.description = stateLabel(state);
    this.renderedHostState.set(node.hostName, item.description);
    item.iconPath = new vscode.ThemeIcon(stateIcon(state));
    const transport = this.deps.transport?.(node.hostName);
    item.tooltip =
      `${node.hostName} (${node.source === 'settings' ? 'from remoteRuns.hosts' : 'from ~/.ssh/config'})` +
      `${transport ? `\nTransport: ${transport}` : ''}${'message' in state ? `\n${state.message}` : ''}`;
    item.contextValue = `host.${state.kind}`;
    return item;
  }

  private targetItem(node: TargetNode): vscode.TreeItem {
    if (node.target.kind === 'pod') return containerItem(node);
    const t = node.target;
    const label = t.kind === 'host' ? 'host' : formatTarget(t);
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    item.description = t.kind === 'host' ? 'bare host' : [t.label !== t.id ? t.label : '', t.state].filter(Boolean).join(' · ');
    item.iconPath = new vscode.ThemeIcon(t.kind === 'host' ? 'server' : t.state === 'stopped' ? 'debug-stop' : 'package');
    item.tooltip = `${t.kind === 'host' ? 'The host itself' : `${t.kind === 'pct' ? 'Proxmox container' : t.kind === 'pod' ? 'Pod container' : 'Docker container'} ${t.id}`} — ${t.state}`;
    item.contextValue = `target.${t.kind}.${t.state}`;
    return item;
  }

  private runItem(node: RunNode): vscode.TreeItem {
    const run = node.run;
    // Remote names are shown through displayName (shared/display.ts): no control or bidi character in a label.
    const item = new vscode.TreeItem(displayName(run.name), run.checkpoints.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    const newest = latestCheckpoint(run);
    const parts = [run.live ? '● live' : '', `${run.checkpoints.length} checkpoint${run.checkpoints.length === 1 ? '' : 's'}`, newest ? latestPhrase(newest) : '', node.listedInPart ? 'listed in part' : ''];
    item.description = displayText(parts.filter(Boolean).join(' · '));
    item.iconPath = new vscode.ThemeIcon(run.live ? 'pulse' : 'beaker');
    // Left unset with runConfig: resolveTreeItem fills it on hover, with the run's config.
    if (!this.deps.runConfig) {
      item.tooltip = new vscode.MarkdownString();
      item.tooltip.appendText(displayText(runTooltip(run)));
      if (node.listedInPart) item.tooltip.appendText(displayText(`\n\n${node.listedInPart}`));
    }
    item.contextValue = `run${run.live ? '.live' : ''}`;
    return item;
  }

  private checkpointItem(node: CheckpointNode): vscode.TreeItem {
    const c = node.checkpoint;
    // With inspect, every checkpoint expands (a flat file into its contents row).
    const expands = this.deps.inspect !== undefined || (c.isDir && c.files.length > 0);
    const item = new vscode.TreeItem(displayName(c.name), expands ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    const now = Date.now();
    const what = c.kind === 'step' ? '' : checkpointLabel(c);
    const local = this.deps.checkpointLocalCopy?.(node);
    const downloaded = local?.kind === 'downloaded';
    const partial = local?.kind === 'partial' ? `partial ${partialPercent(local.bytesHere, local.bytesTotal)}` : '';
    // A link to a folder outside its own: shown as the link it is (its size and age are not known: never followed).
    const link = c.linkOutside ? `link → ${c.link ?? ''}, not followed` : '';
    const skipped = c.skipped ? `${c.skipped.length} entr${c.skipped.length === 1 ? 'y' : 'ies'} left out` : '';
    item.description = displayText([what, link, c.linkOutside ? '' : formatCheckpointBytes(c), c.linkOutside ? '' : formatAge(c.mtime, now), c.newest ? 'newest' : '', c.incomplete ? 'incomplete' : '', skipped, downloaded ? 'downloaded' : partial, this.deps.checkpointDecoration?.(node) ?? ''].filter(Boolean).join(' · '));
    item.iconPath = new vscode.ThemeIcon(c.newest ? 'star-full' : c.incomplete ? 'loading' : c.isDir ? 'folder' : 'file-binary');
    // Left unset with inspect: resolveTreeItem fills it on hover, with the contents' summary.
    if (!this.deps.inspect) item.tooltip = displayText(checkpointTooltip(c, local));
    item.contextValue = `checkpoint.${c.isDir ? 'dir' : 'file'}${c.newest ? '.newest' : ''}${downloaded ? '.downloaded' : ''}${this.deps.checkpointEvalRunning?.(node) ? '.evalRunning' : ''}`;
    return item;
  }

  private groupItem(node: TensorGroupNode): vscode.TreeItem {
    const g = node.group;
    const item = new vscode.TreeItem(displayName(g.label), vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    item.description = groupDescription(g);
    item.iconPath = new vscode.ThemeIcon('symbol-namespace');
    item.contextValue = 'tensor-group';
    return item;
  }

  private tensorItem(node: TensorNode): vscode.TreeItem {
    const t = node.tensor;
    // Named below its group: `q_proj.weight` under `model › layers › 0 › self_attn`.
    const prefix = node.parent?.type === 'tensor-group' && node.parent.group.path.length ? `${node.parent.group.path.join('.')}.` : '';
    const item = new vscode.TreeItem(displayName(prefix && t.name.startsWith(prefix) ? t.name.slice(prefix.length) : t.name), vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.description = `${displayName(t.dtype)} [${t.shape.join(', ')}]`;
    item.iconPath = new vscode.ThemeIcon('symbol-array');
    item.tooltip = `${displayName(t.name)}\n${displayName(t.dtype)} [${t.shape.join(', ')}] · ${t.numel.toLocaleString('en-US')} elements${t.bytes !== null ? ` · ${formatBytes(t.bytes)}` : ''}${t.file ? `\nin ${displayName(t.file)}` : ''}`;
    item.contextValue = 'tensor';
    return item;
  }

  private noteItem(node: InspectNoteNode): vscode.TreeItem {
    const item = new vscode.TreeItem(displayName(node.label), vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.description = displayText(node.description);
    item.tooltip = displayText(`${node.label}: ${node.description}`);
    const icons: Record<InspectNoteNode['kind'], string> = { entry: 'symbol-field', opaque: 'shield', incomplete: 'warning', state: 'symbol-array', file: 'file' };
    item.iconPath = new vscode.ThemeIcon(icons[node.kind]);
    item.contextValue = `inspect.${node.kind}`;
    return item;
  }

  private fileItem(node: FileNode): vscode.TreeItem {
    const f = node.file;
    const item = new vscode.TreeItem(displayName(f.name), vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.description = formatBytes(f.bytes);
    item.iconPath = new vscode.ThemeIcon('file');
    item.tooltip = `${displayName(f.path)}\n${f.bytes.toLocaleString('en-US')} bytes`;
    item.contextValue = 'file';
    return item;
  }

  private stateItem(node: StateNode): vscode.TreeItem {
    const text = emptyStateText(node.kind);
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.iconPath = new vscode.ThemeIcon(text.icon);
    // The reason inline (what the user acts on); the error kind only in the tooltip.
    item.description = node.seen.length ? `saw: ${node.seen.join(', ')}` : stateReason(node.label, node.message);
    const tip = new vscode.MarkdownString();
    tip.appendText(`${node.message}\n\n${node.hint ?? text.hint}`);
    if (node.seen.length) tip.appendText(`\n\nEntries there: ${node.seen.join(', ')}`);
    tip.appendText(`\n\n(${node.kind})`);
    item.tooltip = tip;
    // Retry only where trying again can change the answer (a connection or a command that failed), not on what a
    // listing found (an empty folder, no runs): the view's Refresh lists those again.
    item.contextValue = `state.${node.kind}${RETRYABLE.has(node.kind) ? '.retry' : ''}`;
    return item;
  }
}

/** A cluster entry's row: its context (and namespace) beside the name; kubectl, not SSH, reaches it. */
function clusterItem(node: HostNode, c: NonNullable<HostNode['cluster']>): vscode.TreeItem {
  const item = new vscode.TreeItem(node.hostName, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  item.description = [c.context, c.namespace ? `ns ${c.namespace}` : '', c.selector ? `-l ${c.selector}` : ''].filter(Boolean).join(' · ');
  item.iconPath = new vscode.ThemeIcon('cloud');
  item.tooltip = `${node.hostName}: Kubernetes cluster (from remoteRuns.hosts)\nContext: ${c.context}\nNamespace: ${c.namespace ?? 'every namespace you may list'}${c.selector ? `\nSelector: ${c.selector}` : ''}\nReached through kubectl on this machine (remoteRuns.kubectlPath)`;
  item.contextValue = 'cluster';
  return item;
}

function namespaceItem(node: NamespaceNode): vscode.TreeItem {
  const item = new vscode.TreeItem(node.namespace, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  const n = node.workloads.length;
  const running = node.workloads.filter((w) => w.state === 'running').length;
  item.description = `${n} job${n === 1 ? '' : 's'}${running ? ` · ${running} running` : ''}`;
  item.iconPath = new vscode.ThemeIcon('symbol-namespace');
  item.tooltip = `Namespace ${node.namespace}`;
  item.contextValue = 'namespace';
  return item;
}

function jobItem(node: JobNode): vscode.TreeItem {
  const w = node.workload;
  const item = new vscode.TreeItem(w.name, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  item.description = jobDescription(w);
  item.iconPath = new vscode.ThemeIcon(workloadIcon(w));
  const counts = Object.entries(w.counts).map(([s, k]) => `${k} ${s}`).join(', ');
  item.tooltip = `${w.kind} ${w.namespace}/${w.name}\nState: ${stateText(w)}${w.message ? `\n${w.message}` : ''}${counts ? `\nPods: ${counts}` : ''}${w.restarts ? `\nRestarts: ${w.restarts}` : ''}${w.queue ? `\nKueue queue: ${w.queue}` : ''}`;
  item.contextValue = `job.${w.state}`;
  return item;
}

function podItem(node: PodNode): vscode.TreeItem {
  const p = node.pod;
  const item = new vscode.TreeItem(p.label, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  item.description = podDescription(p);
  item.iconPath = new vscode.ThemeIcon(workloadIcon(p));
  item.tooltip = `Pod ${p.pod.namespace}/${p.pod.name} of ${node.job}\nState: ${stateText(p)}${p.message ? `\n${p.message}` : ''}${p.pod.nodeName ? `\nNode: ${p.pod.nodeName}` : ''}${p.rank !== undefined ? `\nRank: ${p.rank}` : ''}${p.restarts ? `\nRestarts: ${p.restarts}` : ''}`;
  item.contextValue = `pod.${p.state}`;
  return item;
}

/** A pod's container: its runs below, listed through kubectl exec. */
function containerItem(node: TargetNode): vscode.TreeItem {
  const t = node.target;
  const c = node.container;
  const name = c?.name ?? t.id.slice(t.id.lastIndexOf(':') + 1);
  const item = new vscode.TreeItem(name, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = node.id;
  const status = c ? `${c.state}${c.reason ? ` (${c.reason})` : ''}` : t.state;
  item.description = [status, c?.restarts ? `${c.restarts} restart${c.restarts === 1 ? '' : 's'}` : ''].filter(Boolean).join(' · ');
  item.iconPath = new vscode.ThemeIcon(t.state === 'running' ? 'package' : 'debug-stop');
  item.tooltip = `Container ${name} of pod ${t.id.slice(0, t.id.lastIndexOf(':'))}${c?.image ? `\nImage: ${c.image}` : ''}\nState: ${status}${c?.message ? `\n${c.message}` : ''}\nReached with kubectl exec on this machine`;
  item.contextValue = `target.pod.${t.state}`;
  return item;
}

/** State kinds where Retry can change the answer. */
const RETRYABLE: ReadonlySet<string> = new Set(['unreachable', 'auth-failed', 'host-key-unknown', 'timeout', 'command-failed', 'permission-denied', 'protocol', 'cancelled', 'container-stopped', 'container-missing', 'kube-config', 'credential-plugin', 'forbidden', 'exec-refused', 'kubectl-missing']);

function runTooltip(run: RunNode['run']): string {
  return [
    run.path,
    `Metrics: ${run.metrics.length ? run.metrics.join(', ') : 'none found'}`,
    ...(run.live ? ['Live: a metrics log changed in the last two minutes'] : []),
    ...(run.pointers ?? []).map((p) => `${p.file}: ${p.note ?? `names ${p.checkpoint}`}`),
  ].join('\n');
}

function checkpointTooltip(c: Checkpoint, local?: LocalCopy): string {
  const here =
    local?.kind === 'downloaded'
      ? `\nDownloaded: ${local.path}`
      : local?.kind === 'partial'
        ? `\nInterrupted download: ${partialPercent(local.bytesHere, local.bytesTotal)} here (${formatBytes(local.bytesHere)} of ${formatBytes(local.bytesTotal)}); Download Checkpoint… resumes it into ${local.path}`
        : '';
  return `${c.path}${here}\n${checkpointLabel(c)}${c.pointedBy ? ` · named by ${c.pointedBy.join(', ')}` : ''} · ${c.bytes.toLocaleString('en-US')} bytes · ${new Date(c.mtime).toISOString()}${c.isDir ? `\n${c.files.length} file(s)` : ''}${c.incomplete ? `\nIncomplete: ${c.incomplete}; never taken as latest` : ''}`;
}

function stateLabel(s: ConnectionState): string {
  switch (s.kind) {
    case 'idle':
      return '';
    case 'connecting':
      // The pool's own attempt number, as the metrics panel shows it (a reconnect's first attempt is attempt 1 in both).
      // A host whose last attempts gave up stays "unreachable" while a new round runs (ConnectionState gaveUp).
      if (s.gaveUp !== undefined) return `${emptyStateText('unreachable').title.toLowerCase()}, trying again (attempt ${s.attempt})…`;
      return s.reconnect || s.attempt > 1 ? `reconnecting (attempt ${s.attempt})…` : 'connecting…';
    case 'connected':
      return 'connected';
    default:
      return emptyStateText(s.kind).title.toLowerCase();
  }
}

function stateIcon(s: ConnectionState): string {
  switch (s.kind) {
    case 'connected':
      return 'vm-active';
    case 'connecting':
      return s.gaveUp !== undefined ? emptyStateText('unreachable').icon : 'loading~spin';
    case 'idle':
      return 'vm';
    default:
      return emptyStateText(s.kind).icon;
  }
}
