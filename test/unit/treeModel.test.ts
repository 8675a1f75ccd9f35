/**
 * The tree's model (core/tree/model.ts), without VS Code: the nodes each level holds, one request per listing, the
 * listing's states as nodes, and the refresh that re-lists and reports only what changed. The listing source is the
 * test's own; the listings are built in the core's types (the integration and e2e suites list a real sshd).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RunsTreeModel, scopeOf, type TreeSource } from '../../src/core/tree/model';
import { hostId, runId, targetId, type TreeNode } from '../../src/core/tree/nodes';
import { RemoteRunsError, latestCheckpoint, type Checkpoint, type Run, type Target, type TargetListing, type TargetRef } from '../../src/core/types';
import { GROWING_WINDOW_MS, markGrowing } from '../../src/core/discovery/growing';
import type { HostTargets } from '../../src/core/service';

const HOST: Target = { kind: 'host', id: '', label: 'host', state: 'running' };
const PCT: Target = { kind: 'pct', id: '200', label: 'trainer', state: 'running' };
const STOPPED: Target = { kind: 'docker', id: 'old', label: 'old', state: 'stopped' };

function checkpoint(step: number, newest = false): Checkpoint {
  return {
    name: `step_${step}`,
    kind: 'step',
    step,
    layout: 'step_N',
    path: `/runs/a/checkpoints/step_${step}`,
    isDir: true,
    bytes: 10,
    mtime: 1,
    files: [{ name: 'model.pt', path: `/runs/a/checkpoints/step_${step}/model.pt`, bytes: 10, mtime: 1 }],
    newest,
  };
}

function run(name: string, steps: number[]): Run {
  return { name, path: `/runs/${name}`, metrics: [], checkpoints: steps.map((s, i) => checkpoint(s, i === steps.length - 1)), metricsMtime: 0, live: false };
}

/** A scripted source: counts its calls; listings can be replaced between refreshes. */
function source(): TreeSource & { calls: Map<string, number>; listing: Map<string, TargetListing | Error>; targets: HostTargets | Error; gate?: Promise<void> } {
  const calls = new Map<string, number>();
  const count = (k: string): void => void calls.set(k, (calls.get(k) ?? 0) + 1);
  const s = {
    calls,
    listing: new Map<string, TargetListing | Error>(),
    targets: { targets: [HOST, PCT, STOPPED], problems: ['docker: permission denied'] } as HostTargets | Error,
    gate: undefined as Promise<void> | undefined,
    hosts: () => [{ name: 'gpu1', source: 'settings' as const }],
    async listTargets(h: string) {
      count(`targets:${h}`);
      if (s.targets instanceof Error) throw s.targets;
      return s.targets;
    },
    async listTarget(h: string, t: TargetRef) {
      count(`listing:${h}:${t.kind}:${t.id}`);
      await s.gate;
      const l = s.listing.get(`${t.kind}:${t.id}`);
      if (!l) throw new RemoteRunsError('unreachable', 'no such listing');
      if (l instanceof Error) throw l;
      return l;
    },
  };
  return s;
}

function listing(target: TargetRef, runs: Run[], remoteNow = 1): TargetListing {
  return { target, remoteNow, roots: [{ root: '/runs', path: '/runs', state: 'ok', runs, truncated: false }] };
}

async function walk(model: RunsTreeModel): Promise<{ host: TreeNode; targets: TreeNode[] }> {
  const [host] = await model.childrenOf();
  return { host, targets: await model.childrenOf(host) };
}

