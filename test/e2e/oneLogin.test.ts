/**
 * Issue 36 item 1 in a real VS Code (code-server + Chromium) against the real test sshd: a window that expands a
 * host, opens a run's metrics, inspects a checkpoint and downloads it logs in to that host once per transport it
 * needs: once over the built-in client (the pool's connection: the tree, the tail reads, inspect, the download's
 * control commands) and once over OpenSSH (the host's session the pool keeps: the metrics backlog stream, begun when
 * the run's target was expanded, and the download's byte streams). sshd logs at DEBUG1, where it names each client's
 * software, so the logins are counted by client. The checkpoint is one torch wrote (test/fixtures/real/make_inspect.py).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { expandTreeRow, expectRow, treeContextMenu } from './treeRows';
import { drawnPixels, hasMetricsFrame, metricsFrame } from './metricsView';
import { until } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testHostSettings } from './suite';

const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
/** Past STREAM_ABOVE (16 MiB, metrics/follow/follow.ts): the open reads its backlog as an OpenSSH stream. */
const LOG_LINES = 400_000;

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let downloads: string;

before(async () => {
  host = await startTestHost({ logLevel: 'DEBUG1' });
  const root = path.join(host.dir, 'window-e2e');
  const run = path.join(root, 'win-run');
  fs.mkdirSync(path.join(run, 'checkpoints', 'step_200'), { recursive: true });
  fs.copyFileSync(path.join(FIX, 'train_state.pt'), path.join(run, 'checkpoints', 'step_200', 'train_state.pt'));
  fs.mkdirSync(path.join(run, 'logs'));
  const lines: string[] = [];
  for (let s = 0; s < LOG_LINES; s++) lines.push(`{"step":${s},"loss":${(1 / (s + 1)).toFixed(6)},"time":${1.7e9 + s}}`);
  fs.writeFileSync(path.join(run, 'logs', 'train.jsonl'), lines.join('\n') + '\n');
  execFileSync('chmod', ['-R', 'a+rX', root]);
  workspace = fs.mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  downloads = fs.mkdtempSync(path.join(tmpdir(), 'rr-e2e-dl-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('winbox', { targets: ['host'], runRoots: [root] })]),
      'remoteRuns.downloadDirectory': downloads,
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  for (const d of [workspace, downloads]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

test('expand a host, open metrics, inspect and download a checkpoint: one login over the built-in client, one over OpenSSH', async () => {
  await withArtifactsOnFailure(session, 'one-login', async () => {
    const before = host.sshd.acceptedLogins();
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'winbox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'win-run');

    // Metrics: the chart draws the log's points.
    await treeContextMenu(session, 'win-run', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel', 120_000);
    const drawn = await drawnPixels(frame);
    assert.ok((drawn.loss ?? 0) > 0, `the loss chart drew: ${JSON.stringify(drawn)}`);

    // Inspect: the checkpoint's contents from its headers.
    await expandTreeRow(session, 'step_200');
    await expandTreeRow(session, 'contents');
    await expectRow(session, 'model › layers › 0 › self_attn', /64 params · 256 B · 4 tensors/);

    // Download: through OpenSSH (control: not the built-in client's fallback), byte-identical.
    await treeContextMenu(session, 'step_200', /^Download Checkpoint…$/);
    // Read from the extension's log: 24 KB land at once, and the toast may be gone before it is looked for.
    await until(session.page, async () => session.vscodeLogs(), /download win-run\/step_200: .*fetched by OpenSSH, verified by SHA-256 on both sides/, 'the download done by OpenSSH', 120_000);
    const file = path.join(downloads, 'winbox', 'win-run', 'step_200', 'train_state.pt');
    assert.deepEqual(fs.readFileSync(file), fs.readFileSync(path.join(FIX, 'train_state.pt')));

    const byClient = host.sshd.acceptedLoginsByClient();
    assert.equal(host.sshd.acceptedLogins() - before, 2, `two logins in all: ${JSON.stringify(byClient)}`);
    assert.deepEqual(byClient, { ssh2js: 1, OpenSSH: 1 }, 'one login per transport');
  });
});
