/**
 * A Kubernetes cluster in the sidebar of a real VS Code (code-server + Chromium), reached through the real kubectl
 * on PATH against the test API server (test/harness/kubeApi.ts): cluster → job → pod by rank → container → run →
 * checkpoints, clicked open row by row, each job and pod with its state, and a container that does not run saying
 * why in kubectl's words, and Open Terminal Here on a run in a pod. The pods are the PyTorchJob fixture of test/fixtures/kube/ (from the Training Operator's
 * sources); the run is a Hugging Face Trainer run written by the real transformers (test/fixtures/real/written).
 */
import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, rowLabels, rowText, treeContextMenu } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { hasMetricsFrame, metricsFrame } from './metricsView';
import { quickInputState, quickPickStep, settled } from './ui';
import { userSettingsOf } from './settingsFile';
import type { KubeApi } from '../harness/kubeApi';
import { clusterSettings, startBertCluster } from '../builders/kubeCluster';

let api: KubeApi;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  ({ api } = await startBertCluster());
  // A run that is writing: a JSONL log the metrics panel follows while lines are appended.
  const live = path.join(api.container('ml-team', 'bert-master-0', 'pytorch').workspace, 'live-run');
  mkdirSync(path.join(live, 'logs'), { recursive: true });
  writeFileSync(path.join(live, 'logs', 'train.jsonl'), [0, 1, 2, 3, 4].map((i) => `${JSON.stringify({ step: i, loss: 2 - i / 10 })}\n`).join(''));
  const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'train-admin' }, { name: 'gke_my-proj_europe-west4_llama' }] });
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-kube-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    // kubectl's own kubeconfig lookup, for Use Contexts from ~/.kube/config.
    env: { KUBECONFIG: kubeconfig },
    settings: clusterSettings(kubeconfig),
  });
});

