/** The hub between eval listings and their viewers (chart points, the eval table). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvalResultsHub, toEvalPoints } from '../../src/extension/eval/resultsHub';
import type { EvalRecord, EvalRunRef } from '../../src/core/eval/types';
import type { EvalPointWire, RunRefWire } from '../../src/shared/metricsProtocol';

const runRef: RunRefWire = { hostName: 'box', target: { kind: 'pct', id: '200' }, runPath: '/workspace', runName: 'workspace', metrics: [], checkpoints: [] };
const evalRun: EvalRunRef = { host: 'box', target: { kind: 'pct', id: '200' }, run: { name: 'workspace', path: '/workspace' } };

function record(step: number, results: EvalRecord['results'], over: Partial<EvalRecord> = {}): EvalRecord {
  return {
    id: `e${step}`, profile: 'acceptance', checkpointPath: `/workspace/checkpoints/step_${step}/`, step, startedAt: step, state: 'passed',
    results, resultsRecorded: true, stopped: false, logBytes: 1, dir: '/x', meta: {} as EvalRecord['meta'], ...over,
  };
}

test('records become chart points in step order, with each metric\'s last value and the checkpoint\'s name', () => {
  assert.deepEqual(toEvalPoints([record(2000, [{ a: 1 }, { a: 2, b: 3 }]), record(1000, [], { state: 'running' })]), [
    { id: 'e1000', profile: 'acceptance', step: 1000, checkpoint: 'step_1000', startedAt: 1000, state: 'running', values: {} },
    { id: 'e2000', profile: 'acceptance', step: 2000, checkpoint: 'step_2000', startedAt: 2000, state: 'passed', values: { a: 2, b: 3 } },
  ]);
});

test('watching an unlisted run asks for a listing; a publish reaches every watcher of that run only', () => {
  const hub = new EvalResultsHub();
  const asked: EvalRunRef[] = [];
  hub.onDidRequest((r) => asked.push(r));
  const seen: EvalPointWire[][] = [];
  const sub = hub.watch(runRef, (points) => seen.push(points));
  assert.deepEqual(asked, [evalRun], 'the metrics view\'s run is asked for');
  const other: string[] = [];
  hub.watchRecords({ ...evalRun, run: { name: 'other', path: '/other' } }, () => other.push('x'));
  hub.publish(evalRun, [record(2000, [{ acceptance_length: 6.4 }])]);
  assert.deepEqual(seen.map((p) => p.map((e) => e.values)), [[{ acceptance_length: 6.4 }]]);
  assert.deepEqual(other, []);
  assert.equal(hub.watchedRuns().length, 2);
  sub.dispose();
  hub.publish(evalRun, []);
  assert.equal(seen.length, 1, 'a disposed watcher hears nothing more');
  assert.equal(hub.watchedRuns().length, 1);
});

test('a run already listed is handed over at once, without another listing', () => {
  const hub = new EvalResultsHub();
  hub.publish(evalRun, [record(1, [{ x: 1 }])]);
  const asked: EvalRunRef[] = [];
  hub.onDidRequest((r) => asked.push(r));
  let got: readonly EvalRecord[] | undefined;
  hub.watchRecords(evalRun, (r) => (got = r));
  assert.equal(got?.length, 1);
  assert.deepEqual(asked, []);
});

test('relist asks for a listing of a run already known (the card\'s Refresh), and its watchers get the new one', () => {
  const hub = new EvalResultsHub();
  hub.publish(evalRun, [record(1, [{ x: 1 }])]);
  const asked: EvalRunRef[] = [];
  hub.onDidRequest((r) => asked.push(r));
  const got: number[] = [];
  hub.watchRecords(evalRun, (r) => got.push(r.length));
  hub.relist(evalRun);
  assert.deepEqual(asked, [evalRun]);
  hub.publish(evalRun, [record(1, [{ x: 1 }]), record(2, [{ x: 2 }])]);
  assert.deepEqual(got, [1, 2]);
});