test('each level: hosts, targets with the runtime problems, runs with the roots that said why, checkpoints, files', async () => {
  const src = source();
  src.listing.set('host:', {
    target: HOST,
    remoteNow: 1,
    roots: [
      { root: '/runs', path: '/runs', state: 'ok', runs: [run('a', [100, 200])], truncated: true, unreadable: { count: 2, messages: ['find: /runs/x: Permission denied'] } },
      { root: '~/gone', path: '/home/u/gone', state: 'path-missing', message: '~/gone does not exist', seen: [], truncated: false },
    ],
  });
  const model = new RunsTreeModel(src, 10);
  const { host, targets } = await walk(model);
  assert.equal(host.id, hostId('gpu1'));
  assert.deepEqual(
    targets.map((t) => (t.type === 'target' ? `${t.type}:${t.target.kind}` : `${t.type}:${t.type === 'state' ? t.label : ''}`)),
    ['target:host', 'target:pct', 'target:docker', 'state:docker: permission denied'],
  );
  assert.equal(targets[0].id, targetId('gpu1', HOST));

  const under = await model.childrenOf(targets[0]);
  assert.deepEqual(
    under.map((n) => (n.type === 'state' ? `${n.kind}: ${n.label.split(': ')[0]}` : `${n.type}: ${n.type === 'run' ? n.run.name : ''}`)),
    ['run: a', 'command-failed: /runs', 'permission-denied: /runs', 'path-missing: ~/gone'],
  );
  assert.deepEqual(
    under.slice(1, 3).map((n) => (n.type === 'state' ? n.label : '')),
    ['/runs: listing cut short', '/runs: 2 places could not be read'],
  );
  assert.equal(under[3].type === 'state' && under[3].message, '~/gone does not exist');
  const stopped = await model.childrenOf(targets[2]);
  assert.equal(stopped.length, 1);
  assert.equal(stopped[0].type === 'state' && stopped[0].kind, 'container-stopped');
  assert.equal(src.calls.get('listing:gpu1:docker:old'), undefined, 'a stopped container is not listed');

  const runNode = under[0];
  assert.equal(runNode.id, runId('gpu1', HOST, '/runs/a'));
  const cks = await model.childrenOf(runNode);
  assert.deepEqual(cks.map((c) => (c.type === 'checkpoint' ? c.checkpoint.name : '')), ['step_200', 'step_100'], 'newest first, as the picker lists them');
  const files = await model.childrenOf(cks[1]);
  assert.deepEqual(files.map((f) => (f.type === 'file' ? f.file.name : '')), ['model.pt']);
  assert.equal(model.nodeAt(files[0].id), files[0], 'every node handed out can be found by id');
  assert.equal(scopeOf(files[0]).id, targets[0].id, "a file's listing is its target's");
  assert.deepEqual(model.knownRuns().map((r) => r.run.name), ['a']);
  model.dispose();
});

test('default run roots: a missing one is quiet while another root exists; none existing is one row naming them', async () => {
  const missing = (root: string) => ({ root, path: root, state: 'path-missing' as const, message: `${root} does not exist`, seen: [], truncated: false });
  const src = source();
  src.listing.set('host:', { target: HOST, remoteNow: 1, defaultRoots: true, roots: [missing('/workspace'), { root: '~/runs', path: '/home/u/runs', state: 'ok', runs: [run('a', [1])], truncated: false }, missing('/data')] });
  src.listing.set('pct:200', { target: PCT, remoteNow: 1, defaultRoots: true, roots: [missing('/workspace'), missing('/data')] });
  const model = new RunsTreeModel(src, 10);
  const { targets } = await walk(model);
  const host = await model.childrenOf(targets[0]);
  assert.deepEqual(host.map((n) => n.type), ['run'], 'the runs, without a row per default root that is not there');
  const pct = await model.childrenOf(targets[1]);
  assert.deepEqual(pct.map((n) => (n.type === 'state' ? [n.kind, n.label] : n.type)), [['path-missing', 'No default run root exists (/workspace, /data)']]);
  model.dispose();
});

test('a failed listing is one state node of its kind; two views asking at once cost one request', async () => {
  const src = source();
  src.listing.set('pct:200', new RemoteRunsError('container-stopped', 'CT 200 is not running'));
  let open!: () => void;
  src.gate = new Promise<void>((r) => (open = r));
  const model = new RunsTreeModel(src, 10);
  const { targets } = await walk(model);
  const both = Promise.all([model.childrenOf(targets[1]), model.childrenOf(targets[1])]);
  open();
  const [a, b] = await both;
  assert.equal(src.calls.get('listing:gpu1:pct:200'), 1);
  assert.deepEqual(a, b);
  assert.equal(a.length, 1);
  assert.ok(a[0].type === 'state' && a[0].kind === 'container-stopped' && a[0].message === 'CT 200 is not running');
  // Cached: asking again lists nothing.
  await model.childrenOf(targets[1]);
  assert.equal(src.calls.get('listing:gpu1:pct:200'), 1);
  model.dispose();
});

