/**
 * The extension's side of the language server's questions (`remoteRuns/config`, `/places`, `/list`). Listings
 * come from the window's one listing cache (core/discovery/listings.ts), which the tree reads too: a run root is
 * answered from the listing that gives the tree its runs (the same command, kept with its entries), so a root the
 * tree listed is not listed again for a hover and a root listed for a hover is not listed again for the tree;
 * other folders are listed by one command (listPaths.ts) into the same cache. An answer is taken while younger
 * than ANSWER_MAX_AGE_MS (the cache's rule), and dropped when the cache says its place changed, whoever listed it.
 * Places offered for bare paths are only those reachable without opening a new connection (nothing pops up a
 * password prompt because a file mentions `/workspace`). No `vscode` here.
 */
import type { RemoteRunsCore } from '../../core/service';
import { runCommand } from '../../core/remote';
import { asRemoteRunsError, formatTarget, isRemoteRunsError, parseTarget, type HostConfig, type RemoteRunsError } from '../../core/types';
import { ANSWER_MAX_AGE_MS, Listings, PLACES_MAX_AGE_MS, type ListingScope, type RootAnswer } from '../../core/discovery/listings';
import { rootEntries } from '../../core/discovery/listParse';
import { DEFAULT_MAX_DEPTH } from '../../core/discovery/listScript';
import type { RemoteEntry } from '../../shared/lspProtocol';
import type { InspectSummaryParams, InspectSummaryResult } from '../../shared/lspProtocol';
import { InspectCache, inspectRemote, listedFilesOf } from '../../core/inspect/remoteRead';
import { summaryLine } from '../../core/inspect/summary';
import type { ConfigResult, LatestMetricsParams, LatestMetricsResult, ListParams, ListResult, PathMapping, Place, PlacesResult } from '../../shared/lspProtocol';
import { samePlace } from '../../shared/lspProtocol';
import { listPathsCommand } from './listPaths';
import { latestMetricsCommand } from './latestMetrics';

export interface AnswerDeps {
  core: RemoteRunsCore;
  /** Configured hosts (settings and ~/.ssh/config), as the tree shows them. */
  hosts(): HostConfig[];
  /** Is this host's pooled connection open now? */
  isConnected(host: string): boolean;
  /** Host/targets the tree has listed runs of. */
  knownPlaces(): Place[];
  mappings(): PathMapping[];
  /** How long a listing answers (default ANSWER_MAX_AGE_MS, 15 s). */
  ttlMs?: number;
  /** The window's one listing cache, shared with the tree (default: its own, windowListings). */
  listings?: Listings<ListedFolder>;
  /** The window's one cache of checkpoint headers, shared with the tree's rows and Compare (default: its own). */
  inspectCache?: InspectCache;
  clock?: () => number;
}

interface Cached<T> {
  at: number;
  value: T;
}

/** A folder listed for the language server: the answer to `remoteRuns/list` as it is kept. */
export type ListedFolder = Extract<ListResult, { ok: true }>;

/**
 * The window's listing cache over the core: hosts' targets and targets' run roots listed as the tree lists them
 * (RemoteRunsCore.listTarget, only the roots not held yet), folders by listPathsCommand.
 */
export function windowListings(core: RemoteRunsCore, clock?: () => number): Listings<ListedFolder> {
  return new Listings<ListedFolder>(
    {
      listTargets: (host, signal) => core.listTargets(host, signal),
      listTarget: (host, target, signal, roots) => core.listTarget(host, target, signal, roots),
      runRoots: (host) => core.runRootsOf(host),
      listPath: async (host, target, path, depth, signal) => {
        const result = await runCommand(core.targetExecutor(host, target), target, listPathsCommand([path], depth), signal);
        const [p] = result.paths;
        return { ok: true, resolved: p.resolved, state: p.state, entries: p.entries, truncated: p.truncated, remoteNow: result.remoteNow };
      },
    },
    clock,
  );
}

export class RemoteAnswers {
  private readonly listings: Listings<ListedFolder>;
  private readonly latest = new Map<string, Cached<LatestMetricsResult>>();
  /** Header reads per (path, size, mtime): a checkpoint that did not change is not read again. */
  private readonly inspected: InspectCache;
  private readonly subscription: { dispose(): void };

  constructor(private readonly deps: AnswerDeps) {
    this.inspected = deps.inspectCache ?? new InspectCache();
    this.listings = deps.listings ?? windowListings(deps.core, deps.clock);
    // A place listed again (by the tree or for a hover) or dropped: its runs' latest values are read again too.
    this.subscription = this.listings.onDidChange((scope) => this.dropLatest(scope));
  }

  dispose(): void {
    this.subscription.dispose();
  }

  private now(): number {
    return (this.deps.clock ?? Date.now)();
  }

  /** Hosts (name, address, user, run roots) and the folder mappings. */
  config(): ConfigResult {
    return {
      hosts: this.deps.hosts().map((h) => ({ name: h.name, address: h.host, ...(h.user ? { user: h.user } : {}), roots: this.deps.core.runRoots(h) })),
      mappings: this.deps.mappings(),
    };
  }

  /** Places answerable without a new connection: listed by the tree, or targets of connected hosts. */
  async places(signal?: AbortSignal): Promise<PlacesResult> {
    const out: Place[] = [...this.deps.knownPlaces()];
    const connected = this.deps.hosts().filter((h) => this.deps.isConnected(h.name));
    const lists = await Promise.all(connected.map((h) => this.targetsOf(h.name, signal)));
    for (const p of lists.flat()) if (!out.some((q) => samePlace(p, q))) out.push(p);
    return { places: out };
  }

