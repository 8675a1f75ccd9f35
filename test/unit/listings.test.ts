/**
 * The window's one listing cache (core/discovery/listings.ts) with a scripted source: one request per key shared by
 * every reader and cancelled only when no reader waits, each read taking answers up to its own age, the roots of a
 * target listed only where none is held, and the changes said to both readers (tree and language server). The
 * integration suite's listingCache.test.ts runs it over the real sshd.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Listings, type ListingScope, type ListingSource } from '../../src/core/discovery/listings';
import { RemoteRunsError, type RootListing, type Target, type TargetListing, type TargetRef } from '../../src/core/types';
import type { HostTargets } from '../../src/core/service';

const PCT: TargetRef = { kind: 'pct', id: '200' };
const HOST_T: Target = { kind: 'host', id: '', label: 'host', state: 'running' };
const PCT_T: Target = { kind: 'pct', id: '200', label: 'trainer', state: 'running' };
const ROOTS = ['/workspace', '~/runs', '~/checkpoints'];

function root(name: string, runs: string[] = []): RootListing {
  return { root: name, path: name, state: 'ok', runs: runs.map((r) => ({ name: r, path: `${name}/${r}`, metrics: [], checkpoints: [], metricsMtime: 0, live: false })), truncated: false };
}

/** A scripted remote: what each root holds now, every call recorded, and a gate a test can hold listings at. */
function remote() {
  const calls: string[] = [];
  const held: { roots: Record<string, string[]>; targets: Target[]; fail?: RemoteRunsError; gate?: Promise<void>; aborted: number } = {
    roots: { '/workspace': ['a'], '~/runs': [], '~/checkpoints': [] },
    targets: [HOST_T, PCT_T],
    aborted: 0,
  };
  const source: ListingSource<string> = {
    async listTargets(host): Promise<HostTargets> {
      calls.push(`targets ${host}`);
      return { targets: [...held.targets], problems: [] };
    },
    async listTarget(host, target, signal, roots): Promise<TargetListing> {
      const asked = roots ?? ROOTS;
      calls.push(`list ${host} ${target.kind}:${target.id} ${asked.join(',')}`);
      if (held.gate) {
        await Promise.race([
          held.gate,
          new Promise<void>((_, reject) => signal?.addEventListener('abort', () => (held.aborted++, reject(new Error('aborted'))))),
        ]);
      }
      if (held.fail) throw held.fail;
      return { target, roots: asked.map((r) => root(r, held.roots[r])), remoteNow: 1, defaultRoots: true };
    },
    runRoots: () => ROOTS,
    async listPath(host, target, path, depth) {
      calls.push(`path ${host} ${target.kind}:${target.id} ${path} ${depth}`);
      return `${path}@${depth}`;
    },
  };
  return { calls, held, source };
}

function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

test('one request per listing, whoever asks: a hover that gives up does not cancel what the tree waits for; a lone asker that gives up does, and nothing is kept', async () => {
  const { calls, held, source } = remote();
  const listings = new Listings(source);
  const g = gate();
  held.gate = g.promise;
  const hover = new AbortController();
  const tree = listings.target('gpu1', PCT);
  const hovered = listings.root('gpu1', PCT, '/workspace', { signal: hover.signal });
  hover.abort();
  const h = await hovered;
  assert.deepEqual([h.ok, !h.ok && h.error.kind], [false, 'cancelled']);
  g.open();
  const t = await tree;
  assert.ok(t.ok);
  assert.deepEqual(t.value.roots.map((r) => r.root), ROOTS);
  assert.equal(held.aborted, 0, 'the tree still waited: not cancelled');
  assert.deepEqual(calls, ['list gpu1 pct:200 /workspace,~/runs,~/checkpoints']);
  // The root now comes from the tree's listing.
  const again = await listings.root('gpu1', PCT, '/workspace', { maxAgeMs: 15_000 });
  assert.ok(again.ok && again.value.root.state === 'ok' && again.value.root.runs[0].name === 'a');
  assert.equal(calls.length, 1);

  // Alone, a reader that gives up cancels the command, and the next read asks again.
  const g2 = gate();
  held.gate = g2.promise;
  const alone = new AbortController();
  const p = listings.path('gpu1', PCT, '/data', 2, { signal: alone.signal });
  const lone = listings.root('gpu1', { kind: 'docker', id: 'x' }, '/workspace', { signal: alone.signal });
  alone.abort();
  assert.equal((await lone).ok, false);
  assert.equal(held.aborted, 1, 'nobody waited: the listing was cancelled');
  assert.deepEqual(await p, { ok: false, error: new RemoteRunsError('cancelled', 'Cancelled'), at: (await p).at });
  held.gate = undefined;
  const after = await listings.root('gpu1', { kind: 'docker', id: 'x' }, '/workspace');
  assert.ok(after.ok, 'asked again: the cancelled one was not kept');
});

