/**
 * The extension's side of the language server's questions (`remoteRuns/config`, `/places`, `/list`). Listings
 * go through the core's one runner over the shared pooled connection, are kept for a short time, and are dropped
 * when the tree refreshes. Places offered for bare paths are only those reachable without opening a new
 * connection (nothing pops up a password prompt because a file mentions `/workspace`). No `vscode` here.
 */
import type { RemoteRunsCore } from '../../core/service';
import { runCommand } from '../../core/remote';
import { formatTarget, isRemoteRunsError, parseTarget, type HostConfig } from '../../core/types';
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
  /** How long a listing answers (default 15 s). */
  ttlMs?: number;
  /** The window's one cache of checkpoint headers, shared with the tree's rows and Compare (default: its own). */
  inspectCache?: InspectCache;
  clock?: () => number;
}

interface Cached<T> {
  at: number;
  value: T;
}

export class RemoteAnswers {
  private readonly listings = new Map<string, Cached<ListResult>>();
  private readonly targets = new Map<string, Cached<Promise<Place[]>>>();
  private readonly latest = new Map<string, Cached<LatestMetricsResult>>();
  /** Header reads per (path, size, mtime): a checkpoint that did not change is not read again. */
  private readonly inspected: InspectCache;

  constructor(private readonly deps: AnswerDeps) {
    this.inspected = deps.inspectCache ?? new InspectCache();
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

  private targetsOf(host: string, signal?: AbortSignal): Promise<Place[]> {
    const cached = this.targets.get(host);
    if (cached && this.now() - cached.at < 60_000) return cached.value;
    const value = this.deps.core.listTargets(host, signal).then(
      (r) => r.targets.filter((t) => t.state !== 'stopped').map((t) => ({ host, target: formatTarget(t) })),
      () => {
        this.targets.delete(host);
        return [];
      },
    );
    this.targets.set(host, { at: this.now(), value });
    return value;
  }

  /** One listing: from the cache while fresh, else ONE remote command through the shared connection. */
  async list(params: ListParams, signal?: AbortSignal): Promise<ListResult> {
    const key = JSON.stringify([params.place.host, params.place.target, params.path, params.depth]);
    const cached = this.listings.get(key);
    if (cached && this.now() - cached.at < (this.deps.ttlMs ?? 15_000)) return cached.value;
    try {
      const target = parseTarget(params.place.target);
      const exec = this.deps.core.executor(params.place.host);
      const result = await runCommand(exec, target, listPathsCommand([params.path], params.depth), signal);
      const [p] = result.paths;
      const value: ListResult = { ok: true, resolved: p.resolved, state: p.state, entries: p.entries, truncated: p.truncated, remoteNow: result.remoteNow };
      this.listings.set(key, { at: this.now(), value });
      return value;
    } catch (e) {
      const kind = signal?.aborted ? 'cancelled' : isRemoteRunsError(e) ? e.kind : 'command-failed';
      const value: ListResult = { ok: false, kind, message: e instanceof Error ? e.message : String(e) };
      // A failure (stopped container, unreachable host) answers too, so typing does not re-ask on every pause.
      if (kind !== 'cancelled') this.listings.set(key, { at: this.now(), value });
      return value;
    }
  }

  /** The last values of a JSONL metrics log (its last few KB only), kept as briefly as listings. */
  async latestMetrics(params: LatestMetricsParams, signal?: AbortSignal): Promise<LatestMetricsResult> {
    const key = JSON.stringify([params.place.host, params.place.target, params.path]);
    const cached = this.latest.get(key);
    if (cached && this.now() - cached.at < (this.deps.ttlMs ?? 15_000)) return cached.value;
    try {
      const r = await runCommand(this.deps.core.executor(params.place.host), parseTarget(params.place.target), latestMetricsCommand(params.path), signal);
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
      const r = await inspectRemote(this.deps.core.executor(params.place.host), parseTarget(params.place.target), listedFilesOf(params.checkpoint), { cache: this.inspected, host: params.place.host, signal });
      return { ok: true, summary: summaryLine(r.inspection) };
    } catch (e) {
      return { ok: false, kind: isRemoteRunsError(e) ? e.kind : 'command-failed', message: e instanceof Error ? e.message : String(e) };
    }
  }

  /** Forget listings (of one place, or all) and the targets of connected hosts. */
  invalidate(place?: Place): void {
    for (const key of [...this.listings.keys()]) {
      const [host, target] = JSON.parse(key) as [string, string];
      if (!place || (place.host === host && place.target === target)) this.listings.delete(key);
    }
    for (const key of [...this.latest.keys()]) {
      const [host, target] = JSON.parse(key) as [string, string];
      if (!place || (place.host === host && place.target === target)) this.latest.delete(key);
    }
    if (!place) this.targets.clear();
  }
}
