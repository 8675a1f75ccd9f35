/**
 * Eval points on the chart, in the real webview bundle in real Chromium, without a whole VS Code around it: the page
 * gets the messages the extension sends (a snapshot, then an `evals` update) through the same window message the
 * webview host delivers, and a stand-in for VS Code's `acquireVsCodeApi` records what the page posts. Checked: the
 * point is painted in its run's colour where its button sits (canvas pixels), hovering shows profile, time and values,
 * a click asks for the eval table, and a finished eval's point joins the chart. (eval.test.ts checks the same inside
 * VS Code, end to end.)
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { EvalPointWire, FromWebview, RunRefWire, ToWebview } from '../../src/shared/metricsProtocol';
import { REPO_ROOT, findToolchain } from './toolchain';

let browser: Browser;
let page: Page;

const STEPS = [0, 1000, 2000, 3000, 4000];
const point = (step: number, value: number, startedAt = Date.UTC(2026, 0, 30, 14, 5)): EvalPointWire => ({
  id: `e${step}`, profile: 'acceptance', step, checkpoint: `step_${step}`, startedAt, state: 'passed', values: { acceptance_length: value, loss: 0.5 },
});

const snapshot: ToWebview = {
  type: 'snapshot', mode: 'panel', title: 'drafter — box/host', references: [], highlight: null,
  restore: { version: 1, primary: {} as RunRefWire, others: [] },
  runs: [{
    runKey: 'r', label: 'drafter', where: 'box/host', role: 'primary', color: 0, status: 'following', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000,
    checkpoints: STEPS.map((s) => ({ step: s, name: `step_${s}`, path: `/r/step_${s}` })),
    series: [{ key: 'loss', x: STEPS, y: [3, 2, 1.5, 1.2, 1], s: [3, 2, 1.5, 1.2, 1], segmentStarts: [0], total: 5 }],
    evals: [point(4000, 6.4)],
  }],
};

before(async () => {
  const bundle = await build({ entryPoints: [path.join(REPO_ROOT, 'src/webview/main.ts')], bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'silent' });
  browser = await chromium.launch({ executablePath: findToolchain().chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const css = readFileSync(path.join(REPO_ROOT, 'media/metrics.css'), 'utf8');
  await page.setContent(`<!DOCTYPE html><html><head><style>${css}</style></head><body data-mode="panel"><div id="app"></div></body></html>`);
  // Plain text, not a function: the test's own transpiler would add helpers the page does not have.
  await page.addScriptTag({
    content: 'window.posted = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.posted.push(m), getState: () => ({ ui: { smoothing: 0 } }), setState: () => undefined });',
  });
  await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
  await page.waitForFunction(() => (window as unknown as { posted: { type: string }[] }).posted.some((m) => m.type === 'ready'));
});

after(async () => {
  await browser?.close();
});

const send = (msg: ToWebview) => page.evaluate((m) => window.postMessage(m, '*'), msg);
const posted = () => page.evaluate(() => (window as unknown as { posted: FromWebview[] }).posted);

/** The canvas pixel under the centre of each eval point button of a chart, and the run's colour from the legend. */
function pixelsUnderPoints(metric: string) {
  return page.evaluate((key) => {
    const section = document.querySelector<HTMLElement>(`section.metric[data-metric="${key}"]`)!;
    const canvas = section.querySelector('canvas')!;
    const c = canvas.getBoundingClientRect();
    const scale = canvas.width / c.width;
    const ctx = canvas.getContext('2d')!;
    return Array.from(section.querySelectorAll<HTMLElement>('button.eval-point')).map((b) => {
      const r = b.getBoundingClientRect();
      return Array.from(ctx.getImageData(Math.round((r.left + r.width / 2 - c.left) * scale), Math.round((r.top + r.height / 2 - c.top) * scale), 1, 1).data);
    });
  }, metric);
}

