/**
 * The extension side of the curve views: incremental smoothing equals emaSmooth, decimated snapshots and
 * appended updates keep the webview's copy right and bounded, the presenter's snapshots/updates/values from a
 * real JSONL parser, and the plateau hint.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { emaSmooth, JsonlParser, RunMetrics, Series, describeSkipped } from '../../src/core/metrics';
import { IncrementalEma } from '../../src/extension/metrics/incrementalEma';
import { SeriesTracker } from '../../src/extension/metrics/seriesTracker';
import { MetricsPresenter, nearestIndex, type FeedView } from '../../src/extension/metrics/presenter';
import { MetricsStore } from '../../src/webview/store';
import type { RunRefWire, SeriesChunk, ToWebview } from '../../src/shared/metricsProtocol';
import { runKeyOf } from '../../src/core/runRef';

/** `segments`: keep every point where x goes back (a user-picked x, Series), instead of the later-wins rule. */
function seriesOf(points: [number, number][], onStepBack: 'later-wins' | 'segments' = 'later-wins'): Series {
  const s = new Series('m', undefined, onStepBack);
  for (const [x, y] of points) s.push(x, y);
  return s;
}

test('incremental EMA equals emaSmooth over any chunking, with segments and constant stretches', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: -3, max: 20 }), fc.oneof(fc.constant(1.5), fc.double({ min: -10, max: 10, noNaN: true }))), { maxLength: 80 }),
      fc.array(fc.integer({ min: 1, max: 15 }), { minLength: 1, maxLength: 10 }),
      fc.constantFrom(0, 0.3, 0.6, 0.95),
      (steps, chunks, w) => {
        // Segments kept whole (a user-picked x): a later-wins restart drops points, and the tracker starts a new EMA then.
        const s = new Series('m', undefined, 'segments');
        let x = 0;
        const ema = new IncrementalEma(w);
        let k = 0;
        let i = 0;
        for (const [dx, y] of steps) {
          x += dx;
          s.push(x, y);
          if (++i >= chunks[k % chunks.length]) {
            ema.extend(s, s.segmentStarts);
            i = 0;
            k++;
          }
        }
        ema.extend(s, s.segmentStarts);
        const raw = Float64Array.from({ length: s.length }, (_, i) => s.yAt(i));
        // Held as float32 (incrementalEma.ts): the same values, rounded once.
        assert.deepEqual(Array.from({ length: ema.length }, (_, i) => ema.at(i)), [...Float32Array.from(emaSmooth(raw, w, s.segments))]);
      },
    ),
    { numRuns: 300 },
  );
});

test('incremental EMA over many storage chunks: a constant stretch across chunk edges, then rewritten, equals emaSmooth', () => {
  // 4,096 values per storage chunk (incrementalEma.ts): a constant run of 9,000 points then a change rewrites
  // values in three chunks; a second segment starts inside the third; extends come in uneven pieces.
  const s = new Series('m', undefined, 'segments');
  const ema = new IncrementalEma(0.9);
  const raw: number[] = [];
  const add = (x: number, y: number) => {
    s.push(x, y);
    raw.push(s.yAt(s.length - 1)); // what the series holds (float32), as the EMA reads it
  };
  let x = 0;
  for (let i = 0; i < 9000; i++) add(++x, 2.5);
  for (const piece of [1, 4095, 3000, 7]) {
    for (let i = 0; i < piece; i++) add(++x, Math.sin(x / 7) + (i % 13 === 0 ? NaN : 0));
    ema.extend(s, s.segmentStarts);
  }
  x = 100; // a resumed run: a new segment
  for (let i = 0; i < 5000; i++) add(++x, i < 2000 ? -1 : Math.cos(i));
  ema.extend(s, s.segmentStarts);
  assert.equal(ema.length, raw.length);
  assert.ok(raw.length > 4 * 4096);
  assert.deepEqual(Array.from({ length: ema.length }, (_, i) => ema.at(i)), [...Float32Array.from(emaSmooth(raw, 0.9, s.segments))]);
  assert.ok(Number.isNaN(ema.at(raw.length)));
});

