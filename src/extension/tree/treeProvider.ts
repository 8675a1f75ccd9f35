import * as vscode from 'vscode';
import type { RemoteRunsCore, HostTargets } from '../../core/service';
import { isRemoteRunsError, formatTarget, RemoteRunsError, type TargetListing, type TargetRef } from '../../core/types';
import type { ConnectionState } from '../../core/ssh/types';
import { emptyStateText } from '../../core/emptyStates';
import { formatAge, formatBytes } from '../../core/util/format';
import type { Event } from '../../core/util/event';
import {
  childId,
  hostId,
  listingKey,
  runId,
  targetId,
  type CheckpointNode,
  type FileNode,
  type HostNode,
  type RunNode,
  type StateNode,
  type TargetNode,
  type TreeNode,
} from '../../core/tree/nodes';
import { RefreshQueue } from '../../core/tree/refreshQueue';
import type { Logger } from '../log';

export interface HostEntry {
  name: string;
  source: 'settings' | 'ssh-config';
}

export interface TreeDeps {
  core: RemoteRunsCore;
  hosts(): HostEntry[];
  connectionState(host: string): ConnectionState;
  onDidChangeConnectionState: Event<{ host: string; state: ConnectionState }>;
  log: Logger;
  /** Extra text after a checkpoint's description (e.g. its evals' state); redraw with `redraw` when it changes. */
  checkpointDecoration?(node: CheckpointNode): string | undefined;
}

type Result<T> = { ok: true; value: T; at: number } | { ok: false; error: RemoteRunsError; at: number };

/**
 * The hosts → targets → runs → checkpoints tree. Listings are cached per host and per target; a refresh
 * (manual, timed, or after an action) re-lists through one debounced queue and redraws only the nodes whose
 * listing changed. Stable ids keep expansion and selection.
 */