async function runColour(): Promise<number[]> {
  const css = await page.locator('.legend .eval-series .eval-swatch').first().evaluate((e) => getComputedStyle(e).backgroundColor);
  return (css.match(/\d+/g) ?? []).slice(0, 3).map(Number);
}

test('an eval is a point at its checkpoint\'s step: its own chart for a metric the log lacks, and on the training metric\'s chart', async () => {
  await send(snapshot);
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  assert.deepEqual(await page.locator('section.metric').evaluateAll((s) => s.map((e) => (e as HTMLElement).dataset.metric)), ['loss', 'acceptance_length']);
  for (const metric of ['acceptance_length', 'loss']) {
    const buttons = page.locator(`section.metric[data-metric="${metric}"] button.eval-point`);
    await buttons.first().waitFor();
    assert.equal(await buttons.count(), 1, metric);
  }
  assert.equal(
    await page.locator('section.metric[data-metric="acceptance_length"] button.eval-point').getAttribute('aria-label'),
    'Eval acceptance of step_4000 (step 4000): acceptance_length 6.4, loss 0.5',
  );
  assert.deepEqual(await page.locator('.legend .eval-series').allInnerTexts(), ['eval acceptance_length (acceptance): 1 point', 'eval loss (acceptance): 1 point']);
  const want = await runColour();
  for (const metric of ['acceptance_length', 'loss']) {
    const [px] = await pixelsUnderPoints(metric);
    assert.ok(px![3]! > 200, `${metric}: opaque under the point (${px})`);
    assert.ok(want.every((v, i) => Math.abs(v - px![i]!) <= 12), `${metric}: the point is the run's colour ${want}, got ${px}`);
  }
  // The point sits at step 4000: the right end of the x axis spanning the checkpoints 0…4000.
  const at = await page.locator('section.metric[data-metric="acceptance_length"]').evaluate((s) => {
    const b = s.querySelector('button.eval-point')!.getBoundingClientRect();
    const c = s.querySelector('canvas')!.getBoundingClientRect();
    return (b.left + b.width / 2 - c.left) / c.width;
  });
  assert.ok(at > 0.8, `the point is near the right end (${at.toFixed(2)} of the width)`);
});

test('hover shows profile, time and values; a click asks for the eval table', async () => {
  const button = page.locator('section.metric[data-metric="acceptance_length"] button.eval-point');
  await button.hover();
  const tip = page.locator('section.metric[data-metric="acceptance_length"] .eval-tip');
  await tip.waitFor({ state: 'visible' });
  const text = await tip.innerText();
  assert.match(text, /^eval acceptance · drafter · step_4000 \(step 4000\)\n/);
  assert.match(text, /\nstarted 2026-01-30 \d\d:05 · passed\n/);
  assert.match(text, /\nacceptance_length = 6\.4\nloss = 0\.5$/);
  await page.mouse.move(2, 2);
  await tip.waitFor({ state: 'hidden' });
  await button.click();
  assert.ok((await posted()).some((m) => m.type === 'showEvalTable'));
});

test('a finished eval\'s result joins the chart (the evals message)', async () => {
  await send({ type: 'evals', runKey: 'r', evals: [point(2000, 5.1), point(4000, 6.4)] });
  await page.waitForFunction(() => document.querySelectorAll('section.metric[data-metric="acceptance_length"] button.eval-point').length === 2);
  assert.deepEqual(await page.locator('section.metric[data-metric="acceptance_length"] button.eval-point').evaluateAll((b) => b.map((e) => e.getAttribute('aria-label'))), [
    'Eval acceptance of step_2000 (step 2000): acceptance_length 5.1, loss 0.5',
    'Eval acceptance of step_4000 (step 4000): acceptance_length 6.4, loss 0.5',
  ]);
  assert.ok((await pixelsUnderPoints('acceptance_length')).every((p) => p[3]! > 200), 'both painted');
  assert.match(await page.locator('.legend .eval-series').first().innerText(), /: 2 points$/);
});
