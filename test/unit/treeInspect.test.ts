/**
 * A checkpoint's contents in the tree's model (issue 18): the first child of a checkpoint reads what it holds (the
 * source's inspect: here the pure readers over the files the real writers wrote), and expands into why it is
 * incomplete, its module groups (each expanding into its tensors), the state beside the model (optimizer, scheduler, RNG, callbacks) counted apart, its entries
 * and opaque globals; a failed read is one state row naming the failure. Without an inspect source nothing changes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { RunsTreeModel, scopeOf, type TreeSource } from '../../src/core/tree/model';
import type { TreeNode, CheckpointNode, RunNode } from '../../src/core/tree/nodes';
import { RemoteRunsError, type Checkpoint, type TargetListing } from '../../src/core/types';
import { inspectFiles, Pieces } from '../../src/core/inspect';
import { listedFilesOf } from '../../src/core/inspect/remoteRead';

const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');

function ck(name: string, fixture: string): Checkpoint {
  const p = path.join(FIX, fixture);
  const dir = fs.statSync(p).isDirectory();
  const files = dir ? fs.readdirSync(p).sort().map((f) => ({ name: f, path: path.join(p, f), bytes: fs.statSync(path.join(p, f)).size, mtime: 1 })) : [];
  return { name, kind: 'step', step: Number(name.replace(/\D/g, '')), layout: 'step_N', path: p, isDir: dir, bytes: dir ? files.reduce((a, f) => a + f.bytes, 0) : fs.statSync(p).size, mtime: 1, files, newest: false };
}

const CKPTS = [ck('step_200', 'train_state.pt'), ck('step_600', 'hf_shards_broken'), ck('step_900', 'evil.pt'), ck('step_5', 'hf_shards')];

function source(withInspect: boolean, calls: string[] = []): TreeSource {
  const listing: TargetListing = {
    target: { kind: 'host', id: '' },
    remoteNow: 0,
    roots: [{ root: '/r', path: '/r', state: 'ok', truncated: false, runs: [{ name: 'a', path: '/r/a', metrics: [], checkpoints: CKPTS, metricsMtime: 0, live: false }] }],
  };
  return {
    hosts: () => [{ name: 'gpu1', source: 'settings' }],
    listTargets: async () => ({ targets: [{ kind: 'host', id: '', label: 'host', state: 'running' }], problems: [] }),
    listTarget: async () => listing,
    ...(withInspect
      ? {
          inspect: async (_h, _t, c) => {
            calls.push(c.name);
            if (c.name === 'step_5') throw new RemoteRunsError('permission-denied', 'cannot read model-00001-of-00005.safetensors');
            // The files as the remote read would give them: here read whole from the fixtures.
            return inspectFiles(listedFilesOf(c).map((f) => ({ name: f.name, size: f.bytes, pieces: Pieces.whole(fs.readFileSync(f.path)) }))).inspection;
          },
        }
      : {}),
  };
}

async function checkpoints(model: RunsTreeModel): Promise<CheckpointNode[]> {
  const [h] = await model.childrenOf();
  const [t] = await model.childrenOf(h);
  const [r] = (await model.childrenOf(t)) as RunNode[];
  // The tree lists newest first; these tests name them in the run's (step) order.
  return ((await model.childrenOf(r)) as CheckpointNode[]).reverse();
}

const labelOf = (n: TreeNode): string =>
  n.type === 'tensor-group' ? `group ${n.group.label} ${n.group.params}` : n.type === 'inspect-note' ? `${n.kind} ${n.label}: ${n.description}` : n.type === 'tensor' ? `tensor ${n.tensor.name}` : n.type === 'state' ? `state ${n.kind}: ${n.message}` : n.type;

test('a checkpoint opens on its contents row; expanding it reads it once and lists groups, the state beside the model, entries', async () => {
  const calls: string[] = [];
  const model = new RunsTreeModel(source(true, calls));
  const [train] = await checkpoints(model);
  const kids = await model.childrenOf(train);
  assert.deepEqual(kids.map((k) => k.type), ['contents']);
  assert.deepEqual(calls, [], 'nothing is read before the contents row is expanded');
  const rows = await model.childrenOf(kids[0]);
  assert.deepEqual(calls, ['step_200']);
  assert.deepEqual(rows.map(labelOf), [
    'group model 42',
    'group model › layers › 0 › self_attn 64',
    'group model › layers › 0 48',
    'group model › layers › 1 › self_attn 64',
    'group model › layers › 1 48',
    'state other state: optimizer 2 × 264 (not counted in params)',
    'entry model: state dict of 18 tensors',
    'entry optimizer: AdamW state (exp_avg, exp_avg_sq) for 17 parameters, 1 param group (lr 0.001)',
    'entry epoch: int 3',
    'entry global_step: int 20000',
  ]);
  const attn = rows[1];
  assert.deepEqual((await model.childrenOf(attn)).map(labelOf), ['q_proj', 'k_proj', 'v_proj', 'o_proj'].map((p) => `tensor model.layers.0.self_attn.${p}.weight`));
  // Every row belongs to the target's listing (refresh and retry find their scope).
  assert.equal(scopeOf(attn).type, 'target');
  model.dispose();
});

test('an incomplete checkpoint says why first; a hostile one names its global; a failed read is its state', async () => {
  const model = new RunsTreeModel(source(true));
  const [, broken, evil, denied] = await checkpoints(model);
  const open = async (c: CheckpointNode): Promise<string[]> => (await model.childrenOf((await model.childrenOf(c))[0])).map(labelOf);
  const b = await open(broken);
  assert.match(b[0], /^incomplete incomplete: model-00003-of-00005\.safetensors is 6580 bytes, its header says 6680/);
  assert.match(b[1], /^incomplete incomplete: 4 of 5 shards named by model\.safetensors\.index\.json are there \(missing: model-00002-of-00005\.safetensors; 6 of the 21 tensors its weight_map names are in it\)/);
  // Its files still follow the contents row.
  assert.deepEqual((await model.childrenOf(broken)).map((k) => k.type), ['contents', ...broken.checkpoint.files.map(() => 'file')]);
  const e = await open(evil);
  assert.ok(e.includes('opaque posix.system: a global the file names at weights: shown by name, never imported or called'), e.join('\n'));
  assert.deepEqual(await open(denied), ['state permission-denied: cannot read model-00001-of-00005.safetensors']);
  model.dispose();
});

test('without an inspect source, checkpoints have their files only, as before', async () => {
  const model = new RunsTreeModel(source(false));
  const [train, broken] = await checkpoints(model);
  assert.deepEqual(await model.childrenOf(train), []);
  assert.deepEqual((await model.childrenOf(broken)).map((k) => k.type), broken.checkpoint.files.map(() => 'file'));
  model.dispose();
});