test('each read takes answers up to its own age: the tree any age, a refresh none, the language server 15 s', async () => {
  const { calls, source } = remote();
  let now = 1_000_000;
  const listings = new Listings(source, () => now);
  await listings.target('gpu1', PCT);
  now += 60_000;
  await listings.target('gpu1', PCT);
  assert.equal(calls.length, 1, 'the tree reads it at any age');
  await listings.root('gpu1', PCT, '/workspace', { maxAgeMs: 15_000 });
  assert.deepEqual(calls.slice(1), ['list gpu1 pct:200 /workspace'], 'too old for the language server: that root alone listed again');
  await listings.root('gpu1', PCT, '/workspace', { maxAgeMs: 15_000 });
  await listings.target('gpu1', PCT, { maxAgeMs: 0 });
  assert.deepEqual(calls.slice(2), ['list gpu1 pct:200 /workspace,~/runs,~/checkpoints'], 'a refresh lists every root again');
});

test('the roots of a target are listed only where none is held; a failure of the place answers for it', async () => {
  const { calls, held, source } = remote();
  const listings = new Listings(source);
  await listings.root('gpu1', PCT, '~/runs');
  const t = await listings.target('gpu1', PCT);
  assert.deepEqual(calls, ['list gpu1 pct:200 ~/runs', 'list gpu1 pct:200 /workspace,~/checkpoints']);
  assert.ok(t.ok);
  assert.deepEqual(t.value.roots.map((r) => r.root), ROOTS, "in the host's order");
  assert.equal(t.value.defaultRoots, true);

  held.fail = new RemoteRunsError('container-stopped', 'pct 201 is stopped');
  const stopped: TargetRef = { kind: 'pct', id: '201' };
  const r = await listings.root('gpu1', stopped, '/workspace');
  assert.deepEqual([r.ok, !r.ok && r.error.kind], [false, 'container-stopped']);
  await listings.root('gpu1', stopped, '/workspace', { maxAgeMs: 15_000 });
  assert.equal(calls.filter((c) => c.includes('pct:201')).length, 1, 'the failure answers too');
});

test('changes are said once, to everyone: a root listed anew with other runs, targets that changed (their listings dropped), an invalidation; the same answer again says nothing', async () => {
  const { calls, held, source } = remote();
  let now = 0;
  const listings = new Listings(source, () => now);
  const said: (ListingScope | undefined)[] = [];
  listings.onDidChange((s) => said.push(s));
  const show = (s: ListingScope | undefined): string => (s ? `${s.host}${s.target ? ` ${s.target.kind}:${s.target.id}` : ''}` : 'all');

  await listings.targets('gpu1');
  await listings.target('gpu1', PCT);
  await listings.path('gpu1', PCT, '/data', 2);
  now += 20_000;
  await listings.root('gpu1', PCT, '/workspace', { maxAgeMs: 15_000 });
  assert.deepEqual(said, [], 'listed again, the same: nothing to say');

  held.roots['/workspace'] = ['a', 'b'];
  now += 20_000;
  await listings.root('gpu1', PCT, '/workspace', { maxAgeMs: 15_000 });
  assert.deepEqual(said.map(show), ['gpu1 pct:200']);
  const t = await listings.target('gpu1', PCT);
  assert.ok(t.ok && t.value.roots[0].state === 'ok');
  assert.deepEqual(t.value.roots[0].state === 'ok' && t.value.roots[0].runs.map((r) => r.name), ['a', 'b'], 'the tree reads the new root');
  const before = calls.length;
  await listings.path('gpu1', PCT, '/data', 2);
  assert.equal(calls.length - before, 1, "the place's folders were dropped with it");

  held.targets = [HOST_T];
  await listings.targets('gpu1', { maxAgeMs: 0 });
  assert.deepEqual(said.map(show), ['gpu1 pct:200', 'gpu1']);
  assert.equal(listings.peekTarget('gpu1', PCT), undefined, "the host's listings went with its targets");

  listings.invalidate();
  assert.deepEqual(said.map(show), ['gpu1 pct:200', 'gpu1', 'all']);
  assert.equal(listings.peekTargets('gpu1'), undefined);
});
