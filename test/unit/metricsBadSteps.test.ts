/**
 * A step no axis can hold (NaN, ±Infinity as Python's json writes them, a number past 2^53 that is not exact) makes
 * its line a bad line, counted and located like any other, in every text format: JSONL (both paths), CSV and
 * trainer_state.json. Before, such a line was plotted at the previous line's x, or at an inexact step, silently.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, RunMetrics, type MetricsParser } from '../../src/core/metrics';
import { parseTrainerState } from '../../src/core/metrics/formats/trainerState';
import { stepProblem } from '../../src/core/metrics/formats/fields';

const enc = new TextEncoder();

function parse(kind: 'jsonl' | 'csv', text: string): MetricsParser {
  const p = createParser(kind);
  p.push(enc.encode(text));
  p.end();
  return p;
}

const BAD_STEPS = ['NaN', 'Infinity', '-Infinity', '1e400', '9007199254740993', '1e20', '-1e17'];

test('JSONL: a line whose step is NaN, ±Infinity or past 2^53 is a bad line; its values are not plotted elsewhere', () => {
  for (const bad of BAD_STEPS) {
    const text = `{"step":1,"loss":0.5}\n{"step":${bad},"loss":0.4}\n{"step":3,"loss":0.3}\n`;
    const m = parse('jsonl', text).metrics;
    assert.equal(m.badLines, 1, bad);
    assert.equal(m.firstBadLine?.line, 2, bad);
    assert.equal(m.firstBadLine?.byteOffset, '{"step":1,"loss":0.5}\n'.length, bad);
    assert.match(m.firstBadLine!.reason, /^step is /, bad);
    const s = m.get('loss')!;
    assert.deepEqual([s.xAt(0), s.xAt(1)], [1, 3], bad);
    assert.equal(s.length, 2, bad);
  }
});

test('JSONL: a step written as text spelling NaN is bad too; a negative or fractional step is a real x', () => {
  const m = parse('jsonl', '{"step":"nan","loss":1}\n{"step":-5,"loss":2}\n{"epoch":0.5,"acc":0.1}\n').metrics;
  assert.equal(m.badLines, 1);
  assert.equal(m.get('loss')!.xAt(0), -5);
  assert.equal(stepProblem(-5), undefined);
  assert.equal(stepProblem(2 ** 53 - 1), undefined);
  assert.match(stepProblem(2 ** 53 + 2)!, /past 2\^53/);
});

test('CSV: a step cell of inf, NaN or past 2^53 is a bad line, said with its row', () => {
  for (const bad of ['inf', 'NaN', '-Infinity', '1e400', '1e20']) {
    const m = parse('csv', `step,loss\n1,0.5\n${bad},0.4\n3,0.3\n`).metrics;
    assert.equal(m.badLines, 1, bad);
    assert.equal(m.firstBadLine?.line, 3, bad);
    assert.match(m.firstBadLine!.reason, /^step is /, bad);
    assert.deepEqual([...Array(m.get('loss')!.length)].map((_, i) => m.get('loss')!.xAt(i)), [1, 3], bad);
  }
});

test('trainer_state.json: a log_history entry with a NaN or inexact step is a bad line', () => {
  const text = '{"log_history": [{"step": 1, "loss": 2.0}, {"step": NaN, "loss": 1.9}, {"step": 1e20, "loss": 1.8}, {"step": 3, "loss": 1.7}]}';
  const m = new RunMetrics();
  parseTrainerState(text, m);
  assert.equal(m.badLines, 2);
  assert.equal(m.firstBadLine?.line, 2);
  assert.equal(m.get('loss')!.length, 2);
});
