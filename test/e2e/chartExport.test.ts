/**
 * A chart's own controls in a real VS Code (code-server + Chromium) over a real OpenSSH server (issue 17: what users
 * of TensorBoard and W&B take for granted):
 * - the decimated curve arrives with its buckets' min/max band, and the band is drawn (faint pixels in the run's
 *   colour where the spikes are);
 * - "Save as CSV…" from the chart's menu, by keyboard, through VS Code's own save dialog (opened in the home folder:
 *   no download folder is set): the file holds every point of both runs' series, exactly as their logs wrote them,
 *   a step the resumed run logged again once, with the resumed process's value (series.ts: the later wins); saving
 *   over it again asks first;
 * - "Save as PNG…": the chart at twice its CSS pixels at least (HiDPI), under a header with its title and a legend
 *   holding each run's colour (issue 33: it was the bare 385×180 canvas);
 * - the ⋯ menu closes on Apply, on a click elsewhere (another chart's menu button included) and on Escape (issue 33:
 *   it never closed);
 * - a fixed y range and a series hidden on one chart survive a window reload, and the series stays drawn on the
 *   other chart;
 * - "Save as CSV…" of that chart still holds the hidden run (issue 33: it was silently dropped).
 *
 * Two runs of our own in the docker container `trainer`: `export-run` (steps 10…20,000, then resumed from step
 * 15,000 up to 25,000, with wall times; loss with a spike every 97 lines, acc) and `export-other` (steps 20…24,000).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import type { Frame } from 'playwright-core';
import type { ToWebview } from '../../src/shared/metricsProtocol';
import { startTestHost, type TestHost } from '../harness/testHost';
import { addRunFromPanel, hasMetricsFrame, metricsFrame } from './metricsView';
import { expandTreeRow, treeContextMenu, treeRow } from './treeRows';
import { act, quickInputState, settled, until } from './ui';
import { withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { closeSuite, openSuite } from './suite';
import { REPO_ROOT } from './toolchain';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;

interface LogRow {
  step: number;
  loss: number;
  acc?: number;
  time?: number;
}

const T0 = 1_764_600_000; // seconds, as loggers write `time`

function rows(from: number, to: number, every: number, seed: number, withTime: boolean): LogRow[] {
  const out: LogRow[] = [];
  for (let step = from, i = 0; step <= to; step += every, i++) {
    const noise = Math.sin((i + seed) * 12.9898) * 0.2 + (i % 97 === 0 ? 1.5 : 0);
    out.push({
      step,
      loss: Number((2 + 1.5 * Math.exp(-step / 8000) + noise).toFixed(5)),
      acc: Number((0.2 + 0.6 * (1 - Math.exp(-step / 10000)) + seed * 0.02).toFixed(6)),
      ...(withTime ? { time: Number((T0 + seed * 1000 + step * 0.25 + i * 0.001).toFixed(3)) } : {}),
    });
  }
  return out;
}

// A resumed run: steps 10…20,000, then again from 15,010 (a restart from the step-15,000 checkpoint) to 25,000.
const firstRows = rows(10, 20_000, 10, 0, true);
const resumedRows = rows(15_010, 25_000, 10, 7, true);
const mainRows = [...firstRows, ...resumedRows];
/** What the run's series holds: the resumed process wins where steps repeat (series.ts), from step 15,010 on. */
const keptMain = [...firstRows.filter((r) => r.step < 15_010), ...resumedRows];
const otherRows = rows(20, 24_000, 20, 3, false);

function writeRun(dir: string, log: LogRow[]): void {
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'logs', 'train.jsonl'), log.map((r) => JSON.stringify(r)).join('\n') + '\n');
  fs.mkdirSync(path.join(dir, 'checkpoints', 'step_15000'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'checkpoints', 'step_15000', 'checkpoint.pt'), 'weights');
}

before(async () => {
  host = await startTestHost();
  writeRun(path.join(host.containers.trainer.workspace, 'export-run'), mainRows);
  writeRun(path.join(host.containers.trainer.workspace, 'export-other'), otherRows);
  ({ workspace, session } = await openSuite(host, 'export', { 'remoteRuns.metrics.pollIntervalSeconds': 2 }));
});

after(async () => {
  await closeSuite(session, host, workspace);
});

let frame: Frame;
const chart = (metric: string) => frame.locator(`section.metric[data-metric="${metric}"]`);
const menuButton = (metric: string) => chart(metric).locator('summary.chart-menu-button');

