/**
 * The metrics panel's controls in a real VS Code (code-server + Chromium) over a real OpenSSH server: smoothing
 * (the smoothed curve over the raw one drawn faint; another weight draws another curve), log y, x as step, wall
 * time or relative time, zoom to a range (the extension sends that range decimated anew, finer) and reset, and
 * hovering (exact values of every run's series at the cursor, with the difference to the reference run and to a
 * reference line). Everything is checked on the DOM, the canvases' pixels, and the messages the webview receives.
 *
 * Two runs of our own in the docker container `trainer`: `controls-run` (3,000 points every 10 steps, wall time
 * 0.1 s per step with a 3-hour pause after step 15,000, checkpoints at 5k/10k/20k/25k) and `controls-ref`
 * (1,500 points every 20 steps, starting a day later).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { emaSmooth } from '../../src/core/metrics';
import type { SeriesChunk, ToWebview } from '../../src/shared/metricsProtocol';
import { formatDiff, formatValue } from '../../src/webview/store';
import { startTestHost, type TestHost } from '../harness/testHost';
import { addRunFromPanel, hasMetricsFrame, metricsFrame } from './metricsView';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { act, settled } from './ui';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, openSuite } from './suite';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;

interface LogRow {
  step: number;
  loss: number;
  acc: number;
  time: number;
}

const T0 = 1_700_000_000; // seconds, as loggers write `time`
const PAUSE_AFTER = 15_000;
const PAUSE_S = 3 * 3600;

/** A deterministic noisy curve: spikes and wiggles that smoothing visibly flattens. */
function rowsOf(count: number, every: number, start: number, offset: number): LogRow[] {
  const rows: LogRow[] = [];
  for (let i = 0; i < count; i++) {
    const step = (i + 1) * every;
    const noise = Math.sin(i * 12.9898) * 0.25 + (i % 37 === 0 ? 0.6 : 0);
    rows.push({
      step,
      loss: Number((offset + 1.5 * Math.exp(-step / 8000) + noise).toFixed(5)),
      acc: Number((0.2 + 0.6 * (1 - Math.exp(-step / 10000)) + Math.cos(i * 7.77) * 0.03).toFixed(5)),
      time: Number((start + step * 0.1 + (step > PAUSE_AFTER ? PAUSE_S : 0)).toFixed(2)),
    });
  }
  return rows;
}

const primaryRows = rowsOf(3000, 10, T0, 2);
const refRows = rowsOf(1500, 20, T0 + 86_400, 2.2);
const CHECKPOINTS = [5000, 10_000, 20_000, 25_000];

function writeRun(dir: string, rows: LogRow[], checkpoints: number[]): void {
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'logs', 'train.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  for (const step of checkpoints) {
    fs.mkdirSync(path.join(dir, 'checkpoints', `step_${step}`), { recursive: true });
    fs.writeFileSync(path.join(dir, 'checkpoints', `step_${step}`, 'checkpoint.pt'), 'weights');
  }
}

before(async () => {
  host = await startTestHost();
  writeRun(path.join(host.containers.trainer.workspace, 'controls-run'), primaryRows, CHECKPOINTS);
  writeRun(path.join(host.containers.trainer.workspace, 'controls-ref'), refRows, [10_000]);
  ({ workspace, session } = await openSuite(host, 'controls', { 'remoteRuns.metrics.pollIntervalSeconds': 1 }));
});

after(async () => {
  await closeSuite(session, host, workspace);
});

// ---- The webview ---------------------------------------------------------------------------------------------

let frame: Frame;

/** The panel's document (the inner frame holding our page), once it has drawn a snapshot. */
const panelFrame = (timeoutMs = 60_000): Promise<Frame> => metricsFrame(session, 'panel', timeoutMs);

type Snapshot = Extract<ToWebview, { type: 'snapshot' }>;

/**
 * Record every snapshot the extension sends from now on, in the page itself (our listener runs after the
 * webview's own, so when a snapshot is recorded it has been drawn).
 */
