/**
 * Axis ticks people read at a glance, in a real VS Code (code-server + Chromium) over a real OpenSSH server (issue 17:
 * a zoomed x axis showed only its two ends, learning rates printed as `5.0000e-5`, relative time as `8m 20s, 16m 40s,
 * 33m 20s`). The labels are read from the page, from the off-screen list each chart writes of what it drew on its
 * axes (the canvas shows them only as pixels), with where each was drawn and how wide it is. Issue 33: log y labels
 * whole inside their axis (not `000e-5`); the inline view of a run with six metrics: every chart in sight, x labels
 * apart (not `10k20k30k40k`), titles whole where there is room (not `l.`).
 *
 * The run (docker container `trainer`): 4,000 lines every 10 steps to step 40,000, 0.5 s per step (5.6 hours),
 * loss, acc, lr (linear warmup to 1.5e-4, cosine decay to 1e-5), streak, grad_norm, tokens_per_s.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import { startTestHost, type TestHost } from '../harness/testHost';
import { hasMetricsFrame, metricsFrame } from './metricsView';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, openSuite } from './suite';
import { REPO_ROOT } from './toolchain';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let frame: Frame;

const RUN = 'ticks-run';
/** Screenshots of what these tests drew, kept for a look (not compared). */
const ARTIFACTS = path.join(REPO_ROOT, '.test-tmp', 'e2e', 'artifacts', 'ticks');
const T0 = 1_700_000_000;

before(async () => {
  host = await startTestHost();
  const dir = path.join(host.containers.trainer.workspace, RUN);
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const rows: string[] = [];
  for (let step = 10; step <= 40_000; step += 10) {
    const lr = step < 2000 ? (1.5e-4 * step) / 2000 : 1e-5 + (1.5e-4 - 1e-5) * 0.5 * (1 + Math.cos((Math.PI * (step - 2000)) / 38_000));
    rows.push(JSON.stringify({
      step,
      loss: Number((0.9 + 2.6 * Math.exp(-step / 9000) + Math.sin(step * 0.37) * 0.05).toFixed(5)),
      acc: Number((0.04 + 0.24 * (1 - Math.exp(-step / 12_000))).toFixed(5)),
      lr: Number(lr.toPrecision(4)),
      streak: Number((1 + 2.7 * (1 - Math.exp(-step / 10_000))).toFixed(4)),
      grad_norm: Number((0.6 + 1.8 * Math.exp(-step / 6000)).toFixed(4)),
      tokens_per_s: 51_000 + (step % 700),
      time: T0 + step * 0.5,
    }));
  }
  fs.writeFileSync(path.join(dir, 'logs', 'train.jsonl'), rows.join('\n') + '\n');
  for (const step of [10_000, 20_000, 30_000, 40_000]) {
    fs.mkdirSync(path.join(dir, 'checkpoints', `step_${step}`), { recursive: true });
    fs.writeFileSync(path.join(dir, 'checkpoints', `step_${step}`, 'checkpoint.pt'), 'weights');
  }
  ({ workspace, session } = await openSuite(host, 'ticks', { 'remoteRuns.metrics.pollIntervalSeconds': 1 }));
});

after(async () => {
  await closeSuite(session, host, workspace);
});

const chart = (metric: string) => frame.locator(`section.metric[data-metric="${metric}"]`);
const ticks = (metric: string, axis: 'x' | 'y'): Promise<string[]> => chart(metric).locator(`ul.axis-ticks[data-axis="${axis}"] li`).allInnerTexts();

/** `12k` → 12000, `1.5M` → 1.5e6, `5e-5` → 5e-5, `0.25` → 0.25. */
function parseTick(label: string): number {
  const m = /^(-?[\d.]+(?:e-?\d+)?)([kMBT]?)$/.exec(label);
  assert.ok(m, `a number label: ${label}`);
  return Number(m[1]) * ({ '': 1, k: 1e3, M: 1e6, B: 1e9, T: 1e12 } as Record<string, number>)[m[2]]!;
}

/** `1h 20m` → ms. */
function parseDuration(label: string): number {
  assert.match(label, /^(\d+d)?\s?(\d+h)?\s?(\d+m)?\s?(\d+s)?$/, `a duration label: ${label}`);
  const unit: Record<string, number> = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 };
  return [...label.matchAll(/(\d+)([dhms])/g)].reduce((t, m) => t + Number(m[1]) * unit[m[2]!]!, 0);
}

