/**
 * The model behind the hosts → targets → runs → checkpoints tree, without `vscode`: what each node's children are,
 * read from the window's one listing cache (discovery/listings.ts, shared with the language server's answers), the
 * registry of nodes handed out
 * (by id, for reveal and for commands given an id), and the refresh that re-lists through one debounced queue and
 * reports only the nodes whose listing changed. The extension's tree provider renders these nodes; unit tests drive
 * this model with a listing source of their own.
 */
import { runListedInPart, type HostTargets } from '../service';
import { emptyStateText } from '../emptyStates';
import { cutShortText, linksOutText } from '../discovery/listParse';
import { DEFAULT_MAX_ENTRIES } from '../discovery/listScript';
import { formatTarget, asRemoteRunsError, type RemoteRunsError, type TargetListing, type TargetRef } from '../types';
import { Emitter, type Event } from '../util/event';
import { childId, hostId, isAtOrBelow, listingKey, runId, targetId, type CheckpointNode, type ClusterFacts, type ContentsNode, type FileNode, type HostNode, type InspectNoteNode, type RunNode, type StateNode, type TargetNode, type TensorGroupNode, type TensorNode, type TreeNode } from './nodes';
import { clusterChildren, clusterErrorNode, jobChildren, namespaceChildren, podChildren } from './clusterNodes';
import type { Checkpoint } from '../types';
import type { Inspection } from '../inspect/types';
import { groupTensors, inspectCompleteness, stateParts, formatCount } from '../inspect/summary';
import { formatBytes } from '../util/format';
import { RefreshQueue } from './refreshQueue';
import { markGrowing } from '../discovery/growing';
import { FRESH_WRITE_MS, isFreshWrite } from '../discovery/runTree';
import { Listings, same, type ListingScope, type Settled } from '../discovery/listings';

export interface HostEntry {
  name: string;
  source: 'settings' | 'ssh-config';
  /** A Kubernetes cluster entry: its rows are namespaces, jobs, pods and containers (tree/clusterNodes.ts). */
  cluster?: ClusterFacts;
}

/** Where the model's listings come from (the core service, in the extension). */
export interface TreeSource {
  hosts(): HostEntry[];
  listTargets(hostName: string): Promise<HostTargets>;
  listTarget(hostName: string, target: TargetRef): Promise<TargetListing>;
  /** Lines of the ssh config this host's connection does not follow (`file:line: why`): a row each under the host. */
  sshConfigProblems?(hostName: string): string[];
  /** What a checkpoint holds, from its headers (core/inspect/remoteRead.ts inspectRemote, cached per file). */
  inspect?(hostName: string, target: TargetRef, checkpoint: Checkpoint): Promise<Inspection>;
}

/**
 * What the user has open and selected in the view, by node id. VS Code keeps a row's expansion only while the row
 * stays in the tree: a listing that fails (the host unreachable for a moment) replaces the rows below it, and a
 * reload starts from nothing. Kept here, rows listed again come back as they were; the extension saves it per
 * workspace for the next window.
 */
export interface TreeViewState {
  expanded: string[];
  selected?: string;
}

/** Ids of expanded rows kept at most (the oldest go first): rows that never come back are not kept forever. */
const MAX_EXPANDED = 500;

type Result<T> = Settled<T>;

export class RunsTreeModel {
  private readonly changeEmitter = new Emitter<TreeNode | undefined>();
  /** A node whose children changed (undefined: everything). */
  readonly onDidChange: Event<TreeNode | undefined> = this.changeEmitter.event;

  /** The window's listings (hosts' targets, targets' roots): read with any age, listed again by a refresh. */
  private readonly listings: Listings<unknown>;
  /** The listings this model made and ends with itself (none was given). */
  private readonly ownListings: boolean;
  /** The last listing each target gave (kept across refreshes): a checkpoint that grew since is still being written. */
  private readonly previousListing = new Map<string, TargetListing>();
  /** Ids of the hosts and targets this model is listing now: it reports their changes itself. */
  private readonly listing = new Set<string>();
  private readonly listingsChanged: { dispose(): void };
  /** Nodes handed out, by id. */
  private readonly nodes = new Map<string, TreeNode>();
  private readonly expanded = new Set<string>();
  private selected: string | undefined;
  private readonly queue: RefreshQueue;
  /** Per target id: its follow-up listing while a checkpoint is being written (followFreshWrites). */
  private readonly followUps = new Map<string, { timer?: ReturnType<typeof setTimeout>; count: number }>();

