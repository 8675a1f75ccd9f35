/**
 * The README's pictures, made by a real run against the demo host (what a newcomer sees is what is tested): the
 * demo training host started as `npm run demo` starts it, a real VS Code on the demo profile's settings, the tree
 * opened down to the live run's checkpoints beside its metrics panel, in a dark theme (Dark Modern) and then, picked
 * from Preferences: Color Theme while it runs, a light one (Light Modern). The view is asserted (tree rows, charts that drew, the
 * live run's step moving on, the webview following the theme, the compared run's colour at least 3:1 on each
 * background); the pictures are written to media/screenshots/tree-and-metrics-{dark,light}.png only with
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
import type { Frame } from 'playwright-core';
import { contrastRatio, parseColor } from '../../src/webview/contrast';
import { addRunFromPanel, drawnPixels, hasMetricsFrame, metricsFrame } from './metricsView';
import { filterAndPick } from './ui';
import { REPO_ROOT } from './toolchain';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';

const screenshot = (theme: 'dark' | 'light'): string =>
  path.join(REPO_ROOT, ...(process.env.UPDATE_SCREENSHOTS === '1' ? ['media', 'screenshots'] : ['.test-tmp', 'e2e', 'screenshots']), `tree-and-metrics-${theme}.png`);

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
  session = await startVSCode({ workspaceFolder: folder, settings: { ...demoSettings(demo.paths, demo.hostConfig, [demoEvalProfile()]), 'workbench.colorTheme': 'Dark Modern' } });
});

after(async () => {
  await session?.close();
  await demo?.stop();
  for (const d of [workspace, demoBase]) if (d) rmSync(d, { recursive: true, force: true });
});

/** Writes the picture and checks it is the whole window. */
async function shoot(file: string): Promise<void> {
  // A clean picture: no toasts over the panel, the pointer off the tree.
  await session.page.keyboard.press('Escape');
  for (const close of await session.page.locator('.notifications-toasts .codicon-notifications-clear, .notifications-toasts .codicon-close').all()) {
    await close.click().catch(() => undefined);
  }
  await session.page.mouse.move(1150, 780); // empty editor space: no hover tooltip in the picture
  await session.screenshot(file);
  const png = readFileSync(file);
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
  assert.equal(png.readUInt32BE(16), 1400, 'the whole window, 1400 px wide');
}

/** Every run colour in the legend against the webview's background: at least 3:1 (contrast.ts). */
async function assertRunColoursContrast(frame: Frame, theme: string): Promise<void> {
  const { bg, swatches } = await frame.evaluate(() => ({
    bg: getComputedStyle(document.body).backgroundColor,
    swatches: Array.from(document.querySelectorAll('.legend .legend-item.run .swatch')).map((e) => getComputedStyle(e).backgroundColor),
  }));
  assert.ok(swatches.length >= 2, `the live run and the compared one: ${swatches}`);
  for (const c of swatches) {
    const ratio = contrastRatio(parseColor(c)!, parseColor(bg)!);
    assert.ok(ratio >= 3, `${theme}: ${c} on ${bg} is ${ratio.toFixed(2)}:1`);
  }
}

test('the tree beside the live run\'s metrics panel, on the demo host, in a dark and a light theme', async () => {
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

    // The finished reference run on the bare host compared, as a user comparing two runs would (its target listed).
    await expandTreeRow(session, 'host');
    await treeRow(session, 'baseline-ref').waitFor({ state: 'visible', timeout: 30_000 });
    await addRunFromPanel(session, frame, 'baseline-ref');
    await frame.locator('.legend .legend-item.run.compare').waitFor({ timeout: 30_000 });
    await frame.waitForFunction(() => Array.from(document.querySelectorAll('section.metric')).length >= 3 && document.querySelectorAll('section.metric:not([data-x-max])').length === 0, undefined, { timeout: 30_000 });

    assert.ok(await session.page.locator('.monaco-workbench.vs-dark').count(), 'a dark workbench');
    await frame.waitForFunction(() => document.body.classList.contains('vscode-dark'), undefined, { timeout: 30_000 });
    await assertRunColoursContrast(frame, 'Dark Modern');
    await shoot(screenshot('dark'));

    // The same window in a light theme, picked as a user does (Preferences: Color Theme); the webview follows.
    await session.runCommand('Preferences: Color Theme');
    await filterAndPick(session, 'Light Modern', 'Light Modern');
    await session.page.locator('.monaco-workbench.vs').waitFor({ timeout: 60_000 });
    await frame.waitForFunction(() => document.body.classList.contains('vscode-light'), undefined, { timeout: 60_000 });
    for (const [metric, n] of Object.entries(await drawnPixels(frame))) assert.ok(n > 500, `${metric} drew ${n} pixels in the light theme`);
    await assertRunColoursContrast(frame, 'Light Modern');
    await shoot(screenshot('light'));
  });
});