/** Open a chart's menu (a click on its button, again if it did not open; never a click that closes it). */
async function openMenu(metric: string): Promise<void> {
  const open = chart(metric).locator('.chart-menu[open]');
  await act(session.page, {
    what: `the ${metric} chart menu open`,
    action: async () => {
      if ((await open.count()) === 0) await menuButton(metric).click();
    },
    effect: async () => (await open.count()) > 0,
  });
}

type Snapshot = Extract<ToWebview, { type: 'snapshot' }>;

async function xRange(metric: string): Promise<{ xMin: string; xMax: string }> {
  const d = await chart(metric).evaluate((e) => ({ ...(e as HTMLElement).dataset }));
  return { xMin: d.xMin ?? '', xMax: d.xMax ?? '' };
}

async function recordSnapshots(): Promise<void> {
  await frame.evaluate(() => {
    const w = window as unknown as { __rrSnapshots?: unknown[]; __rrOtherLoss?: boolean };
    if (w.__rrSnapshots) return;
    w.__rrSnapshots = [];
    window.addEventListener('message', (e: MessageEvent) => {
      if (e.data && typeof e.data === 'object' && e.data.type === 'snapshot') w.__rrSnapshots!.push(e.data);
      // Whether the compared run's loss points have come (in a snapshot or an update): its log may still be loading
      // when its legend shows.
      const runs = (e.data as { runs?: { label?: string; series?: { key?: string; x?: unknown[] }[] }[] } | null)?.runs;
      if (runs?.some((r) => r.label === 'export-other' && r.series?.some((x) => x.key === 'loss' && (x.x?.length ?? 0) > 0))) w.__rrOtherLoss = true;
    });
  });
}

/**
 * The run's colour as the panel legend shows it, `[r, g, b]`. Asked again until it reads as one: a snapshot that
 * arrives meanwhile redraws the legend, and a swatch read as it is replaced has no computed colour ('').
 */