/** Equal steps of 1, 2 or 5 times a power of ten; returns the step. */
function assertNiceSteps(values: number[], what: string): number {
  assert.ok(values.length >= 3, `${what}: at least three ticks, not only the ends: ${values}`);
  const step = values[1]! - values[0]!;
  for (let i = 1; i < values.length; i++) assert.ok(Math.abs(values[i]! - values[i - 1]! - step) <= step * 1e-6, `${what}: equal steps ${values}`);
  const mantissa = step / 10 ** Math.floor(Math.log10(step) + 1e-9);
  assert.ok([1, 2, 5].some((m) => Math.abs(mantissa - m) < 1e-6), `${what}: a 1-2-5 step, not ${step} (${values})`);
  for (const v of values) assert.ok(Math.abs(v / step - Math.round(v / step)) < 1e-6, `${what}: ${v} is a multiple of ${step}`);
  return step;
}

async function axes(metric: string): Promise<{ xMin: number; xMax: number }> {
  const d = await chart(metric).evaluate((e) => ({ ...(e as HTMLElement).dataset }));
  return { xMin: Number(d.xMin), xMax: Number(d.xMax) };
}

test('the whole run: steps at 1-2-5 steps labelled 10k, learning rates as 5e-5', async () => {
  await withArtifactsOnFailure(session, 'ticks-open', async () => {
    await session.page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').waitFor({ state: 'visible', timeout: 180_000 });
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'testbox');
    await expandTreeRow(session, 'docker:trainer');
    await treeRow(session, RUN).waitFor({ state: 'visible', timeout: 30_000 });
    await treeContextMenu(session, RUN, /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    frame = await metricsFrame(session, 'panel');
    await frame.waitForFunction(() => (document.querySelectorAll('section.metric[data-metric="lr"] ul.axis-ticks[data-axis="y"] li').length ?? 0) >= 3, undefined, { timeout: 60_000 });
    const x = await ticks('loss', 'x');
    assert.ok(x.every((l) => /^(0|\d+(\.\d+)?k)$/.test(l)), `step labels in thousands: ${x}`);
    assertNiceSteps(x.map(parseTick), 'the whole x axis');
    const lr = await ticks('lr', 'y');
    assert.ok(lr.every((l) => !/\.0+e|e[+-]0/.test(l)), `no padded exponents (5.0000e-5): ${lr}`);
    assert.ok(lr.some((l) => /^\d(\.\d)?e-5$/.test(l)), `learning rates like 5e-5: ${lr}`);
    const lrValues = lr.map(parseTick);
    assertNiceSteps(lrValues, 'the lr axis');
    assert.ok(lrValues.every((v) => v >= 0), `a learning rate axis has no negative ticks: ${lr}`);
    const tps = await ticks('tokens_per_s', 'y');
    assert.ok(tps.every((l) => /^\d+(\.\d+)?k$/.test(l)), `tokens per second in k: ${tps}`);
  });
});