test('a refresh re-lists and reports a node only when its listing changed (the remote clock alone is no change)', async () => {
  const src = source();
  src.listing.set('host:', listing(HOST, [run('a', [100])], 1));
  const model = new RunsTreeModel(src, 5);
  const changed: (string | undefined)[] = [];
  model.onDidChange((n) => changed.push(n?.id));
  const { targets } = await walk(model);
  await model.childrenOf(targets[0]);

  src.listing.set('host:', listing(HOST, [run('a', [100])], 999));
  model.refresh(targets[0]);
  await model.whenIdle();
  assert.equal(src.calls.get('listing:gpu1:host:'), 2);
  assert.deepEqual(changed, [], 'same runs, later clock: nothing to redraw');

  src.listing.set('host:', listing(HOST, [run('a', [100, 200])], 1000));
  const runNode = (await model.childrenOf(targets[0]))[0];
  model.refresh(runNode); // a run refreshes its target's listing
  await model.whenIdle();
  assert.deepEqual(changed, [targets[0].id]);
  const again = await model.childrenOf(targets[0]);
  assert.equal(again[0].type === 'run' && again[0].run.checkpoints.length, 2);

  model.refresh();
  await model.whenIdle();
  assert.deepEqual(changed, [targets[0].id, undefined], 'a refresh of everything clears the caches and redraws all');
  model.dispose();
});

test('the timed refresh re-lists only what is expanded; host targets changing drop their listings', async () => {
  const src = source();
  src.listing.set('host:', listing(HOST, [run('a', [1])]));
  src.listing.set('pct:200', listing(PCT, [run('b', [1])]));
  const model = new RunsTreeModel(src, 5);
  const { host, targets } = await walk(model);
  await model.childrenOf(targets[0]);
  await model.childrenOf(targets[1]);
  model.setExpanded(targets[1].id, true);
  model.setExpanded(targets[0].id, true);
  model.setExpanded(targets[0].id, false);
  model.refreshExpanded();
  await model.whenIdle();
  assert.equal(src.calls.get('listing:gpu1:host:'), 1, 'collapsed: not listed again');
  assert.equal(src.calls.get('listing:gpu1:pct:200'), 2, 'expanded: listed again');

  const changed: (string | undefined)[] = [];
  model.onDidChange((n) => changed.push(n?.id));
  src.targets = { targets: [HOST], problems: [] };
  model.refresh(host);
  await model.whenIdle();
  assert.deepEqual(changed, [host.id]);
  assert.deepEqual((await model.childrenOf(host)).map((t) => t.id), [targets[0].id]);
  await model.childrenOf(targets[0]);
  assert.equal(src.calls.get('listing:gpu1:host:'), 2, "the host's targets changed: their listings are fetched anew");
  model.dispose();
});

test('a checkpoint whose bytes grew since the listing taken shortly before is still being written: marked, never latest', async () => {
  const src = source();
  src.listing.set('host:', listing(HOST, [run('a', [100, 200])], 1_000));
  const model = new RunsTreeModel(src, 5);
  const { targets } = await walk(model);
  await model.childrenOf(targets[0]);

  const grown = run('a', [100, 200]);
  grown.checkpoints[1].bytes = 4096; // step_200 is being written straight to its final name
  src.listing.set('host:', listing(HOST, [grown], 31_000));
  model.refresh(targets[0]);
  await model.whenIdle();
  const [runNode] = await model.childrenOf(targets[0]);
  assert.ok(runNode.type === 'run');
  const step200 = runNode.run.checkpoints[1];
  assert.equal(step200.incomplete, 'still being written: grew from 10 B to 4.1 KB since the last listing');
  assert.equal(latestCheckpoint(runNode.run)?.name, 'step_100', 'latest passes over it');

  // The next listing sees it unchanged: complete again, latest again.
  const settled = run('a', [100, 200]);
  settled.checkpoints[1].bytes = 4096;
  src.listing.set('host:', listing(HOST, [settled], 61_000));
  model.refresh(targets[0]);
  await model.whenIdle();
  const [after] = await model.childrenOf(targets[0]);
  assert.ok(after.type === 'run');
  assert.equal(after.run.checkpoints[1].incomplete, undefined);
  assert.equal(latestCheckpoint(after.run)?.name, 'step_200');
  model.dispose();
});

