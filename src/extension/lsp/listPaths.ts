/**
 * The one remote command behind the language server's `remoteRuns/list`: the tree's own list script (one round
 * trip, `~` expanded remotely, paths as positional arguments quoted by the runner's one shellJoin), read back as
 * raw entries instead of runs, so the server can answer about any path, glob or folder below. No `vscode` here.
 */
import type { RemoteCommand } from '../../core/remote';
import { commandFailed } from '../../core/remote';
import { LIST_SCRIPT } from '../../core/discovery/listScript';
import { readListRecords } from '../../core/discovery/listParse';
import { RemoteRunsError, isRemoteRunsError } from '../../core/types';
import type { ListState, RemoteEntry } from '../../shared/lspProtocol';

export interface ListedPath {
  path: string;
  resolved: string;
  state: ListState;
  entries: RemoteEntry[];
  truncated: boolean;
}

export interface ListedPaths {
  paths: ListedPath[];
  remoteNow: number;
}

/** Entries per listed path before it says `truncated` (the tree's own bound). */
export const MAX_ENTRIES = 40_000;

const STATES: Record<string, ListState> = { ok: 'ok', missing: 'path-missing', notdir: 'not-a-directory', denied: 'permission-denied' };

/** List each of `paths` `depth` levels deep, in one command. */
export function listPathsCommand(paths: readonly string[], depth: number, maxEntries = MAX_ENTRIES): RemoteCommand<ListedPaths> {
  const describe = `list ${paths.join(', ')}`;
  return {
    argv: ['sh', '-c', LIST_SCRIPT, 'sh', 'list', String(Math.max(1, Math.floor(depth))), String(maxEntries), ...paths],
    describe,
    maxOutputBytes: 64 * 1024 * 1024,
    parse: (result) => {
      if (result.code !== 0) throw commandFailed(describe, result);
      return parseListedPaths(result.stdout, paths, maxEntries);
    },
  };
}

/**
 * The list script's records (protocol in core/discovery/listScript.ts) as raw entries, read by the tree's own reader
 * (readListRecords), so both agree on every record and on names that are not UTF-8.
 */
export function parseListedPaths(stdout: Buffer, paths: readonly string[], maxEntries: number): ListedPaths {
  let read: ReturnType<typeof readListRecords>;
  try {
    read = readListRecords({ stdout, stderr: Buffer.alloc(0), code: 0, truncated: false }, paths.length);
  } catch (e) {
    throw isRemoteRunsError(e) ? e : protocol(e instanceof Error ? e.message : String(e));
  }
  return {
    paths: read.records.map((r, i) => ({
      path: paths[i],
      resolved: r.path,
      state: STATES[r.status],
      entries: r.entries.slice(0, maxEntries).map((e) => ({ type: e.type, bytes: e.bytes, mtime: e.mtime, rel: e.rel, ...(e.type === 'd' && e.link !== undefined ? { link: e.link } : {}) })),
      truncated: r.entries.length > maxEntries,
    })),
    remoteNow: read.remoteNow,
  };
}

function protocol(message: string): RemoteRunsError {
  return new RemoteRunsError('protocol', `Unexpected output from the path listing: ${message}`);
}