async function runRgb(label: string): Promise<[number, number, number]> {
  const swatch = frame.locator('.legend .legend-item.run').filter({ hasText: label }).locator('.swatch');
  let css = '';
  for (const end = Date.now() + 60_000; Date.now() < end; ) {
    css = await swatch.evaluate((e) => getComputedStyle(e).backgroundColor).catch(() => '');
    const m = /rgba?\((\d+),\s*(\d+),\s*(\d+)/.exec(css);
    if (m) return [Number(m[1]), Number(m[2]), Number(m[3])];
    await session.page.waitForTimeout(250);
  }
  assert.fail(`the legend's swatch of ${label} never showed a colour (last: ${JSON.stringify(css)})`);
}

/** Pixels of a chart canvas in this colour: opaque ones, and faint ones (translucent: a band, a faint line). */
async function ink(metric: string, rgb: [number, number, number]): Promise<{ strong: number; faint: number }> {
  return chart(metric)
    .locator('canvas')
    .evaluate((c, rgb) => {
      const canvas = c as HTMLCanvasElement;
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let strong = 0;
      let faint = 0;
      for (let i = 0; i < data.length; i += 4) {
        const a = data[i + 3];
        if (a === 0 || Math.abs(data[i] - rgb[0]) + Math.abs(data[i + 1] - rgb[1]) + Math.abs(data[i + 2] - rgb[2]) > 24) continue;
        if (a >= 230) strong++;
        else if (a >= 20 && a <= 170) faint++;
      }
      return { strong, faint };
    }, rgb);
}

/**
 * VS Code's save dialog (in code-server the simple one: a quick input holding a path): check the folder it offers,
 * type `file` and accept. Returns the path it offered first.
 */
async function saveDialog(file: string): Promise<string> {
  const page = session.page;
  const input = page.locator('.quick-input-widget .quick-input-box input');
  await input.waitFor({ state: 'visible', timeout: 30_000 });
  // The dialog fills its path in steps (the folder, then the name): wait until it holds a file name and stays.
  const offered = await settled(page, () => input.inputValue(), (v) => /\.(csv|png)$/.test(v), 'the save dialog offers a file', 30_000);
  await input.fill(file);
  await act(page, {
    what: `the save dialog accepted ${file}`,
    action: async () => {
      if ((await quickInputState(page)).visible) await input.press('Enter');
    },
    effect: async () => !(await quickInputState(page)).visible,
  });
  return offered;
}

function csvRows(text: string): string[][] {
  assert.ok(text.endsWith('\r\n'), 'lines end in CRLF');
  return text
    .slice(0, -2)
    .split('\r\n')
    .map((line) => line.split(','));
}

test('open the resumed run: its decimated curve arrives with each bucket’s min and max, drawn as a band', async () => {
  await withArtifactsOnFailure(session, 'export-open', async () => {
    await session.page.locator('.part.activitybar a.action-label[aria-label="Remote Runs"]').waitFor({ state: 'visible', timeout: 180_000 });
    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'testbox');
    await expandTreeRow(session, 'docker:trainer');
    await treeRow(session, 'export-other').waitFor({ state: 'visible', timeout: 30_000 });
    await treeContextMenu(session, 'export-run', /^Open Metrics$/, { effect: () => hasMetricsFrame(session, 'panel') });
    frame = await metricsFrame(session, 'panel');
    await recordSnapshots();
    // Ask for a fresh snapshot of what is drawn now (the recorder missed the first): compare with another run.
    await addRunFromPanel(session, frame, 'export-other');
    await frame.locator('.legend .legend-item.run', { hasText: 'export-other' }).waitFor({ timeout: 30_000 });
    const snap = (await until(
      session.page,
      async () => JSON.stringify(await frame.evaluate(() => (window as unknown as { __rrSnapshots: unknown[] }).__rrSnapshots.at(-1) ?? null)),
      /export-other/,
      'a snapshot with both runs',
    ).then((t) => JSON.parse(t))) as Snapshot;
    // The CSV below saves what the host holds: the compared run's points, once they have come.
    await until(session.page, async () => String(await frame.evaluate(() => (window as unknown as { __rrOtherLoss?: boolean }).__rrOtherLoss === true)), /^true$/, 'the compared run\'s loss points', 60_000);
    const loss = snap.runs.find((r) => r.label === 'export-run')!.series.find((s) => s.key === 'loss')!;
    assert.ok(loss.x.length < mainRows.length / 4, `decimated: ${loss.x.length} of ${mainRows.length}`);
    assert.ok(loss.lo && loss.hi && loss.lo.length === loss.x.length && loss.hi.length === loss.x.length, 'a band per point');
    assert.equal(loss.segmentStarts.length, 2, 'the resumed run is two segments');
    assert.equal(Math.max(...loss.hi), Math.max(...keptMain.map((r) => r.loss)), 'the highest spike is in the band');
    assert.equal(Math.min(...loss.lo), Math.min(...keptMain.map((r) => r.loss)), 'and the lowest value');
    // A bucket is drawn as its last point: most spikes are inside a band, above the point drawn.
    assert.ok(loss.hi.filter((h, k) => h > loss.y[k] + 1).length > 10, 'spikes above the line, in the band');
    // Drawn: with smoothing on, the raw curve and the band are faint in the run's colour.
    const rgb = await runRgb('export-run');
    const drawn = await ink('loss', rgb);
    assert.ok(drawn.faint > 1500 && drawn.strong > 200, `the band and the curves: ${JSON.stringify(drawn)}`);
  });
});

let csvFile: string;

