/**
 * Show Job Logs in a real VS Code (code-server + Chromium): the context menu of a job row of a Kubernetes cluster
 * opens a terminal where the logs of every pod of the job are merged in time order with rank prefixes and followed,
 * through the real kubectl on PATH against the test API server (test/harness/kubeApi.ts, the PyTorchJob fixture of
 * test/fixtures/kube/); a terminal control in a log line is shown escaped, never run.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeContextMenu } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { until as untilRead } from './ui';
import type { KubeApi } from '../harness/kubeApi';
import { clusterSettings, startBertCluster } from '../builders/kubeCluster';

let api: KubeApi;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  ({ api } = await startBertCluster());
  api.container('ml-team', 'bert-master-0', 'pytorch').log('master: loading data\n');
  await new Promise((r) => setTimeout(r, 5));
  api.container('ml-team', 'bert-worker-0', 'pytorch').log('worker: joined \u001b[2Jrendezvous\n');
  const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'train-admin' }] });
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-kubelogs-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...clusterSettings(kubeconfig),
      // The DOM renderer: the terminal's text is then in .xterm-rows, readable by the test.
      'terminal.integrated.gpuAcceleration': 'off',
    },
  });
});

after(async () => {
  await session?.close();
  await api?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

function terminalText(): Promise<string> {
  return session.page.locator('.terminal-wrapper.active .xterm-rows').innerText();
}

test('Show Job Logs on a job row: every pod\'s log in one terminal, rank-prefixed, in time order, followed', async () => {
  await withArtifactsOnFailure(session, 'kube-logs', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'prod');
    await expectRow(session, 'bert', /PyTorchJob · running · 3 pods/);
    await treeContextMenu(session, 'bert', /^Show Job Logs$/);
    await session.page.locator('.terminal-tabs-entry, .single-terminal-tab', { hasText: 'logs bert' }).first().waitFor({ timeout: 60_000 });
    const text = await untilRead(session.page, terminalText, /\[worker-0\] worker: joined/, 'the lines already written', 60_000);
    // In time order across pods, each with its rank; the clear-screen in worker-0's line shown, not run.
    const lines = text.split('\n').filter((l) => /^\[(master|worker)-\d\]/.test(l));
    // worker-1 crash-loops: said as a note, apart from the log's lines.
    assert.match(text, /remote-runs: \[worker-1\] The container pytorch of ml-team\/bert-worker-1 is not running/);
    assert.equal(lines[0], '[master-0] master: loading data', JSON.stringify(lines));
    assert.match(lines[1] ?? '', /^\[worker-0\] worker: joined \\x1b\[2Jrendezvous$/, JSON.stringify(lines));
    // Followed: a line written now appears under the same prefix.
    api.container('ml-team', 'bert-master-0', 'pytorch').log('master: step 1 loss 0.91\n');
    await untilRead(session.page, terminalText, /\[master-0\] master: step 1 loss 0\.91/, 'a line written while followed', 60_000);
  });
});
