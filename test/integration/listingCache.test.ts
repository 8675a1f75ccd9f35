/**
 * One listing cache for the tree and the language server (core/discovery/listings.ts), against the real OpenSSH
 * server with the pct/docker shims: the tree model and the language server's answers of one window read the same
 * cache, and the remote listing commands (the list script, told by its magic) are counted. A run root the tree listed
 * answers a hover without a command; a root listed for a hover is not listed again when the tree opens its target; a
 * refresh of the tree's row is what the language server sees next, and a listing made anew for a hover is what the
 * tree draws next (its row reported changed, no command of its own).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import type { Executor } from '../../src/core/remote';
import type { HostConfig } from '../../src/core/types';
import { LIST_MAGIC } from '../../src/core/discovery/listParse';
import { RunsTreeModel } from '../../src/core/tree/model';
import type { ListingScope } from '../../src/core/discovery/listings';
import type { RunNode, TargetNode, TreeNode } from '../../src/core/tree/nodes';
import { RemoteAnswers, windowListings } from '../../src/extension/lsp/answers';
import type { ListResult, Place } from '../../src/shared/lspProtocol';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let hosts: HostConfig[];
/** Every remote listing command run (the list script's command lines), in order. */
const listed: string[] = [];
/** The marker the list script prints first: only its command line holds it. */
const MARK = LIST_MAGIC.toString('latin1').replace(/\0/g, '');