test('Save as CSV… from the chart menu, by keyboard: the file holds every point of both runs, as their logs wrote them', async () => {
  await withArtifactsOnFailure(session, 'export-csv', async () => {
    const dir = path.join(session.home, 'exports');
    fs.mkdirSync(dir, { recursive: true });
    csvFile = path.join(dir, 'loss.csv');
    // Keyboard only: focus the chart's menu button, open it, Tab to "Save as CSV…", Enter.
    const active = () => frame.evaluate(() => {
      const e = document.activeElement as HTMLElement | null;
      return e ? `${e.tagName.toLowerCase()}.${e.className}[${e.dataset.action ?? ''}] ${e.textContent?.slice(0, 30) ?? ''}` : 'none';
    });
    await menuButton('loss').focus();
    await until(session.page, active, /^summary\.chart-menu-button/, 'the loss chart menu button focused', 10_000);
    await session.page.keyboard.press('Enter');
    await chart('loss').locator('.chart-menu[open]').waitFor({ timeout: 10_000 });
    const focused: string[] = [];
    for (let i = 0; i < 4 && !/\[export-csv\]/.test(focused.at(-1) ?? ''); i++) {
      await session.page.keyboard.press('Tab');
      focused.push(await active());
    }
    assert.deepEqual(focused.map((f) => /\[([\w-]*)\]/.exec(f)?.[1]), ['export-png', 'export-csv'], `Tab from the menu button: ${focused.join(' | ')}`);
    await session.page.keyboard.press('Enter');
    const offered = await saveDialog(csvFile);
    assert.equal(path.dirname(offered.replace(/^~/, session.home)), session.home, `offered in the home folder: ${offered}`);
    assert.equal(path.basename(offered), 'export-run-loss.csv');
    const text = await until(session.page, async () => (fs.existsSync(csvFile) ? fs.readFileSync(csvFile, 'utf8') : ''), /\r\n$/, 'the CSV written', 60_000);
    const [head, ...body] = csvRows(text);
    assert.deepEqual(head, ['step', 'export-run - wall_time', 'export-run - loss', 'export-other - loss']);

    // The expected table, from the logs alone: every step of either run ascending, each once; a step the resumed
    // process logged again has its value (the later wins: the first process's rows from step 15,010 on are replaced),
    // each run's value at that step (its wall time in ISO 8601), empty where it has none.
    const steps = [...new Set([...keptMain, ...otherRows].map((r) => r.step))].sort((a, b) => a - b);
    const expected: string[][] = [];
    for (const step of steps) {
      const m = keptMain.find((r) => r.step === step);
      const o = otherRows.find((r) => r.step === step);
      expected.push([String(step), m ? new Date(Math.round(m.time! * 1000)).toISOString() : '', m ? String(m.loss) : '', o ? String(o.loss) : '']);
    }
    assert.equal(body.length, expected.length, `one row per step (${body.length} vs ${expected.length})`);
    for (let i = 0; i < expected.length; i++) assert.deepEqual(body[i], expected[i], `row ${i + 1}`);
    assert.equal(body.filter((r) => r[0] === '16000').length, 1, 'step 16,000, logged before and after the resume, is one row');
    assert.equal(body.find((r) => r[0] === '16000')?.[2], String(resumedRows.find((r) => r.step === 16_000)!.loss), "the resumed process's value");
    await session.waitForNotification(/Saved loss of export-run, export-other, [\d,]+ rows to /);
  });
});

test('saving over an existing file asks first; cancelling leaves it as it was', async () => {
  await withArtifactsOnFailure(session, 'export-overwrite', async () => {
    const before = fs.readFileSync(csvFile, 'utf8');
    const mtime = fs.statSync(csvFile).mtimeMs;
    await openMenu('loss');
    await chart('loss').locator('button[data-action="export-csv"]').click();
    const page = session.page;
    const input = page.locator('.quick-input-widget .quick-input-box input');
    await input.waitFor({ state: 'visible', timeout: 30_000 });
    await settled(page, () => input.inputValue(), (v) => v.endsWith('.csv'), 'the save dialog offers a file', 30_000);
    await input.fill(csvFile);
    // VS Code's dialog asks (in code-server's simple dialog: the question above its path, with OK and Cancel). An
    // Enter that only took the completion the list offered is pressed again.
    const question = () => page.locator('.quick-input-widget').innerText().catch(() => '');
    await act(page, {
      what: 'the save dialog asked about the existing file',
      action: async () => {
        if (!/already exists/.test(await question())) await input.press('Enter');
      },
      effect: async () => /already exists/.test(await question()),
      retryAfterMs: 3000,
    });
    const asked = await question();
    assert.match(asked, /loss\.csv already exists\. Are you sure you want to overwrite it\?/);
    await page.locator('.quick-input-widget .monaco-button', { hasText: /^Cancel$/ }).click();
    // Cancel may go back to the path: close the dialog there.
    await act(page, {
      what: 'the save dialog closed',
      action: async () => {
        if ((await quickInputState(page)).visible) await page.keyboard.press('Escape');
      },
      effect: async () => !(await quickInputState(page)).visible,
    });
    await page.waitForTimeout(1500);
    assert.equal(fs.readFileSync(csvFile, 'utf8'), before);
    assert.equal(fs.statSync(csvFile).mtimeMs, mtime, 'not written');
  });
});

