/**
 * The custom LSP messages between the Remote Runs language server and the extension. Types only, imported by both
 * bundles: the server never opens SSH itself; it asks the extension, which answers from its cache or with ONE
 * listing through the shared connection pool.
 *
 * Server → client requests: `remoteRuns/config`, `remoteRuns/places`, `remoteRuns/list`, `remoteRuns/latestMetrics`.
 * Client → server notification: `remoteRuns/indexChanged` (the tree refreshed or settings changed: drop answers).
 */

/** Where a path lives: a configured host name and a target spelled `host`, `pct:200`, `docker:name`. */
export interface Place {
  host: string;
  target: string;
}

/** A host as the server needs to know it: to match `ssh NAME`, `ssh user@ADDRESS`, `NAME:/path`, and its run roots. */
export interface HostInfo {
  name: string;
  /** Address or ssh-config alias (`host` of the config). */
  address: string;
  user?: string;
  /** Run roots searched on this host (absolute or `~/…`). */
  roots: string[];
}

/** A folder of the workspace mapped to where its bare remote paths live (setting `remoteRuns.pathMappings`). */
export interface PathMapping {
  /** The folder's URI as the editor spells it (`file:///…`); documents under it use `place`. */
  folderUri: string;
  place: Place;
}

export interface ConfigResult {
  hosts: HostInfo[];
  mappings: PathMapping[];
}

/** Places the extension can answer for without opening a new connection (connected hosts, listed targets). */
export interface PlacesResult {
  places: Place[];
}

export interface ListParams {
  place: Place;
  /** Absolute or `~/…` folder (or file) to list. */
  path: string;
  /** Levels below `path` to list (1 = its entries). */
  depth: number;
}

/** One entry below a listed path: `type` as `find %y` (f file, d folder, l broken link…), mtime in ms. */
export interface RemoteEntry {
  rel: string;
  type: string;
  bytes: number;
  mtime: number;
  /** A link to a folder: its text. The listing never walks into one (core/discovery/listScript.ts). */
  link?: string;
}

/** What a listed path is: a folder with entries, or exactly why there are none. */
export type ListState = 'ok' | 'path-missing' | 'not-a-directory' | 'permission-denied';

export type ListResult =
  | {
      ok: true;
      /** The path with `~` expanded by the remote side. */
      resolved: string;
      state: ListState;
      entries: RemoteEntry[];
      /** More entries than one listing reads: absence below is not proof. */
      truncated: boolean;
      /** The remote clock at listing time (ms since the epoch), for ages. */
      remoteNow: number;
    }
  | {
      ok: false;
      /** An ErrorKind of the core: `unreachable`, `container-stopped`, `not-found` (host not configured)… */
      kind: string;
      message: string;
    };

export interface LatestMetricsParams {
  place: Place;
  /** A run's JSONL metrics log. */
  path: string;
}

/** The numeric fields of a JSONL log's last complete line (read from its last few KB only). */
export type LatestMetricsResult = { ok: true; step?: number; values: Record<string, number> } | { ok: false; kind: string; message: string };

export interface InspectSummaryParams {
  place: Place;
  /** The checkpoint as the listing gave it (files relative to it for a folder; none for a flat file). */
  checkpoint: { path: string; isDir: boolean; bytes: number; mtime: number; files: { name: string; path: string; bytes: number; mtime: number }[] };
}

/** A checkpoint's one-line summary, read from its headers (core/inspect: one remote command, cached per file). */
export type InspectSummaryResult = { ok: true; summary: string } | { ok: false; kind: string; message: string };

export interface IndexChangedParams {
  /** Only answers about this place changed; everything when absent. */
  place?: Place;
}

/** Method names, one place. */
export const LspMethods = {
  config: 'remoteRuns/config',
  places: 'remoteRuns/places',
  list: 'remoteRuns/list',
  latestMetrics: 'remoteRuns/latestMetrics',
  inspectSummary: 'remoteRuns/inspectSummary',
  indexChanged: 'remoteRuns/indexChanged',
} as const;

/** Command ids the server puts in code actions and links (the extension registers them). */
export const LspCommands = {
  revealInTree: 'remoteRuns.revealInTree',
  downloadCheckpoint: 'remoteRuns.downloadCheckpoint',
  openMetrics: 'remoteRuns.openMetrics',
} as const;

/** `host/pct:200` */
export function formatPlace(p: Place): string {
  return `${p.host}/${p.target}`;
}

export function samePlace(a: Place, b: Place): boolean {
  return a.host === b.host && a.target === b.target;
}