  constructor(
    private readonly source: TreeSource,
    refreshDebounceMs = 150,
    /** The first follow-up listing after one that found a checkpoint being written by its clock. */
    private readonly freshRelistMs = FRESH_WRITE_MS + 500,
    /** The window's one listing cache (default: one of this model's own over `source`). */
    listings?: Listings<unknown>,
  ) {
    this.queue = new RefreshQueue((ids) => this.refreshNow(ids), refreshDebounceMs);
    this.ownListings = !listings;
    this.listings = listings ?? new Listings({ listTargets: (h) => source.listTargets(h), listTarget: (h, t) => source.listTarget(h, t) });
    // A listing made for someone else (a hover) that changed what a row shows, or answers dropped: that row is drawn
    // again from the new listing.
    this.listingsChanged = this.listings.onDidChange((scope) => this.listingsChangedBy(scope));
  }

  private listingsChangedBy(scope: ListingScope | undefined): void {
    if (!scope) {
      if (!this.listing.has('')) this.changeEmitter.fire(undefined);
      return;
    }
    const id = scope.target ? targetId(scope.host, scope.target) : hostId(scope.host);
    const node = this.nodes.get(id);
    if (node && !this.listing.has(id)) this.changeEmitter.fire(node);
  }

  /** The children of a node (the hosts for undefined), each registered for nodeAt. */
  async childrenOf(node?: TreeNode): Promise<TreeNode[]> {
    const children = await this.computeChildren(node);
    for (const c of children) this.nodes.set(c.id, c);
    return children;
  }

  /** The node last handed out with this id. */
  nodeAt(id: string): TreeNode | undefined {
    return this.nodes.get(id);
  }

  /** Every run node handed out so far (for pickers that offer "a run from the tree"). */
  knownRuns(): RunNode[] {
    return [...this.nodes.values()].filter((n): n is RunNode => n.type === 'run');
  }

  /** What the view shows open (for the timed refresh of what is expanded, and to draw it open when listed again). */
  setExpanded(id: string, open: boolean): void {
    this.expanded.delete(id);
    if (open) this.expanded.add(id);
    for (const old of this.expanded) {
      if (this.expanded.size <= MAX_EXPANDED) break;
      this.expanded.delete(old);
    }
  }

  /** Whether the user left this row open (it is drawn open when it is listed again). */
  isExpanded(id: string): boolean {
    return this.expanded.has(id);
  }

  /** The row the user selected last (a selection that merely vanished with its rows is not a new one). */
  setSelected(id: string): void {
    this.selected = id;
  }

  get selectedId(): string | undefined {
    return this.selected;
  }

  /** The user's place, to save. */
  viewState(): TreeViewState {
    return { expanded: [...this.expanded], ...(this.selected !== undefined ? { selected: this.selected } : {}) };
  }

  /** The place saved by a previous window; anything but a TreeViewState (a file from elsewhere) is ignored. */
  restoreViewState(state: unknown): void {
    if (!isTreeViewState(state)) return;
    for (const id of state.expanded) this.setExpanded(id, true);
    if (state.selected !== undefined) this.selected = state.selected;
  }

  /** Ask for a refresh of a node's scope (or everything); coalesced by the queue. */
  refresh(node?: TreeNode): void {
    this.queue.push(node ? scopeOf(node).id : '');
  }

  /** Refresh everything that is expanded (the timer's job). */
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

  /** Report a node as changed without re-listing (its decorations changed). */
  redraw(node?: TreeNode): void {
    this.changeEmitter.fire(node);
  }

  dispose(): void {
    for (const f of this.followUps.values()) clearTimeout(f.timer);
    this.followUps.clear();
    this.listingsChanged.dispose();
    if (this.ownListings) this.listings.dispose();
    this.queue.dispose();
    this.changeEmitter.dispose();
  }

