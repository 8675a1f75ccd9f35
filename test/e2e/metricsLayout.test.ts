/**
 * Issue 17's rough edges of the metrics charts, in the real webview bundle in real Chromium (the page gets the
 * messages the extension sends through the window message the webview host delivers; a stand-in for
 * `acquireVsCodeApi` records what it posts and saves), where only a browser can tell:
 * - one x range for every chart (the eval-only charts too), so checkpoint markers line up; `prompts: 200` not charted;
 * - eval points whole at the plot's edge and joined by a line;
 * - the layout stays put while hovering (readouts fill, a plateau hint appears): a click lands on the eval point
 *   where it was (it missed by ~28 px);
 * - the eval tooltip whole inside the window at the right edge;
 * - the compared run's colour at least 3:1 on a dark theme's background (Dark Modern's own variables);
 * - the plateau direction flipped per chart, sent and saved;
 * - in a short inline view every chart (the fifth too) is in sight and the hint, on the title's line, takes no height.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import type { EvalPointWire, FromWebview, PlateauHint, RunRefWire, RunSnapshot, ToWebview } from '../../src/shared/metricsProtocol';
import { contrastRatio, parseColor } from '../../src/webview/contrast';
import { REPO_ROOT, findToolchain } from './toolchain';

let browser: Browser;
let bundle: string;
let css: string;

/** A long run name, as real ones are: the tooltip's first line is wider than the tooltip may be. */
const PRIMARY = 'drafter-qwen3-27b-lr3e-4-bs512-warmup2000-seed17';
const STEPS = Array.from({ length: 81 }, (_, i) => i * 500);
const CHECKPOINTS = [10_000, 20_000, 30_000, 40_000];
/** The demo eval's result lines (src/demo/scripts.ts EVAL_SCRIPT), at four checkpoints: the last at the axis' end. */
const evals: EvalPointWire[] = CHECKPOINTS.map((step) => {
  const a = Number((1.2 + 2.6 * (1 - Math.exp(-step / 14000))).toFixed(3));
  return { id: `e${step}`, profile: 'acceptance', step, checkpoint: `step_${step}`, startedAt: Date.UTC(2026, 0, 30, 14, 5) + step, state: 'passed', values: { acceptance_length: a, accept_rate: Number((a / 8).toFixed(4)), prompts: 200 } };
});
// VS Code's Dark Modern: its backgrounds and the registry's default chart colours (charts.orange = #EA5C0055).
const DARK_MODERN = {
  '--vscode-editor-background': '#1F1F1F', '--vscode-panel-background': '#181818', '--vscode-foreground': '#CCCCCC',
  '--vscode-descriptionForeground': '#9D9D9D', '--vscode-charts-blue': '#59a4f9', '--vscode-charts-orange': '#EA5C0055',
  '--vscode-charts-green': '#89D185', '--vscode-charts-purple': '#B180D7', '--vscode-charts-red': '#F14C4C', '--vscode-charts-yellow': '#CCA700',
};

