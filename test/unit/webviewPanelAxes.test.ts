/**
 * Issue 17's eval charts: one x range for every chart of a panel (an eval-only chart spanned 0–30000 beside training
 * charts at 0–40000, so the checkpoint markers did not line up), counts an eval prints beside its results
 * (`prompts: 200`) not charted as metrics, eval results joined by a line per profile, a tooltip that stays whole
 * inside the window, y padding that never crosses zero, and relative time counted from the run's start when zoomed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { EVAL_SCRIPT } from '../../src/demo/scripts';
import { JsonlParser, RunMetrics } from '../../src/core/metrics';
import { MetricsPresenter } from '../../src/extension/metrics/presenter';
import { MetricsStore, evalMetricKeys, evalTooltip } from '../../src/webview/store';
import { countFields, evalLines, namedLikeCount } from '../../src/webview/evalSeries';
import { padRange, panelXExtent } from '../../src/webview/panelRange';
import { placeTip } from '../../src/webview/tipPlacement';
import type { EvalPointWire, RunRefWire, RunSnapshot } from '../../src/shared/metricsProtocol';

const T0 = Date.UTC(2026, 0, 1);
const header = { where: 'box/host', status: 'following', badLines: 0, latest: {}, plateaus: [], link: { state: 'connected' as const }, loggedAgoMs: null, stoppedAfterMs: 300_000 };
const STEPS = Array.from({ length: 41 }, (_, i) => i * 1000);

/** What the demo's eval script prints as its result for a checkpoint at `step`: its own result line, run by sh and awk. */
function demoResult(step: number): Record<string, number> {
  const resultLine = EVAL_SCRIPT.split('\n').find((l) => l.startsWith('awk '))!;
  const out = execFileSync('sh', ['-c', `step=$1\n${resultLine}`, 'eval', String(step)], { encoding: 'utf8' });
  return JSON.parse(out.trim());
}

function evalAt(step: number, values: Record<string, number>, profile = 'acceptance', startedAt = T0 + step): EvalPointWire {
  return { id: `${profile}-${step}-${startedAt}`, profile, step, checkpoint: `step_${step}`, startedAt, state: 'passed', values };
}

function storeWith(evals: EvalPointWire[], compared?: Partial<RunSnapshot>): MetricsStore {
  const primary: RunSnapshot = {
    ...header, runKey: 'a', label: 'a', role: 'primary', color: 0, evals,
    checkpoints: [10_000, 20_000, 30_000].map((s) => ({ step: s, name: `step_${s}`, path: `/r/step_${s}` })),
    series: [{ key: 'loss', x: STEPS, y: STEPS.map((s) => 3 - s / 20_000), s: STEPS.map((s) => 3 - s / 20_000), t: STEPS.map((s) => T0 + s * 10), segmentStarts: [0], total: STEPS.length }],
  };
  const runs = [primary, ...(compared ? [{ ...primary, runKey: 'b', label: 'b', role: 'compare' as const, color: 1, evals: [], checkpoints: [], ...compared }] : [])];
  const store = new MetricsStore();
  store.apply({ type: 'snapshot', mode: 'panel', title: 't', runs, references: [], highlight: null, restore: { version: 1, primary: {} as RunRefWire, others: [] } });
  return store;
}

test('the demo eval prints prompts: 200 beside its results; prompts is a count, not a metric: no chart, no point, still in the tooltip', () => {
  const evals = [10_000, 20_000, 30_000].map((s) => evalAt(s, demoResult(s)));
  assert.deepEqual(Object.keys(evals[0].values), ['acceptance_length', 'accept_rate', 'prompts']);
  const store = storeWith(evals);
  assert.deepEqual([...countFields(evals)], ['prompts']);
  assert.deepEqual(evalMetricKeys(store.runs[0]!), ['acceptance_length', 'accept_rate']);
  assert.deepEqual(store.metricKeys(), ['loss', 'acceptance_length', 'accept_rate']);
  assert.deepEqual(store.evalMarks(store.runs[0]!, 'prompts', 'step', false), []);
  assert.match(evalTooltip(evals[0], 'a'), /\nprompts = 200$/, 'the tooltip still says how it was measured');
  // A single eval: named like a count and an integer is enough.
  assert.deepEqual([...countFields([evals[0]])], ['prompts']);
});

test('what counts as a count: its name and integer values, or the same integer in every eval', () => {
  for (const k of ['prompts', 'n', 'num_prompts', 'n_samples', 'eval/samples', 'total_tokens', 'seed', 'count']) assert.ok(namedLikeCount(k), k);
  for (const k of ['acceptance_length', 'accuracy', 'tokens_per_second', 'exact_match', 'loss', 'ntokens_ratio', 'pass@1']) assert.ok(!namedLikeCount(k), k);
  // Named so but fractional: a metric after all (an average number of tokens).
  assert.deepEqual([...countFields([evalAt(1, { tokens: 12.5 }), evalAt(2, { tokens: 13 })])], []);
  // Unnamed, but the same integer in every eval: how it was run (max_new_tokens), not what it measured.
  assert.deepEqual([...countFields([evalAt(1, { max_new: 128, correct: 40 }), evalAt(2, { max_new: 128, correct: 57 })])], ['max_new']);
  // One eval alone says nothing about constancy.
  assert.deepEqual([...countFields([evalAt(1, { max_new: 128 })])], []);
});