  private async targetsOf(host: string, signal?: AbortSignal): Promise<Place[]> {
    const r = await this.listings.targets(host, { maxAgeMs: PLACES_MAX_AGE_MS, ...(signal ? { signal } : {}) });
    return r.ok ? r.value.targets.filter((t) => t.state !== 'stopped').map((t) => ({ host, target: formatTarget(t) })) : [];
  }

  /**
   * One listing, from the window's listing cache while younger than the answers' age, else ONE remote command
   * through the shared connection: a run root (as deep as the tree lists it, or less) by the tree's own listing of
   * it, any other folder by listPathsCommand. A failure (stopped container, unreachable host) answers too, so typing
   * does not re-ask on every pause; a cancelled one does not.
   */
  async list(params: ListParams, signal?: AbortSignal): Promise<ListResult> {
    try {
      const host = params.place.host;
      const target = parseTarget(params.place.target);
      const opts = { maxAgeMs: this.deps.ttlMs ?? ANSWER_MAX_AGE_MS, ...(signal ? { signal } : {}) };
      const root = params.depth <= DEFAULT_MAX_DEPTH ? this.deps.core.runRootsOf(host).find((r) => stripSlash(r) === stripSlash(params.path)) : undefined;
      if (root !== undefined) {
        const r = await this.listings.root(host, target, root, opts);
        return r.ok ? rootResult(r.value) : failure(r.error, signal);
      }
      const r = await this.listings.path(host, target, params.path, params.depth, opts);
      return r.ok ? r.value : failure(r.error, signal);
    } catch (e) {
      return failure(asRemoteRunsError(e), signal);
    }
  }

  /** The last values of a JSONL metrics log (its last few KB only), kept as briefly as listings. */
  async latestMetrics(params: LatestMetricsParams, signal?: AbortSignal): Promise<LatestMetricsResult> {
    const key = JSON.stringify([params.place.host, params.place.target, params.path]);
    const cached = this.latest.get(key);
    if (cached && this.now() - cached.at < (this.deps.ttlMs ?? 15_000)) return cached.value;
    try {
      const target = parseTarget(params.place.target);
      // A host's executor, or kubectl exec for a cluster's pod container (service.ts targetExecutor).
      const r = await runCommand(this.deps.core.targetExecutor(params.place.host, target), target, latestMetricsCommand(params.path), signal);
      const value: LatestMetricsResult = { ok: true, ...r };
      this.latest.set(key, { at: this.now(), value });
      return value;
    } catch (e) {
      return { ok: false, kind: isRemoteRunsError(e) ? e.kind : 'command-failed', message: e instanceof Error ? e.message : String(e) };
    }
  }

  /** A checkpoint's one-line summary from its headers (one remote command; the files are cached while unchanged). */
  async inspectSummary(params: InspectSummaryParams, signal?: AbortSignal): Promise<InspectSummaryResult> {
    try {
      const target = parseTarget(params.place.target);
      const r = await inspectRemote(this.deps.core.targetExecutor(params.place.host, target), target, listedFilesOf(params.checkpoint), { cache: this.inspected, host: params.place.host, signal });
      return { ok: true, summary: summaryLine(r.inspection) };
    } catch (e) {
      return { ok: false, kind: isRemoteRunsError(e) ? e.kind : 'command-failed', message: e instanceof Error ? e.message : String(e) };
    }
  }

  /**
   * Forget listings (of one place, or all, with the targets of connected hosts) in the window's listing cache: the
   * tree lists them again too.
   */
  invalidate(place?: Place): void {
    if (!place) return this.listings.invalidate();
    let target;
    try {
      target = parseTarget(place.target);
    } catch {
      return; // never listed: nothing to forget
    }
    this.listings.invalidate({ host: place.host, target });
  }

  private dropLatest(scope: ListingScope | undefined): void {
    for (const key of [...this.latest.keys()]) {
      const [host, target] = JSON.parse(key) as [string, string];
      if (!scope || (scope.host === host && (!scope.target || formatTarget(scope.target) === target))) this.latest.delete(key);
    }
  }
}

/** A run root's listing (the tree's) as a `remoteRuns/list` answer: its state and the entries it was read from. */
function rootResult(a: RootAnswer): ListedFolder {
  const r = a.root;
  const state = r.state === 'path-missing' || r.state === 'not-a-directory' || r.state === 'permission-denied' ? r.state : 'ok';
  return { ok: true, resolved: r.path, state, entries: state === 'ok' ? wireEntries(r) : [], truncated: r.truncated, remoteNow: a.remoteNow };
}

/** A root's entries in the wire's shape, made once per listing (a hover asks about the same root again and again). */
const WIRE = new WeakMap<object, RemoteEntry[]>();
function wireEntries(r: RootAnswer['root']): RemoteEntry[] {
  let out = WIRE.get(r);
  if (!out) {
    // The shape lsp/listPaths.ts parseListedPaths gives for the same records.
    out = (rootEntries(r) ?? []).map((e) => ({ type: e.type, bytes: e.bytes, mtime: e.mtime, rel: e.rel, ...(e.type === 'd' && e.link !== undefined ? { link: e.link } : {}) }));
    WIRE.set(r, out);
  }
  return out;
}

function failure(e: RemoteRunsError, signal?: AbortSignal): ListResult {
  return { ok: false, kind: signal?.aborted ? 'cancelled' : e.kind, message: e.message };
}

function stripSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}