  private async computeChildren(node?: TreeNode): Promise<TreeNode[]> {
    if (!node) {
      return this.source.hosts().map((h): HostNode => ({ type: 'host', id: hostId(h.name), hostName: h.name, source: h.source, ...(h.cluster ? { cluster: h.cluster } : {}) }));
    }
    switch (node.type) {
      case 'host':
        return this.hostChildren(node);
      case 'namespace':
        return namespaceChildren(node);
      case 'job':
        return jobChildren(node, this.hostOf(node));
      case 'pod':
        return podChildren(node);
      case 'target':
        return this.targetChildren(node);
      case 'run':
        // Newest first, as the checkpoint picker lists them (a run of 27 keeps its newest on screen); the newest
        // complete one is marked.
        return [...node.run.checkpoints].reverse().map((c): CheckpointNode => ({
          type: 'checkpoint',
          id: childId(node, 'c', c.path),
          parent: node,
          hostName: node.hostName,
          target: node.target,
          run: node.run,
          checkpoint: c,
        }));
      case 'checkpoint': {
        const contents: ContentsNode[] = this.source.inspect
          ? [{ type: 'contents', id: childId(node, 'i', ''), parent: node, hostName: node.hostName, target: node.target, checkpoint: node.checkpoint }]
          : [];
        return [
          ...contents,
          ...node.checkpoint.files.map((f): FileNode => ({
            type: 'file',
            id: childId(node, 'f', f.path),
            parent: node,
            hostName: node.hostName,
            target: node.target,
            file: f,
          })),
        ];
      }
      case 'contents':
        return this.contentsChildren(node);
      case 'tensor-group':
        return node.group.tensors.map((t): TensorNode => ({ type: 'tensor', id: childId(node, 'x', t.name), parent: node, tensor: t }));
      default:
        return [];
    }
  }

  /**
   * A checkpoint's contents: why it is incomplete first, then its module groups, then what is not a tensor. A failed
   * read is one state row saying which failure it was (unreachable, permission denied…), never an empty list.
   */
  private async contentsChildren(node: ContentsNode): Promise<TreeNode[]> {
    const r = await capture(() => this.source.inspect!(node.hostName, node.target, node.checkpoint));
    if (!r.ok) {
      const text = emptyStateText(r.error.kind);
      const state: StateNode = { type: 'state', id: childId(node, 'e', r.error.kind), parent: node, kind: r.error.kind, label: text.title, message: r.error.message, seen: [] };
      return [state];
    }
    return inspectionNodes(node, r.value);
  }

  /** The host row a row lies under. */
  private hostOf(node: TreeNode): HostNode {
    let n: TreeNode | undefined = node;
    while (n && n.type !== 'host') n = n.parent;
    if (!n) throw new Error('node without a host');
    return n;
  }

  private async hostChildren(node: HostNode): Promise<TreeNode[]> {
    const result = await this.loadTargets(node.hostName);
    if (!result.ok) return [node.cluster ? clusterErrorNode(node, errorNode(node, result.error), result.error) : errorNode(node, result.error)];
    if (node.cluster) return clusterChildren(node, result.value);
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
    const config = (this.source.sshConfigProblems?.(node.hostName) ?? []).map(
      (p, i): StateNode => ({ type: 'state', id: childId(node, 'cfg', String(i)), parent: node, kind: 'bad-config', label: `ssh config: ${p}`, message: p, seen: [], scope: node }),
    );
    return [...targets, ...problems, ...config];
  }