test('one x range for every chart: the eval-only chart spans what the training charts span, and the checkpoints', () => {
  const store = storeWith([10_000, 20_000, 30_000].map((s) => evalAt(s, { acceptance_length: 3 + s / 10_000 })));
  const keys = store.metricKeys();
  assert.deepEqual(keys, ['loss', 'acceptance_length']);
  assert.deepEqual(panelXExtent(store, keys, 'step', new Set()), { min: 0, max: 40_000 });
  assert.deepEqual(panelXExtent(store, ['acceptance_length'], 'step', new Set()), { min: 10_000, max: 30_000 }, 'alone, its own points and the checkpoints');
  // Time axes too: the eval at step 30000 sits where the log's step 30000 sits.
  assert.deepEqual(panelXExtent(store, keys, 'relative', new Set()), { min: 0, max: 400_000 });
  assert.deepEqual(panelXExtent(store, keys, 'wall', new Set()), { min: T0, max: T0 + 400_000 });
  // A compared run that goes further widens every chart; hidden, it does not.
  const longer = storeWith([], { series: [{ key: 'loss', x: [0, 50_000], y: [3, 1], s: [3, 1], segmentStarts: [0], total: 2 }] });
  assert.deepEqual(panelXExtent(longer, ['loss'], 'step', new Set()), { min: 0, max: 50_000 });
  assert.deepEqual(panelXExtent(longer, ['loss'], 'step', new Set(['b'])), { min: 0, max: 40_000 });
  assert.equal(panelXExtent(new MetricsStore(), [], 'step', new Set()), undefined);
});

test('eval results are joined by a line per profile, through the newest result at each step', () => {
  const store = storeWith([
    evalAt(20_000, { acceptance_length: 5 }),
    evalAt(10_000, { acceptance_length: 4 }),
    evalAt(20_000, { acceptance_length: 5.5 }, 'acceptance', T0 + 99_999_999), // run again later: the newer result
    evalAt(30_000, { acceptance_length: 6 }),
    evalAt(30_000, { acceptance_length: 9 }, 'long-context'), // another profile: its own (single-point) series, no line
  ]);
  const marks = store.evalMarks(store.runs[0]!, 'acceptance_length', 'step', false);
  assert.deepEqual(evalLines(marks), [{ profile: 'acceptance', points: [{ x: 10_000, y: 4 }, { x: 20_000, y: 5.5 }, { x: 30_000, y: 6 }] }]);
});

test('the tooltip stays whole inside the window: beside its point, on its left at the right edge, below it at the top', () => {
  const view = { width: 1000, height: 600 };
  const tip = { width: 240, height: 70 };
  assert.deepEqual(placeTip({ left: 300, top: 300, width: 14, height: 14 }, tip, view), { left: 318, top: 226 });
  const right = placeTip({ left: 980, top: 300, width: 14, height: 14 }, tip, view);
  assert.ok(right.left + tip.width <= view.width - 2 && right.left + tip.width <= 980, `left of a point at the right edge: ${JSON.stringify(right)}`);
  const top = placeTip({ left: 300, top: 10, width: 14, height: 14 }, tip, view);
  assert.ok(top.top >= 24, `below a point at the top: ${JSON.stringify(top)}`);
  const huge = placeTip({ left: 10, top: 10, width: 14, height: 14 }, { width: 2000, height: 900 }, view);
  assert.deepEqual(huge, { left: 2, top: 2 }, 'larger than the window: from its top-left corner');
});

test('y padding: room at both ends, never across zero', () => {
  assert.deepEqual(padRange(1, 3, 0.05), { min: 0.9, max: 3.1 });
  assert.deepEqual(padRange(7.5e-7, 1.5e-4, 0.06), { min: 0, max: 1.5e-4 + (1.5e-4 - 7.5e-7) * 0.06 }, 'a learning rate: no negative ticks');
  assert.deepEqual(padRange(-3, -1, 0.5), { min: -4, max: 0 });
  assert.deepEqual(padRange(2, 2, 0.1), { min: 1.8, max: 2.2 }, 'flat: a fraction of the value');
  assert.deepEqual(padRange(0, 0, 0.1), { min: 0, max: 0.1 });
});

test('relative time counts from the run\'s start, also when a zoom sent only later points (the header says where it starts)', () => {
  const metrics = new RunMetrics('line');
  const lines = Array.from({ length: 400 }, (_, i) => JSON.stringify({ step: (i + 1) * 10, loss: 2 - i / 1000, time: 1_700_000_000 + (i + 1) * 5 }));
  new JsonlParser(metrics).push(new TextEncoder().encode(lines.join('\n') + '\n'));
  const p = new MetricsPresenter({ plateau: () => ({ window: 1000, fraction: 0.01 }), now: () => 0 });
  p.addRun({ hostName: 'h', target: { kind: 'host', id: '' }, runPath: '/r', runName: 'r', metrics: ['/r/train.jsonl'], checkpoints: [] }, 'primary', {
    series: () => metrics.series, get revision() { return metrics.revision; }, status: 'following', skipped: undefined, badLines: 0, latestStep: () => 4000,
  });
  p.setView(300, { xMin: 2000, xMax: 3000 }, 0, []);
  const snap = p.snapshot('panel', 'r')!;
  assert.equal(snap.runs[0]!.startTime, 1_700_000_005_000, 'the first time of the log');
  const store = new MetricsStore();
  store.apply(snap);
  const run = store.runs[0]!;
  assert.ok(run.series.get('loss')!.x[0]! >= 1990, 'the zoom sent only its own points');
  // Step 2000 is 199 lines of 5 s after the first: 995 s, not 0.
  assert.equal(store.xOfStep(run, 'loss', 2000, 'relative'), 995_000);
  assert.equal(store.points(run, 'loss', 'raw', 'relative', false).find((pt) => pt.x === 995_000)?.y, Number((2 - 199 / 1000).toFixed(3)));
});
