/**
 * Questions about one remote listing (a folder listed some levels deep): what is at a path below it, its
 * children, its size, which entries a glob matches. Pure functions over the entries the extension sent.
 */
import type { RemoteEntry } from '../shared/lspProtocol';
import { matchRel } from './glob';

/** A successful listing of `base` (as asked, e.g. `~/runs`), `depth` levels deep. */
export interface ListingView {
  base: string;
  resolved: string;
  depth: number;
  state: 'ok' | 'path-missing' | 'not-a-directory' | 'permission-denied';
  entries: RemoteEntry[];
  truncated: boolean;
  remoteNow: number;
}

/** `path` relative to the listing's base (`''` for the base itself), or undefined when it is not below it. */
export function relOf(view: ListingView, path: string): string | undefined {
  const p = stripSlash(path);
  for (const base of [stripSlash(view.base), stripSlash(view.resolved)]) {
    if (p === base) return '';
    const prefix = base === '/' ? '/' : `${base}/`;
    if (p.startsWith(prefix)) return p.slice(prefix.length);
  }
  return undefined;
}

/** The listed path of a relative one, spelled as the base was asked (`~/runs/x`). */
export function pathOf(view: ListingView, rel: string): string {
  const base = stripSlash(view.base);
  return rel === '' ? base : base === '/' ? `/${rel}` : `${base}/${rel}`;
}

/**
 * Can this listing say whether `rel` exists (deep enough, complete, and not below a link to a folder, which the
 * listing never walks into: a listing of the path's own folder, whose root is followed, answers instead)?
 */
export function answers(view: ListingView, rel: string): boolean {
  if (view.state !== 'ok') return rel === '';
  if (segmentsOf(rel) > view.depth || (view.truncated && entryAt(view, rel) === undefined)) return false;
  const links = folderLinks(view.entries);
  if (links.size === 0) return true;
  for (let at = rel.indexOf('/'); at >= 0; at = rel.indexOf('/', at + 1)) if (links.has(rel.slice(0, at))) return false;
  return true;
}

/** The paths of a listing's links to folders, found once per listing (answers runs for every path of a document). */
const LINKS = new WeakMap<readonly RemoteEntry[], Set<string>>();
function folderLinks(entries: readonly RemoteEntry[]): Set<string> {
  let found = LINKS.get(entries);
  if (!found) {
    found = new Set();
    for (const e of entries) if (e.link !== undefined) found.add(e.rel);
    LINKS.set(entries, found);
  }
  return found;
}

export function entryAt(view: ListingView, rel: string): RemoteEntry | undefined {
  if (rel === '') return view.state === 'ok' ? { rel: '', type: 'd', bytes: 0, mtime: 0 } : undefined;
  return view.entries.find((e) => e.rel === rel);
}

/** Direct children of `rel` (a folder). */
export function childrenOf(view: ListingView, rel: string): RemoteEntry[] {
  const prefix = rel === '' ? '' : `${rel}/`;
  return view.entries.filter((e) => e.rel.startsWith(prefix) && !e.rel.slice(prefix.length).includes('/') && e.rel.length > prefix.length);
}

/** Bytes of a file, or the sum of the files listed below a folder; the newest mtime among them. */
export function sizeOf(view: ListingView, rel: string): { bytes: number; mtime: number; files: number } {
  const e = entryAt(view, rel);
  if (e && e.type !== 'd') return { bytes: e.bytes, mtime: e.mtime, files: 1 };
  const prefix = rel === '' ? '' : `${rel}/`;
  let bytes = 0;
  let mtime = e?.mtime ?? 0;
  let files = 0;
  for (const x of view.entries) {
    if (!x.rel.startsWith(prefix)) continue;
    mtime = Math.max(mtime, x.mtime);
    if (x.type === 'f') {
      bytes += x.bytes;
      files++;
    }
  }
  return { bytes, mtime, files };
}

/** Entries below `dirRel` whose path relative to it matches the glob segments. */
export function globMatches(view: ListingView, dirRel: string, segments: readonly string[]): RemoteEntry[] {
  const prefix = dirRel === '' ? '' : `${dirRel}/`;
  return view.entries.filter((e) => e.rel.startsWith(prefix) && matchRel(segments, e.rel.slice(prefix.length)));
}

/** Entries relative to the listing with their rel rebased to `dirRel` (`a/b` under `a` → `b`). */
export function below(dirRel: string, rel: string): string {
  return dirRel === '' ? rel : rel.slice(dirRel.length + 1);
}

function segmentsOf(rel: string): number {
  return rel === '' ? 0 : rel.split('/').length;
}

function stripSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}