before(async () => {
  host = await startTestHost();
  hosts = [host.hostConfig('testbox', { runRoots: ['/workspace', host.paths.runs] })];
  pool = testPool(host, { connectTimeoutMs: 5000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  core = new RemoteRunsCore({
    hosts: () => hosts,
    executorFor: (h): Executor => {
      const exec = pool.executor(dir.resolve(h), { idempotent: true });
      return { exec: (line, opts) => (line.includes(MARK) && listed.push(line), exec.exec(line, opts)) };
    },
  });
});

after(async () => {
  pool?.dispose();
  await host?.stop();
});

/** One window: the tree's model and the language server's answers over one listing cache, on the window's clock. */
function window(clock: () => number = Date.now) {
  const listings = windowListings(core, clock);
  const model = new RunsTreeModel(
    { hosts: () => [{ name: 'testbox', source: 'settings' }], listTargets: (h) => core.listTargets(h), listTarget: (h, t) => core.listTarget(h, t) },
    5,
    undefined,
    listings,
  );
  const answers = new RemoteAnswers({ core, hosts: () => hosts, isConnected: () => true, knownPlaces: () => [], mappings: () => [], listings });
  const changes: (ListingScope | undefined)[] = [];
  listings.onDidChange((scope) => changes.push(scope));
  const treeChanges: (TreeNode | undefined)[] = [];
  model.onDidChange((node) => treeChanges.push(node));
  return { listings, model, answers, changes, treeChanges, dispose: () => (model.dispose(), answers.dispose(), listings.dispose()) };
}

async function targetNode(model: RunsTreeModel, target: string): Promise<TargetNode> {
  const [h] = await model.childrenOf();
  const t = (await model.childrenOf(h)).find((n): n is TargetNode => n.type === 'target' && `${n.target.kind}:${n.target.id}` === target);
  assert.ok(t, `target ${target} in the tree`);
  return t;
}

async function steps(model: RunsTreeModel, node: TargetNode): Promise<number[]> {
  // The story's run: the folder holding /workspace/checkpoints.
  const runs = (await model.childrenOf(node)).filter((n): n is RunNode => n.type === 'run' && n.run.checkpoints.some((c) => c.path.startsWith('/workspace/checkpoints/')));
  assert.equal(runs.length, 1, `one run holds /workspace/checkpoints: ${runs.map((r) => r.run.path).join(', ')}`);
  return [...new Set(runs[0].run.checkpoints.filter((c) => c.path.startsWith('/workspace/checkpoints/step_')).map((c) => c.step ?? -1))].sort((a, b) => a - b);
}

function stepsOf(r: ListResult): number[] {
  assert.ok(r.ok, JSON.stringify(r));
  return r.entries.filter((e) => /^checkpoints\/step_\d+$/.test(e.rel)).map((e) => Number(e.rel.split('_')[1])).sort((a, b) => a - b);
}

/** A checkpoint folder written into pct:200's /workspace, ten minutes old (not one being written). */
function addStep(step: number): void {
  const folder = path.join(host.containers.pct200.workspace, 'checkpoints', `step_${step}`);
  fs.mkdirSync(folder, { recursive: true });
  fs.writeFileSync(path.join(folder, 'checkpoint.pt'), 'x'.repeat(64));
  const old = new Date(Date.now() - 10 * 60_000);
  fs.utimesSync(path.join(folder, 'checkpoint.pt'), old, old);
  fs.utimesSync(folder, old, old);
  fs.chmodSync(folder, 0o755);
  fs.chmodSync(path.join(folder, 'checkpoint.pt'), 0o644);
}

const pct200: Place = { host: 'testbox', target: 'pct:200' };

test('a run root the tree listed answers the language server without another listing command', async () => {
  const w = window();
  try {
    const before = listed.length;
    const target = await targetNode(w.model, 'pct:200');
    assert.deepEqual(await steps(w.model, target), host.storySteps);
    assert.equal(listed.length - before, 1, 'the tree lists the target once');
    // The server asks for the run root as deep as it lists roots (lsp/remoteIndex.ts ROOT_DEPTH), then again.
    assert.deepEqual(stepsOf(await w.answers.list({ place: pct200, path: '/workspace', depth: 5 })), host.storySteps);
    assert.deepEqual(stepsOf(await w.answers.list({ place: pct200, path: '/workspace/', depth: 5 })), host.storySteps);
    const other = await w.answers.list({ place: pct200, path: host.paths.runs, depth: 5 });
    assert.ok(other.ok, JSON.stringify(other));
    assert.equal(listed.length - before, 1, 'the hovers took the tree\'s listing: no listing command of their own');
  } finally {
    w.dispose();
  }
});

test('a run root listed for a hover is not listed again when the tree opens its target: only the other roots are', async () => {
  const w = window();
  try {
    const before = listed.length;
    const hover = await w.answers.list({ place: { host: 'testbox', target: 'docker:trainer' }, path: '/workspace', depth: 5 });
    assert.ok(hover.ok && hover.state === 'ok', JSON.stringify(hover));
    assert.equal(listed.length - before, 1);
    assert.ok(!listed.at(-1)!.includes(host.paths.runs), 'the hover listed its root only');
    const target = await targetNode(w.model, 'docker:trainer');
    const rows = await w.model.childrenOf(target);
    assert.ok(rows.length > 0, 'the tree shows the target');
    assert.equal(listed.length - before, 2, 'one more listing command, for the root the hover did not list');
    assert.ok(listed.at(-1)!.includes(host.paths.runs) && !listed.at(-1)!.includes('/workspace'), `the tree listed only ${host.paths.runs}: ${listed.at(-1)!.slice(-200)}`);
    // And now the language server's other root comes from that: no command.
    await w.answers.list({ place: { host: 'testbox', target: 'docker:trainer' }, path: host.paths.runs, depth: 5 });
    assert.equal(listed.length - before, 2);
  } finally {
    w.dispose();
  }
});

test("a refresh of the tree's row is what the language server sees next; a listing made anew for a hover is what the tree draws next", async () => {
  let now = Date.now();
  const w = window(() => now);
  try {
    const target = await targetNode(w.model, 'pct:200');
    assert.deepEqual(await steps(w.model, target), host.storySteps);
    assert.deepEqual(stepsOf(await w.answers.list({ place: pct200, path: '/workspace', depth: 5 })), host.storySteps);

    // The tree's refresh lists again; the server is told the place changed and the next hover sees the new step.
    addStep(30_000);
    let before = listed.length;
    w.changes.length = 0;
    w.model.refresh(target);
    await w.model.whenIdle();
    assert.equal(listed.length - before, 1, 'the refresh lists the target once');
    assert.ok(w.changes.some((s) => s?.host === 'testbox' && s.target?.kind === 'pct' && s.target.id === '200'), `the cache said pct:200 changed: ${JSON.stringify(w.changes)}`);
    assert.deepEqual(stepsOf(await w.answers.list({ place: pct200, path: '/workspace', depth: 5 })), [...host.storySteps, 30_000]);
    assert.equal(listed.length - before, 1, 'the hover took the refreshed listing');

    // The hover's answer grows old (the language server takes 15 s): listed again for it, and the tree's row is
    // reported changed and drawn from that listing, with no command of the tree's own.
    addStep(31_000);
    now += 16_000;
    before = listed.length;
    w.treeChanges.length = 0;
    assert.deepEqual(stepsOf(await w.answers.list({ place: pct200, path: '/workspace', depth: 5 })), [...host.storySteps, 30_000, 31_000]);
    assert.equal(listed.length - before, 1, 'the hover listed the root again');
    assert.ok(w.treeChanges.some((n) => n?.id === target.id), 'the tree was told its row changed');
    assert.deepEqual(await steps(w.model, target), [...host.storySteps, 30_000, 31_000]);
    assert.equal(listed.length - before, 1, 'the tree drew the hover\'s listing');
  } finally {
    w.dispose();
    for (const s of [30_000, 31_000]) fs.rmSync(path.join(host.containers.pct200.workspace, 'checkpoints', `step_${s}`), { recursive: true, force: true });
  }
});
