/**
 * What a path reference points at on its place: a file or folder (with its run and checkpoint when it is one),
 * nothing (and what is there instead), or for a glob the entries it matches (and, when none, the ones one level
 * down that the user most likely meant). Built from listings the index fetched; the wording is in messages.ts.
 */
import { findRuns } from '../core/discovery/runTree';
import { parseCheckpointName } from '../core/discovery/checkpointLayout';
import { latestCheckpoint, type Checkpoint, type Run } from '../core/types';
import type { Place, RemoteEntry } from '../shared/lspProtocol';
import { hasGlob, matchSegment, splitGlob } from './glob';
import { childrenOf, entryAt, globMatches, pathOf, sizeOf, type ListingView } from './listingView';
import type { RemoteIndex } from './remoteIndex';

/** An entry with its path spelled as in the text. */
export interface Found {
  path: string;
  name: string;
  type: string;
  bytes: number;
  mtime: number;
}

export interface RunContext {
  run: Run;
  checkpoint?: Checkpoint;
}

export type Analysis =
  | { kind: 'error'; place: Place; path: string; errorKind: string; message: string }
  | {
      kind: 'exists';
      place: Place;
      path: string;
      entry: Found;
      /** For a folder: its direct entries, sizes summed over what was listed below them. */
      children: Found[];
      files: number;
      remoteNow: number;
      context?: RunContext;
    }
  | {
      kind: 'missing';
      place: Place;
      path: string;
      /** Why: the path is missing, or a folder on the way cannot be read, or is a file. */
      reason: 'path-missing' | 'permission-denied' | 'not-a-directory';
      /** The nearest folder above that exists, and what it holds. */
      nearest?: { path: string; children: Found[]; runs: Run[] };
      remoteNow: number;
      latest?: LatestCheckpoint;
    }
  | {
      kind: 'glob';
      place: Place;
      path: string;
      dir: string;
      dirState: 'ok' | 'path-missing' | 'not-a-directory' | 'permission-denied';
      matches: Found[];
      /** When nothing matches: entries one folder further down that match the last segment. */
      oneLevelDown: Found[];
      /** What the glob's folder holds (direct entries). */
      dirChildren: Found[];
      /** Absence is not proof: the listing was cut short. */
      truncated: boolean;
      remoteNow: number;
      latest?: LatestCheckpoint;
    };

/** The newest checkpoint near a path that matched nothing, as a replacement for it. */
export interface LatestCheckpoint {
  run: Run;
  checkpoint: Checkpoint;
  /** The checkpoint's path, or its file that matches what the reference asked for (`…/step_N/checkpoint.pt`). */
  replacement: string;
}

/** Look up `path` (a glob or not) on `place`. */
export async function analyse(index: RemoteIndex, place: Place, path: string, roots: readonly string[], signal?: AbortSignal): Promise<Analysis> {
  return hasGlob(path) ? analyseGlob(index, place, path, roots, signal) : analysePath(index, place, path, roots, signal);
}

async function analysePath(index: RemoteIndex, place: Place, path: string, roots: readonly string[], signal?: AbortSignal): Promise<Analysis> {
  const located = await index.locate(place, path, roots, signal);
  if (!located.ok) return { kind: 'error', place, path, errorKind: located.kind, message: located.message };
  const { view, rel } = located;
  const entry = view.state === 'ok' ? entryAt(view, rel) : undefined;
  if (entry) {
    let childView = view;
    let childRel = rel;
    if (entry.type === 'd' && rel !== '' && rel.split('/').length >= view.depth) {
      // The listing ends at this folder: list the folder itself for its children.
      const again = await index.locate(place, path, roots, signal, 1);
      if (again.ok && again.view.state === 'ok') ({ view: childView, rel: childRel } = again);
    }
    const size = sizeOf(childView, childRel);
    const found: Found = { path: stripSlash(path), name: baseName(path), type: entry.type, bytes: entry.type === 'd' ? size.bytes : entry.bytes, mtime: entry.type === 'd' ? size.mtime : entry.mtime };
    return {
      kind: 'exists',
      place,
      path,
      entry: found,
      children: entry.type === 'd' ? childrenOf(childView, childRel).map((c) => foundOf(childView, c)) : [],
      files: size.files,
      remoteNow: view.remoteNow,
      context: runContext(view, path),
    };
  }
  const reason = view.state === 'ok' || view.state === 'path-missing' ? 'path-missing' : view.state;
  const near = await index.nearestExisting(place, path, roots, signal);
  const nearest = near ? { path: pathOf(near.view, near.rel), children: childrenOf(near.view, near.rel).map((c) => foundOf(near.view, c)), runs: runsOf(near.view) } : undefined;
  return { kind: 'missing', place, path, reason, nearest, remoteNow: view.remoteNow, latest: near ? latestNear(near.view, pathOf(near.view, near.rel), baseName(path)) : undefined };
}

