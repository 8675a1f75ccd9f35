/** The definitions of speculative-decoding evals: τ with and without the bonus token, acceptance rate, p_k, counters. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import {
  acceptanceRate,
  acceptedPerStepFromTau,
  denseHistogram,
  histogramFromPerPosition,
  outputTokensPerSecond,
  pkFromHistogram,
  pkFromPerPosition,
  speedup,
  tauFromAccepted,
  tauFromAcceptedPerStep,
  tauFromCompletion,
  tauFromHistogram,
} from '../../src/core/eval/spec/definitions';
import { diffCounters, parsePrometheusText, ratesFromCounters, readSpecCounters } from '../../src/core/eval/spec/counters';
import { RemoteRunsError } from '../../src/core/types';

const FIX = join(__dirname, '..', 'fixtures', 'spec');
const fixture = (name: string) => readFileSync(join(FIX, name), 'utf8');
const close = (a: number | undefined, b: number, eps = 1e-12) => assert.ok(a !== undefined && Math.abs(a - b) <= eps, `${a} ≉ ${b}`);

test('τ counts the bonus token: completion / verify steps, 1 + accepted / steps', () => {
  // One request, 4 verify steps accepting 3, 0, 2, 4 draft tokens: 13 tokens emitted (each step + 1).
  close(tauFromAccepted(3 + 0 + 2 + 4, 4), 1 + 9 / 4);
  close(tauFromCompletion(13, 4), 13 / 4);
  // SGLang's completion also counts the prefill's first token: one more token, same steps.
  close(tauFromCompletion(14, 4), 3.5);
  assert.equal(tauFromCompletion(512, 0), undefined, 'no verify step: speculation off, no τ');
  assert.equal(tauFromAccepted(0, 0), undefined);
  assert.throws(() => tauFromAccepted(-1, 3), RangeError);
});

test('a tool that reports accepted tokens per step without the bonus converts with +1, and back with −1', () => {
  assert.equal(tauFromAcceptedPerStep(1.75), 2.75);
  assert.equal(tauFromAcceptedPerStep(0), 1);
  assert.equal(acceptedPerStepFromTau(2.75), 1.75);
  assert.throws(() => acceptedPerStepFromTau(0.9), /≥ 1/);
  assert.throws(() => tauFromAcceptedPerStep(-0.1), RangeError);
  fc.assert(fc.property(fc.double({ min: 0, max: 64, noNaN: true }), (a) => Math.abs(acceptedPerStepFromTau(tauFromAcceptedPerStep(a)) - a) < 1e-12));
});

test('acceptance rate is accepted / proposed draft tokens, never above 1', () => {
  assert.equal(acceptanceRate(36, 64), 0.5625);
  assert.equal(acceptanceRate(0, 0), undefined);
  assert.throws(() => acceptanceRate(65, 64), /more draft tokens accepted/);
});

test('histogram → p_k: the share of steps that accepted at least k tokens (aiperf worked example)', () => {
  // aiperf's pooled histogram {0:2,1:3,2:2,3:3,4:1}: 11 steps.
  const h = { '0': 2, '1': 3, '2': 2, '3': 3, '4': 1 };
  assert.deepEqual(pkFromHistogram(h), [9 / 11, 6 / 11, 4 / 11, 1 / 11]);
  assert.deepEqual(pkFromHistogram([2, 3, 2, 3, 1]), [9 / 11, 6 / 11, 4 / 11, 1 / 11], 'array and sparse object agree');
  assert.deepEqual(pkFromHistogram({ '0': 5 }, 3), [0, 0, 0], 'K from the caller: positions past the last bucket are 0');
  assert.deepEqual(pkFromHistogram({ '4': 1 }), [1, 1, 1, 1], 'sparse buckets');
  assert.deepEqual(pkFromHistogram({}), []);
  close(tauFromHistogram(h), 1 + (3 + 4 + 9 + 4) / 11);
  assert.throws(() => denseHistogram({ a: 1 }), /not an accepted length/);
  assert.throws(() => denseHistogram({ '1': -2 }), /not a count/);
  assert.throws(() => denseHistogram([1.5]), /not a count/);
});

test('per-position counts → p_k, and the histogram they imply', () => {
  // vLLM observe_draft: steps accepting 2, 0, 3, 1 of K = 3 add 1 at positions 0..n−1.
  const perPos = [3, 2, 1];
  assert.deepEqual(pkFromPerPosition(perPos, 4), [0.75, 0.5, 0.25]);
  assert.deepEqual(histogramFromPerPosition(perPos, 4), [1, 1, 1, 1]);
  assert.deepEqual(pkFromHistogram(histogramFromPerPosition(perPos, 4)), pkFromPerPosition(perPos, 4));
  assert.deepEqual(pkFromPerPosition([1, 0], 0), []);
  assert.throws(() => pkFromPerPosition([1, 2], 4), /more often/);
  assert.throws(() => pkFromPerPosition([5], 4), /accepted 5 times in 4/);
});

test('property: τ ≥ 1, p_1 ≤ 1, p_k non-increasing, τ = 1 + Σ p_k, per-position and histogram agree', () => {
  const steps = fc.array(fc.integer({ min: 0, max: 7 }), { minLength: 1, maxLength: 200 });
  fc.assert(
    fc.property(steps, fc.integer({ min: 0, max: 3 }), (accepted, prefill) => {
      const K = 7;
      const h = new Array(K + 1).fill(0);
      const perPos = new Array(K).fill(0);
      for (const n of accepted) {
        h[n]++;
        for (let i = 0; i < n; i++) perPos[i]++;
      }
      const total = accepted.reduce((a, b) => a + b, 0);
      const tau = tauFromAccepted(total, accepted.length)!;
      assert.ok(tau >= 1);
      assert.ok(tauFromCompletion(total + accepted.length + prefill, accepted.length)! >= 1);
      const pk = pkFromHistogram(h, K);
      assert.ok(pk[0] <= 1);
      for (let k = 1; k < pk.length; k++) assert.ok(pk[k] <= pk[k - 1]);
      assert.ok(Math.abs(1 + pk.reduce((a, b) => a + b, 0) - tau) < 1e-9);
      const fromPos = pkFromPerPosition(perPos, accepted.length);
      fromPos.forEach((p, i) => assert.ok(Math.abs(p - pk[i]) < 1e-12));
      assert.deepEqual(histogramFromPerPosition(perPos, accepted.length), h);
    }),
  );
});

test('output tokens/s and speedup', () => {
  assert.equal(outputTokensPerSecond(1000, 4), 250);
  assert.equal(outputTokensPerSecond(1000, 0), undefined);
  assert.equal(speedup(250, 100), 2.5);
  assert.equal(speedup(250, 0), undefined);
});

test('Prometheus text: samples with labels, escapes, _total/_created; a broken line is named', () => {
  const { samples, bad } = parsePrometheusText('# HELP x y\n# TYPE a_total counter\na_total{l="q\\"x\\\\",m="2"} 3.0 1700000000\nb NaN\nc +Inf\nbroken{ 1\n\n');
  assert.deepEqual(samples[0], { name: 'a_total', labels: { l: 'q"x\\', m: '2' }, value: 3 });
  assert.ok(Number.isNaN(samples[1].value));
  assert.equal(samples[2].value, Infinity);
  assert.deepEqual(bad, [{ line: 6, text: 'broken{ 1' }]);
});

test('vLLM counters before and after a run: their difference gives the run’s τ, rate and p_k', () => {
  const counts = JSON.parse(fixture('vllm_spec_decode.counts.json')) as { num_drafts: number; num_draft_tokens: number; num_accepted_tokens: number; per_pos: number[] };
  const before = readSpecCounters(fixture('vllm_metrics_before.txt'))!;
  const after = readSpecCounters(fixture('vllm_metrics_after.txt'))!;
  assert.equal(before.engine, 'vllm');
  const d = diffCounters(before, after);
  assert.deepEqual(d, { engine: 'vllm', drafts: counts.num_drafts, draftTokens: counts.num_draft_tokens, acceptedTokens: counts.num_accepted_tokens, acceptedPerPos: counts.per_pos });
  const r = ratesFromCounters(d);
  close(r.tau, 1 + counts.num_accepted_tokens / counts.num_drafts);
  close(r.acceptanceRate, counts.num_accepted_tokens / counts.num_draft_tokens);
  assert.deepEqual(r.pk, counts.per_pos.map((c) => c / counts.num_drafts));
  // Reading only the "after" scrape would count the 1200 drafts before the run too: τ differs.
  assert.notEqual(ratesFromCounters(after).tau, r.tau);
});

test('a counter that went down (the server restarted) is an error, not a negative rate', () => {
  const after = readSpecCounters(fixture('vllm_metrics_after.txt'))!;
  const before = readSpecCounters(fixture('vllm_metrics_before.txt'))!;
  assert.throws(() => diffCounters(after, before), (e: unknown) => e instanceof RemoteRunsError && /restarted/.test(e.message));
});

test('SGLang counters: drafts and per-position accepts summed over ranks; no acceptance rate without a draft-token counter', () => {
  const c = readSpecCounters(fixture('sglang_metrics.txt'))!;
  assert.deepEqual(c, { engine: 'sglang', drafts: 1000, acceptedPerPos: [750, 500, 250, 100], acceptedTokens: 1600 });
  const r = ratesFromCounters(c);
  close(r.tau, 2.6);
  assert.deepEqual(r.pk, [0.75, 0.5, 0.25, 0.1]);
  assert.equal(r.acceptanceRate, undefined);
  assert.deepEqual(readSpecCounters(fixture('sglang_metrics.txt').replaceAll('sglang:spec_decode', 'spec_decode')), c, 'the names without the sglang: prefix are read too');
});

test('a /metrics without speculative counters says so (undefined), whatever else it holds', () => {
  assert.equal(readSpecCounters('# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0"} 1.0\n'), undefined);
  assert.equal(readSpecCounters(''), undefined);
});
