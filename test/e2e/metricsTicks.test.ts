/**
 * Axis ticks people read at a glance, in a real VS Code (code-server + Chromium) over a real OpenSSH server (issue 17:
 * a zoomed x axis showed only its two ends, learning rates printed as `5.0000e-5`, relative time as `8m 20s, 16m 40s,
 * 33m 20s`). The labels are read from the page, from the off-screen list each chart writes of what it drew on its
 * axes (the canvas shows them only as pixels). Also the inline view of a run with six metrics: every chart in sight.
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

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let frame: Frame;

const RUN = 'ticks-run';
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
  });
});
