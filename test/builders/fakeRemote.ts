/**
 * An in-memory remote for the language server's `remoteRuns/list`, answered as the extension answers it
 * (src/extension/lsp/answers.ts over the list script): a map of absolute file paths to their size and mtime, folders
 * implied. Used by the server's protocol test (test/integration/lspServer.test.ts) and the hover benchmark
 * (bench/lspHover.ts), so both ask the same fake.
 */
import type { ListParams, ListResult, RemoteEntry } from '../../src/shared/lspProtocol';

/** A remote file system: absolute path → file size and mtime (ms), folders implied. */
export type FakeFs = Map<string, { bytes: number; mtime: number }>;

/** The story's run: seven step_N/checkpoint.pt folders of 3.2 GB under /workspace/checkpoints, 40 minutes apart, the newest 10 minutes old. */
export const STORY_STEPS: readonly number[] = [10_000, 12_000, 14_000, 16_000, 18_000, 20_000, 22_000];

export function storyFs(now: number): FakeFs {
  const fs: FakeFs = new Map();
  STORY_STEPS.forEach((s, i) => fs.set(`/workspace/checkpoints/step_${s}/checkpoint.pt`, { bytes: 3.2e9, mtime: now - 10 * 60_000 - (STORY_STEPS.length - 1 - i) * 40 * 60_000 }));
  return fs;
}

/**
 * The answer to `params` over `fs`: `~` is `home`; a file is `not-a-directory`, a path with nothing below it
 * `path-missing`; a folder's entries `params.depth` levels deep (folders 4096 bytes, with their newest file's mtime
 * as first seen), sorted by path.
 */
export function listFake(fs: FakeFs, params: ListParams, remoteNow: number, home = '/home/u'): ListResult {
  const base = params.path.replace(/^~(?=\/|$)/, home).replace(/\/+$/, '') || '/';
  const files = [...fs.keys()];
  const isFile = fs.has(base);
  const isDir = files.some((f) => f.startsWith(base === '/' ? '/' : `${base}/`));
  const common = { ok: true as const, resolved: base, truncated: false, remoteNow };
  if (isFile) return { ...common, state: 'not-a-directory', entries: [] };
  if (!isDir) return { ...common, state: 'path-missing', entries: [] };
  const entries = new Map<string, RemoteEntry>();
  for (const [file, meta] of fs) {
    if (!file.startsWith(`${base}/`)) continue;
    const parts = file.slice(base.length + 1).split('/');
    for (let i = 1; i <= Math.min(parts.length, params.depth); i++) {
      const rel = parts.slice(0, i).join('/');
      const leaf = i === parts.length;
      if (!entries.has(rel)) entries.set(rel, { rel, type: leaf ? 'f' : 'd', bytes: leaf ? meta.bytes : 4096, mtime: meta.mtime });
    }
  }
  return { ...common, state: 'ok', entries: [...entries.values()].sort((a, b) => (a.rel < b.rel ? -1 : 1)) };
}
