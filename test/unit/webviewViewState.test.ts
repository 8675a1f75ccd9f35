/**
 * The webview's own state (src/webview/viewState.ts): the user's view settings are the webview's alone. It sends
 * them in `ready` and in `view` when they change; snapshots never carry them back, so nothing can echo. Also the
 * handshake of a restored panel, webview reducer against the real MetricsView and presenter: it goes quiet after a
 * snapshot or two (issue 17: 128 snapshots in 3 s, flipping between 0.95 and 0.6).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { emaSmooth, Series } from '../../src/core/metrics';
import { FeedRegistry, type RunFeed } from '../../src/core/metrics/follow/runFeed';
import { Emitter } from '../../src/core/util/event';
import { MetricsView, type MetricsViewDeps } from '../../src/extension/metrics/metricsView';
import type { FromWebview, PanelRestoreState, RunRefWire, ToWebview } from '../../src/shared/metricsProtocol';
import { DEFAULT_SETTINGS, initialState, reduce, savedState, settingsOf, type WebviewEvent, type WebviewState } from '../../src/webview/viewState';

const ref: RunRefWire = {
  hostName: 'box', target: { kind: 'host', id: '' }, runPath: '/runs/a', runName: 'a', metrics: ['/runs/a/train.jsonl'], checkpoints: [],
};
const restore: PanelRestoreState = { version: 1, primary: ref, others: [] };

function run(state: WebviewState, events: WebviewEvent[]): { state: WebviewState; posted: FromWebview[] } {
  const posted: FromWebview[] = [];
  for (const e of events) {
    const step = reduce(state, e);
    state = step.state;
    posted.push(...step.post);
  }
  return { state, posted };
}

test('saved settings are parsed, never trusted: each malformed field falls back to its default', () => {
  assert.deepEqual(initialState(undefined, 300).settings, DEFAULT_SETTINGS);
  assert.deepEqual(initialState('junk', 300).settings, DEFAULT_SETTINGS);
  assert.deepEqual(
    settingsOf({ smoothing: 1, range: { xMin: 5, xMax: 5 }, hidden: [1], xMode: 'x', logY: 'yes', hiddenRuns: 'a' }),
    DEFAULT_SETTINGS,
  );
  const s = settingsOf({ smoothing: 0.95, range: { xMin: 100, xMax: 200 }, hidden: ['lr'], xMode: 'wall', logY: true, hiddenRuns: ['k'] });
  assert.deepEqual(s, { smoothing: 0.95, range: { xMin: 100, xMax: 200 }, hidden: ['lr'], xMode: 'wall', logY: true, hiddenRuns: ['k'], directions: {}, yRanges: [], hiddenSeries: [] });
  // What is saved reads back the same.
  const state = { ...initialState({ restore, ui: s }, 300) };
  assert.deepEqual(initialState(savedState(state), 300).settings, s);
  assert.deepEqual(savedState(state).restore, restore);
});

test('ready carries the settings the page kept; a snapshot changes none of them and posts nothing', () => {
  const saved = { restore, ui: { ...DEFAULT_SETTINGS, smoothing: 0.95, range: { xMin: 100, xMax: 200 } } };
  const { state, posted } = run(initialState(saved, 0), [{ type: 'started', width: 320 }]);
  assert.deepEqual(posted, [{ type: 'ready', width: 320, range: { xMin: 100, xMax: 200 }, smoothing: 0.95, hidden: [] }]);
  // A snapshot (even one from an older extension that still carried smoothing and a range) is not an echo.
  const snapshot = { type: 'snapshot', mode: 'panel', title: 't', runs: [], references: [], highlight: null, restore, smoothing: 0.6, range: null } as ToWebview;
  const after = run(state, [{ type: 'received', msg: snapshot }, { type: 'measured', width: 320 }]);
  assert.deepEqual(after.posted, [], 'nothing to say: the same width, the same settings');
  assert.equal(after.state.settings.smoothing, 0.95);
  assert.deepEqual(after.state.settings.range, { xMin: 100, xMax: 200 });
});

test('the user changing a setting posts one view; the same value again posts nothing; x axis, log y, runs stay local', () => {
  let { state } = run(initialState(undefined, 0), [{ type: 'started', width: 300 }]);
  const a = run(state, [{ type: 'setSmoothing', value: 0.9 }, { type: 'setSmoothing', value: 0.9 }]);
  assert.deepEqual(a.posted, [{ type: 'view', width: 300, range: null, smoothing: 0.9, hidden: [] }]);
  state = a.state;
  const b = run(state, [{ type: 'zoom', range: { xMin: 1, xMax: 2 } }, { type: 'showMetric', key: 'lr', shown: false }, { type: 'measured', width: 280 }]);
  assert.deepEqual(b.posted.map((m) => m.type === 'view' && [m.width, m.range, m.hidden]), [
    [300, { xMin: 1, xMax: 2 }, []],
    [300, { xMin: 1, xMax: 2 }, ['lr']],
    [280, { xMin: 1, xMax: 2 }, ['lr']],
  ]);
  const c = run(b.state, [{ type: 'setXMode', value: 'wall' }, { type: 'setLogY', value: true }, { type: 'showRun', runKey: 'k', shown: false }]);
  assert.deepEqual(c.posted, []);
  assert.deepEqual([c.state.settings.xMode, c.state.settings.logY, c.state.settings.hiddenRuns], ['wall', true, ['k']]);
  assert.deepEqual(run(c.state, [{ type: 'showRun', runKey: 'k', shown: true }]).state.settings.hiddenRuns, []);
});

/** A run feed that never changes: 400 points of loss. */
function staticFeed(): RunFeed {
  const s = new Series('loss');
  for (let i = 0; i < 400; i++) s.push(i + 1, 2 + Math.sin(i * 12.9898) * 0.3);
  const changed = new Emitter<void>();
  const feed = {
    ref,
    series: () => new Map([['loss', s]]),
    revision: 1,
    status: 'following',
    skipped: undefined,
    badLines: 0,
    latestStep: () => 400,
    onDidChange: changed.event,
    start: () => undefined,
    dispose: () => changed.dispose(),
  };
  return feed as unknown as RunFeed;
}