  private async targetChildren(node: TargetNode): Promise<TreeNode[]> {
    // A pod's container that does not run is still asked (one kubectl exec): kubectl's own words say why it cannot
    // be entered (not scheduled, not started, completed), beside the pod's state on the row above.
    if (node.target.state === 'stopped' && node.target.kind !== 'pod') {
      const text = emptyStateText('container-stopped');
      return [{ type: 'state', id: childId(node, 's', 'stopped'), parent: node, kind: 'container-stopped', label: text.title, message: `${formatTarget(node.target)} is stopped. ${text.hint}`, seen: [], scope: node }];
    }
    const result = await this.loadListing(node.hostName, node.target);
    if (!result.ok) return [errorNode(node, result.error)];
    const out: TreeNode[] = [];
    const states: TreeNode[] = [];
    const listing = result.value;
    // Default run roots (none configured) that do not exist are expected on most machines: quiet while another root
    // exists; when none of them does, one row says so instead of one per root.
    const quiet = listing.defaultRoots === true && listing.roots.some((r) => r.state !== 'path-missing');
    const missingDefaults = listing.defaultRoots === true && !quiet ? listing.roots.filter((r) => r.state === 'path-missing') : [];
    if (missingDefaults.length > 1) {
      const text = emptyStateText('path-missing');
      const names = missingDefaults.map((r) => r.root);
      states.push({
        type: 'state',
        id: childId(node, 's', 'default-roots'),
        parent: node,
        kind: 'path-missing',
        label: `No default run root exists (${names.join(', ')})`,
        message: `None of the default run roots exists on ${formatTarget(node.target)}: ${names.join(', ')}. ${text.hint}`,
        seen: [],
        scope: node,
      });
    }
    for (const root of listing.roots) {
      if (root.state === 'path-missing' && (quiet || missingDefaults.length > 1)) continue;
      if (root.state === 'ok') {
        for (const run of root.runs) {
          const listedInPart = runListedInPart(listing, run);
          out.push({ type: 'run', id: runId(node.hostName, node.target, run.path), parent: node, hostName: node.hostName, target: node.target, run, ...(listedInPart ? { listedInPart } : {}) });
        }
        if (root.truncated) {
          const parts = root.tooLarge ?? [];
          const label = parts.length ? `${root.root}: listed in part (${parts.map((t) => (t.rel === '' ? 'the root' : t.rel)).slice(0, 2).join(', ')}${parts.length > 2 ? '…' : ''} too large)` : `${root.root}: listing cut short`;
          states.push({ type: 'state', id: childId(node, 'trunc', root.root), parent: node, kind: 'command-failed', label, message: `${cutShortText(root.path, parts, DEFAULT_MAX_ENTRIES)}.`, seen: parts.map((t) => t.rel), scope: node });
        }
        if (root.unreadable) {
          // Runs were found, but the walk could not enter everything (a folder the user cannot read, a symlink loop).
          const n = root.unreadable.count;
          states.push({ type: 'state', id: childId(node, 'unread', root.root), parent: node, kind: 'permission-denied', label: `${root.root}: ${n} place${n === 1 ? '' : 's'} could not be read`, message: root.unreadable.messages.join('\n'), seen: [], scope: node });
        }
        if (root.linksOut) {
          // Listed, never walked into (discovery/listScript.ts): a run or checkpoints folder linked in from elsewhere.
          const n = root.linksOut.count;
          states.push({ type: 'state', id: childId(node, 'links', root.root), parent: node, kind: 'no-checkpoints', label: `${root.root}: ${n} link${n === 1 ? '' : 's'} to folders outside not followed`, message: `${linksOutText(root.linksOut)}. Add the folder a link names as a run root to list it.`, seen: root.linksOut.links.map((l) => l.rel), scope: node });
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

  private async loadTargets(hostName: string, maxAgeMs?: number): Promise<Result<HostTargets>> {
    const id = hostId(hostName);
    this.listing.add(id);
    try {
      return await this.listings.targets(hostName, maxAgeMs === undefined ? {} : { maxAgeMs });
    } finally {
      this.listing.delete(id);
    }
  }

  private async loadListing(hostName: string, target: TargetRef, maxAgeMs?: number): Promise<Result<TargetListing>> {
    const key = listingKey(hostName, target);
    this.listing.add(key);
    let r: Result<TargetListing>;
    try {
      r = await this.listings.target(hostName, target, maxAgeMs === undefined ? {} : { maxAgeMs });
    } finally {
      this.listing.delete(key);
    }
    const previous = this.previousListing.get(key);
    // A listing this model has not seen yet (listed now, or for a hover since).
    if (r.ok && r.value !== previous) {
      markGrowing(previous, r.value);
      this.previousListing.set(key, r.value);
      this.followFreshWrites(key, r.value);
    }
    return r;
  }

  /**
   * A listing that took a checkpoint for one being written by its clock alone (runTree.ts markFreshWrites: no marker
   * of its framework, changed seconds before the listing) is listed again once that window has passed, through the
   * refresh queue, so a save that was finishing shows as done (and `latest`) without waiting for the timer or the
   * user. While writes go on, the follow-ups back off (twice as long each time, at most a minute); a listing without
   * such a checkpoint ends them. `id` is the target's id (its listing key).
   */
  private followFreshWrites(id: string, listing: TargetListing): void {
    const fresh = listing.roots.some((r) => r.state === 'ok' && r.runs.some((run) => run.checkpoints.some(isFreshWrite)));
    const f = this.followUps.get(id);
    if (!fresh) {
      if (f) clearTimeout(f.timer);
      this.followUps.delete(id);
      return;
    }
    if (f?.timer !== undefined) return; // one follow-up at a time
    const count = (f?.count ?? 0) + 1;
    const timer = setTimeout(() => {
      const entry = this.followUps.get(id);
      if (entry) entry.timer = undefined;
      this.queue.push(id);
    }, Math.min(this.freshRelistMs * 2 ** (count - 1), MAX_FOLLOW_UP_MS));
    timer.unref?.();
    this.followUps.set(id, { timer, count });
  }

  private async refreshNow(ids: Set<string>): Promise<void> {
    if (ids.has('')) {
      this.listing.add('');
      try {
        this.listings.invalidate();
      } finally {
        this.listing.delete('');
      }
      this.changeEmitter.fire(undefined);
      return;
    }
    const changed: TreeNode[] = [];
    await Promise.all(
      [...ids].map(async (id) => {
        const node = this.nodes.get(id);
        if (!node) return;
        if (node.type === 'host') {
          const before = this.listings.peekTargets(node.hostName);
          // Targets that changed drop their listings too (the cache's rule).
          const after = await this.loadTargets(node.hostName, 0);
          if (!sameResult(before, after)) changed.push(node);
        } else if (node.type === 'target') {
          const before = this.listings.peekTarget(node.hostName, node.target);
          const after = await this.loadListing(node.hostName, node.target, 0);
          if (!sameResult(before, after)) changed.push(node);
        }
      }),
    );
    // A host redrawn redraws its targets: reported alone, so that the view never refreshes a row and, at once, the
    // row above it that may replace it (a target whose host turned unreachable in the same batch).
    for (const node of changed) if (!changed.some((above) => above !== node && isAtOrBelow(node.id, above.id))) this.changeEmitter.fire(node);
  }
}

/** The rows under a checkpoint's contents node (exported for tests and the hover). */
export function inspectionNodes(parent: ContentsNode, ins: Inspection): TreeNode[] {
  const out: TreeNode[] = [];
  const note = (kind: InspectNoteNode['kind'], key: string, label: string, description: string, extra: Partial<InspectNoteNode> = {}): void => {
    out.push({ type: 'inspect-note', id: childId(parent, `n${kind}`, key), parent, kind, label, description, ...extra });
  };
  const c = inspectCompleteness(ins);
  c.reasons.forEach((reason, i) => note('incomplete', String(i), c.state === 'incomplete' ? 'incomplete' : 'not readable', reason));
  for (const g of groupTensors(ins.tensors)) {
    const group: TensorGroupNode = { type: 'tensor-group', id: childId(parent, 'g', g.path.join('.')), parent, group: g };
    out.push(group);
  }
  const state = stateParts(ins);
  if (state.length) note('state', '', 'other state', `${state.join(' · ')} (not counted in params)`);
  ins.entries.forEach((e, i) => note('entry', `${i}\u0000${e.name}`, e.name, e.what, { entry: e }));
  ins.opaque.forEach((o) => note('opaque', o.name, o.name, `a global the file names at ${o.at}: shown by name, never imported or called`));
  for (const f of ins.files) if (f.problem || (f.note && f.format !== 'json' && f.format !== 'dcp-shard')) note('file', f.name, f.name, `${formatBytes(f.size)} · ${f.problem ? `not read: ${f.problem.message}` : f.note}`);
  return out;
}

/** `7.2 K params · 28.7 kB` for a tensor group row. */
export function groupDescription(g: { params: number; bytes: number | null; tensors: unknown[] }): string {
  return `${formatCount(g.params)} params · ${g.bytes === null ? '? B' : formatBytes(g.bytes)} · ${g.tensors.length} tensor${g.tensors.length === 1 ? '' : 's'}`;
}

function errorNode(parent: HostNode | TargetNode, error: RemoteRunsError): StateNode {
  const text = emptyStateText(error.kind);
  return { type: 'state', id: childId(parent, 'e', error.kind), parent, kind: error.kind, label: text.title, message: error.message, seen: [], scope: parent };
}

function isTreeViewState(v: unknown): v is TreeViewState {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as Record<string, unknown>;
  return Array.isArray(s.expanded) && s.expanded.every((id) => typeof id === 'string') && (s.selected === undefined || typeof s.selected === 'string');
}

/** The host or target whose listing a node comes from. */
export function scopeOf(node: TreeNode): HostNode | TargetNode {
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
    const error = asRemoteRunsError(e);
    return { ok: false, error, at: Date.now() };
  }
}

function sameResult<T>(a: Result<T> | undefined, b: Result<T>): boolean {
  return a !== undefined && same(a, b);
}

/** The longest wait between two follow-up listings of a target whose checkpoint is being written. */
const MAX_FOLLOW_UP_MS = 60_000;