after(async () => {
  await session?.close();
  await api?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

test('cluster → job → pod → container → run → checkpoint, clicked open, through kubectl', async () => {
  await withArtifactsOnFailure(session, 'kube-tree', async () => {
    await session.openViewContainer('Remote Runs');
    await expectRow(session, 'prod', /train-admin · ns ml-team/);
    await expandTreeRow(session, 'prod');
    await expectRow(session, 'bert', /PyTorchJob · running · 3 pods/);
    await expandTreeRow(session, 'bert');
    await expectRow(session, 'worker-1', /failed \(CrashLoopBackOff\)/);
    await expectRow(session, 'master-0', /running · rank 0/);
    const labels = await rowLabels(session);
    assert.deepEqual(labels.filter((l) => /^(master|worker)-\d$/.test(l)), ['master-0', 'worker-0', 'worker-1'], 'pods by replica type and rank');
    await expandTreeRow(session, 'master-0');
    await expectRow(session, 'pytorch', /running/);
    await expandTreeRow(session, 'pytorch');
    await expectRow(session, 'bert-run', /3 checkpoints/);
    await expandTreeRow(session, 'bert-run');
    await expectRow(session, 'checkpoint-20', /\d+(\.\d+)? [KMG]?B · 1 h ago/);
    const checkpoints = (await rowLabels(session)).filter((l) => /^(checkpoint-\d+|final)$/.test(l));
    assert.deepEqual(checkpoints, ['final', 'checkpoint-30', 'checkpoint-20'], 'newest first, as over SSH');
    assert.ok(api.requests.some((r) => /\/pods\/bert-master-0\/exec\?.*container=pytorch/.test(r)), 'listed with kubectl exec into the master');
  });
});

test('a crash-looping container says why, in kubectl\'s words, instead of an empty list', async () => {
  await withArtifactsOnFailure(session, 'kube-tree-stopped', async () => {
    await expandTreeRow(session, 'worker-1');
    // The container row of worker-1 is the last "pytorch" row.
    await expandTreeRow(session, 'pytorch', 'last');
    const row = await rowText(session, 'Container is stopped');
    assert.match(row, /not running/);
  });
});

test('Use Contexts from ~/.kube/config: pick a context, give its namespace, and the cluster is in the user settings and the tree', async () => {
  await withArtifactsOnFailure(session, 'kube-use-contexts', async () => {
    await session.runCommand('Remote Runs: Use Contexts from ~/.kube/config');
    const labels = await quickPickStep(session, /^Use Contexts from ~\/\.kube\/config$/, (l) => l.length === 2);
    assert.deepEqual(labels, ['gke_my-proj_europe-west4_llama', 'train-admin']);
    const { page } = session;
    const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row').filter({ has: page.locator('.label-name', { hasText: /^gke_my-proj_europe-west4_llama$/ }) });
    await row.click();
    await settled(page, () => row.getAttribute('aria-checked'), (v) => v === 'true', 'the context picked');
    await page.locator('.quick-input-widget .quick-input-box input').press('Enter');
    await settled(page, () => quickInputState(page), (q) => q.visible && /^Namespace for gke_my-proj_europe-west4_llama$/.test(q.title), 'the namespace step');
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.fill('ml-team');
    await input.press('Enter');
    // Named after the GKE cluster, in the user's settings beside the entry that was there.
    await expectRow(session, 'llama', /gke_my-proj_europe-west4_llama · ns ml-team/);
    const hosts = userSettingsOf(session.root)['remoteRuns.hosts'] as { name: string }[];
    assert.deepEqual(hosts[hosts.length - 1], { name: 'llama', kind: 'kubernetes', context: 'gke_my-proj_europe-west4_llama', namespace: 'ml-team' });
    await expandTreeRow(session, 'llama');
    // Its own bert row, beside the one under prod: the same cluster, listed through the new entry.
    await settled(page, () => rowLabels(session), (l) => l.filter((x) => x === 'bert').length === 2, 'a bert row under llama');
  });
});

test('Open Terminal Here on a run in a pod: a terminal running kubectl exec -it, its shell in the container\'s run folder', async () => {
  await withArtifactsOnFailure(session, 'kube-terminal', async () => {
    await session.openViewContainer('Remote Runs');
    await expectRow(session, 'bert-run', /3 checkpoints/);
    const before = new Set(api.running().map((p) => p.pid));
    await treeContextMenu(session, 'bert-run', /^Open Terminal Here$/);
    // The server's side: an exec into the master's container with a TTY (kubectl in the terminal's pty asks for one),
    // running the terminal's script with the run's folder as $1 (core/terminal.ts terminalKubectlArgs).
    await settled(session.page, async () => api.running().filter((p) => !before.has(p.pid)), (l) => l.length === 1, 'the terminal\'s exec in the pod');
    const exec = api.running().find((p) => !before.has(p.pid))!;
    assert.deepEqual([exec.pod, exec.container, exec.argv[0], exec.argv[1], exec.argv[3], exec.argv[4]], ['bert-master-0', 'pytorch', 'sh', '-c', 'sh', '/workspace/bert-run']);
    assert.ok(api.requests.some((r) => /\/pods\/bert-master-0\/exec\?.*tty=true/.test(r)), 'kubectl asked for a TTY');
    // The shell it became: bash, as a login shell, in the run's folder inside the container.
    await settled(session.page, async () => { try { return readFileSync(`/proc/${exec.pid}/cmdline`, 'latin1'); } catch { return ''; } }, (c) => c.startsWith('bash\0-l'), 'bash -l in the pod');
    assert.equal(readlinkSync(`/proc/${exec.pid}/cwd`), '/workspace/bert-run');
    await session.runCommand('Terminal: Kill All Terminals');
    await settled(session.page, async () => api.running().some((p) => p.pid === exec.pid), (alive) => !alive, 'the shell ended with its terminal');
  });
});

test('Open Metrics on a run in a pod: the panel follows its log through kubectl exec as lines are written', async () => {
  await withArtifactsOnFailure(session, 'kube-metrics', async () => {
    await session.openViewContainer('Remote Runs');
    await expectRow(session, 'live-run', /.*/);
    await treeContextMenu(session, 'live-run', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel');
    await frame.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 4', undefined, { timeout: 60_000 });
    const log = path.join(api.container('ml-team', 'bert-master-0', 'pytorch').workspace, 'live-run', 'logs', 'train.jsonl');
    appendFileSync(log, [5, 6, 7, 8, 9].map((i) => `${JSON.stringify({ step: i, loss: 2 - i / 10 })}\n`).join(''));
    await frame.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 9', undefined, { timeout: 60_000 });
    const connection = await frame.locator('.connection').first().getAttribute('data-state');
    assert.equal(connection, 'connected', 'a cluster\'s run is never shown as connecting to a pool entry that does not exist');
    assert.ok(api.requests.filter((r) => /\/pods\/bert-master-0\/exec\?/.test(r)).length > 2, 'read through kubectl exec');
  });
});
