/**
 * The README's picture, made by a real run against the demo host (what a newcomer sees is what is tested): the
 * demo training host started as `npm run demo` starts it, a real VS Code on the demo profile's settings, the tree
 * opened down to the live run's checkpoints beside its metrics panel. The view is asserted (tree rows, charts that
 * drew, the live run's step moving on); the picture is written to media/screenshots/tree-and-metrics.png only with
 * UPDATE_SCREENSHOTS=1 (`UPDATE_SCREENSHOTS=1 node --import tsx --test test/e2e/screenshots.test.ts`), otherwise
 * under .test-tmp, so a test run never dirties the work tree.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { demoEvalProfile, startDemoHost, type DemoHost } from '../../src/demo/demoHost';
import { demoSettings } from '../../src/demo/profile';
import { drawnPixels, hasMetricsFrame, metricsFrame } from './metricsView';
import { REPO_ROOT } from './toolchain';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

const SCREENSHOT = path.join(
  REPO_ROOT,
  ...(process.env.UPDATE_SCREENSHOTS === '1' ? ['media', 'screenshots'] : ['.test-tmp', 'e2e', 'screenshots']),
  'tree-and-metrics.png',
);

let demoBase: string;
let demo: DemoHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  demoBase = mkdtempSync(path.join(tmpdir(), 'rr-e2e-demo-'));
  demo = await startDemoHost({ base: demoBase });
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-shots-ws-'));
  // A folder name that reads well in the window title of the picture.
  const folder = path.join(workspace, 'experiments');
  mkdirSync(folder);
  session = await startVSCode({ workspaceFolder: folder, settings: demoSettings(demo.paths, demo.hostConfig, demoEvalProfile()) });
});

after(async () => {
  await session?.close();
  await demo?.stop();
  for (const d of [workspace, demoBase]) if (d) rmSync(d, { recursive: true, force: true });
});

test('the tree beside the live run\'s metrics panel, on the demo host', async () => {
  await withArtifactsOnFailure(session, 'screenshot-tree-and-metrics', async () => {
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'demo');
    await treeRow(session, 'pct:200').filter({ hasText: /running/ }).waitFor({ state: 'visible', timeout: 30_000 });
    await treeRow(session, 'pct:201').filter({ hasText: /stopped/ }).waitFor({ state: 'visible' });
    await expandTreeRow(session, 'pct:200');
    await treeRow(session, 'workspace').filter({ hasText: /live/ }).waitFor({ state: 'visible', timeout: 30_000 });
    await expandTreeRow(session, 'workspace');
    await session.page.locator('.part.sidebar .label-name', { hasText: /^step_\d+$/ }).first().waitFor({ state: 'visible', timeout: 30_000 });

    await treeContextMenu(session, 'workspace', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    const frame = await metricsFrame(session, 'panel');
    assert.match(await frame.locator('.title').innerText(), /workspace — demo\/pct:200/);
    const metrics = await frame.locator('section.metric').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
    assert.ok(metrics.includes('loss') && metrics.length >= 3, `charts: ${metrics.join(', ')}`);
    for (const [metric, n] of Object.entries(await drawnPixels(frame))) assert.ok(n > 500, `${metric} drew ${n} pixels`);

    // The run is live: a later step arrives while we look (the demo trainer logs a line a second).
    const stepOf = async (): Promise<number> => Number((await frame.locator('.latest').innerText()).replace(/[^\d]/g, ''));
    const first = await stepOf();
    await frame.waitForFunction((s) => Number((document.querySelector('.latest')?.textContent ?? '').replace(/[^\d]/g, '')) > s, first, { timeout: 60_000 });

    // A clean picture: no toasts over the panel, the pointer off the tree.
    await session.page.keyboard.press('Escape');
    for (const close of await session.page.locator('.notifications-toasts .codicon-notifications-clear, .notifications-toasts .codicon-close').all()) {
      await close.click().catch(() => undefined);
    }
    await session.page.mouse.move(1150, 780); // empty editor space: no hover tooltip in the picture
    await session.screenshot(SCREENSHOT);
    const png = readFileSync(SCREENSHOT);
    assert.equal(png.subarray(1, 4).toString(), 'PNG');
    assert.equal(png.readUInt32BE(16), 1400, 'the whole window, 1400 px wide');
  });
});
