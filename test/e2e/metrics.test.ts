/**
 * Metric curves in a real VS Code (code-server + Chromium) over a real OpenSSH server with the pct/docker
 * shims: open a run's metrics from the tree's context menu, the chart canvases draw (their pixels are read),
 * a reference line and a comparison run show up in the legend, clicking a checkpoint marker moves the tree's
 * selection (and the tree's selection highlights the marker), and the pinned run's status-bar item and the
 * inline view update when the remote log grows.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { addRunFromPanel, drawnPixels, hasMetricsFrame, metricsFrame as findMetricsFrame } from './metricsView';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { act } from './ui';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, openSuite } from './suite';
import { startTestHost, type TestHost } from '../harness/testHost';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;

before(async () => {
  host = await startTestHost();
  ({ workspace, session } = await openSuite(host, 'metrics', { 'remoteRuns.metrics.pollIntervalSeconds': 0.5 }));
});

after(async () => {
  await closeSuite(session, host, workspace);
});

const row = (label: string) => treeRow(session, label);
const expandRow = (label: string) => expandTreeRow(session, label);
const openMetrics = (label: string) => treeContextMenu(session, label, /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });

async function legendTexts(frame: Frame): Promise<string[]> {
  return frame.locator('.legend .legend-item').allInnerTexts();
}

const metricsFrame = (mode: 'panel' | 'inline', timeoutMs?: number): Promise<Frame> => findMetricsFrame(session, mode, timeoutMs);

function pinnedStatus() {
  return session.page.locator('.part.statusbar .statusbar-item').filter({ hasText: /workspace · step/ }).first();
}

test('Open Metrics from the tree: one chart per metric, and the canvases draw', async () => {
  await withArtifactsOnFailure(session, 'metrics-open', async () => {
    await session.openViewContainer('Remote Runs');
    await expandRow('testbox');
    // The comparison run lives in another container: list it so the tree knows it.
    await expandRow('docker:trainer');
    await row('flat-run').waitFor({ state: 'visible', timeout: 30_000 });
    await expandRow('pct:200');
    await openMetrics('workspace');
    const frame = await metricsFrame('panel');
    const metrics = await frame.locator('section.metric').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric));
    assert.deepEqual(metrics, ['loss', 'acc', 'lr', 'streak']);
    await frame.waitForFunction(() => document.querySelectorAll('button.ckpt-marker').length > 0, undefined, { timeout: 15_000 });
    const pixels = await drawnPixels(frame);
    for (const [metric, n] of Object.entries(pixels)) assert.ok(n > 500, `${metric} drew ${n} pixels`);
    assert.match(await frame.locator('.title').innerText(), /workspace — testbox\/pct:200/);
    assert.match(await frame.locator('.latest').innerText(), /^step \d+/);
  });
});

test('a reference line is written to the workspace file and shown in the legend and on the chart', async () => {
  await withArtifactsOnFailure(session, 'metrics-reference', async () => {
    const frame = await metricsFrame('panel');
    const before = (await drawnPixels(frame)).loss;
    await frame.locator('.ref-form select').selectOption('loss');
    await frame.locator('.ref-form input[name=value]').fill('1.25');
    await frame.locator('.ref-form input[name=label]').fill('paper <b>x</b>');
    await frame.locator('.ref-form input[name=source]').fill('Table 2');
    await frame.locator('.ref-form button[type=submit]').click();
    await frame.locator('.legend .reference-line').waitFor({ timeout: 15_000 });
    assert.ok((await legendTexts(frame)).some((t) => t.includes('paper <b>x</b>: loss = 1.25 (Table 2)')), 'shown as text, not markup');
    assert.equal(await frame.locator('.legend b').count(), 0);
    const file = path.join(workspace, '.vscode', 'remote-runs.references.json');
    const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.deepEqual(saved.lines, [{ metric: 'loss', value: 1.25, label: 'paper <b>x</b>', source: 'Table 2' }]);
    assert.notEqual((await drawnPixels(frame)).loss, before, 'the line is drawn on the loss chart');
  });
});

test('a references file that could not be read whole is not rewritten by the panel: the error says why, the file keeps every byte', async () => {
  await withArtifactsOnFailure(session, 'metrics-reference-blocked', async () => {
    const frame = await metricsFrame('panel');
    const file = path.join(workspace, '.vscode', 'remote-runs.references.json');
    const saved = fs.readFileSync(file, 'utf8');
    // A hand edit with one entry this version cannot read (its value is not a number): the good one is still shown.
    const edited = `${JSON.stringify({ lines: [{ metric: 'loss', value: 1.5, label: 'kept', source: '' }, { metric: 'acc', value: 'high', label: 'typo' }] }, null, 2)}\n`;
    fs.writeFileSync(file, edited);
    await frame.waitForFunction(() => Array.from(document.querySelectorAll('.legend .reference-line')).some((e) => (e.textContent ?? '').includes('kept')), undefined, { timeout: 15_000 });
    await frame.locator('.ref-form select').selectOption('loss');
    await frame.locator('.ref-form input[name=value]').fill('0.75');
    await frame.locator('.ref-form input[name=label]').fill('new');
    await frame.locator('.ref-form button[type=submit]').click();
    const deadline = Date.now() + 15_000;
    let said = false;
    while (!said && Date.now() < deadline) {
      said = (await session.notifications()).some((n) => /could not be read.*nothing was written/.test(n.message));
      if (!said) await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(said, 'the refusal is shown');
    assert.equal(fs.readFileSync(file, 'utf8'), edited, 'the file keeps every byte');
    // The file as the tests after this one expect it (the line added above), back in the legend.
    fs.writeFileSync(file, saved);
    await frame.waitForFunction(() => Array.from(document.querySelectorAll('.legend .reference-line')).some((e) => (e.textContent ?? '').includes('Table 2')), undefined, { timeout: 15_000 });
  });
});

test('Add run… adds a run from another container to the legend, in its own colour', async () => {
  await withArtifactsOnFailure(session, 'metrics-compare', async () => {
    const frame = await metricsFrame('panel');
    await addRunFromPanel(session, frame, 'flat-run');
    await frame.locator('.legend .legend-item.run.compare').waitFor({ timeout: 30_000 });
    const legend = await legendTexts(frame);
    assert.ok(legend.some((t) => /flat-run/.test(t) && /compared/.test(t)), legend.join(' | '));
    // Read in one turn of the page, once the legend has both runs drawn: the legend is redrawn when more arrives for
    // the runs (their evals, a poll), and a swatch read from a legend being replaced has no computed colour.
    const readColours = () =>
      frame.locator('.legend .run .swatch').evaluateAll((els) => els.filter((e) => e.isConnected).map((e) => getComputedStyle(e).backgroundColor));
    await frame
      .waitForFunction(() => {
        const cs = Array.from(document.querySelectorAll('.legend .run .swatch')).map((e) => getComputedStyle(e).backgroundColor);
        return cs.length === 2 && cs.every(Boolean) && cs[0] !== cs[1];
      }, undefined, { timeout: 30_000 })
      .catch(() => undefined); // the assertion below says what was there instead
    const colours = await readColours();
    assert.equal(new Set(colours.filter(Boolean)).size, 2, `two runs, two colours (${colours.join(', ')})`);
    // Its curves arrive (flat-run has loss/acc/lr from metrics.csv) and can be hidden from the legend.
    const toggle = frame.locator('.legend .run.compare .legend-toggle');
    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-pressed'), 'false');
    await toggle.click();
  });
});

test('clicking a checkpoint marker selects that checkpoint in the tree, and the selection highlights the marker', async () => {
  await withArtifactsOnFailure(session, 'metrics-checkpoint', async () => {
    const frame = await metricsFrame('panel');
    const marker = frame.locator('section.metric[data-metric="loss"] button.ckpt-marker[aria-label^="Checkpoint step_14000 "]');
    const selected = session.page.locator('.part.sidebar .monaco-list-row[aria-selected="true"] .label-name');
    await act(session.page, {
      what: 'the tree selecting step_14000 after a click on its marker',
      action: () => marker.click(),
      effect: async () => (await selected.allInnerTexts()).includes('step_14000'),
    });
    assert.deepEqual(await selected.allInnerTexts(), ['step_14000']);
    // The tree's selection comes back: that marker is highlighted, with the values at that step.
    await frame.locator('section.metric[data-metric="loss"] button.ckpt-marker.highlighted[aria-label^="Checkpoint step_14000 "]').waitFor({ timeout: 15_000 });
    assert.match(await frame.locator('section.metric[data-metric="loss"] .metric-readout').innerText(), /workspace @ 1\d{4}: [\d.]+/);
    // Selecting another checkpoint in the tree moves the highlight.
    const highlighted = frame.locator('section.metric[data-metric="loss"] button.ckpt-marker.highlighted[aria-label^="Checkpoint step_18000 "]');
    await act(session.page, {
      what: 'the marker of step_18000 highlighted after selecting it in the tree',
      action: () => row('step_18000').click(),
      effect: async () => (await highlighted.count()) > 0,
    });
  });
});

test('the pinned run in the status bar and the inline view update as the remote log grows', async () => {
  await withArtifactsOnFailure(session, 'metrics-live', async () => {
    await treeContextMenu(session, 'workspace', /^Pin Run$/);
    const item = pinnedStatus();
    await item.waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(await item.innerText(), /workspace · step [\d,]+ · loss [\d.]+/);
    await session.runCommand('Remote Runs: Show Inline Metrics');
    const inline = await metricsFrame('inline');
    assert.ok(Object.values(await drawnPixels(inline)).every((n) => n > 200), 'the inline charts draw');

    const log = path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl');
    const lines = Array.from({ length: 10 }, (_, i) => JSON.stringify({ step: 40_000 + i, loss: 0.5 - i / 100, acc: 0.3, lr: 1e-5, streak: 3 }));
    fs.appendFileSync(log, `${lines.join('\n')}\n`);
    await session.page.waitForFunction(
      () => Array.from(document.querySelectorAll('.part.statusbar .statusbar-item')).some((e) => /workspace · step 40,009 · loss 0\.41/.test(e.textContent ?? '')),
      undefined,
      { timeout: 30_000 },
    );
    await inline.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 40009', undefined, { timeout: 30_000 });
    assert.equal(await inline.locator('section.metric[data-metric="loss"] .metric-latest').innerText(), '0.41');
    const panel = await metricsFrame('panel');
    await panel.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 40009', undefined, { timeout: 30_000 });
  });
});

test('after a window reload the panel comes back with its compared run and reference line, and draws', async () => {
  await withArtifactsOnFailure(session, 'metrics-reload', async () => {
    await session.reloadWindow();
    const frame = await metricsFrame('panel', 120_000);
    await frame.locator('.legend .legend-item.run.compare').waitFor({ timeout: 30_000 });
    const legend = await legendTexts(frame);
    assert.ok(legend.some((t) => /^workspace/.test(t)), legend.join(' | '));
    assert.ok(legend.some((t) => /flat-run/.test(t)), legend.join(' | '));
    assert.ok(legend.some((t) => t.includes('paper <b>x</b>: loss = 1.25 (Table 2)')), legend.join(' | '));
    await frame.waitForFunction(() => document.querySelector('.latest')?.textContent === 'step 40009', undefined, { timeout: 30_000 });
    for (const [metric, n] of Object.entries(await drawnPixels(frame))) assert.ok(n > 500, `${metric} drew ${n} pixels`);
    await session.screenshot(path.join(__dirname, '..', '..', '.test-tmp', 'e2e', 'screenshots', 'metrics.png'));
  });
});
