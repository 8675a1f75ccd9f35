/** Hugging Face trainer_state.json: whole-file parse of log_history, replacing earlier data on each re-read. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, RunMetrics, type MetricsParser } from '../../src/core/metrics';

const enc = new TextEncoder();

/** What transformers' Trainer writes (trimmed): train entries, eval entries, and the final summary entry. */
function trainerState(steps: number[], opts: { nanAt?: number } = {}): string {
  const log_history: Array<Record<string, number>> = [];
  for (const step of steps) {
    log_history.push({ epoch: step / 100, grad_norm: 1.5, learning_rate: 5e-5 * (1 - step / 1000), loss: step === opts.nanAt ? NaN : 2 - step / 1000, step });
    if (step % 200 === 0) log_history.push({ epoch: step / 100, eval_loss: 2.1 - step / 1000, eval_runtime: 3.2, step });
  }
  log_history.push({ epoch: 3, step: steps[steps.length - 1], total_flos: 1.2e15, train_loss: 1.7, train_runtime: 100 });
  // JSON.stringify writes null for NaN; Python writes a bare NaN, which is what the parser must survive.
  return JSON.stringify({ best_metric: null, global_step: steps[steps.length - 1], log_history }, null, 2).replace(/"loss": null/g, '"loss": NaN');
}

function parse(text: string, into?: RunMetrics): MetricsParser {
  const p = createParser('trainer-state', into);
  const bytes = enc.encode(text);
  // Chunks as they come off the wire; nothing is parsed until end().
  for (let i = 0; i < bytes.length; i += 7) p.push(bytes.subarray(i, i + 7));
  assert.equal(p.metrics.get('loss'), into?.get('loss'), 'no partial parse before end()');
  p.end();
  return p;
}

test('log_history entries become series against their step', () => {
  const m = parse(trainerState([100, 200, 300, 400])).metrics;
  assert.deepEqual([...m.get('loss')!.x], [100, 200, 300, 400]);
  assert.deepEqual([...m.get('loss')!.y], [1.9, 1.8, 1.7, 1.6]);
  assert.deepEqual([...m.get('eval_loss')!.x], [200, 400]);
  assert.deepEqual([...m.get('eval_loss')!.y], [1.9, 1.7], '2.1 - 0.2 and 2.1 - 0.4, as float32 holds them');
  assert.ok(m.has('learning_rate') && m.has('epoch') && m.has('grad_norm') && m.has('train_runtime'));
  assert.equal(m.has('step'), false);
  assert.equal(m.unit, 'entry');
  assert.equal(m.badLines + m.badValues, 0);
});

test('a bare NaN (Python json.dump) skips that value only', () => {
  const m = parse(trainerState([100, 200, 300], { nanAt: 200 })).metrics;
  assert.deepEqual([...m.get('loss')!.x], [100, 300]);
  assert.equal(m.badValues, 1);
  assert.equal(m.firstBadValue?.key, 'loss');
  assert.equal(m.firstBadValue?.line, 2, 'the second log_history entry');
});

test('re-reading the rewritten file replaces the data instead of appending to it', () => {
  const m = new RunMetrics('entry');
  parse(trainerState([100, 200]), m);
  parse(trainerState([100, 200, 300, 400]), m);
  assert.deepEqual([...m.get('loss')!.x], [100, 200, 300, 400]);
  assert.equal(m.get('loss')!.segments.length, 1);
});

test('a file caught mid-rewrite keeps the previous data and says why', () => {
  const m = new RunMetrics('entry');
  parse(trainerState([100, 200]), m);
  const full = trainerState([100, 200, 300]);
  parse(full.slice(0, full.length / 2), m);
  assert.deepEqual([...m.get('loss')!.x], [100, 200]);
  assert.equal(m.badLines, 1);
  assert.match(m.firstBadLine!.reason, /not JSON/);
  parse('{"global_step": 3}', m);
  assert.equal(m.badLines, 2);
  assert.equal(m.get('loss')!.length, 2);
});

test('an entry that is not an object is skipped and counted', () => {
  const m = parse('{"log_history": [{"step": 1, "loss": 1}, 5, {"step": 2, "loss": 0.5}]}').metrics;
  assert.deepEqual([...m.get('loss')!.y], [1, 0.5]);
  assert.equal(m.badLines, 1);
  assert.equal(m.firstBadLine?.line, 2);
});
