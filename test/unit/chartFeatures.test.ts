/**
 * Issue 17's chart features in node: a chart's fixed y range and its hidden series are the reducer's own choices
 * (saved, restored, never posted), the min/max band travels with decimated points and survives appends, the CSV of
 * a chart holds every point of its series (exact steps, values as the store shows them, a resumed step once), and
 * what the webview may ask for an export is validated.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Series } from '../../src/core/metrics';
import { seriesCsv, seriesCsvCells } from '../../src/core/metrics/series/seriesCsv';
import { shortestFloat32 } from '../../src/core/metrics/series/compact';
import { chartCsv, chartPng, pngSize, safeFileName } from '../../src/extension/metrics/exportContent';
import type { PresenterRun } from '../../src/extension/metrics/presenter';
import { SeriesTracker } from '../../src/extension/metrics/seriesTracker';
import { parseFromWebview } from '../../src/extension/metrics/validate';
import type { RunRefWire } from '../../src/shared/metricsProtocol';
import { bandLimits, bandRuns } from '../../src/webview/chartBand';
import { MetricsStore } from '../../src/webview/store';
import { initialState, reduce, savedState, seriesHidden, settingsOf, yRangeOf, type WebviewEvent, type WebviewState } from '../../src/webview/viewState';

function run(state: WebviewState, events: WebviewEvent[]) {
  const posted = [];
  let saves = 0;
  for (const e of events) {
    const step = reduce(state, e);
    state = step.state;
    posted.push(...step.post);
    if (step.save) saves++;
  }
  return { state, posted, saves };
}

// ---- the reducer -------------------------------------------------------------------------------------------------

test('a fixed y range and a hidden series are per chart, saved, restored after a reload, and never posted', () => {
  const start = run(initialState(undefined, 0), [{ type: 'started', width: 300 }]).state;
  const a = run(start, [
    { type: 'setYRange', metric: 'loss', range: { yMin: 0.5, yMax: 3 } },
    { type: 'showSeries', metric: 'loss', runKey: 'run-b', shown: false },
    { type: 'showSeries', metric: 'loss', runKey: 'run-b', shown: false },
  ]);
  assert.deepEqual(a.posted, [], 'nothing for the extension: they change only how a chart draws');
  assert.equal(a.saves, 3, 'each change is saved');
  assert.deepEqual(yRangeOf(a.state.settings, 'loss'), { metric: 'loss', yMin: 0.5, yMax: 3 });
  assert.equal(yRangeOf(a.state.settings, 'acc'), undefined, 'the other chart still follows its data');
  assert.equal(seriesHidden(a.state.settings, 'loss', 'run-b'), true);
  assert.equal(seriesHidden(a.state.settings, 'acc', 'run-b'), false, 'hidden on that chart only');
  assert.deepEqual(a.state.settings.hiddenSeries, [{ metric: 'loss', runKey: 'run-b' }], 'once, however often clicked');

  // A reload: the page gets back what it saved; ready carries none of it (the extension has no use for it).
  const reloaded = run(initialState(JSON.parse(JSON.stringify(savedState(a.state))), 0), [{ type: 'started', width: 300 }]);
  assert.deepEqual(reloaded.state.settings.yRanges, a.state.settings.yRanges);
  assert.deepEqual(reloaded.state.settings.hiddenSeries, a.state.settings.hiddenSeries);
  assert.deepEqual(reloaded.posted, [{ type: 'ready', width: 300, range: null, smoothing: 0.6, hidden: [] }]);
  // A snapshot after the reload changes neither.
  const snap = run(reloaded.state, [{ type: 'received', msg: { type: 'snapshot', mode: 'panel', title: '', runs: [], references: [], highlight: null, restore: { version: 1, primary: {} as RunRefWire, others: [] } } }]);
  assert.deepEqual(snap.state.settings.yRanges, a.state.settings.yRanges);
  assert.deepEqual(snap.state.settings.hiddenSeries, a.state.settings.hiddenSeries);

  // Back to auto, shown again; a range that is not one (max ≤ min, not finite) changes nothing.
  const b = run(a.state, [
    { type: 'setYRange', metric: 'loss', range: { yMin: 2, yMax: 2 } },
    { type: 'setYRange', metric: 'loss', range: { yMin: Number.NaN, yMax: 2 } },
  ]);
  assert.deepEqual(b.state.settings.yRanges, a.state.settings.yRanges);
  const c = run(b.state, [{ type: 'setYRange', metric: 'loss', range: null }, { type: 'showSeries', metric: 'loss', runKey: 'run-b', shown: true }]);
  assert.deepEqual([c.state.settings.yRanges, c.state.settings.hiddenSeries], [[], []]);
});

test('saved per-chart choices are parsed, never trusted', () => {
  const s = settingsOf({
    yRanges: [{ metric: 'loss', yMin: 1, yMax: 0 }, { metric: 'acc', yMin: 0, yMax: 1 }, { metric: 'acc', yMin: 0.2, yMax: 0.9 }, 'x', { metric: 3, yMin: 0, yMax: 1 }],
    hiddenSeries: [{ metric: 'loss', runKey: 'k' }, { metric: 'loss', runKey: 'k' }, { metric: 'loss' }, null],
  });
  assert.deepEqual(s.yRanges, [{ metric: 'acc', yMin: 0.2, yMax: 0.9 }], 'an inverted range is dropped; the last of a metric wins');
  assert.deepEqual(s.hiddenSeries, [{ metric: 'loss', runKey: 'k' }]);
  assert.deepEqual(settingsOf({ yRanges: 'all', hiddenSeries: {} }).yRanges, []);
  // `__proto__` is a metric name like any other (lists, not objects keyed by remote names).
  assert.deepEqual(settingsOf({ hiddenSeries: [{ metric: '__proto__', runKey: 'k' }] }).hiddenSeries, [{ metric: '__proto__', runKey: 'k' }]);
});

// ---- the band ----------------------------------------------------------------------------------------------------

const header = { runKey: 'r', label: 'r', where: 'h/host', role: 'primary' as const, color: 0, status: 'following', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000 };

test('decimated points carry their bucket band to the webview; appends keep it as long as the points; log y drops what it cannot draw', () => {
  const s = new Series('loss');
  for (let i = 0; i < 10_000; i++) s.push(i, i === 5000 ? -7 : 1 + (i % 10) / 100);
  const t = new SeriesTracker('loss');
  const view = { width: 100, range: null, smoothing: 0 };
  const whole = t.whole(s, view);
  assert.ok(whole.lo && whole.hi);
  assert.ok(whole.x.length <= 102, `${whole.x.length} points`);
  assert.ok(whole.lo.includes(-7), 'the dip is in the band');
  assert.ok(!whole.y.includes(-7), 'and not on the line (each bucket is drawn as its last point)');
  assert.equal(whole.hi.reduce((a, b) => Math.max(a, b)), 1.09);
  // Values as the store shows them (float32 held, printed short): 1.09, not 1.0900000333786011.
  assert.ok(whole.hi.every((v) => v === shortestFloat32(v)));

  const store = new MetricsStore();
  store.apply({ type: 'snapshot', mode: 'panel', title: '', runs: [{ ...header, checkpoints: [], evals: [], series: [whole] }], references: [], highlight: null, restore: { version: 1, primary: {} as RunRefWire, others: [] } });
  for (let i = 10_000; i < 10_400; i++) s.push(i, 2);
  const u = t.update(s, view)!;
  assert.equal(u.mode, 'append');
  store.apply({ type: 'update', runs: [{ ...header, series: [u] }] });
  const held = store.runs[0].series.get('loss')!;
  assert.equal(held.lo?.length, held.x.length);
  assert.equal(held.hi?.length, held.x.length);
  assert.equal(held.hi?.at(-1), 2);

  const band = store.band(store.runs[0], 'loss', 'step', false);
  assert.equal(band.length, held.x.length);
  const logBand = store.band(store.runs[0], 'loss', 'step', true);
  assert.ok(logBand.some((p) => Number.isNaN(p.lo)), 'the bucket reaching −7 is a gap on a log axis');
  assert.deepEqual(bandLimits([{ color: '', points: band }]), { min: -7, max: 2 });
  assert.ok(bandRuns(logBand).length >= 2, 'drawn as separate stretches around the gap');
});

test('a series sent point for point has no band', () => {
  const s = new Series('acc');
  for (let i = 0; i < 50; i++) s.push(i * 10, i / 50);
  const whole = new SeriesTracker('acc').whole(s, { width: 400, range: null, smoothing: 0 });
  assert.equal(whole.lo, undefined);
  assert.equal(whole.x.length, 50);
});

// ---- CSV ---------------------------------------------------------------------------------------------------------

test('the CSV of one series: step, wall time, values; every point, exactly as the store shows them', () => {
  const s = new Series('lr');
  const t0 = Date.UTC(2026, 11, 2, 1, 0, 0, 123);
  const values = [3e-4, 2.9999e-4, 5e-5, 1e-7, 123456.7, -0];
  values.forEach((v, i) => s.push(2 ** 53 - 10 + i * 2, v, t0 + i * 1000));
  const cells = seriesCsvCells('step', 'lr', [{ run: 'a', series: s }]);
  assert.deepEqual(cells[0], ['step', 'wall_time', 'lr']);
  assert.equal(cells.length, values.length + 1);
  cells.slice(1).forEach((row, i) => {
    assert.equal(Number(row[0]), 2 ** 53 - 10 + i * 2, 'steps exact, even near 2^53');
    assert.equal(row[1], new Date(t0 + i * 1000).toISOString());
    assert.equal(Number(row[2]), s.yShown(i));
    assert.equal(Math.fround(Number(row[2])), Math.fround(values[i]), 'reads back as the same float32');
  });
  assert.equal(cells[3][2], '0.00005', 'what the log wrote, not 4.999999873689376e-5');
  assert.ok(seriesCsv('step', 'lr', [{ run: 'a', series: s }]).endsWith('\r\n'));
});

test('the CSV of compared runs: one row per step across them, empty cells where a run has none, a resumed step once with the later value', () => {
  const a = new Series('loss');
  for (const [x, y] of [[10, 1], [20, 2], [30, 3], [20, 2.5], [30, 3.5], [40, 4]] as const) a.push(x, y, 1_700_000_000_000 + x);
  const b = new Series('loss');
  for (const [x, y] of [[5, 9], [20, 8]] as const) b.push(x, y);
  const cells = seriesCsvCells('step', 'loss', [{ run: 'run-a', series: a }, { run: 'run, b', series: b }]);
  assert.deepEqual(cells, [
    ['step', 'run-a - wall_time', 'run-a - loss', 'run, b - loss'],
    ['5', '', '', '9'],
    ['10', '2023-11-14T22:13:20.010Z', '1', ''],
    ['20', '2023-11-14T22:13:20.020Z', '2.5', '8'],
    ['30', '2023-11-14T22:13:20.030Z', '3.5', ''],
    ['40', '2023-11-14T22:13:20.040Z', '4', ''],
  ]);
  assert.match(seriesCsv('step', 'loss', [{ run: 'run-a', series: a }, { run: 'run, b', series: b }]).split('\r\n')[0], /,"run, b - loss"$/);
});

function presenterRun(key: string, runName: string, hostName: string, series: Map<string, Series>, xAxis?: string): PresenterRun {
  const ref: RunRefWire = { hostName, target: { kind: 'docker', id: 'c' }, runPath: `/w/${runName}`, runName, metrics: [], checkpoints: [] };
  return { key, ref, role: 'primary', color: 0, feed: { series: () => series, revision: 0, status: 'following', skipped: undefined, badLines: 0, latestStep: () => undefined, ...(xAxis ? { xAxis } : {}) } };
}

test('chartCsv: the runs asked for, in that order, the x named after the log; same-named runs say where they are; nothing to save is undefined', () => {
  const s1 = new Series('loss');
  s1.push(1, 0.5);
  const s2 = new Series('loss');
  s2.push(1, 0.25);
  const runs = [presenterRun('k1', 'exp', 'box1', new Map([['loss', s1]]), 'epoch'), presenterRun('k2', 'exp', 'box2', new Map([['loss', s2]]), 'epoch')];
  const file = chartCsv(runs, 'loss', ['k2', 'k1', 'nope'])!;
  assert.equal(file.name, 'exp-loss.csv');
  assert.equal(new TextDecoder().decode(file.bytes), 'epoch,exp (box2/docker:c) - loss,exp (box1/docker:c) - loss\r\n1,0.25,0.5\r\n');
  assert.match(file.what, /1 rows$/);
  assert.equal(chartCsv(runs, 'acc', ['k1']), undefined, 'no run has that metric');
  assert.equal(safeFileName('train/loss: é'), 'train_loss_');
  assert.equal(safeFileName('..'), '_', 'never a hidden or parent name');
});

test('a PNG is checked before it is saved: signature and IHDR size', () => {
  // A 3×2 PNG header (signature, IHDR length and type, width, height, the rest irrelevant here).
  const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), Buffer.from('IHDR'), Buffer.from([0, 0, 0, 3, 0, 0, 0, 2, 8, 6, 0, 0, 0])]);
  assert.deepEqual(pngSize(png), { width: 3, height: 2 });
  assert.equal(chartPng('run', 'loss', png.toString('base64'))?.name, 'run-loss.png');
  assert.equal(chartPng('run', 'loss', Buffer.from('GIF89a not a png at all').toString('base64')), undefined);
});

test('export messages from the webview are validated', () => {
  assert.deepEqual(parseFromWebview({ type: 'exportCsv', metric: 'loss', runKeys: ['a', 'b'], extra: 1 }), { type: 'exportCsv', metric: 'loss', runKeys: ['a', 'b'] });
  assert.equal(parseFromWebview({ type: 'exportCsv', metric: '', runKeys: [] }), undefined);
  assert.equal(parseFromWebview({ type: 'exportCsv', metric: 'loss', runKeys: [1] }), undefined);
  assert.deepEqual(parseFromWebview({ type: 'exportPng', metric: 'loss', png: 'iVBORw0KGgo=' }), { type: 'exportPng', metric: 'loss', png: 'iVBORw0KGgo=' });
  assert.equal(parseFromWebview({ type: 'exportPng', metric: 'loss', png: 'data:image/png;base64,iVBO' }), undefined);
  assert.equal(parseFromWebview({ type: 'exportPng', metric: 'loss', png: 42 }), undefined);
});
