/** Evals in the webview's store: their points on each metric's chart, charts of their own, tooltips, updates. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MetricsStore, evalMetricKeys, evalTooltip, formatTime } from '../../src/webview/store';
import type { EvalPointWire, RunRefWire, RunSnapshot, ToWebview } from '../../src/shared/metricsProtocol';

const T0 = Date.UTC(2026, 0, 1);
const header = { where: 'box/host', status: 'following', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000 };

function evalPoint(over: Partial<EvalPointWire> & Pick<EvalPointWire, 'step' | 'values'>): EvalPointWire {
  return { id: `e${over.step}`, profile: 'acceptance', checkpoint: `step_${over.step}`, startedAt: T0 + 60_000, state: 'passed', ...over };
}

function run(runKey: string, role: RunSnapshot['role'], evals: EvalPointWire[]): RunSnapshot {
  return {
    ...header, runKey, label: runKey, role, color: role === 'primary' ? 0 : 1, checkpoints: [], evals,
    series: [{ key: 'loss', x: [0, 1000, 2000], y: [3, 2, 1], s: [3, 2.5, 2], t: [T0, T0 + 10_000, T0 + 20_000], segmentStarts: [0], total: 3 }],
  };
}

function storeWith(runs: RunSnapshot[]): MetricsStore {
  const store = new MetricsStore();
  store.apply({
    type: 'snapshot', mode: 'panel', title: 't', runs, references: [], highlight: null,
    restore: { version: 1, primary: {} as RunRefWire, others: [] },
  });
  return store;
}

test('an eval metric the log does not have gets a chart of its own, after the training metrics', () => {
  const store = storeWith([run('a', 'primary', [evalPoint({ step: 2000, values: { acceptance_length: 6.4, loss: 0.9 } })])]);
  assert.deepEqual(store.metricKeys(), ['loss', 'acceptance_length']);
  assert.deepEqual(evalMetricKeys(store.runs[0]!), ['acceptance_length', 'loss']);
});

test('each eval is a point at its checkpoint step on the chart of each metric it measured', () => {
  const store = storeWith([run('a', 'primary', [
    evalPoint({ step: 2000, values: { acceptance_length: 6.4, loss: 0.9 } }),
    evalPoint({ step: 1000, values: { acceptance_length: 5.1 } }),
    evalPoint({ step: 500, state: 'running', values: {} }),
  ])]);
  const a = store.runs[0]!;
  assert.deepEqual(store.evalMarks(a, 'acceptance_length', 'step', false).map(({ x, y }) => [x, y]), [[1000, 5.1], [2000, 6.4]]);
  assert.deepEqual(store.evalMarks(a, 'loss', 'step', false).map(({ x, y }) => [x, y]), [[2000, 0.9]], 'beside the training curve of the same metric');
  assert.equal(store.evalMarks(a, 'loss', 'step', false)[0]!.eval.id, 'e2000');
  // On a time axis the step is placed where the log says it was reached (an eval-only metric borrows any series' times).
  assert.deepEqual(store.evalMarks(a, 'acceptance_length', 'relative', false).map((m) => m.x), [10_000, 20_000]);
  assert.deepEqual(store.evalMarks(a, 'acceptance_length', 'wall', false).map((m) => m.x), [T0 + 10_000, T0 + 20_000]);
});

test('log-y leaves out values that cannot be drawn', () => {
  const store = storeWith([run('a', 'primary', [evalPoint({ step: 1000, values: { delta: -1 } }), evalPoint({ step: 2000, values: { delta: 2 } })])]);
  assert.deepEqual(store.evalMarks(store.runs[0]!, 'delta', 'step', true).map((m) => m.y), [2]);
});

test('an evals message replaces that run\'s evals and asks for a full redraw; an unknown run is ignored', () => {
  const store = storeWith([run('a', 'primary', []), run('b', 'compare', [])]);
  assert.deepEqual(store.metricKeys(), ['loss']);
  const msg: ToWebview = { type: 'evals', runKey: 'b', evals: [evalPoint({ step: 1000, values: { bleu: 31.2 } })] };
  assert.equal(store.apply(msg), 'all');
  assert.deepEqual(store.runs[1]!.evals.map((e) => e.values), [{ bleu: 31.2 }]);
  assert.deepEqual(store.runs[0]!.evals, []);
  assert.deepEqual(store.metricKeys(), ['loss', 'bleu']);
  assert.equal(store.apply({ type: 'evals', runKey: 'nope', evals: [] }), 'none');
  // A later update of the run's series keeps its evals.
  store.apply({ type: 'update', runs: [{ ...header, runKey: 'b', label: 'b', role: 'compare', color: 1, series: [] }] });
  assert.equal(store.runs[1]!.evals.length, 1);
});

test('the tooltip says profile, checkpoint and step, time, state and every value', () => {
  const e = evalPoint({ step: 20000, values: { acceptance_length: 6.4, tokens_per_s: 812.123456 }, startedAt: new Date(2026, 0, 30, 14, 5).getTime() });
  assert.equal(
    evalTooltip(e, 'drafter'),
    'eval acceptance · drafter · step_20000 (step 20000)\nstarted 2026-01-30 14:05 · passed\nacceptance_length = 6.4\ntokens_per_s = 812.123',
  );
  assert.equal(formatTime(new Date(2026, 10, 3, 9, 7).getTime()), '2026-11-03 09:07');
});

test('the tooltip shows a remote profile, checkpoint and value names escaped: a newline cannot forge a line', () => {
  const e = evalPoint({ step: 1, checkpoint: 'step_1\nforged = 1', profile: 'p\u001b[2J', values: { 'acc\u202e': 1 } });
  const shown = evalTooltip(e, 'r');
  assert.equal(shown.split('\n').length, 3, shown);
  assert.ok(shown.startsWith('eval p\\x1b[2J · r · step_1\\x0aforged = 1 (step 1)'), shown);
  assert.ok(shown.endsWith('acc\\u202e = 1'), shown);
});
