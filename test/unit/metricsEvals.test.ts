/** Evals in a metrics view: the presenter carries each run's evals into snapshots and `evals` messages; the boundary accepts the new messages. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MetricsPresenter, type FeedView } from '../../src/extension/metrics/presenter';
import { parseFromWebview } from '../../src/extension/metrics/validate';
import type { EvalPointWire, RunRefWire } from '../../src/shared/metricsProtocol';
import { runKeyOf } from '../../src/core/runRef';

const ref = (name: string): RunRefWire => ({ hostName: 'box', target: { kind: 'host', id: '' }, runPath: `/runs/${name}`, runName: name, metrics: [], checkpoints: [] });
/** A feed with no metrics yet (the presenter only reads it). */
const quietFeed = (): FeedView => ({ series: () => new Map(), revision: 0, status: 'following', skipped: undefined, badLines: 0, latestStep: () => undefined });
const point = (step: number, values: Record<string, number>): EvalPointWire => ({ id: `e${step}`, step, profile: 'acc', checkpoint: `step_${step}`, startedAt: 1, state: 'passed', values });

function presenter(): MetricsPresenter {
  return new MetricsPresenter({ plateau: () => ({ window: 10, fraction: 0.01 }), now: () => 0 });
}

test('a run\'s evals go into the snapshot, and a change is one evals message for that run', () => {
  const p = presenter();
  const a = runKeyOf(ref('a'));
  p.addRun(ref('a'), 'primary', quietFeed());
  p.addRun(ref('b'), 'compare', quietFeed());
  assert.deepEqual(p.snapshot('panel', 't')!.runs.map((r) => r.evals), [[], []]);
  const msg = p.setEvals(a, [point(2000, { acceptance_length: 6.4 })]);
  assert.deepEqual(msg, { type: 'evals', runKey: a, evals: [point(2000, { acceptance_length: 6.4 })] });
  assert.equal(p.setEvals(a, [point(2000, { acceptance_length: 6.4 })]), undefined, 'the same list again sends nothing');
  assert.deepEqual(p.snapshot('panel', 't')!.runs.map((r) => r.evals.length), [1, 0]);
  assert.equal(p.setEvals('not-shown', [point(1, { x: 1 })]), undefined);
});

test('removing a run forgets its evals', () => {
  const p = presenter();
  const b = runKeyOf(ref('b'));
  p.addRun(ref('a'), 'primary', quietFeed());
  p.addRun(ref('b'), 'compare', quietFeed());
  p.setEvals(b, [point(1, { x: 1 })]);
  p.removeRun(b);
  assert.deepEqual(p.evalsOf(b), []);
  p.addRun(ref('b'), 'compare', quietFeed());
  assert.ok(p.setEvals(b, [point(1, { x: 1 })]), 'sent again to a view that lost them');
});

test('boundary: showEvalTable from the metrics page; copyEvalTable as csv or markdown from the eval table page', () => {
  assert.deepEqual(parseFromWebview({ type: 'showEvalTable', extra: 1 }), { type: 'showEvalTable' });
  assert.deepEqual(parseFromWebview({ type: 'copyEvalTable', format: 'csv' }), { type: 'copyEvalTable', format: 'csv' });
  assert.deepEqual(parseFromWebview({ type: 'copyEvalTable', format: 'markdown', x: 'y' }), { type: 'copyEvalTable', format: 'markdown' });
  for (const bad of [{ type: 'copyEvalTable' }, { type: 'copyEvalTable', format: 'html' }, { type: 'copyEvalTable', format: ['csv'] }]) {
    assert.equal(parseFromWebview(bad), undefined, JSON.stringify(bad));
  }
});
