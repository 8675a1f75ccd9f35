/** The webview's pure half: applying snapshots and updates, chart points on each x axis, and the readout formats. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MetricsStore, formatDiff, formatDuration, formatValue } from '../../src/webview/store';
import type { RunRefWire, RunSnapshot } from '../../src/shared/metricsProtocol';

const header = { where: 'box/pct:200', status: 'following', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000 };

function snapshot(runs: RunSnapshot[]) {
  return {
    type: 'snapshot' as const, mode: 'panel' as const, title: 't', runs, references: [], highlight: null,
    restore: { version: 1 as const, primary: {} as RunRefWire, others: [] },
  };
}

const T0 = Date.UTC(2025, 0, 1);

function sampleStore(): MetricsStore {
  const store = new MetricsStore();
  store.apply(snapshot([
    {
      ...header, runKey: 'a', label: 'a', role: 'primary', color: 0, checkpoints: [], evals: [],
      series: [
        // A resumed run: steps 0,10,20 then again from 10.
        { key: 'loss', x: [0, 10, 20, 10, 30], y: [3, 2, -1, 1.5, 1], s: [3, 2.5, 2, 1.5, 1.2], t: [T0, T0 + 1000, T0 + 2000, T0 + 5000, T0 + 7000], segmentStarts: [0, 3], total: 5 },
      ],
    },
    { ...header, runKey: 'b', label: 'b', role: 'compare', color: 1, checkpoints: [], evals: [], series: [{ key: 'acc', x: [1], y: [0.5], s: [0.5], segmentStarts: [0], total: 1 }] },
  ]));
  return store;
}

test('points: a gap between segments, log-y drops non-positive values, time axes from t', () => {
  const store = sampleStore();
  const a = store.runs[0];
  const raw = store.points(a, 'loss', 'raw', 'step', false);
  assert.deepEqual(raw.map((p) => p.x), [0, 10, 20, 10, 10, 30]);
  assert.ok(Number.isNaN(raw[3].y), 'a gap before the second segment');
  assert.ok(Number.isNaN(store.points(a, 'loss', 'raw', 'step', true)[2].y), 'log-y: -1 is not drawn');
  assert.deepEqual(store.points(a, 'loss', 'smooth', 'relative', false).filter((p) => !Number.isNaN(p.y)).map((p) => p.x), [0, 1000, 2000, 5000, 7000]);
  assert.equal(store.points(a, 'loss', 'raw', 'wall', false)[0].x, T0);
  assert.deepEqual(store.points(store.runs[1], 'acc', 'raw', 'wall', false), [], 'no time field: nothing on a time axis');
  assert.equal(store.hasTime(a), true);
  assert.equal(store.hasTime(store.runs[1]), false);
  assert.deepEqual(store.metricKeys(), ['loss', 'acc']);
});

test('time ↔ step for hovers and zooms', () => {
  const store = sampleStore();
  const a = store.runs[0];
  assert.equal(store.stepAt(a, 'loss', 1900, 'relative'), 20);
  assert.equal(store.stepAt(a, 'loss', T0 + 6900, 'wall'), 30);
  assert.equal(store.stepAt(a, 'loss', 42, 'step'), 42);
  assert.equal(store.xOfStep(a, 'loss', 30, 'relative'), 7000);
});

test('updates: append extends the copy (times and segments included); replace swaps it; unknown runs are ignored', () => {
  const store = sampleStore();
  const up = (series: Parameters<MetricsStore['apply']>[0] extends infer M ? M : never) => store.apply(series);
  const what = up({ type: 'update', runs: [{ ...header, runKey: 'a', label: 'a', role: 'primary', color: 0, latestStep: 40, series: [
    { mode: 'append', key: 'loss', x: [40], y: [0.9], s: [1.1], t: [T0 + 9000], segmentStarts: [], total: 6 },
  ] }, { ...header, runKey: 'zzz', label: 'z', role: 'compare', color: 3, series: [] }] });
  assert.equal(what, 'data');
  const loss = store.runs[0].series.get('loss')!;
  assert.deepEqual([loss.x.at(-1), loss.t!.at(-1), loss.total, store.runs[0].latestStep], [40, T0 + 9000, 6, 40]);
  assert.deepEqual(loss.segmentStarts, [0, 3]);
  const again = store.apply({ type: 'update', runs: [{ ...header, runKey: 'a', label: 'a', role: 'primary', color: 0, series: [
    { mode: 'replace', key: 'loss', x: [1], y: [1], s: [1], segmentStarts: [0], total: 1 },
    { mode: 'append', key: 'grad_norm', x: [1], y: [1], s: [1], segmentStarts: [0], total: 1 },
  ] }] });
  assert.equal(again, 'all', 'a new metric rebuilds the grid');
  assert.deepEqual(store.runs[0].series.get('loss')!.x, [1]);
});

test('readout formats', () => {
  assert.equal(formatValue(0.123456789), '0.123457');
  assert.equal(formatValue(23760), '23760');
  assert.equal(formatValue(1e-7), '1.0000e-7');
  assert.equal(formatDiff(0.25), '+0.25');
  assert.equal(formatDiff(-0.5), '−0.5');
  assert.equal(formatDuration(3_723_000), '1h 02m 03s');
  assert.equal(formatDuration(2_500), '2.5s');
});