export class RunsTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly changeEmitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.changeEmitter.event;

  private readonly targetsCache = new Map<string, Result<HostTargets>>();
  private readonly listingCache = new Map<string, Result<TargetListing>>();
  private readonly inflight = new Map<string, Promise<unknown>>();
  /** Nodes last handed to VS Code, by id: for getParent/reveal and for targeted redraws. */
  private readonly nodes = new Map<string, TreeNode>();
  private readonly expanded = new Set<string>();
  /** The connection-state text each host item was last drawn with. */
  private readonly renderedHostState = new Map<string, string>();
  private readonly queue: RefreshQueue;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(private readonly deps: TreeDeps) {
    this.queue = new RefreshQueue((ids) => this.refreshNow(ids), 150);
    const sub = deps.onDidChangeConnectionState(({ host }) => {
      const node = this.nodes.get(hostId(host));
      if (node) this.changeEmitter.fire(node);
    });
    this.subscriptions.push({ dispose: () => sub.dispose() });
  }

  /** Hook the view's expand/collapse events (for timed refresh of what is open). */
  attach(view: vscode.TreeView<TreeNode>): void {
    this.subscriptions.push(
      view.onDidExpandElement((e) => this.expanded.add(e.element.id)),
      view.onDidCollapseElement((e) => this.expanded.delete(e.element.id)),
    );
  }

  // ---- TreeDataProvider ----------------------------------------------------------------------------

  getTreeItem(node: TreeNode): vscode.TreeItem {
    switch (node.type) {
      case 'host':
        return this.hostItem(node);
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
    }
  }

  getParent(node: TreeNode): TreeNode | undefined {
    return node.parent;
  }

  async getChildren(node?: TreeNode): Promise<TreeNode[]> {
    const children = await this.computeChildren(node);
    for (const c of children) this.nodes.set(c.id, c);
    return children;
  }

  private async computeChildren(node?: TreeNode): Promise<TreeNode[]> {
    if (!node) {
      return this.deps.hosts().map((h): HostNode => ({ type: 'host', id: hostId(h.name), hostName: h.name, source: h.source }));
    }
    switch (node.type) {
      case 'host':
        return this.hostChildren(node);
      case 'target':
        return this.targetChildren(node);
      case 'run':
        // Ascending step order, as numbers (step_9000 before step_10000); the newest is marked.
        return node.run.checkpoints.map((c): CheckpointNode => ({
            type: 'checkpoint',
            id: childId(node, 'c', c.path),
            parent: node,
            hostName: node.hostName,
            target: node.target,
            run: node.run,
            checkpoint: c,
          }));
      case 'checkpoint':
        return node.checkpoint.files.map((f): FileNode => ({
          type: 'file',
          id: childId(node, 'f', f.path),
          parent: node,
          hostName: node.hostName,
          target: node.target,
          file: f,
        }));
      default:
        return [];
    }
  }

  private async hostChildren(node: HostNode): Promise<TreeNode[]> {
    const result = await this.loadTargets(node.hostName);
    // A state change fired while VS Code was still waiting for these children can be dropped by the view;
    // redraw the host once more if what it shows is no longer the pool's state.
    const shown = this.renderedHostState.get(node.hostName);
    if (shown !== undefined && shown !== stateLabel(this.deps.connectionState(node.hostName))) {
      setTimeout(() => this.changeEmitter.fire(this.nodes.get(node.id) ?? node), 0);
    }
    if (!result.ok) return [this.errorNode(node, result.error)];
    const targets = result.value.targets.map((t): TargetNode => ({
      type: 'target',
      id: targetId(node.hostName, t),
      parent: node,
      hostName: node.hostName,
      target: t,
    }));
    const problems = result.value.problems.map(
      (p, i): StateNode => ({ type: 'state', id: childId(node, 'p', String(i)), parent: node, kind: 'command-failed', label: p, message: p, seen: [], scope: node }),
    );
    return [...targets, ...problems];
  }

  private async targetChildren(node: TargetNode): Promise<TreeNode[]> {
    if (node.target.state === 'stopped') {
      const text = emptyStateText('container-stopped');
      return [{ type: 'state', id: childId(node, 's', 'stopped'), parent: node, kind: 'container-stopped', label: text.title, message: `${formatTarget(node.target)} is stopped. ${text.hint}`, seen: [], scope: node }];
    }
    const result = await this.loadListing(node.hostName, node.target);
    if (!result.ok) return [this.errorNode(node, result.error)];
    const out: TreeNode[] = [];
    const states: TreeNode[] = [];
    for (const root of result.value.roots) {
      if (root.state === 'ok') {
        for (const run of root.runs) {
          out.push({ type: 'run', id: runId(node.hostName, node.target, run.path), parent: node, hostName: node.hostName, target: node.target, run });
        }
        if (root.truncated) {
          states.push({ type: 'state', id: childId(node, 'trunc', root.root), parent: node, kind: 'command-failed', label: `${root.root}: listing cut short`, message: `${root.path} holds more entries than one listing reads; some runs may be missing.`, seen: [], scope: node });
        }
        if (root.unreadable) {
          // Runs were found, but the walk could not enter everything (a folder the user cannot read, a symlink loop).
          const n = root.unreadable.count;
          states.push({ type: 'state', id: childId(node, 'unread', root.root), parent: node, kind: 'permission-denied', label: `${root.root}: ${n} place${n === 1 ? '' : 's'} could not be read`, message: root.unreadable.messages.join('\n'), seen: [], scope: node });
        }
      } else {
        const text = emptyStateText(root.state);
        states.push({
          type: 'state',
          id: childId(node, 's', root.root),
          parent: node,
          kind: root.state,
          label: `${root.root}: ${text.title}`,
          message: root.message,
          seen: root.seen,
          scope: node,
        });
      }
    }
    return [...out, ...states];
  }

  private errorNode(parent: HostNode | TargetNode, error: RemoteRunsError): StateNode {
    const text = emptyStateText(error.kind);
    return { type: 'state', id: childId(parent, 'e', error.kind), parent, kind: error.kind, label: text.title, message: error.message, seen: [], scope: parent };
  }

  // ---- Loading -------------------------------------------------------------------------------------

  private loadTargets(hostName: string): Promise<Result<HostTargets>> {
    const cached = this.targetsCache.get(hostName);
    if (cached) return Promise.resolve(cached);
    return this.once(`targets:${hostName}`, async () => {
      const r = await capture(() => this.deps.core.listTargets(hostName));
      this.targetsCache.set(hostName, r);
      return r;
    });
  }

  private loadListing(hostName: string, target: TargetRef): Promise<Result<TargetListing>> {
    const key = listingKey(hostName, target);
    const cached = this.listingCache.get(key);
    if (cached) return Promise.resolve(cached);
    return this.once(`listing:${key}`, async () => {
      const r = await capture(() => this.deps.core.listTarget(hostName, target));
      this.listingCache.set(key, r);
      return r;
    });
  }

  /** Share one in-flight request per key. */
  private once<T>(key: string, f: () => Promise<T>): Promise<T> {
    const existing = this.inflight.get(key) as Promise<T> | undefined;
    if (existing) return existing;
    const p = f().finally(() => this.inflight.delete(key));
    this.inflight.set(key, p);
    return p;
  }

  // ---- Refresh -------------------------------------------------------------------------------------

  /** Ask for a refresh of a node's scope (or everything); coalesced by the queue. */
  refresh(node?: TreeNode): void {
    this.queue.push(node ? scopeOf(node).id : '');
  }

  /** Redraw a node and its children from what is cached (no re-listing): for decorations that changed. */
  redraw(node?: TreeNode): void {
    this.changeEmitter.fire(node);
  }

  /** Refresh everything that is currently expanded (the timer's job). */
  refreshExpanded(): void {
    for (const id of this.expanded) {
      const node = this.nodes.get(id);
      if (node && (node.type === 'host' || node.type === 'target')) this.queue.push(node.id);
    }
  }

  /** Resolves once the queue has drained (for commands that must wait for fresh data). */
  whenIdle(): Promise<void> {
    return this.queue.whenIdle();
  }

  private async refreshNow(ids: Set<string>): Promise<void> {
    if (ids.has('')) {
      this.targetsCache.clear();
      this.listingCache.clear();
      this.changeEmitter.fire(undefined);
      return;
    }
    await Promise.all(
      [...ids].map(async (id) => {
        const node = this.nodes.get(id);
        if (!node) return;
        if (node.type === 'host') {
          const before = this.targetsCache.get(node.hostName);
          this.targetsCache.delete(node.hostName);
          const after = await this.loadTargets(node.hostName);
          if (!sameResult(before, after)) {
            // Targets changed: their listings may be stale too.
            for (const key of [...this.listingCache.keys()]) if (key.startsWith(`${node.id}\u0000`)) this.listingCache.delete(key);
            this.changeEmitter.fire(node);
          }
        } else if (node.type === 'target') {
          const key = listingKey(node.hostName, node.target);
          const before = this.listingCache.get(key);
          this.listingCache.delete(key);
          const after = await this.loadListing(node.hostName, node.target);
          if (!sameResult(before, after)) this.changeEmitter.fire(node);
        }
      }),
    );
  }

  /** Every run node the tree has shown so far (for pickers that offer "a run from the tree"). */
  knownRuns(): RunNode[] {
    return [...this.nodes.values()].filter((n): n is RunNode => n.type === 'run');
  }

  /** The node last shown with this id (for reveal and for commands given an id). */
  nodeById(id: string): TreeNode | undefined {
    return this.nodes.get(id);
  }

  dispose(): void {
    this.queue.dispose();
    this.changeEmitter.dispose();
    for (const s of this.subscriptions) s.dispose();
  }

  // ---- Items ---------------------------------------------------------------------------------------

  private hostItem(node: HostNode): vscode.TreeItem {
    const item = new vscode.TreeItem(node.hostName, vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    const state = this.deps.connectionState(node.hostName);
    item.description = stateLabel(state);
    this.renderedHostState.set(node.hostName, item.description);
    item.iconPath = new vscode.ThemeIcon(stateIcon(state));
    item.tooltip = `${node.hostName} (${node.source === 'settings' ? 'from remoteRuns.hosts' : 'from ~/.ssh/config'})${'message' in state ? `\n${state.message}` : ''}`;
    item.contextValue = `host.${state.kind}`;
    return item;
  }

  private targetItem(node: TargetNode): vscode.TreeItem {
    const t = node.target;
    const label = t.kind === 'host' ? 'host' : formatTarget(t);
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.Collapsed);
    item.id = node.id;
    item.description = t.kind === 'host' ? 'bare host' : [t.label !== t.id ? t.label : '', t.state].filter(Boolean).join(' · ');
    item.iconPath = new vscode.ThemeIcon(t.kind === 'host' ? 'server' : t.state === 'stopped' ? 'debug-stop' : 'package');
    item.tooltip = `${t.kind === 'host' ? 'The host itself' : `${t.kind === 'pct' ? 'Proxmox container' : 'Docker container'} ${t.id}`} — ${t.state}`;
    item.contextValue = `target.${t.kind}.${t.state}`;
    return item;
  }

  private runItem(node: RunNode): vscode.TreeItem {
    const run = node.run;
    const item = new vscode.TreeItem(run.name, run.checkpoints.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    const newest = run.checkpoints[run.checkpoints.length - 1];
    const parts = [run.live ? '● live' : '', `${run.checkpoints.length} checkpoint${run.checkpoints.length === 1 ? '' : 's'}`, newest ? `latest step ${newest.step}` : ''];
    item.description = parts.filter(Boolean).join(' · ');
    item.iconPath = new vscode.ThemeIcon(run.live ? 'pulse' : 'beaker');
    item.tooltip = new vscode.MarkdownString();
    item.tooltip.appendText(`${run.path}\n`);
    item.tooltip.appendText(`Metrics: ${run.metrics.length ? run.metrics.join(', ') : 'none found'}\n`);
    if (run.live) item.tooltip.appendText('Live: a metrics log changed in the last two minutes');
    item.contextValue = `run${run.live ? '.live' : ''}`;
    return item;
  }

  private checkpointItem(node: CheckpointNode): vscode.TreeItem {
    const c = node.checkpoint;
    const item = new vscode.TreeItem(c.name, c.isDir && c.files.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    const now = Date.now();
    item.description = [formatBytes(c.bytes), formatAge(c.mtime, now), c.newest ? 'newest' : '', this.deps.checkpointDecoration?.(node) ?? ''].filter(Boolean).join(' · ');
    item.iconPath = new vscode.ThemeIcon(c.newest ? 'star-full' : c.isDir ? 'folder' : 'file-binary');
    item.tooltip = `${c.path}\nstep ${c.step} · ${c.bytes.toLocaleString('en-US')} bytes · ${new Date(c.mtime).toISOString()}${c.isDir ? `\n${c.files.length} file(s)` : ''}`;
    item.contextValue = `checkpoint.${c.isDir ? 'dir' : 'file'}${c.newest ? '.newest' : ''}`;
    return item;
  }

  private fileItem(node: FileNode): vscode.TreeItem {
    const f = node.file;
    const item = new vscode.TreeItem(f.name, vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.description = formatBytes(f.bytes);
    item.iconPath = new vscode.ThemeIcon('file');
    item.tooltip = `${f.path}\n${f.bytes.toLocaleString('en-US')} bytes`;
    item.contextValue = 'file';
    return item;
  }

  private stateItem(node: StateNode): vscode.TreeItem {
    const text = emptyStateText(node.kind);
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.iconPath = new vscode.ThemeIcon(text.icon);
    item.description = node.seen.length ? `saw: ${node.seen.join(', ')}` : node.kind;
    const tip = new vscode.MarkdownString();
    tip.appendText(`${node.message}\n\n${text.hint}`);
    if (node.seen.length) tip.appendText(`\n\nEntries there: ${node.seen.join(', ')}`);
    item.tooltip = tip;
    item.contextValue = `state.${node.kind}`;
    return item;
  }
}

function scopeOf(node: TreeNode): HostNode | TargetNode {
  let n: TreeNode | undefined = node;
  while (n) {
    if (n.type === 'state' && n.scope) return n.scope;
    if (n.type === 'host' || n.type === 'target') return n;
    n = n.parent;
  }
  throw new Error('node without a host');
}

async function capture<T>(f: () => Promise<T>): Promise<Result<T>> {
  try {
    return { ok: true, value: await f(), at: Date.now() };
  } catch (e) {
    const error = isRemoteRunsError(e) ? e : new RemoteRunsError('command-failed', e instanceof Error ? e.message : String(e));
    return { ok: false, error, at: Date.now() };
  }
}

function sameResult<T>(a: Result<T> | undefined, b: Result<T>): boolean {
  if (!a || a.ok !== b.ok) return false;
  if (a.ok && b.ok) return stableJson(a.value) === stableJson(b.value);
  if (!a.ok && !b.ok) return a.error.kind === b.error.kind && a.error.message === b.error.message;
  return false;
}

function stableJson(v: unknown): string {
  // Listings carry the remote clock, which changes every time; compare the content only.
  return JSON.stringify(v, (k, val) => (k === 'remoteNow' ? undefined : val));
}

function stateLabel(s: ConnectionState): string {
  switch (s.kind) {
    case 'idle':
      return '';
    case 'connecting':
      return s.attempt > 1 ? `reconnecting (attempt ${s.attempt})…` : 'connecting…';
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
      return 'loading~spin';
    case 'idle':
      return 'vm';
    default:
      return emptyStateText(s.kind).icon;
  }
}
