/**
 * The listing's folder tree as the reader builds it by depth and name (EntryTree.addAt): an entry met again in a
 * later walk (the fair listing walks a too-large folder's share again, P records) updates its node instead of
 * making a second one, at every depth, also in large folders (past the size where lookups go through an index).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EntryTree, findRunsInTree, nodeShapedEntry } from '../../src/core/discovery/runTree';

const T = 1_700_000_000_000;
const at = (tree: EntryTree, depth: number, type: string, name: string, rel: string, bytes = 0, mtime = T): void =>
  tree.addAt(depth, nodeShapedEntry(type, bytes, mtime, rel, name), name);

test('an entry listed again in a second walk is one node with the later facts, in small and large folders', () => {
  const tree = new EntryTree(true);
  tree.walkFrom('');
  at(tree, 1, 'd', 'run', 'run');
  at(tree, 2, 'd', 'checkpoints', 'run/checkpoints');
  for (let s = 1; s <= 20; s++) {
    at(tree, 3, 'd', `step_${s}`, `run/checkpoints/step_${s}`);
    at(tree, 4, 'f', 'checkpoint.pt', `run/checkpoints/step_${s}/checkpoint.pt`, 10);
  }
  // A second walk of run/ lists the same folders again, one file grown, and one new checkpoint.
  tree.walkFrom('run');
  at(tree, 1, 'd', 'checkpoints', 'run/checkpoints');
  at(tree, 2, 'd', 'step_20', 'run/checkpoints/step_20');
  at(tree, 3, 'f', 'checkpoint.pt', 'run/checkpoints/step_20/checkpoint.pt', 99, T + 5000);
  at(tree, 2, 'd', 'step_21', 'run/checkpoints/step_21');
  at(tree, 3, 'f', 'checkpoint.pt', 'run/checkpoints/step_21/checkpoint.pt', 7);
  const [run] = findRunsInTree('/w', tree, T + 60_000); // a minute after the writes
  assert.equal(run.checkpoints.length, 21, 'no step listed twice');
  const s20 = run.checkpoints.find((c) => c.name === 'step_20')!;
  assert.deepEqual(s20.files.map((f) => [f.name, f.bytes]), [['checkpoint.pt', 99]]);
  assert.equal(s20.mtime, T + 5000);
  assert.equal(run.checkpoints.find((c) => c.newest)?.name, 'step_21');
});

test('names that differ only past the index threshold stay distinct children', () => {
  const tree = new EntryTree(true);
  tree.walkFrom('');
  at(tree, 1, 'd', 'run', 'run');
  for (let s = 1; s <= 12; s++) at(tree, 2, 'f', `ckpt_${s}.pt`, `run/ckpt_${s}.pt`, s);
  tree.walkFrom('run');
  for (let s = 1; s <= 12; s++) at(tree, 1, 'f', `ckpt_${s}.pt`, `run/ckpt_${s}.pt`, 100 + s);
  const [run] = findRunsInTree('/w', tree, T + 60_000); // a minute after the writes
  assert.deepEqual(run.checkpoints.map((c) => c.bytes).sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => 101 + i));
});