async function recordSnapshots(): Promise<void> {
  await frame.evaluate(() => {
    const w = window as unknown as { __rrSnapshots?: unknown[] };
    if (w.__rrSnapshots) return;
    w.__rrSnapshots = [];
    window.addEventListener('message', (e: MessageEvent) => {
      if (e.data && typeof e.data === 'object' && e.data.type === 'snapshot') w.__rrSnapshots!.push(e.data);
    });
  });
}

async function snapshotCount(): Promise<number> {
  return frame.evaluate(() => (window as unknown as { __rrSnapshots: unknown[] }).__rrSnapshots.length);
}

/** The first snapshot after the first `from` recorded ones that satisfies `ok` (judged here: the page's CSP forbids eval). */
async function nextSnapshot(from: number, ok: (s: Snapshot) => boolean, timeoutMs = 45_000): Promise<Snapshot> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const fresh = (await frame.evaluate((n) => (window as unknown as { __rrSnapshots: unknown[] }).__rrSnapshots.slice(n), from)) as Snapshot[];
    const found = fresh.find(ok);
    if (found) return found;
    if (Date.now() > deadline) throw new Error(`no such snapshot within ${timeoutMs} ms (${fresh.length} others arrived)`);
    await session.page.waitForTimeout(200);
  }
}

/** Whether the snapshot's loss chunk of `run` was smoothed with `weight` (the webview owns smoothing: snapshots do not echo it). */
function smoothedWith(s: Snapshot, run: string, rows: LogRow[], weight: number): boolean {
  const c = s.runs.find((x) => x.label === run)?.series.find((x) => x.key === 'loss');
  if (!c || c.x.length === 0) return false;
  if (weight === 0) return c.s.every((v, k) => v === c.y[k]);
  const ema = emaSmooth(rows.map((r) => r.loss), weight);
  return c.x.every((x, k) => {
    const i = rows.findIndex((r) => r.step === x);
    return i >= 0 && Math.abs(c.s[k] - ema[i]) <= 1e-6 * Math.abs(ema[i]);
  });
}

/** Whether the snapshot's loss chunk of `run` covers the whole run (from its first logged step to its last). */
function coversWholeRun(s: Snapshot, run: string, rows: LogRow[]): boolean {
  const c = s.runs.find((x) => x.label === run)?.series.find((x) => x.key === 'loss');
  return c !== undefined && c.x[0] === rows[0].step && c.x.at(-1) === rows.at(-1)!.step;
}

function chunkOf(s: Snapshot, run: string, key: string): SeriesChunk {
  const r = s.runs.find((x) => x.label === run);
  assert.ok(r, `run ${run} in the snapshot (${s.runs.map((x) => x.label).join(', ')})`);
  const c = r.series.find((x) => x.key === key);
  assert.ok(c, `series ${key} of ${run}`);
  return c;
}

const chart = (metric: string) => frame.locator(`section.metric[data-metric="${metric}"]`);

async function axes(metric: string): Promise<{ xMin: number; xMax: number; yScale: string }> {
  const d = await chart(metric).evaluate((e) => ({ ...(e as HTMLElement).dataset }));
  return { xMin: Number(d.xMin), xMax: Number(d.xMax), yScale: d.yScale ?? '' };
}

