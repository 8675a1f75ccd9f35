/**
 * Downloading a checkpoint of a pod container in a real VS Code (code-server + Chromium), through the real kubectl on
 * PATH against the test API server (test/harness/kubeApi.ts): cluster → job → pod → container → run → checkpoint
 * clicked open row by row, Download Checkpoint… from the checkpoint's context menu, and the folder that lands holds
 * the container's bytes, proven by SHA-256 on both sides (the notification says so). The run is a Hugging Face
 * Trainer run written by the real transformers (test/fixtures/real/written), with a 32 MiB shard added so its bytes
 * come as a stream rather than in one small batch.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeContextMenu } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import type { KubeApi } from '../harness/kubeApi';
import { clusterSettings, startBertCluster } from '../builders/kubeCluster';
import { writtenAgo } from '../harness/mtimes';

let api: KubeApi;
let session: VSCodeSession;
let workspace: string;
let downloads: string;
let run: string;

before(async () => {
  ({ api, run } = await startBertCluster());
  writeFileSync(path.join(run, 'checkpoint-20', 'shard-extra.bin'), randomBytes(32 * 1024 * 1024));
  // Written an hour ago, as the run's other files (a file written now would be taken for a save in progress).
  writtenAgo(run, 3_600_000);
  const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'train-admin' }] });
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-kubedl-'));
  downloads = mkdtempSync(path.join(tmpdir(), 'rr-e2e-kubedl-to-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: { ...clusterSettings(kubeconfig), 'remoteRuns.downloadDirectory': downloads },
  });
});

after(async () => {
  await session?.close();
  await api?.stop();
  for (const d of [workspace, downloads]) if (d) rmSync(d, { recursive: true, force: true });
});

test('cluster → job → pod → container → run → checkpoint → Download Checkpoint…: the container\'s bytes land, verified by SHA-256', async () => {
  await withArtifactsOnFailure(session, 'kube-download', async () => {
    await session.openViewContainer('Remote Runs');
    await expectRow(session, 'prod', /train-admin · ns ml-team/);
    await expandTreeRow(session, 'prod');
    await expectRow(session, 'bert', /PyTorchJob/);
    await expandTreeRow(session, 'bert');
    await expectRow(session, 'master-0', /running · rank 0/);
    await expandTreeRow(session, 'master-0');
    await expandTreeRow(session, 'pytorch');
    await expandTreeRow(session, 'bert-run');
    await expectRow(session, 'checkpoint-20', /MB · 1 h ago/);
    await treeContextMenu(session, 'checkpoint-20', /^Download Checkpoint…$/);
    await session.waitForNotification(/downloaded bert-run\/checkpoint-20 .*verified by SHA-256 on both sides/, 120_000);
    const landed = path.join(downloads, 'prod', 'bert-run', 'checkpoint-20');
    assert.ok(existsSync(landed), `${landed} is there`);
    // The same files and the same bytes as in the container (diff -r exits 1 on any difference, naming it).
    execFileSync('diff', ['-r', path.join(run, 'checkpoint-20'), landed]);
    assert.deepEqual(readdirSync(landed).sort(), readdirSync(path.join(run, 'checkpoint-20')).sort(), 'nothing but the checkpoint\'s files');
    assert.ok(api.requests.some((r) => /\/pods\/bert-master-0\/exec\?.*container=pytorch/.test(r) && /shard-extra\.bin/.test(decodeURIComponent(r))), 'the shard was read through kubectl exec into the master');
  });
});