test('markGrowing: listings far apart, or the first one, say nothing about growth', () => {
  const a = listing(HOST, [run('a', [100])], 1_000);
  const b = run('a', [100]);
  b.checkpoints[0].bytes = 99;
  assert.equal(markGrowing(undefined, listing(HOST, [b], 2_000)).roots[0].state === 'ok' && b.checkpoints[0].incomplete, undefined);
  markGrowing(a, listing(HOST, [b], 1_000 + GROWING_WINDOW_MS + 1));
  assert.equal(b.checkpoints[0].incomplete, undefined, 'a run resumed an hour later is no write in progress');
  markGrowing(a, listing(HOST, [b], 2_000));
  assert.match(b.checkpoints[0].incomplete ?? '', /grew from 10 B to 99 B/);
});

test('lines of the ssh config the host does not follow are rows under the host, after its targets', async () => {
  const src = { ...source(), sshConfigProblems: (h: string) => (h === 'gpu1' ? ['/home/u/.ssh/config:7: ForwardAgent is not honoured by Remote Runs; ignored for gpu1'] : []) };
  const model = new RunsTreeModel(src, 10);
  const { targets } = await walk(model);
  const last = targets[targets.length - 1];
  assert.equal(last.type, 'state');
  assert.ok(last.type === 'state');
  assert.equal(last.kind, 'bad-config');
  assert.equal(last.label, 'ssh config: /home/u/.ssh/config:7: ForwardAgent is not honoured by Remote Runs; ignored for gpu1');
  assert.deepEqual(targets.slice(0, 3).map((t) => t.type), ['target', 'target', 'target']);
});

test('the user\'s place: rows gone with a failed listing come back with the same ids, still open and selected; saved and restored', async () => {
  const src = source();
  src.listing.set('pct:200', listing(PCT, [run('a', [100, 200])]));
  const model = new RunsTreeModel(src, 5);
  const { host, targets } = await walk(model);
  const [runA] = await model.childrenOf(targets[1]);
  const [newest] = await model.childrenOf(runA);
  for (const n of [host, targets[1], runA]) model.setExpanded(n.id, true);
  model.setSelected(newest.id);
  const ids = [host.id, targets[1].id, runA.id, newest.id];

  // The host unreachable for a moment: its listing is one state row, the rows below it are gone.
  src.targets = new RemoteRunsError('unreachable', 'connect ECONNREFUSED');
  src.listing.set('pct:200', new RemoteRunsError('unreachable', 'connect ECONNREFUSED'));
  const changed: (string | undefined)[] = [];
  model.onDidChange((n) => changed.push(n?.id));
  model.refresh(host);
  model.refresh(targets[1]);
  await model.whenIdle();
  assert.deepEqual(changed, [host.id], 'the host and its target changed in one batch: the host alone is redrawn (it redraws the target)');
  src.listing.set('pct:200', listing(PCT, [run('a', [100, 200])]));
  const down = await model.childrenOf(host);
  assert.deepEqual(down.map((n) => n.type), ['state']);
  // Back: listed again, the same ids, and what was open is still open (the view draws them open).
  src.targets = { targets: [HOST, PCT, STOPPED], problems: [] };
  model.refresh(host);
  await model.whenIdle();
  const target = (await model.childrenOf(host)).find((n) => n.id === targets[1].id)!;
  const runAgain = (await model.childrenOf(target))[0];
  const newestAgain = (await model.childrenOf(runAgain))[0];
  assert.deepEqual([host.id, target.id, runAgain.id, newestAgain.id], ids, 'ids are paths, not objects: the same rows');
  assert.deepEqual(ids.map((id) => model.isExpanded(id)), [true, true, true, false]);
  assert.equal(model.selectedId, newest.id);

  // A new window: the saved state (JSON, as the workspace keeps it) restores both; anything else is ignored.
  const saved = JSON.parse(JSON.stringify(model.viewState())) as unknown;
  const next = new RunsTreeModel(src, 5);
  next.restoreViewState(saved);
  assert.deepEqual(ids.map((id) => next.isExpanded(id)), [true, true, true, false]);
  assert.equal(next.selectedId, newest.id);
  for (const bad of [undefined, null, 'x', { expanded: 'h' }, { expanded: [1] }, { expanded: [], selected: 3 }]) {
    const m = new RunsTreeModel(src, 5);
    m.restoreViewState(bad);
    assert.deepEqual(m.viewState(), { expanded: [] }, JSON.stringify(bad));
    m.dispose();
  }

  // A collapse is kept as one; the ids kept are bounded (the oldest go first).
  next.setExpanded(target.id, false);
  assert.equal(next.isExpanded(target.id), false);
  for (let i = 0; i < 600; i++) next.setExpanded(`h\u0000x${i}`, true);
  assert.equal(next.viewState().expanded.length, 500);
  assert.equal(next.isExpanded(host.id), false, 'the oldest dropped');
  assert.equal(next.isExpanded('h\u0000x599'), true);
  model.dispose();
  next.dispose();
});

