/** The eval text on a checkpoint in the tree. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkpointEvalText, evalStateText, formatResult } from '../../src/extension/eval/decoration';
import type { EvalRecord } from '../../src/core/eval/types';

function record(over: Partial<EvalRecord>): EvalRecord {
  const base = {
    id: 'x',
    profile: 'acceptance',
    checkpointPath: '/w/checkpoints/step_200',
    step: 200,
    startedAt: 1000,
    state: 'running' as const,
    results: [],
    resultsRecorded: false,
    stopped: false,
    logBytes: 0,
    dir: '/w/.remote-runs/evals/x',
  };
  return { ...base, meta: {} as EvalRecord['meta'], ...over };
}

describe('evalStateText', () => {
  test('each state in its own words', () => {
    assert.equal(evalStateText(record({ state: 'running' })), 'eval: running');
    assert.equal(evalStateText(record({ state: 'pending' })), 'eval: pending');
    assert.equal(evalStateText(record({ state: 'passed', exitCode: 0, results: [{ a: 1 }, { acceptance_length: 6.4123456 }] })), 'eval ✓ acceptance_length=6.412');
    assert.equal(evalStateText(record({ state: 'passed', exitCode: 0 })), 'eval ✓');
    assert.equal(evalStateText(record({ state: 'failed', exitCode: 7 })), 'eval ✗ exit 7');
    assert.equal(evalStateText(record({ state: 'failed', exitCode: 143, stopped: true })), 'eval ✗ stopped');
    assert.equal(evalStateText(record({ state: 'lost' })), 'eval ✗ lost');
  });
  test('a Slurm eval: pending in the queue and running name the job; a job the scheduler ended says how', () => {
    const slurm = { jobId: '42', state: 'PENDING' };
    assert.equal(evalStateText(record({ state: 'pending', slurm })), 'eval: pending in the queue (Slurm job 42)');
    assert.equal(evalStateText(record({ state: 'running', slurm: { jobId: '42', state: 'RUNNING' } })), 'eval: running (Slurm job 42)');
    assert.equal(evalStateText(record({ state: 'passed', exitCode: 0, slurm: { jobId: '42', state: 'COMPLETED' }, results: [{ a: 1 }] })), 'eval ✓ a=1');
    assert.equal(evalStateText(record({ state: 'failed', slurm: { jobId: '42', state: 'OUT_OF_MEMORY' } })), 'eval ✗ out of memory');
    assert.equal(evalStateText(record({ state: 'failed', exitCode: 2, slurm: { jobId: '42', state: 'FAILED' } })), 'eval ✗ exit 2');
  });
  test('integers stay whole; several metrics in order', () => {
    assert.equal(formatResult({ tokens_per_s: 812, acc: 0.123456 }), 'tokens_per_s=812 acc=0.1235');
  });
});

describe('checkpointEvalText', () => {
  test('only evals of this checkpoint; the newest per profile; no evals → undefined', () => {
    const recs = [
      record({ id: 'old', startedAt: 1, state: 'failed', exitCode: 1 }),
      record({ id: 'new', startedAt: 2, state: 'passed', exitCode: 0, results: [{ acceptance_length: 6.4 }] }),
      record({ id: 'other', checkpointPath: '/w/checkpoints/step_100', state: 'running' }),
    ];
    assert.equal(checkpointEvalText(recs, '/w/checkpoints/step_200'), 'eval ✓ acceptance_length=6.4');
    assert.equal(checkpointEvalText(recs, '/w/checkpoints/step_100'), 'eval: running');
    assert.equal(checkpointEvalText(recs, '/w/checkpoints/step_300'), undefined);
  });
  test('several profiles are named, running first', () => {
    const recs = [
      record({ profile: 'ppl', startedAt: 5, state: 'failed', exitCode: 7 }),
      record({ profile: 'acceptance', startedAt: 3, state: 'running' }),
    ];
    assert.equal(checkpointEvalText(recs, '/w/checkpoints/step_200'), 'eval acceptance: running · eval ppl ✗ exit 7');
  });
});