const curve = (f: (s: number) => number) => STEPS.map(f);
function runOf(runKey: string, role: RunSnapshot['role'], color: number, plateaus: PlateauHint[] = []): RunSnapshot {
  const series = [
    { key: 'loss', y: curve((s) => 0.85 + 2.7 * Math.exp(-s / 9000) + (role === 'primary' ? 0 : 0.2)) },
    { key: 'acc', y: curve((s) => 0.04 + 0.24 * (1 - Math.exp(-s / 12000))) },
    { key: 'lr', y: curve((s) => 3e-5 + 2.7e-4 * 0.5 * (1 + Math.cos((Math.PI * s) / 40000))) },
    { key: 'streak', y: curve((s) => 1 + 2.7 * (1 - Math.exp(-s / 10000))) },
  ].map(({ key, y }) => ({ key, x: STEPS, y, s: y, segmentStarts: [0], total: STEPS.length }));
  return {
    runKey, label: runKey, where: 'box/pct:200', role, color, status: 'following', badLines: 0, latest: {}, plateaus, link: { state: 'connected' }, loggedAgoMs: 1000, stoppedAfterMs: 300_000,
    checkpoints: role === 'primary' ? CHECKPOINTS.map((s) => ({ step: s, name: `step_${s}`, path: `/w/step_${s}` })) : [],
    series: role === 'primary' ? series : series.slice(0, 1),
    evals: role === 'primary' ? evals : [],
  };
}
const lossFlat: PlateauHint = { key: 'loss', direction: 'lower', flatSince: 31_000, flatValue: 0.92, best: 0.915, bestStep: 39_500, window: 2000, fraction: 0.01 };
const snapshotOf = (mode: 'panel' | 'inline', plateaus: PlateauHint[] = []): ToWebview => ({
  type: 'snapshot', mode, title: 'workspace — box/pct:200', references: [], highlight: null,
  restore: { version: 1, primary: {} as RunRefWire, others: [] },
  runs: [runOf(PRIMARY, 'primary', 0, plateaus), runOf('finished-run', 'compare', 1)],
});

async function openPage(mode: 'panel' | 'inline', viewport: { width: number; height: number }): Promise<Page> {
  const page = await browser.newPage({ viewport });
  const vars = Object.entries(DARK_MODERN).map(([k, v]) => `${k}: ${v};`).join(' ');
  await page.setContent(`<!DOCTYPE html><html><head><style>${css}</style></head><body data-mode="${mode}" class="vscode-dark" style="${vars}"><div id="app"></div></body></html>`);
  await page.addScriptTag({
    content: 'window.posted = []; window.saved = []; window.acquireVsCodeApi = () => ({ postMessage: (m) => window.posted.push(m), getState: () => ({ ui: { smoothing: 0 } }), setState: (s) => window.saved.push(s) });',
  });
  await page.addScriptTag({ content: bundle });
  await page.waitForFunction(() => (window as unknown as { posted: { type: string }[] }).posted.some((m) => m.type === 'ready'));
  return page;
}

const send = (page: Page, msg: ToWebview) => page.evaluate((m) => window.postMessage(m, '*'), msg);
const posted = (page: Page) => page.evaluate(() => (window as unknown as { posted: FromWebview[] }).posted);
const metrics = (page: Page) => page.locator('section.metric').evaluateAll((s) => s.map((e) => (e as HTMLElement).dataset.metric));

let page: Page;