test('a listing that found a checkpoint being written by its clock lists the target again once that window has passed; a listing without one ends the follow-ups', async () => {
  const src = source();
  const writing = run('a', [100, 200]);
  writing.checkpoints[1] = { ...writing.checkpoints[1], newest: false, incomplete: 'being written: changed 0.3 s before the listing, and no marker of its framework says the save is done' };
  writing.checkpoints[0].newest = true;
  src.listing.set('host:', listing(HOST, [writing]));
  const model = new RunsTreeModel(src, 5, 30);
  const { targets } = await walk(model);
  const changes: (TreeNode | undefined)[] = [];
  model.onDidChange((n) => changes.push(n));
  await model.childrenOf(targets[0]);
  const key = 'listing:gpu1:host:';
  assert.equal(src.calls.get(key), 1);
  // The save finishes before the follow-up: listed again, the change is reported, and no follow-up comes after it.
  src.listing.set('host:', listing(HOST, [run('a', [100, 200])]));
  const until = Date.now() + 5000;
  while (src.calls.get(key) !== 2 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  assert.equal(src.calls.get(key), 2, 'listed again after the window');
  await model.whenIdle();
  assert.deepEqual(changes.map((n) => n?.id), [targets[0].id]);
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(src.calls.get(key), 2, 'no follow-up once nothing is being written');
  model.dispose();
});

test('a run of a root listed in part says so on its node; links out of the root not followed are a state of the target', async () => {
  const src = source();
  src.listing.set('host:', {
    target: HOST,
    remoteNow: 1,
    roots: [
      {
        root: '/runs',
        path: '/runs',
        state: 'ok',
        runs: [run('a', [100]), run('b', [100])],
        truncated: true,
        tooLarge: [{ rel: 'a/data', entries: 39990, more: true }],
        linksOut: { count: 1, links: [{ rel: 'exp1', link: '/scratch/exp1' }] },
      },
    ],
  });
  const model = new RunsTreeModel(src);
  const { targets } = await walk(model);
  const rows = await model.childrenOf(targets.find((t) => t.type === 'target' && t.target.kind === 'host'));
  const runs = rows.filter((n) => n.type === 'run');
  assert.deepEqual(runs.map((n) => [n.type === 'run' ? n.run.name : '', n.type === 'run' ? /^the run was listed in part: \/runs\/a\/data \(over 39,990 entries\)/.test(n.listedInPart ?? '') : false]), [['a', true], ['b', false]]);
  const links = rows.find((n) => n.type === 'state' && /link/.test(n.label));
  assert.equal(links?.type === 'state' ? links.label : '', '/runs: 1 link to folders outside not followed');
  assert.match(links?.type === 'state' ? links.message : '', /exp1 -> \/scratch\/exp1\. Add the folder a link names as a run root/);
});