test('a restored panel with smoothing 0.95 and a zoom: one snapshot for those settings, then quiet (reducer against MetricsView)', async () => {
  const toWebview: ToWebview[] = [];
  let deliver: ((m: unknown) => void) | undefined;
  const webview = {
    postMessage: async (m: ToWebview) => {
      toWebview.push(m);
      return true;
    },
    onDidReceiveMessage: (l: (m: unknown) => void) => {
      deliver = l;
      return { dispose: () => undefined };
    },
  };
  const noop = (): void => undefined;
  const deps: MetricsViewDeps = {
    feeds: new FeedRegistry(() => staticFeed()),
    references: { lines: [], onDidChange: () => ({ dispose: noop }) } as unknown as MetricsViewDeps['references'],
    plateau: () => ({ window: 100, fraction: 0.01 }),
    log: { info: noop, warn: noop, error: noop, debug: noop } as unknown as MetricsViewDeps['log'],
    pickRun: async () => undefined,
    revealCheckpoint: async () => undefined,
    openPanel: noop,
    selectedStep: () => null,
  };
  const view = new MetricsView(webview as never, 'panel', deps);
  view.setPrimary(ref); // as the serializer does, before the page is up

  const saved = { restore, ui: { ...DEFAULT_SETTINGS, smoothing: 0.95, range: { xMin: 100, xMax: 200 } } };
  let state = initialState(saved, 0);
  let handled = 0;
  const fromWebview: FromWebview[] = [];
  const dispatch = (e: WebviewEvent): void => {
    const step = reduce(state, e);
    state = step.state;
    fromWebview.push(...step.post);
  };
  dispatch({ type: 'started', width: 300 });
  // Both directions until nothing moves (bounded: a loop would use them all up).
  for (let round = 0; round < 50; round++) {
    const out = fromWebview.splice(0);
    for (const m of out) deliver!(m);
    await new Promise((r) => setTimeout(r, 0));
    const inbox = toWebview.slice(handled);
    handled = toWebview.length;
    for (const m of inbox) {
      dispatch({ type: 'received', msg: m });
      // As main.ts does after drawing a snapshot: report the measured plot width (a little narrower the first time).
      if (m.type === 'snapshot') dispatch({ type: 'measured', width: 290 });
    }
    if (out.length === 0 && inbox.length === 0) break;
  }
  const snapshots = toWebview.filter((m): m is Extract<ToWebview, { type: 'snapshot' }> => m.type === 'snapshot');
  assert.ok(snapshots.length >= 1 && snapshots.length <= 2, `one snapshot, and one more for the measured width: ${toWebview.map((m) => m.type).join(', ')}`);
  assert.ok(toWebview.length <= 3, `${toWebview.length} messages`);
  assert.equal(state.settings.smoothing, 0.95);
  assert.deepEqual(state.settings.range, { xMin: 100, xMax: 200 });
  // Every snapshot was computed for the page's settings: smoothed with 0.95, the points of the zoomed range.
  for (const snap of snapshots) {
    const c = snap.runs[0].series[0];
    const ys = staticFeed().series().get('loss')!.y;
    const ema = emaSmooth([...ys], 0.95);
    c.x.forEach((x, k) => assert.ok(Math.abs(c.s[k] - ema[x - 1]) < 1e-6, `smoothed with 0.95 at ${x}`));
    assert.ok(c.x.filter((x) => x >= 100 && x <= 200).length === 101, 'every point of the zoomed range');
    assert.ok(!('smoothing' in snap) && !('range' in snap), 'a snapshot carries no view settings');
  }
  view.dispose();
});
