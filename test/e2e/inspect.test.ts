/**
 * A checkpoint's contents in the sidebar of a real VS Code (code-server + Chromium) over the real test sshd (issue
 * 18): hovering a checkpoint shows its one-line summary; expanding it and its contents row lists the module groups
 * with their parameter counts, each opening on its tensors; an incomplete checkpoint says why first. The
 * checkpoints are files the real writers wrote (test/fixtures/real/make_inspect.py).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, rowLabels, rowText, treeRow } from './treeRows';
import { hoverUntil } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';

const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
let host: TestHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  host = await startTestHost();
  const root = path.join(host.dir, 'inspect-e2e');
  const ck = path.join(root, 'insp-run', 'checkpoints');
  fs.mkdirSync(path.join(ck, 'step_200'), { recursive: true });
  fs.copyFileSync(path.join(FIX, 'train_state.pt'), path.join(ck, 'step_200', 'train_state.pt'));
  fs.cpSync(path.join(FIX, 'hf_shards_broken'), path.join(ck, 'step_600'), { recursive: true });
  execFileSync('chmod', ['-R', 'a+rX', root]);
  workspace = fs.mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      'remoteRuns.hosts': [host.hostConfig('insp', { targets: ['host'], runRoots: [root] })],
      'remoteRuns.knownHostsFiles': [host.knownHostsFile],
      'remoteRuns.useSshConfigHosts': false,
      'remoteRuns.refreshIntervalSeconds': 0,
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  if (workspace) fs.rmSync(workspace, { recursive: true, force: true });
});

test('hover a checkpoint: its summary; expand it: groups with params, tensors with dtype and shape', async () => {
  await withArtifactsOnFailure(session, 'inspect-tree', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'insp');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'insp-run');
    await expectRow(session, 'step_200', /step_200/);
    const tip = session.page.locator('.monaco-hover, .workbench-hover').filter({ hasText: /params/ });
    await hoverUntil(session.page, treeRow(session, 'step_200'), tip, "the checkpoint's hover");
    assert.match(await tip.first().innerText(), /266 params · fp32 · 18 tensors · optimizer: AdamW state \(exp_avg, exp_avg_sq\) · step 20000/);
    await session.page.mouse.move(1, 1);
    await expandTreeRow(session, 'step_200');
    await expandTreeRow(session, 'contents');
    await expectRow(session, 'model › layers › 0 › self_attn', /64 params · 256 B · 4 tensors/);
    await expectRow(session, 'optimizer', /AdamW state \(exp_avg, exp_avg_sq\)/);
    await expandTreeRow(session, 'model › layers › 0 › self_attn');
    await expectRow(session, 'q_proj.weight', /float32 \[4, 4\]/);
    const labels = await rowLabels(session);
    assert.deepEqual(labels.filter((l) => /_proj\.weight$/.test(l)), ['q_proj.weight', 'k_proj.weight', 'v_proj.weight', 'o_proj.weight']);
  });
});

test('an incomplete checkpoint says why first: the shard shorter than its header, the one missing', async () => {
  await withArtifactsOnFailure(session, 'inspect-incomplete', async () => {
    await expandTreeRow(session, 'step_600');
    // Checkpoints are listed newest first: step_600's contents row is above step_200's (expanded by the test before).
    await expandTreeRow(session, 'contents', 'first');
    await expectRow(session, 'incomplete', /model-00003-of-00005\.safetensors is 6580 bytes, its header says 6680/);
    // Two rows share the label: the second names the missing shard.
    assert.match(await rowText(session, 'incomplete', 1), /4 of 5 shards .* \(missing: model-00002-of-00005\.safetensors; 6 of the 21 tensors its weight_map names are in it\)/);
  });
});