async function analyseGlob(index: RemoteIndex, place: Place, path: string, roots: readonly string[], signal?: AbortSignal): Promise<Analysis> {
  const { dir, segments } = splitGlob(path);
  const located = await index.locate(place, dir, roots, signal, segments.length + 1);
  if (!located.ok) return { kind: 'error', place, path, errorKind: located.kind, message: located.message };
  const { view, rel } = located;
  const dirEntry = view.state === 'ok' ? entryAt(view, rel) : undefined;
  const dirState: ListingView['state'] = view.state !== 'ok' ? view.state : !dirEntry ? 'path-missing' : dirEntry.type !== 'd' ? 'not-a-directory' : 'ok';
  const base = { kind: 'glob' as const, place, path, dir, dirState, truncated: view.truncated, remoteNow: view.remoteNow };
  if (dirState !== 'ok') return { ...base, matches: [], oneLevelDown: [], dirChildren: [] };
  const matches = globMatches(view, rel, segments).map((e) => foundOf(view, e));
  const dirChildren = childrenOf(view, rel).map((c) => foundOf(view, c));
  if (matches.length > 0) return { ...base, matches, oneLevelDown: [], dirChildren };
  // The story's mistake: `dir/*.pt` when the files are in `dir/step_N/checkpoint.pt`.
  const deeper = [...segments.slice(0, -1), '*', segments[segments.length - 1]];
  const oneLevelDown = globMatches(view, rel, deeper).map((e) => foundOf(view, e));
  const latest = latestNear(view, dir, segments[segments.length - 1]);
  return { ...base, matches, oneLevelDown, dirChildren, latest };
}

/** The run and checkpoint a path lies in (a run root listing recognises them as the tree does). */
function runContext(view: ListingView, path: string): RunContext | undefined {
  const p = stripSlash(path);
  const run = runsOf(view)
    .filter((r) => p === r.path || p.startsWith(`${r.path}/`))
    .sort((a, b) => b.path.length - a.path.length)[0];
  if (!run) return undefined;
  const checkpoint = run.checkpoints.find((c) => p === c.path || p.startsWith(`${c.path}/`));
  return { run, ...(checkpoint ? { checkpoint } : {}) };
}

/** Runs found in a listing, by its entries (one cached listing answers thousands of references of a document). */
const runsCache = new WeakMap<readonly RemoteEntry[], Map<string, Run[]>>();

function runsOf(view: ListingView): Run[] {
  if (view.state !== 'ok') return [];
  const key = `${view.remoteNow}\0${stripSlash(view.base)}`;
  let byBase = runsCache.get(view.entries);
  if (!byBase) runsCache.set(view.entries, (byBase = new Map()));
  let runs = byBase.get(key);
  if (!runs) byBase.set(key, (runs = findRuns(stripSlash(view.base), view.entries, view.remoteNow)));
  return runs;
}

/**
 * The newest checkpoint of the run that `dir` lies in (or of the one run below it), offered in place of a
 * reference that matched nothing. Its file named like `lastSegment` (a glob or a name) is preferred.
 */
function latestNear(view: ListingView, dir: string, lastSegment: string): LatestCheckpoint | undefined {
  const d = stripSlash(dir);
  const runs = runsOf(view);
  const run =
    runs.filter((r) => d === r.path || d.startsWith(`${r.path}/`)).sort((a, b) => b.path.length - a.path.length)[0] ??
    (runs.filter((r) => r.path.startsWith(`${d}/`)).length === 1 ? runs.find((r) => r.path.startsWith(`${d}/`)) : undefined);
  const checkpoint = run ? latestCheckpoint(run) : undefined;
  if (!run || !checkpoint) return undefined;
  const file = checkpoint.files.find((f) => !f.name.includes('/') && (hasGlob(lastSegment) ? matchSegment(lastSegment, f.name) : f.name === lastSegment));
  return { run, checkpoint, replacement: file ? file.path : checkpoint.path };
}

function foundOf(view: ListingView, e: RemoteEntry): Found {
  const size = e.type === 'd' ? sizeOf(view, e.rel) : { bytes: e.bytes, mtime: e.mtime };
  return { path: pathOf(view, e.rel), name: baseName(e.rel), type: e.type, bytes: size.bytes, mtime: Math.max(e.mtime, size.mtime) };
}

/** Checkpoint folders among entries (by name), newest step first. */
export function checkpointFolders(entries: readonly Found[]): (Found & { step: number })[] {
  return entries
    .flatMap((e) => {
      const parsed = e.type === 'd' ? parseCheckpointName(e.name, true) : undefined;
      return parsed?.step != null ? [{ ...e, step: parsed.step }] : [];
    })
    .sort((a, b) => b.step - a.step);
}

export function baseName(path: string): string {
  const p = stripSlash(path);
  return p.slice(p.lastIndexOf('/') + 1);
}

function stripSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}