/** The run's colour as the legend shows it, `[r, g, b]`. */
async function runRgb(label: string): Promise<[number, number, number]> {
  const css = await frame
    .locator('.legend .legend-item.run')
    .filter({ hasText: label })
    .locator('.swatch')
    .evaluate((e) => getComputedStyle(e).backgroundColor);
  const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
  assert.ok(m, `a colour: ${css}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}

interface Ink {
  /** Pixels in the run's colour drawn (nearly) opaque: the curve in front. */
  strong: number;
  /** Pixels in the run's colour drawn faint (what a line at ~22% alpha leaves, also where two such overlap). */
  faint: number;
  /** A fingerprint of where the strong pixels are. */
  strongHash: number;
  /** A fingerprint of the whole canvas. */
  allHash: number;
}

/** Classify a chart canvas's pixels by the run's colour and their opacity. */
async function ink(metric: string, rgb: [number, number, number]): Promise<Ink> {
  return chart(metric)
    .locator('canvas')
    .evaluate((c, rgb) => {
      const canvas = c as HTMLCanvasElement;
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let strong = 0;
      let faint = 0;
      let strongHash = 0;
      let allHash = 0;
      for (let i = 0; i < data.length; i += 4) {
        allHash = (Math.imul(allHash, 31) + data[i] + 7 * data[i + 1] + 13 * data[i + 2] + 17 * data[i + 3]) | 0;
        const a = data[i + 3];
        if (a === 0) continue;
        const near = Math.abs(data[i] - rgb[0]) + Math.abs(data[i + 1] - rgb[1]) + Math.abs(data[i + 2] - rgb[2]) <= 24;
        if (!near) continue;
        if (a >= 230) {
          strong++;
          strongHash = (Math.imul(strongHash, 31) + i) | 0;
        } else if (a >= 20 && a <= 170) faint++;
      }
      return { strong, faint, strongHash, allHash };
    }, rgb);
}

/** Set the smoothing slider as a user's drag ends: input events while moving, change on release. */
async function setSmoothing(value: number): Promise<void> {
  await frame.locator('input[aria-label="Smoothing"]').evaluate((e, v) => {
    const input = e as HTMLInputElement;
    input.value = String(v);
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.dispatchEvent(new Event('change', { bubbles: true }));
  }, value);
}

/** Page coordinates of a point at fraction `fx` across and `fy` down a chart's canvas. */
async function canvasPoint(metric: string, fx: number, fy = 0.5): Promise<{ x: number; y: number }> {
  const box = await chart(metric).locator('canvas').boundingBox();
  assert.ok(box, `the ${metric} canvas is on screen`);
  return { x: box.x + box.width * fx, y: box.y + box.height * fy };
}

/** Left edge (CSS px within the chart) of each checkpoint marker button, by step. */
async function markerLefts(metric: string): Promise<Map<number, number>> {
  const list = await chart(metric)
    .locator('button.ckpt-marker')
    .evaluateAll((els) => els.map((e) => [Number((e as HTMLElement).dataset.step), parseFloat((e as HTMLElement).style.left)] as [number, number]));
  return new Map(list);
}

function rowAt(rows: LogRow[], step: number): LogRow {
  const r = rows.find((x) => x.step === step);
  assert.ok(r, `step ${step} is a logged step`);
  return r;
}

function nearest(rows: LogRow[], step: number): LogRow {
  return rows.reduce((best, r) => (Math.abs(r.step - step) <= Math.abs(best.step - step) ? r : best));
}

// ---- The tests -----------------------------------------------------------------------------------------------

test('open the run: two charts, each with the smoothed curve over the raw curve drawn faint', async () => {
  await withArtifactsOnFailure(session, 'controls-open', async () => {
    // On a loaded machine the workbench takes its time to show the extension's view container.
    await session.page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').waitFor({ state: 'visible', timeout: 180_000 });
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'testbox');
    await expandTreeRow(session, 'docker:trainer');
    await treeRow(session, 'controls-ref').waitFor({ state: 'visible', timeout: 30_000 });
    await treeContextMenu(session, 'controls-run', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    frame = await panelFrame();
    await recordSnapshots();
    assert.deepEqual(await frame.locator('section.metric').evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.metric)), ['loss', 'acc']);
    assert.equal(await frame.locator('input[aria-label="Smoothing"]').inputValue(), '0.6');
    const on = await ink('loss', await runRgb('controls-run'));
    assert.ok(on.faint > 1000, `a faint curve: ${JSON.stringify(on)}`);
    assert.ok(on.strong > 200, `an opaque curve: ${JSON.stringify(on)}`);
  });
});

test('smoothing: off draws the raw curve alone, opaque; strong smoothing one thin opaque curve over the raw one drawn faint', async () => {
  await withArtifactsOnFailure(session, 'controls-smoothing', async () => {
    const rgb = await runRgb('controls-run');
    const at06 = await ink('loss', rgb);

    let seen = await snapshotCount();
    await setSmoothing(0);
    const off = await nextSnapshot(seen, (x) => smoothedWith(x, 'controls-run', primaryRows, 0));
    const rawChunk = chunkOf(off, 'controls-run', 'loss');
    assert.deepEqual(rawChunk.s, rawChunk.y, 'smoothing 0: the "smoothed" values are the raw ones');
    const raw = await ink('loss', rgb);

    seen = await snapshotCount();
    await setSmoothing(0.95);
    const at95 = await nextSnapshot(seen, (x) => smoothedWith(x, 'controls-run', primaryRows, 0.95));
    const c = chunkOf(at95, 'controls-run', 'loss');
    // The smoothed values are the EMA of the whole series at the points sent (7 significant digits on the wire).
    const ys = primaryRows.map((r) => r.loss);
    const ema = emaSmooth(ys, 0.95);
    for (let k = 0; k < c.x.length; k += 37) {
      const i = primaryRows.findIndex((r) => r.step === c.x[k]);
      assert.ok(i >= 0, `sent step ${c.x[k]} is a logged step`);
      assert.equal(c.y[k], ys[i]);
      assert.ok(Math.abs(c.s[k] - ema[i]) <= 1e-6 * Math.abs(ema[i]), `smoothed at step ${c.x[k]}: ${c.s[k]} vs ${ema[i]}`);
    }
    const smooth = await ink('loss', rgb);
    // Off, the noisy raw curve is drawn opaque (a wide band of strong ink, faint only at its anti-aliased edges).
    // Smoothed hard, the opaque ink is one thin line and the band is still there, faint.
    assert.ok(smooth.strong < raw.strong / 2, `the opaque curve is thin when smoothed: ${JSON.stringify({ smooth, raw })}`);
    assert.ok(smooth.faint > raw.faint * 1.5, `the raw curve is behind it, faint: ${JSON.stringify({ smooth, raw })}`);
    assert.notEqual(smooth.strongHash, at06.strongHash, 'weight 0.95 draws another smoothed curve than 0.6');
    assert.equal(await frame.locator('.smoothing-value').innerText(), '0.95');
  });
});

test('log y: every chart switches to a logarithmic axis and redraws; off restores the linear drawing', async () => {
  await withArtifactsOnFailure(session, 'controls-logy', async () => {
    const rgb = await runRgb('controls-run');
    assert.equal((await axes('loss')).yScale, 'linear');
    const linear = await ink('loss', rgb);
    const logY = frame.locator('label.control', { hasText: 'Log y' }).locator('input[type=checkbox]');
    await logY.check();
    await frame.waitForFunction(() => Array.from(document.querySelectorAll<HTMLElement>('section.metric')).every((e) => e.dataset.yScale === 'logarithmic'), undefined, { timeout: 15_000 });
    const log = await ink('loss', rgb);
    assert.notEqual(log.allHash, linear.allHash, 'the log axis draws differently');
    assert.ok(log.strong > 100 && log.faint > 500, `both curves still drawn: ${JSON.stringify(log)}`);
    await logY.uncheck();
    await frame.waitForFunction(() => Array.from(document.querySelectorAll<HTMLElement>('section.metric')).every((e) => e.dataset.yScale === 'linear'), undefined, { timeout: 15_000 });
    assert.equal((await ink('loss', rgb)).allHash, linear.allHash, 'back to the same linear drawing');
  });
});

test('x axis: step, wall time (the 3-hour pause squeezes the early checkpoints left) and relative time', async () => {
  await withArtifactsOnFailure(session, 'controls-xmode', async () => {
    const xSelect = frame.locator('select[aria-label="X axis"]');
    const first = primaryRows[0];
    const last = primaryRows[primaryRows.length - 1];

    const stepAxes = await axes('loss');
    assert.ok(stepAxes.xMin <= first.step && stepAxes.xMax >= last.step && stepAxes.xMax < last.step * 1.2, `step axis ${JSON.stringify(stepAxes)}`);
    const stepMarkers = await markerLefts('loss');
    assert.deepEqual([...stepMarkers.keys()].sort((a, b) => a - b), CHECKPOINTS);

    await xSelect.selectOption('wall');
    await frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMin) > 1e12, undefined, { timeout: 15_000 });
    const wall = await axes('loss');
    const span = (last.time - first.time) * 1000;
    assert.ok(wall.xMin <= first.time * 1000 && wall.xMin > first.time * 1000 - 0.2 * span, `wall axis starts at the first time: ${JSON.stringify(wall)}`);
    assert.ok(wall.xMax >= last.time * 1000 && wall.xMax < last.time * 1000 + 0.2 * span, `wall axis ends at the last time: ${JSON.stringify(wall)}`);
    const wallMarkers = await markerLefts('loss');
    // Before the pause the run covered 1,500 s of a 4.2-hour axis: step 10,000 sits far left of where it sat on
    // the step axis (a third of the way); step 20,000 (after the pause) moves right.
    assert.ok(wallMarkers.get(10_000)! < stepMarkers.get(10_000)! - 50, `marker 10k: wall ${wallMarkers.get(10_000)} vs step ${stepMarkers.get(10_000)}`);
    assert.ok(wallMarkers.get(20_000)! > stepMarkers.get(20_000)! + 20, `marker 20k: wall ${wallMarkers.get(20_000)} vs step ${stepMarkers.get(20_000)}`);
    assert.equal(await frame.locator('.status').isVisible(), false, 'no "no time field" warning: the log has times');

    await xSelect.selectOption('relative');
    await frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMin) < 1e9, undefined, { timeout: 15_000 });
    const rel = await axes('loss');
    assert.ok(rel.xMin <= 0 && rel.xMin > -0.2 * span, `relative axis starts at 0: ${JSON.stringify(rel)}`);
    assert.ok(rel.xMax >= span && rel.xMax < 1.2 * span, `relative axis spans the run: ${JSON.stringify(rel)}`);
    // The same squeeze as on the wall axis (the axis' rounded ends may differ, so not to the pixel).
    const relMarkers = await markerLefts('loss');
    assert.ok(relMarkers.get(10_000)! < stepMarkers.get(10_000)! - 50, `marker 10k: relative ${relMarkers.get(10_000)} vs step ${stepMarkers.get(10_000)}`);

    await xSelect.selectOption('step');
    await frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMax) < 1e6, undefined, { timeout: 15_000 });
    assert.deepEqual(await markerLefts('loss'), stepMarkers);
  });
});

test('zoom: dragging across a chart asks for that range, which arrives decimated anew (every point in it); reset', async () => {
  await withArtifactsOnFailure(session, 'controls-zoom', async () => {
    const full = (await frame.evaluate(() => (window as unknown as { __rrSnapshots: unknown[] }).__rrSnapshots.at(-1))) as Snapshot;
    assert.ok(coversWholeRun(full, 'controls-run', primaryRows), 'not zoomed yet: the whole run');
    const fullLoss = chunkOf(full, 'controls-run', 'loss');
    assert.ok(fullLoss.x.length < primaryRows.length / 2, `the whole run is decimated: ${fullLoss.x.length} of ${primaryRows.length} points`);
    assert.equal(await frame.locator('button', { hasText: 'Reset zoom' }).isDisabled(), true);

    const seen = await snapshotCount();
    const a = await canvasPoint('loss', 0.63);
    const b = await canvasPoint('loss', 0.72);
    await session.page.mouse.move(a.x, a.y);
    await session.page.mouse.down();
    await session.page.mouse.move((a.x + b.x) / 2, a.y, { steps: 4 });
    await session.page.mouse.move(b.x, b.y, { steps: 4 });
    await session.page.mouse.up();
    const zoomed = await nextSnapshot(seen, (x) => !coversWholeRun(x, 'controls-run', primaryRows));
    // The zoom is the webview's own setting; its charts show exactly that range (the snapshot does not echo it).
    await frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMin) > 0, undefined, { timeout: 15_000 });
    const { xMin, xMax } = await axes('loss');
    assert.ok(xMin > 0 && xMax > xMin && xMax - xMin < 0.2 * primaryRows.at(-1)!.step, `a narrow range: ${xMin}-${xMax}`);

    const inRange = (x: number) => x >= xMin && x <= xMax;
    const logged = primaryRows.filter((r) => inRange(r.step));
    const z = chunkOf(zoomed, 'controls-run', 'loss');
    const zIn = z.x.filter(inRange);
    // The range holds a few hundred points: few enough to be sent exactly, where the whole-run view had a fraction.
    assert.deepEqual(zIn, logged.map((r) => r.step), 'every logged step in the range is sent');
    assert.deepEqual(z.y.filter((_, k) => inRange(z.x[k])), logged.map((r) => r.loss), 'with its exact value');
    assert.ok(fullLoss.x.filter(inRange).length < logged.length / 2, 'the whole-run view had far fewer there');
    assert.ok(z.x.length <= zIn.length + 2, 'and at most one point beyond each end (so lines reach the edges)');

    // Every chart now shows exactly that range, and checkpoint markers outside it are gone.
    for (const metric of ['loss', 'acc']) {
      await frame.waitForFunction((m) => document.querySelector<HTMLElement>(`section.metric[data-metric="${m}"]`)?.dataset.xMin !== undefined, metric);
      assert.deepEqual(await axes(metric).then(({ xMin, xMax }) => ({ xMin, xMax })), { xMin, xMax });
    }
    assert.deepEqual([...(await markerLefts('loss')).keys()], CHECKPOINTS.filter(inRange));

    const reset = frame.locator('button', { hasText: 'Reset zoom' });
    assert.equal(await reset.isDisabled(), false);
    const seen2 = await snapshotCount();
    await act(session.page, {
      what: 'the whole run sent again after Reset zoom',
      action: async () => {
        if (!(await reset.isDisabled())) await reset.click();
      },
      effect: async () => ((await frame.evaluate((n) => (window as unknown as { __rrSnapshots: unknown[] }).__rrSnapshots.slice(n), seen2)) as Snapshot[]).some((x) => coversWholeRun(x, 'controls-run', primaryRows)),
    });
    const back = await nextSnapshot(seen2, (x) => coversWholeRun(x, 'controls-run', primaryRows));
    // The whole run again, decimated (how many points depends on the plot's width, which the view reports anew).
    const whole = chunkOf(back, 'controls-run', 'loss');
    assert.deepEqual([whole.x[0], whole.x.at(-1)], [primaryRows[0].step, primaryRows.at(-1)!.step]);
    assert.ok(whole.x.length < primaryRows.length / 2, `decimated again: ${whole.x.length} points`);
    await frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMax) >= 29_990, undefined, { timeout: 15_000 });
    assert.equal(await reset.isDisabled(), true);
    assert.deepEqual([...(await markerLefts('loss')).keys()].sort((p, q) => p - q), CHECKPOINTS);
  });
});

test('hover: exact values of every run at the cursor, the difference to the reference run and to a reference line', async () => {
  await withArtifactsOnFailure(session, 'controls-hover', async () => {
    // A second run (added from the tree's listing), made the reference run, and a reference line on loss.
    await addRunFromPanel(session, frame, 'controls-ref');
    const refItem = frame.locator('.legend .legend-item.run').filter({ hasText: 'controls-ref' });
    await refItem.waitFor({ timeout: 30_000 });
    const isReference = frame.locator('.legend .legend-item.run.reference', { hasText: 'controls-ref' });
    await act(session.page, {
      what: 'controls-ref made the reference run',
      action: async () => {
        if ((await isReference.count()) === 0) await refItem.locator('button', { hasText: '☆' }).click();
      },
      effect: async () => (await isReference.count()) > 0,
    });
    await frame.locator('.ref-form select').selectOption('loss');
    await frame.locator('.ref-form input[name=value]').fill('2.5');
    await frame.locator('.ref-form input[name=label]').fill('target');
    await frame.locator('.ref-form button[type=submit]').click();
    await frame.locator('.legend .reference-line', { hasText: 'target: loss = 2.5' }).waitFor({ timeout: 15_000 });

    const p = await canvasPoint('loss', 0.6);
    await session.page.mouse.move(p.x - 5, p.y);
    await session.page.mouse.move(p.x, p.y, { steps: 2 });
    const readout = (metric: string) => chart(metric).locator('.metric-readout .readout-row');
    // Both readouts read together once they agree on one cursor: the mouse's steps each ask for values, and a reply
    // for an earlier step can fill one chart's readout while the other's is read (seen: loss at one step, acc at the
    // last).
    const rows = await settled(
      session.page,
      async () => ({ loss: await readout('loss').allInnerTexts(), acc: await readout('acc').allInnerTexts() }),
      (r) => r.loss.length === 2 && r.acc.length === 2 && r.loss.every((t, i) => t.split(':')[0] === r.acc[i]?.split(':')[0]),
      'the loss and acc readouts at the cursor',
      30_000,
    );

    const smoothing = Number(await frame.locator('input[aria-label="Smoothing"]').inputValue());
    const lossRows = rows.loss;
    const num = String.raw`([−+-]?[\d.]+(?:e[+-]?\d+)?)`;
    // The primary run: its own nearest step, value, smoothed value, Δ to the reference run and to the line.
    assert.ok(smoothing > 0, 'smoothing is on (set by the smoothing test)');
    const mine = new RegExp(`^controls-run @ ([\\d,]+): ${num} \\(smoothed ${num}\\) Δ ref run ${num} Δ target ${num}$`).exec(lossRows.find((t) => t.startsWith('controls-run')) ?? '');
    assert.ok(mine, `primary row: ${lossRows.join(' | ')}`);
    const step = Number(mine[1].replace(/,/g, ''));
    const at = rowAt(primaryRows, step);
    const i = primaryRows.indexOf(at);
    const ref = nearest(refRows, step);
    assert.equal(mine[2], formatValue(at.loss));
    assert.equal(mine[3], formatValue(emaSmooth(primaryRows.map((r) => r.loss), smoothing)[i]));
    assert.equal(mine[4], formatDiff(at.loss - ref.loss));
    assert.equal(mine[5], formatDiff(at.loss - 2.5));
    // The reference run at the same place: its own nearest step; no difference to itself.
    const theirs = new RegExp(`^controls-ref @ ([\\d,]+): ${num} \\(smoothed ${num}\\) Δ target ${num}$`).exec(lossRows.find((t) => t.startsWith('controls-ref')) ?? '');
    assert.ok(theirs, `reference run row: ${lossRows.join(' | ')}`);
    const refStep = Number(theirs[1].replace(/,/g, ''));
    assert.ok(Math.abs(refStep - step) <= 20, `both runs read at the cursor: ${step} and ${refStep}`);
    const refAt = rowAt(refRows, refStep);
    assert.equal(theirs[2], formatValue(refAt.loss));
    assert.equal(theirs[4], formatDiff(refAt.loss - 2.5));
    // Every series at that x: acc too, for both runs, at the same steps.
    const accRows = rows.acc;
    assert.ok(accRows.some((t) => t.startsWith(`controls-run @ ${formatValue(step)}: ${formatValue(at.acc)} `)), accRows.join(' | '));
    assert.ok(accRows.some((t) => t.startsWith(`controls-ref @ ${formatValue(refStep)}: ${formatValue(refAt.acc)} `)), accRows.join(' | '));

    // Leaving the chart clears the readout (no checkpoint is highlighted).
    const away = await chart('loss').locator('.metric-head').boundingBox();
    await session.page.mouse.move(away!.x + 2, away!.y + 2);
    await frame.waitForFunction(() => document.querySelectorAll('.metric-readout .readout-row').length === 0, undefined, { timeout: 15_000 });
  });
});