test('Save as PNG…: the chart at twice its pixels at least, under its title and a legend of its runs', async () => {
  await withArtifactsOnFailure(session, 'export-png', async () => {
    const pngFile = path.join(session.home, 'exports', 'acc.png');
    await openMenu('acc');
    await chart('acc').locator('button[data-action="export-png"]').click();
    const offered = await saveDialog(pngFile);
    assert.equal(path.basename(offered), 'export-run-acc.png');
    await until(session.page, async () => String(fs.existsSync(pngFile) && fs.statSync(pngFile).size), /^[1-9]\d*$/, 'the PNG written', 60_000);
    const bytes = fs.readFileSync(pngFile);
    // Kept for a look (not compared).
    fs.mkdirSync(path.join(REPO_ROOT, '.test-tmp', 'e2e', 'artifacts', 'export'), { recursive: true });
    fs.writeFileSync(path.join(REPO_ROOT, '.test-tmp', 'e2e', 'artifacts', 'export', 'acc.png'), bytes);
    assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 'the PNG signature');
    assert.equal(bytes.subarray(12, 16).toString('latin1'), 'IHDR');
    const png = { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
    const shown = await chart('acc').locator('canvas').evaluate((c) => ({ width: (c as HTMLCanvasElement).clientWidth, height: (c as HTMLCanvasElement).clientHeight, dpr: window.devicePixelRatio }));
    const scale = Math.max(2, shown.dpr);
    assert.ok(shown.width > 100 && shown.height > 50, JSON.stringify(shown));
    assert.equal(png.width, Math.round(shown.width * scale), `${scale}× the chart's ${shown.width} CSS px: ${JSON.stringify(png)}`);
    const header = png.height - Math.round(shown.height * scale);
    assert.ok(header >= 2 * 30, `a header (title, legend) above the chart: ${header} px of ${JSON.stringify(png)}`);
    // Read the picture back in a page of its own: the header is not blank (the title's text), and holds each run's
    // colour (the legend's swatches).
    const colours = { run: await runRgb('export-run'), other: await runRgb('export-other') };
    const reader = await session.context.newPage();
    try {
      const seen = await reader.evaluate(
        async ({ b64, header, colours }) => {
          const img = new Image();
          img.src = `data:image/png;base64,${b64}`;
          await img.decode();
          const c = document.createElement('canvas');
          c.width = img.width;
          c.height = img.height;
          const ctx = c.getContext('2d')!;
          ctx.drawImage(img, 0, 0);
          const data = ctx.getImageData(0, 0, c.width, header).data;
          // Pixels near each colour (no helper function: the page gets this function's source as it is).
          const refs = [[data[0], data[1], data[2]], colours.run, colours.other];
          const near = [0, 0, 0];
          let inkTop = 0;
          for (let i = 0; i < data.length; i += 4) {
            for (let k = 0; k < refs.length; k++) {
              if (Math.abs(data[i] - refs[k][0]) + Math.abs(data[i + 1] - refs[k][1]) + Math.abs(data[i + 2] - refs[k][2]) <= 24) near[k]++;
              else if (k === 0 && i / 4 / c.width < header / 2) inkTop++;
            }
          }
          return { ink: data.length / 4 - near[0], inkTop, run: near[1], other: near[2] };
        },
        { b64: bytes.toString('base64'), header, colours },
      );
      assert.ok(seen.inkTop > 150, `the title drawn in the header's top half: ${JSON.stringify(seen)}`);
      assert.ok(seen.run > 40 && seen.other > 40, `both runs' swatches in the legend: ${JSON.stringify(seen)}`);
    } finally {
      await reader.close();
    }
  });
});

test('the ⋯ menu closes on a click elsewhere and on Escape (focus back on its button)', async () => {
  await withArtifactsOnFailure(session, 'export-menu-close', async () => {
    const open = chart('acc').locator('.chart-menu[open]');
    await openMenu('acc');
    await frame.locator('h1.title').click();
    await open.waitFor({ state: 'detached', timeout: 10_000 });
    // Another chart's menu button: that one opens, this one closes.
    await openMenu('acc');
    await menuButton('loss').click();
    await open.waitFor({ state: 'detached', timeout: 10_000 });
    await chart('loss').locator('.chart-menu[open]').waitFor({ timeout: 10_000 });
    await frame.locator('h1.title').click();
    await chart('loss').locator('.chart-menu[open]').waitFor({ state: 'detached', timeout: 10_000 });
    // Escape, with the focus inside the menu.
    await openMenu('acc');
    await chart('acc').locator('input[aria-label="Y minimum of acc"]').focus();
    await session.page.keyboard.press('Escape');
    await open.waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await frame.evaluate(() => document.activeElement?.className), 'chart-menu-button');
  });
});