/** Apply chunks/updates to the webview's store, the way the webview does. */
function webviewCopy(first: SeriesChunk): MetricsStore {
  const store = new MetricsStore();
  const header = { runKey: 'r', label: 'r', where: 'h/host', role: 'primary' as const, color: 0, status: 'following', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000 };
  store.apply({
    type: 'snapshot', mode: 'panel', title: 't', runs: [{ ...header, checkpoints: [], evals: [], series: [first] }], references: [],
    highlight: null, restore: { version: 1, primary: {} as RunRefWire, others: [] },
  });
  return store;
}

test('a long live series: first send ≤ ~1 point per pixel with its band, appends are small, the copy stays bounded and ends at the last point', () => {
  const s = new Series('loss');
  let step = 0;
  const spike = 40_000;
  for (; step < 100_000; step++) s.push(step, step === spike ? 50 : Math.sin(step / 1000) + 2);
  const t = new SeriesTracker('loss');
  const view = { width: 400, range: null, smoothing: 0.6 };
  const first = t.whole(s, view);
  assert.ok(first.x.length <= 400 + 2, `${first.x.length} points`);
  assert.ok(first.lo && first.hi && first.lo.length === first.x.length && first.hi.length === first.x.length, 'a band per point');
  assert.ok(first.hi.includes(50), 'the spike survives decimation, in the band');
  assert.ok(first.x.every((_, k) => first.lo![k] <= first.y[k] && first.y[k] <= first.hi![k]), 'each point inside its band');
  const store = webviewCopy(first);
  let appends = 0;
  let replaces = 0;
  let biggest = 0;
  for (let round = 0; round < 200; round++) {
    for (let k = 0; k < 1000; k++, step++) s.push(step, Math.cos(step / 700) + 2);
    const u = t.update(s, view)!;
    assert.ok(u, 'new points produce an update');
    if (u.mode === 'append') appends++;
    else replaces++;
    biggest = Math.max(biggest, JSON.stringify(u).length);
    store.apply({ type: 'update', runs: [{ runKey: 'r', label: 'r', where: '', role: 'primary', color: 0, status: '', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000, series: [u] }] });
    const copy = store.runs[0].series.get('loss')!;
    assert.equal(copy.x[copy.x.length - 1], step - 1, 'ends at the newest point');
    assert.ok(copy.lo?.length === copy.x.length && copy.hi?.length === copy.x.length, 'the band is as long as the points');
    assert.ok(copy.x.length <= 3 * 400 + 16, `copy bounded (${copy.x.length})`);
    for (let i = 1; i < copy.x.length; i++) assert.ok(copy.x[i] > copy.x[i - 1], 'x increasing');
    assert.equal(copy.total, s.length);
  }
  assert.ok(appends > replaces, `mostly appends (${appends} appends, ${replaces} replaces)`);
  assert.ok(biggest < 100_000, `largest update ${biggest} bytes`);
  assert.equal(t.update(s, view), undefined, 'nothing new, nothing sent');
});

test('a resumed run (step goes back) is sent whole with its segment starts; a zoomed view only changes when points land inside it', () => {
  const s = seriesOf([[0, 1], [10, 2], [20, 3]]);
  const t = new SeriesTracker('m');
  t.whole(s, { width: 100, range: null, smoothing: 0 });
  s.push(15, 9);
  const u = t.update(s, { width: 100, range: null, smoothing: 0 })!;
  assert.equal(u.mode, 'replace');
  // The later process wins from step 15 on: step 20 is gone, 15 begins the second segment (series.ts).
  assert.deepEqual(u.x, [0, 10, 15]);
  assert.deepEqual(u.segmentStarts, [0, 2]);
  // A restart that leaves as many segments and points as before is still sent whole (restartCount moved).
  s.push(16, 1);
  t.whole(s, { width: 100, range: null, smoothing: 0 });
  s.push(15, 7);
  const r = t.update(s, { width: 100, range: null, smoothing: 0 })!;
  assert.equal(r?.mode, 'replace');
  assert.deepEqual(r.x, [0, 10, 15]);
  assert.deepEqual(r.y, [1, 2, 7]);
  s.push(17, 3);
  const zoom = { width: 100, range: { xMin: 0, xMax: 18 }, smoothing: 0 };
  const z = t.whole(s, zoom);
  assert.ok(z.x.every((x) => x <= 20));
  s.push(30, 1);
  assert.equal(t.update(s, zoom)?.x.at(-1), 30, 'the first point past the end is sent: the line runs to the edge');
  s.push(40, 1);
  s.push(50, 1);
  assert.equal(t.update(s, zoom), undefined, 'points further beyond the zoomed range change nothing');
});