test('a zoomed x axis: ticks inside the range at a finer 1-2-5 step, not only its two ends; relative time at clock steps', async () => {
  await withArtifactsOnFailure(session, 'ticks-zoom', async () => {
    const whole = assertNiceSteps((await ticks('loss', 'x')).map(parseTick), 'before the zoom');
    const box = (await chart('loss').locator('canvas').boundingBox())!;
    const y = box.y + box.height / 2;
    for (let attempt = 0; attempt < 3 && !((await axes('loss')).xMin > 5000); attempt++) {
      await session.page.mouse.move(box.x + box.width * 0.2, y);
      await session.page.mouse.down();
      await session.page.mouse.move(box.x + box.width * 0.4, y, { steps: 4 });
      await session.page.mouse.move(box.x + box.width * 0.6, y, { steps: 4 });
      await session.page.mouse.up();
      await frame.waitForFunction(() => Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMin) > 5000, undefined, { timeout: 20_000 }).catch(() => undefined);
    }
    const { xMin, xMax } = await axes('loss');
    assert.ok(xMin > 5000 && xMax - xMin < 20_000, `zoomed: ${xMin}–${xMax}`);
    // The zoom's ends are not round numbers; the ticks between them are.
    await frame.waitForFunction((lo) => {
      const li = document.querySelectorAll('section.metric[data-metric="loss"] ul.axis-ticks[data-axis="x"] li');
      return li.length >= 3 && !Array.from(li).some((e) => e.textContent === '0') && Number(document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset.xMin) === lo;
    }, xMin, { timeout: 20_000 });
    const labels = await ticks('loss', 'x');
    const values = labels.map(parseTick);
    const step = assertNiceSteps(values, 'the zoomed x axis');
    assert.ok(step < whole, `a finer step than the whole run's (${step} < ${whole})`);
    assert.ok(values.every((v) => v >= xMin && v <= xMax), `inside ${xMin}–${xMax}: ${labels}`);
    assert.ok(labels.every((l) => /^\d+(\.\d+)?k$/.test(l)), `labelled in k: ${labels}`);
    // Every chart of the panel shows the same zoomed ticks.
    assert.deepEqual(await ticks('grad_norm', 'x'), labels);

    // Relative time over the zoomed stretch (some 16,000 steps at 0.5 s each: over two hours).
    await frame.locator('select[aria-label="X axis"]').selectOption('relative');
    await frame.waitForFunction(() => {
      const li = Array.from(document.querySelectorAll('section.metric[data-metric="loss"] ul.axis-ticks[data-axis="x"] li'));
      return li.length >= 3 && li.every((e) => /[hms]$/.test(e.textContent ?? ''));
    }, undefined, { timeout: 20_000 });
    const rel = await ticks('loss', 'x');
    const ms = rel.map(parseDuration);
    const clock = [1, 2, 5, 10, 15, 30].map((s) => s * 1000).concat([1, 2, 5, 10, 15, 20, 30].map((m) => m * 60_000), [1, 2, 3, 6, 12].map((h) => h * 3_600_000));
    assert.ok(ms.length >= 3, `at least three: ${rel}`);
    const d = ms[1]! - ms[0]!;
    assert.ok(clock.includes(d), `a clock step (${d / 60_000} min), not 8m 20s: ${rel}`);
    ms.forEach((v, i) => assert.equal(v, ms[0]! + i * d, `equal steps: ${rel}`));
    assert.ok(rel.every((l) => !/\d+m \d+s/.test(l)), `no minutes-and-seconds on an axis of an hour: ${rel}`);
    assert.ok(rel.some((l) => /^\d+h( \d+m)?$/.test(l)), `hours and minutes like 1h 20m: ${rel}`);
    await frame.locator('select[aria-label="X axis"]').selectOption('step');
    await frame.locator('button', { hasText: 'Reset zoom' }).click();
  });
});

/** A chart's tick labels as drawn: text, position (CSS px along the axis) and width in the tick font. */
async function drawnTicks(f: Frame, metric: string, axis: 'x' | 'y'): Promise<{ label: string; px: number; width: number }[]> {
  return f.locator(`section.metric[data-metric="${metric}"] ul.axis-ticks[data-axis="${axis}"] li`).evaluateAll((lis) =>
    lis.map((li) => ({ label: li.textContent ?? '', px: Number((li as HTMLElement).dataset.px), width: Number((li as HTMLElement).dataset.width) })),
  );
}

/** chart.js draws a y label right-aligned this far left of the plot: its tick mark (8 px) and padding (3 px). */
const Y_LABEL_INSET = 11;

