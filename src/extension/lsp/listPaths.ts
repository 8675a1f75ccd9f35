/**
 * The one remote command behind the language server's `remoteRuns/list`: the tree's own list script (one round
 * trip, `~` expanded remotely, paths as positional arguments quoted by the runner's one shellJoin), read back as
 * raw entries instead of runs, so the server can answer about any path, glob or folder below. No `vscode` here.
 */
import type { RemoteCommand } from '../../core/remote';
import { commandFailed } from '../../core/remote';
import { LIST_MAGIC as MAGIC, LIST_SCRIPT } from '../../core/discovery/listScript';
import { RemoteRunsError } from '../../core/types';
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

/** Read the list script's NUL-separated records (protocol in core/discovery/listScript.ts) as raw entries. */
export function parseListedPaths(stdout: Buffer, paths: readonly string[], maxEntries: number): ListedPaths {
  const start = stdout.indexOf(MAGIC);
  if (start < 0) throw protocol('the listing did not start with its marker');
  const fields: string[] = [];
  for (let from = start + MAGIC.length; ; ) {
    const at = stdout.indexOf(0, from);
    if (at < 0) break;
    fields.push(stdout.subarray(from, at).toString('utf8'));
    from = at + 1;
  }
  let remoteNow: number | undefined;
  const out: (ListedPath & { ended: boolean })[] = [];
  let finished = false;
  for (let i = 0; i < fields.length && !finished; ) {
    const tag = fields[i++];
    if (tag === 'T') remoteNow = Number(fields[i++]) * 1000;
    else if (tag === 'R') {
      const [index, status, resolved] = fields.slice(i, (i += 3));
      const state = STATES[status];
      if (Number(index) !== out.length || !state || out.length >= paths.length) throw protocol(`bad root record ${JSON.stringify(index)}`);
      out.push({ path: paths[out.length], resolved, state, entries: [], truncated: false, ended: state !== 'ok' });
    } else if (tag === 'E') {
      const [type, size, mtime, rel] = fields.slice(i, (i += 5));
      const current = out[out.length - 1];
      if (!current || current.ended || rel === undefined) throw protocol('an entry outside any root');
      if (current.entries.length >= maxEntries) current.truncated = true;
      else current.entries.push({ type, bytes: Number(size), mtime: Math.round(Number(mtime) * 1000), rel });
    } else if (tag === 'X') {
      i += 2;
      const current = out[out.length - 1];
      if (current) current.ended = true;
    } else if (tag === 'Z') finished = true;
    else throw protocol(`unknown record ${JSON.stringify(tag.slice(0, 20))}`);
  }
  if (remoteNow === undefined || !Number.isFinite(remoteNow)) throw protocol('no remote clock');
  if (!finished || out.length !== paths.length) throw protocol(`the listing ended early (${out.length} of ${paths.length} paths)`);
  return { paths: out.map(({ ended: _ended, ...p }) => p), remoteNow };
}

function protocol(message: string): RemoteRunsError {
  return new RemoteRunsError('protocol', `Unexpected output from the path listing: ${message}`);
}