const ref = (name: string): RunRefWire => ({
  hostName: 'box', target: { kind: 'pct', id: '200' }, runPath: `/workspace/${name}`, runName: name,
  metrics: [`/workspace/${name}/train.jsonl`], checkpoints: [{ step: 20, name: 'step_20', path: `/workspace/${name}/step_20` }],
});

/** A FeedView over a real parser. */
function feedFrom(lines: string[]): { feed: FeedView; push(lines: string[]): void; metrics: RunMetrics } {
  const metrics = new RunMetrics('line');
  const parser = new JsonlParser(metrics);
  const push = (ls: string[]) => parser.push(new TextEncoder().encode(ls.map((l) => `${l}\n`).join('')));
  push(lines);
  const feed: FeedView = {
    series: () => metrics.series,
    get revision() { return metrics.revision; },
    status: 'following',
    get skipped() { return describeSkipped(metrics); },
    get badLines() { return metrics.badLines + metrics.badValues; },
    latestStep: () => Math.max(...[...metrics.series.values()].map((s) => s.lastX)),
  };
  return { feed, push, metrics };
}

test('presenter: snapshot of every run, incremental update of the changed one, exact values and the difference to the reference run', () => {
  const a = feedFrom(['{"step": 10, "loss": 2.0, "acc": 0.1}', '{"step": 20, "loss": 1.5, "acc": 0.2}', 'not json', '{"step": 30, "loss": 1.0}']);
  const b = feedFrom(['{"step": 10, "loss": 2.5}', '{"step": 20, "loss": 2.0}', '{"step": 30, "loss": 1.8}']);
  let now = 0;
  const p = new MetricsPresenter({ plateau: () => ({ window: 1000, fraction: 0.01 }), now: () => now });
  p.addRun(ref('a'), 'primary', a.feed);
  p.addRun(ref('b'), 'reference', b.feed);
  p.setView(300, null, 0, []);
  const snap = p.snapshot('panel', 'a')!;
  assert.equal(snap.runs.length, 2);
  assert.deepEqual(snap.runs.map((r) => [r.label, r.role, r.color]), [['a', 'primary', 0], ['b', 'reference', 1]]);
  assert.deepEqual(snap.runs[0].series.find((s) => s.key === 'loss')!.y, [2, 1.5, 1]);
  assert.equal(snap.runs[0].badLines, 1);
  assert.match(snap.runs[0].skipped!, /Skipped 1 bad line \(first at line 3/);
  assert.deepEqual(snap.restore.others.map((o) => o.role), ['reference']);
  assert.equal(p.update(), undefined);
  a.push(['{"step": 40, "loss": 0.9}']);
  const u = p.update()!;
  assert.deepEqual(u.runs.map((r) => r.runKey), [snap.runs[0].runKey], 'only the changed run');
  const loss = u.runs[0].series.find((s) => s.key === 'loss')!;
  assert.equal(loss.mode, 'append');
  assert.deepEqual(loss.x, [40]);
  assert.equal(u.runs[0].latestStep, 40);
  const rows = p.valuesAt(21);
  const aLoss = rows.find((r) => r.runKey === snap.runs[0].runKey && r.metric === 'loss')!;
  assert.deepEqual({ step: aLoss.step, value: aLoss.value, ref: aLoss.referenceValue }, { step: 20, value: 1.5, ref: 2.0 });
  assert.equal(rows.find((r) => r.runKey === snap.runs[1].runKey)!.referenceValue, undefined, 'the reference has no difference to itself');
  // Hidden metrics are listed but not sent.
  assert.ok(p.setView(300, null, 0, ['acc']));
  const hidden = p.snapshot('panel', 'a')!.runs[0].series.find((s) => s.key === 'acc')!;
  assert.deepEqual([hidden.x.length, hidden.total], [0, 2]);
  assert.ok(!p.setView(300, null, 0, ['acc']), 'same view: no new snapshot due');
});

test('plateau hint: a loss that flattened is reported with where it flattened; a falling one is not', () => {
  const lines: string[] = [];
  for (let step = 0; step <= 5000; step += 10) lines.push(JSON.stringify({ step, loss: step < 2000 ? 3 - step / 1000 : 1 + (step % 20) * 1e-4, lr: 0.1 }));
  const flat = feedFrom(lines);
  const p = new MetricsPresenter({ plateau: () => ({ window: 1000, fraction: 0.01 }), now: () => 0 });
  p.addRun(ref('flat'), 'primary', flat.feed);
  p.setView(300, null, 0.6, []);
  const hints = p.snapshot('panel', '')!.runs[0].plateaus;
  assert.deepEqual(hints.map((h) => h.key), ['loss'], 'lr has no direction: no hint');
  assert.ok(hints[0].flatSince >= 1900 && hints[0].flatSince <= 2300, `flat since ${hints[0].flatSince}`);
  const falling = feedFrom(Array.from({ length: 500 }, (_, i) => JSON.stringify({ step: i * 10, loss: 5 - i / 100 })));
  const q = new MetricsPresenter({ plateau: () => ({ window: 1000, fraction: 0.01 }), now: () => 0 });
  q.addRun(ref('falling'), 'primary', falling.feed);
  assert.deepEqual(q.snapshot('panel', '')!.runs[0].plateaus, []);
});

test('nearest point across segments', () => {
  const s = seriesOf([[0, 0], [10, 1], [20, 2], [5, 3], [15, 4]], 'segments');
  assert.equal(nearestIndex(s, 11), 1);
  assert.equal(nearestIndex(s, 15), 4);
  assert.equal(nearestIndex(s, 100), 2);
  assert.equal(nearestIndex(s, -5), 0);
});

test('a message is never stale: replace after a reset of the run (new Series objects)', () => {
  const a = feedFrom(['{"step": 1, "loss": 1}', '{"step": 2, "loss": 2}']);
  const p = new MetricsPresenter({ plateau: () => ({ window: 10, fraction: 0.01 }), now: () => 0 });
  p.addRun(ref('a'), 'primary', a.feed);
  p.snapshot('panel', '');
  a.metrics.reset();
  a.push(['{"step": 1, "loss": 7}']);
  const u = p.update() as Extract<ToWebview, { type: 'update' }>;
  const loss = u.runs[0].series[0];
  assert.deepEqual([loss.mode, loss.y], ['replace', [7]]);
});

test("presenter: the run header says what x is, offers the feed's x columns, and null for no pick", () => {
  const a = feedFrom(['{"epoch": 1, "loss": 2.0}']);
  let pick: string | undefined;
  const feed: FeedView = {
    series: a.feed.series,
    get revision() { return a.feed.revision; },
    status: 'following',
    skipped: undefined,
    badLines: 0,
    latestStep: a.feed.latestStep,
    xAxis: 'epoch',
    get xPick() { return pick; },
    xChoices: () => ['epoch', 'loss'],
    setXPick: (k: string | undefined) => { pick = k; },
  };
  const p = new MetricsPresenter({ plateau: () => ({ window: 1000, fraction: 0.01 }), now: () => 0 });
  p.addRun(ref('a'), 'primary', feed);
  p.setView(300, null, 0, []);
  const run = p.snapshot('panel', 'a')!.runs[0];
  assert.equal(run.xAxis, 'epoch');
  assert.deepEqual(run.xChoices, ['epoch', 'loss']);
  assert.equal(run.xPick, null);
  pick = 'loss';
  assert.equal(p.snapshot('panel', 'a')!.runs[0].xPick, 'loss');
});

test('presenter: a run named with controls, bidi and a newline is shown escaped in the legend and tooltips; its key stays exact', () => {
  const hostile = 'evil\u001b]52;c;cm0gLXJmIH4=\u0007\u202egpj.exe\nrow';
  const a = feedFrom(['{"step": 10, "loss": 2.0}']);
  const p = new MetricsPresenter({ plateau: () => ({ window: 1000, fraction: 0.01 }), now: () => 0 });
  const r = { ...ref('a'), runName: hostile, runPath: `/workspace/${hostile}`, target: { kind: 'docker' as const, id: 'x\u001b[2Jy' } };
  p.addRun(r, 'primary', a.feed);
  p.setView(300, null, 0, []);
  const run = p.snapshot('panel', 't')!.runs[0];
  assert.equal(run.label, 'evil\\x1b]52;c;cm0gLXJmIH4=\\x07\\u202egpj.exe\\x0arow');
  assert.doesNotMatch(run.label + run.where, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/);
  assert.match(run.where, /x\\x1b\[2Jy/);
  assert.equal(run.runKey, runKeyOf(r), 'the key that identifies the run is not the shown text');
});
