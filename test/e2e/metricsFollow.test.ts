/**
 * A metrics panel open while the run writes a new log shows it without a reopen (issue 34, item 2), in a real VS Code
 * (code-server + Chromium) over the real test sshd: a transformers Trainer's output_dir as the real Trainer left it
 * when SIGKILLed at step 35 (test/fixtures/real/make_livelogs.py) is opened; then the resumed process's files are laid
 * down on the remote as it wrote them (a second runs/<date>_<host>/ folder, a new checkpoint). The panel's feed finds
 * the new folder itself (runFeed.ts re-discovery; the tree is never refreshed here): the resumed process's own series
 * appear as new charts, train/loss goes on to step 40, and the status line says where the resumed process restarted.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { drawnPixels, hasMetricsFrame, metricsFrame } from './metricsView';
import { expandTreeRow, treeContextMenu } from './treeRows';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, openSuite, testHostSettings } from './suite';
import { startTestHost, type TestHost } from '../harness/testHost';

const LIVE = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'livelogs', 'trainer');

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let root: string;

function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else out.push(path.relative(dir, path.join(d, e.name)));
    }
  };
  walk(dir);
  return out.sort();
}

before(async () => {
  host = await startTestHost();
  root = path.join(host.dir, 'follow-e2e');
  fs.cpSync(path.join(LIVE, 'crashed'), root, { recursive: true });
  execFileSync('chmod', ['-R', 'a+rwX', root]);
  ({ workspace, session } = await openSuite(host, 'metrics-follow', {
    ...testHostSettings(host, [host.hostConfig('followbox', { targets: ['host'], runRoots: [root] })]),
    'remoteRuns.metrics.pollIntervalSeconds': 0.5,
  }));
});

after(async () => {
  await closeSuite(session, host, workspace);
});

test('a panel open while a resumed Trainer writes its second runs/ folder shows the new series without a reopen', async () => {
  await withArtifactsOnFailure(session, 'metrics-follow', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'followbox');
    await expandTreeRow(session, 'host');
    await treeContextMenu(session, 'output_dir', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel');
    await frame.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 35', undefined, { timeout: 30_000 });
    const before = await frame.locator('section.metric').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
    assert.ok(before.includes('train/loss'), before.join(', '));
    assert.ok(!before.includes('train/train_runtime'), 'the resumed process has not written yet');

    // The resumed process's files, as it wrote them: its new logdir and checkpoint appear; nothing else changes.
    const resumed = path.join(LIVE, 'resumed');
    for (const rel of files(resumed)) {
      const dest = path.join(root, rel);
      if (fs.existsSync(dest)) continue;
      fs.mkdirSync(path.dirname(dest), { recursive: true });
      fs.copyFileSync(path.join(resumed, rel), dest);
    }
    execFileSync('chmod', ['-R', 'a+rwX', root]);

    await frame.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 40', undefined, { timeout: 60_000 });
    await frame.locator('section.metric[data-metric="train/train_runtime"]').waitFor({ timeout: 30_000 });
    const after = await frame.locator('section.metric').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
    for (const m of before) assert.ok(after.includes(m), `${m} kept its name (${after.join(', ')})`);
    assert.ok(!after.some((m) => m?.startsWith('Dec')), `no series named by its logdir: ${after.join(', ')}`);
    // The restart is said: where, and how many points of the crashed process the resumed one replaced.
    await frame.waitForFunction(() => /output_dir: resumed at step 31: 5 earlier points replaced \(train\/loss/.test(document.querySelector('.status')?.textContent ?? ''), undefined, { timeout: 30_000 });
    const pixels = await drawnPixels(frame);
    assert.ok(pixels['train/loss'] > 500, `train/loss drew ${pixels['train/loss']} pixels`);
  });
});