before(async () => {
  bundle = (await build({ entryPoints: [path.join(REPO_ROOT, 'src/webview/main.ts')], bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'silent' })).outputFiles[0]!.text;
  css = readFileSync(path.join(REPO_ROOT, 'media/metrics.css'), 'utf8');
  browser = await chromium.launch({ executablePath: findToolchain().chromium, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  page = await openPage('panel', { width: 1000, height: 900 });
  await send(page, snapshotOf('panel'));
  await page.waitForFunction(() => document.body.dataset.ready === 'true');
  await page.waitForFunction(() => document.querySelectorAll('section.metric').length >= 6 && document.querySelectorAll('section.metric:not([data-x-max])').length === 0);
});

after(async () => {
  await browser?.close();
});

test('one x range for every chart: the eval-only charts span 0–40000 as the training charts do, and the markers line up; prompts is no chart', async () => {
  assert.deepEqual(await metrics(page), ['loss', 'acc', 'lr', 'streak', 'acceptance_length', 'accept_rate']);
  assert.equal(await page.locator('.legend .eval-series', { hasText: 'prompts' }).count(), 0);
  const ranges = await page.locator('section.metric').evaluateAll((s) => s.map((e) => [(e as HTMLElement).dataset.xMin, (e as HTMLElement).dataset.xMax]));
  assert.deepEqual(ranges, ranges.map(() => ['0', '40000']));
  // Each checkpoint's marker sits at the same place in every chart (relative to its canvas; the grid's columns align).
  const markers = await page.locator('section.metric').evaluateAll((sections) =>
    sections.map((s) => {
      const c = s.querySelector('canvas')!.getBoundingClientRect();
      return Array.from(s.querySelectorAll<HTMLElement>('.ckpt-marker')).map((b) => Math.round(b.getBoundingClientRect().left - c.left));
    }),
  );
  assert.equal(markers[0].length, 4);
  for (const m of markers) assert.deepEqual(m, markers[0]);
  // The tooltip still says how the eval was measured.
  assert.match((await page.locator('section.metric[data-metric="acceptance_length"] button.eval-point').last().getAttribute('aria-label')) ?? '', /prompts 200/);
});

/** The canvas pixel at an offset from the centre of a chart's n-th eval point, and that point's button box. */
async function pixelNearPoint(metric: string, n: number, dx: number, dy: number): Promise<number[]> {
  return page.evaluate(({ metric, n, dx, dy }) => {
    const s = document.querySelector(`section.metric[data-metric="${metric}"]`)!;
    const canvas = s.querySelector('canvas')!;
    const c = canvas.getBoundingClientRect();
    const b = s.querySelectorAll('button.eval-point')[n]!.getBoundingClientRect();
    const k = canvas.width / c.width;
    const x = Math.round((b.left + b.width / 2 + dx - c.left) * k);
    const y = Math.round((b.top + b.height / 2 + dy - c.top) * k);
    return Array.from(canvas.getContext('2d')!.getImageData(x, y, 1, 1).data);
  }, { metric, n, dx, dy });
}

const rgbOf = (css: string): number[] => (css.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number);
const near = (a: number[], b: number[], tol = 16): boolean => b.every((v, i) => Math.abs(v - a[i]!) <= tol);

test('an eval point at the axis\' end is drawn whole (not cut in half), and the results are joined by a line', async () => {
  const colour = rgbOf(await page.locator('.legend .eval-series .eval-swatch').first().evaluate((e) => getComputedStyle(e).backgroundColor));
  // The last checkpoint's point sits on the right edge of the plot: its right tip is painted too.
  const right = await pixelNearPoint('acceptance_length', 3, 3, 0);
  assert.ok(right[3]! > 150 && near(right, colour), `right of the last point's centre: ${right} (run colour ${colour})`);
  // Between two points the line runs (dashed: some pixel near the middle of the segment is in the run's colour).
  const mid = await page.evaluate(() => {
    const s = document.querySelector('section.metric[data-metric="acceptance_length"]')!;
    const canvas = s.querySelector('canvas')!;
    const c = canvas.getBoundingClientRect();
    const [a, b] = Array.from(s.querySelectorAll('button.eval-point')).map((e) => e.getBoundingClientRect());
    const k = canvas.width / c.width;
    const ctx = canvas.getContext('2d')!;
    const out: number[][] = [];
    for (let t = 0.3; t <= 0.7; t += 0.02) {
      const x = (a!.left + a!.width / 2) * (1 - t) + (b!.left + b!.width / 2) * t;
      const y = (a!.top + a!.height / 2) * (1 - t) + (b!.top + b!.height / 2) * t;
      // The most opaque pixel of a 5×5 block: the anti-aliased line need not cross the sampled pixel itself.
      const block = ctx.getImageData(Math.round((x - c.left) * k) - 2, Math.round((y - c.top) * k) - 2, 5, 5).data;
      let best = 0;
      for (let i = 4; i < block.length; i += 4) if (block[i + 3]! > block[best + 3]!) best = i;
      out.push(Array.from(block.slice(best, best + 4)));
    }
    return out;
  });
  assert.ok(mid.some((p) => p[3]! > 150 && near(p, colour, 40)), `the line between the first two points: ${JSON.stringify(mid.slice(0, 4))}…`);
});

/** Every chart's box, its canvas and its eval point buttons ([left, top, width, height]), in page coordinates. */
async function layout(): Promise<{ metric: string; box: number[]; canvas: number[]; points: number[][] }[]> {
  // No named functions inside evaluate: the test's transpiler would wrap them in a helper the page does not have.
  const raw = await page.evaluate(() =>
    Array.from(document.querySelectorAll('section.metric')).map((s) => ({
      metric: (s as HTMLElement).dataset.metric ?? '',
      boxes: [s, s.querySelector('canvas')!, ...Array.from(s.querySelectorAll('button.eval-point'))].map((e) => {
        const b = e.getBoundingClientRect();
        return [b.left, b.top, b.width, b.height].map(Math.round);
      }),
    })),
  );
  return raw.map(({ metric, boxes }) => ({ metric, box: boxes[0]!, canvas: boxes[1]!, points: boxes.slice(2) }));
}

test('hovering fills the readouts and a plateau hint appears, and nothing moves: the click lands on the eval point', async () => {
  const before = await layout();
  const loss = await page.locator('section.metric[data-metric="loss"] canvas').boundingBox();
  assert.ok(loss);
  for (const f of [0.2, 0.5, 0.8]) {
    await page.mouse.move(loss.x + loss.width * f, loss.y + loss.height / 2);
    // Answer the hover as the extension does: every run's values at that step, with long differences.
    const seq = await page.evaluate(() => Math.max(...(window as unknown as { posted: FromWebview[] }).posted.map((m) => (m.type === 'hover' ? m.seq : 0))));
    const rows = ['loss', 'acc', 'lr', 'streak'].flatMap((metric) => [
      { runKey: PRIMARY, metric, step: 20_000, value: 1.23456, smoothed: 1.2345, referenceValue: 1.3 },
      ...(metric === 'loss' ? [{ runKey: 'finished-run', metric, step: 20_000, value: 1.45678, smoothed: 1.4567 }] : []),
    ]);
    await send(page, { type: 'values', seq, x: 20_000, rows });
    await page.waitForFunction(() => document.querySelectorAll('section.metric[data-metric="loss"] .readout-row').length === 2);
    assert.deepEqual(await layout(), before, `hovering at ${f} of the width moved something`);
  }
  // A plateau hint arrives with the next update: still nothing moves.
  const header = runOf(PRIMARY, 'primary', 0, [lossFlat]);
  const { series: _series, checkpoints: _c, evals: _e, ...rest } = header;
  await send(page, { type: 'update', runs: [{ ...rest, series: [] }] });
  await page.locator('section.metric[data-metric="loss"] .metric-hint', { hasText: 'flat since step 31000' }).waitFor();
  assert.deepEqual(await layout(), before, 'a plateau hint appearing moved something');
  // Leave the charts: the readouts empty again, and still nothing moves.
  await page.mouse.move(2, 2);
  await page.waitForFunction(() => document.querySelectorAll('.readout-row').length === 0);
  assert.deepEqual(await layout(), before, 'leaving the chart moved something');
  // So a click where the point was drawn before the hover lands on it.
  const point = before.find((c) => c.metric === 'acceptance_length')!.points[1]!;
  const n = (await posted(page)).filter((m) => m.type === 'showEvalTable').length;
  await page.mouse.click(point[0]! + point[2]! / 2, point[1]! + point[3]! / 2);
  assert.equal((await posted(page)).filter((m) => m.type === 'showEvalTable').length, n + 1, 'the click opened the eval table');
});

test('the eval tooltip of a point at the right edge is whole inside the window', async () => {
  const button = page.locator('section.metric[data-metric="accept_rate"] button.eval-point').last();
  await button.hover();
  const tip = page.locator('section.metric[data-metric="accept_rate"] .eval-tip');
  await tip.waitFor({ state: 'visible' });
  const b = (await tip.boundingBox())!;
  const vw = await page.evaluate(() => document.documentElement.clientWidth);
  const pointBox = (await button.boundingBox())!;
  assert.ok(pointBox.x + pointBox.width > vw - 120, `the point is near the window's right edge (${pointBox.x} of ${vw})`);
  assert.ok(b.x >= 0 && b.x + b.width <= vw && b.y >= 0, `tooltip ${JSON.stringify(b)} inside 0…${vw}`);
  // And all of its text is inside its box (long lines wrap, none spills out).
  const spill = await tip.evaluate((e) => e.scrollWidth - e.clientWidth);
  assert.ok(spill <= 0, `text wider than the tooltip by ${spill} px`);
  assert.match(await tip.innerText(), /accept_rate = [\d.]+\nprompts = 200$/);
  await page.mouse.move(2, 2);
});

test('the compared run\'s colour on Dark Modern is at least 3:1 against the background (its charts.orange is #EA5C0055)', async () => {
  const bg = parseColor(await page.evaluate(() => getComputedStyle(document.body).backgroundColor))!;
  const swatches = await page.locator('.legend .legend-item.run .swatch').evaluateAll((s) => s.map((e) => getComputedStyle(e).backgroundColor));
  assert.equal(swatches.length, 2);
  for (const c of swatches) {
    const ratio = contrastRatio(parseColor(c)!, bg);
    assert.ok(ratio >= 3, `${c} on the background: ${ratio.toFixed(2)}:1`);
    assert.doesNotMatch(c, /rgba/, 'opaque: not the theme colour at a third of its strength');
  }
});

test('the plateau direction is flipped per chart: the switch says so, the view carries it, the state keeps it', async () => {
  const sw = page.locator('section.metric[data-metric="acc"] button.metric-direction');
  assert.equal(await sw.innerText(), '↑');
  assert.match((await sw.getAttribute('aria-label')) ?? '', /^Higher is better for acc/);
  await sw.click();
  await page.waitForFunction(() => (window as unknown as { posted: FromWebview[] }).posted.some((m) => m.type === 'view' && m.directions?.acc === 'lower'));
  assert.equal(await sw.innerText(), '↓');
  const saved = await page.evaluate(() => (window as unknown as { saved: { ui?: { directions?: Record<string, string> } }[] }).saved.at(-1));
  assert.deepEqual(saved?.ui?.directions, { acc: 'lower' });
  assert.equal(await page.locator('section.metric[data-metric="lr"] button.metric-direction').innerText(), '–', 'lr: no direction of its own');
});

test('a short inline view shows every chart whole (the fifth too, on a second row), and a plateau hint takes no line of its own', async () => {
  const inline = await openPage('inline', { width: 700, height: 300 });
  await send(inline, snapshotOf('inline', [lossFlat]));
  await inline.waitForFunction(() => document.querySelectorAll('section.metric').length >= 6 && document.querySelectorAll('section.metric:not([data-x-max])').length === 0);
  const boxes = await inline.locator('section.metric').evaluateAll((s) =>
    s.map((e) => {
      const b = e.getBoundingClientRect();
      const c = e.querySelector('canvas')!.getBoundingClientRect();
      const head = e.querySelector('.metric-head')!;
      return { metric: (e as HTMLElement).dataset.metric, bottom: b.bottom, right: b.right, canvas: c.height, head: head.getBoundingClientRect().height, hintInHead: head.contains(e.querySelector('.metric-hint')) };
    }),
  );
  for (const b of boxes) {
    assert.ok(b.bottom <= 300 && b.right <= 700, `${b.metric} inside the view: ${JSON.stringify(b)}`);
    assert.ok(b.canvas >= 48, `${b.metric}'s chart keeps its height: ${b.canvas}`);
  }
  assert.ok(new Set(boxes.map((b) => b.bottom)).size === 2, `two rows of charts: ${JSON.stringify(boxes)}`);
  // The hint shares the title's line: a chart with a hint is as tall as one without, its canvas too.
  const loss = boxes.find((b) => b.metric === 'loss')!;
  const acc = boxes.find((b) => b.metric === 'acc')!;
  assert.ok(loss.hintInHead, 'the hint is on the title line');
  assert.equal(await inline.locator('section.metric[data-metric="loss"] .metric-hint').innerText(), '↓ flat since step 31000');
  assert.equal(loss.head, acc.head, 'the title line is as tall with a hint as without');
  // (loss's canvas gives a line to the readout of its second run, the compared one: a line per run, reserved.)
  await inline.close();
});