test('log y: every y label whole inside its axis (`1e-5`, not `2.0000e-5` cut to `000e-5`)', async () => {
  await withArtifactsOnFailure(session, 'ticks-logy', async () => {
    await frame.locator('label.control', { hasText: 'Log y' }).locator('input').check();
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('section.metric[data-metric="lr"]')?.dataset.yScale === 'logarithmic', undefined, { timeout: 20_000 });
    await frame.waitForFunction(() => Array.from(document.querySelectorAll('section.metric[data-metric="lr"] ul.axis-ticks[data-axis="y"] li')).some((li) => /e-5$/.test(li.textContent ?? '')), undefined, { timeout: 20_000 });
    for (const metric of ['lr', 'loss', 'acc', 'grad_norm', 'tokens_per_s']) {
      const labels = await drawnTicks(frame, metric, 'y');
      const axisWidth = Number(await chart(metric).getAttribute('data-y-axis-width'));
      assert.ok(labels.length >= 2, `${metric}: at least two log ticks: ${JSON.stringify(labels)}`);
      for (const l of labels) {
        assert.ok(l.width > 0 && l.width + Y_LABEL_INSET <= axisWidth, `${metric}: "${l.label}" (${l.width} px) fits its ${axisWidth} px axis`);
        assert.doesNotMatch(l.label, /\.0+e|0000/, `${metric}: short labels, no padded mantissa`);
      }
    }
    const lr = (await drawnTicks(frame, 'lr', 'y')).map((l) => l.label);
    assert.ok(lr.every((l) => /^\de-\d$|^0\.\d+$|^\d$/.test(l)), `learning rates on a log axis as 1e-5, 5e-5: ${lr}`);
    await session.screenshot(path.join(ARTIFACTS, 'ticks-logy.png'));
    await frame.locator('label.control', { hasText: 'Log y' }).locator('input').uncheck();
    await frame.waitForFunction(() => document.querySelector<HTMLElement>('section.metric[data-metric="lr"]')?.dataset.yScale === 'linear', undefined, { timeout: 20_000 });
  });
});

test('the inline view of the six-metric run: every chart in sight, the fifth and sixth too', async () => {
  await withArtifactsOnFailure(session, 'ticks-inline', async () => {
    await treeContextMenu(session, RUN, /^Pin Run$/);
    await session.runCommand('Remote Runs: Show Inline Metrics');
    const inline = await metricsFrame(session, 'inline');
    await inline.waitForFunction(() => document.querySelectorAll('section.metric').length === 6 && document.querySelectorAll('section.metric:not([data-x-max])').length === 0, undefined, { timeout: 60_000 });
    const view = await inline.evaluate(() => ({ width: document.documentElement.clientWidth, height: document.documentElement.clientHeight }));
    const boxes = await inline.locator('section.metric').evaluateAll((s) =>
      s.map((e) => {
        const b = e.getBoundingClientRect();
        return { metric: (e as HTMLElement).dataset.metric, top: Math.round(b.top), bottom: Math.round(b.bottom), right: Math.round(b.right), canvas: Math.round(e.querySelector('canvas')!.getBoundingClientRect().height) };
      }),
    );
    for (const b of boxes) {
      assert.ok(b.top >= 0 && b.bottom <= view.height && b.right <= view.width, `${b.metric} in sight in the ${view.width}×${view.height} view: ${JSON.stringify(boxes)}`);
      assert.ok(b.canvas >= 60, `${b.metric} keeps a chart: ${JSON.stringify(b)}`);
    }
    await session.screenshot(path.join(ARTIFACTS, 'ticks-inline.png'));
    // Narrow charts: x labels side by side with room between them (not `10k20k30k40k`), two at least.
    for (const b of boxes) {
      const x = await drawnTicks(inline, b.metric!, 'x');
      assert.ok(x.length >= 2, `${b.metric}: at least two x labels: ${JSON.stringify(x)}`);
      for (let i = 1; i < x.length; i++) {
        const gap = x[i]!.px - x[i - 1]!.px - (x[i]!.width + x[i - 1]!.width) / 2;
        assert.ok(gap >= 4, `${b.metric}: "${x[i - 1]!.label}" and "${x[i]!.label}" ${gap} px apart: ${JSON.stringify(x)}`);
      }
    }
    // Titles: whole where the chart has room (not `l.`), cut only as the last thing, the whole name on hover.
    const titles = await inline.locator('section.metric').evaluateAll((s) =>
      s.map((e) => {
        const t = e.querySelector<HTMLElement>('.metric-title')!;
        return { metric: (e as HTMLElement).dataset.metric!, text: t.textContent, tip: t.title, shown: t.clientWidth, full: t.scrollWidth, head: e.querySelector<HTMLElement>('.metric-head')!.clientWidth };
      }),
    );
    for (const t of titles) {
      assert.equal(t.text, t.metric);
      assert.equal(t.tip, t.metric, 'the whole name in its tooltip');
      if (t.metric.length <= 6) assert.ok(t.shown >= t.full, `${t.metric} whole: ${JSON.stringify(t)}`);
      assert.ok(t.shown >= Math.min(t.full, t.head * 0.5), `${t.metric} gives way last: ${JSON.stringify(t)}`);
    }
  });
});