test('a fixed y range and a series hidden on one chart survive a reload; the other chart still draws that series', async () => {
  await withArtifactsOnFailure(session, 'export-yrange-hidden', async () => {
    const otherRgb = await runRgb('export-other');
    // Fix loss's y axis to 1.5 – 2.5 (below its first steps' values).
    const xBefore = await xRange('loss');
    await openMenu('loss');
    const menu = chart('loss').locator('.chart-menu');
    await menu.locator('input[type=radio][value=fixed]').check();
    await menu.locator('input[aria-label="Y minimum of loss"]').fill('1.5');
    await menu.locator('input[aria-label="Y maximum of loss"]').fill('2.5');
    await menu.locator('button[data-action="apply-y"]').click();
    await frame.waitForFunction(() => {
      const d = document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset;
      return d?.yRange === 'fixed' && d.yMin === '1.5' && d.yMax === '2.5';
    }, undefined, { timeout: 15_000 });
    // Apply closed the menu.
    await chart('loss').locator('.chart-menu[open]').waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await chart('acc').getAttribute('data-y-range'), 'auto', 'acc still follows its data');
    // chart.js would drop the points outside a fixed y range from the x range: the x axis stays where it was.
    assert.deepEqual(await xRange('loss'), xBefore, 'the x axis did not move');

    // Hide export-other on the loss chart only.
    const lossOther = chart('loss').locator('.chart-legend-item', { hasText: 'export-other' });
    assert.ok((await ink('loss', otherRgb)).strong > 100, 'drawn before');
    await lossOther.click();
    await frame.waitForFunction(() => document.querySelector('section.metric[data-metric="loss"] .chart-legend-item.off') !== null, undefined, { timeout: 15_000 });
    assert.equal((await ink('loss', otherRgb)).strong, 0, 'not drawn on loss');
    assert.ok((await ink('acc', otherRgb)).strong > 100, 'still drawn on acc');

    await session.reloadWindow();
    frame = await metricsFrame(session, 'panel', 120_000);
    await frame.locator('section.metric[data-metric="loss"] .chart-legend-item', { hasText: 'export-other' }).waitFor({ timeout: 60_000 });
    await frame.waitForFunction(() => {
      const d = document.querySelector<HTMLElement>('section.metric[data-metric="loss"]')?.dataset;
      return d?.yRange === 'fixed' && d.yMin === '1.5' && d.yMax === '2.5';
    }, undefined, { timeout: 30_000 });
    assert.equal(await chart('loss').locator('.chart-legend-item', { hasText: 'export-other' }).getAttribute('aria-pressed'), 'false', 'hidden on loss after the reload');
    assert.equal(await chart('acc').locator('.chart-legend-item', { hasText: 'export-other' }).getAttribute('aria-pressed'), 'true', 'shown on acc');
    await until(session.page, async () => String((await ink('acc', otherRgb)).strong > 100), 'true', 'acc draws export-other after the reload', 30_000);
    assert.equal((await ink('loss', otherRgb)).strong, 0, 'loss still does not');
    assert.equal(await chart('acc').getAttribute('data-y-range'), 'auto');
  });
});

test('Save as CSV… of a chart with a run hidden on it: the hidden run’s points are in the file too', async () => {
  await withArtifactsOnFailure(session, 'export-csv-hidden', async () => {
    assert.equal(await chart('loss').locator('.chart-legend-item', { hasText: 'export-other' }).getAttribute('aria-pressed'), 'false', 'export-other hidden on loss');
    const file = path.join(session.home, 'exports', 'loss-hidden.csv');
    await openMenu('loss');
    await chart('loss').locator('button[data-action="export-csv"]').click();
    await saveDialog(file);
    const text = await until(session.page, async () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : ''), /\r\n$/, 'the CSV written', 60_000);
    assert.deepEqual(csvRows(text)[0], ['step', 'export-run - wall_time', 'export-run - loss', 'export-other - loss']);
    assert.equal(text, fs.readFileSync(csvFile, 'utf8'), 'the same file as with both runs shown');
    await session.waitForNotification(/Saved loss of export-run, export-other, [\d,]+ rows to /);
  });
});
