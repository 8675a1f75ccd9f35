/**
 * A glob that matched nothing gets the latest checkpoint offered in its place, and the file in it named like the
 * glob's last segment: that choice uses the shell's glob rules (the one wildcard matcher), as the remote shell
 * would expand the glob the user wrote.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyse } from '../../src/lsp/analysis';
import { RemoteIndex } from '../../src/lsp/remoteIndex';
import type { ListParams, ListResult, RemoteEntry } from '../../src/shared/lspProtocol';

const NOW = Date.UTC(2026, 0, 1);
const place = { host: 'gpu1', target: 'host' };
const roots = ['/workspace'];

/** The story's layout: files one level down, in step_N folders; the newest step holds a model and an optimizer. Written
 * minutes before the listing: a checkpoint changed within 5 s of it is one still being written. */
const entries: RemoteEntry[] = [
  { rel: 'checkpoints', type: 'd', bytes: 0, mtime: NOW - 180_000 },
  { rel: 'checkpoints/step_100', type: 'd', bytes: 0, mtime: NOW - 120_000 },
  { rel: 'checkpoints/step_100/checkpoint.pt', type: 'f', bytes: 10, mtime: NOW - 120_000 },
  { rel: 'checkpoints/step_200', type: 'd', bytes: 0, mtime: NOW - 60_000 },
  { rel: 'checkpoints/step_200/optimizer.pt', type: 'f', bytes: 20, mtime: NOW - 60_000 },
  { rel: 'checkpoints/step_200/checkpoint.pt', type: 'f', bytes: 10, mtime: NOW - 60_000 },
];

function index(): RemoteIndex {
  return new RemoteIndex(async (p: ListParams): Promise<ListResult> => {
    const prefix = p.path === '/workspace' ? '' : p.path.replace(/^\/workspace\/?/, '') + '/';
    const below = entries
      .filter((e) => e.rel.startsWith(prefix) && e.rel.length > prefix.length)
      .map((e) => ({ ...e, rel: e.rel.slice(prefix.length) }))
      .filter((e) => e.rel.split('/').length <= p.depth);
    return { ok: true, resolved: p.path, state: 'ok', entries: below, truncated: false, remoteNow: NOW };
  });
}

async function replacementFor(glob: string): Promise<string | undefined> {
  const a = await analyse(index(), place, glob, roots);
  assert.equal(a.kind, 'glob');
  assert.equal(a.kind === 'glob' && a.matches.length, 0, 'the glob matches nothing where it looks');
  return a.kind === 'glob' ? a.latest?.replacement : undefined;
}

test('a bracket class with `!` means "none of these", as in the shell', async () => {
  // `[!o]*.pt` is every .pt file not starting with o: checkpoint.pt, not optimizer.pt.
  assert.equal(await replacementFor('/workspace/checkpoints/[!o]*.pt'), '/workspace/checkpoints/step_200/checkpoint.pt');
  assert.equal(await replacementFor('/workspace/checkpoints/[o]*.pt'), '/workspace/checkpoints/step_200/optimizer.pt');
});

test('an unclosed `[` is a literal character, not an error', async () => {
  // No file is named like `ckpt[*.pt`: the checkpoint folder itself is offered.
  assert.equal(await replacementFor('/workspace/checkpoints/ckpt[*.pt'), '/workspace/checkpoints/step_200');
});
