/**
 * The demo drafter server's acceptance model (src/demo/specServer.ts): the per-position acceptance solves the demo's
 * τ curve, each request's counts hold together as SGLang's do, and over many prompts τ follows the curve, so
 * checkpoints differ believably (and deterministically: the draws are seeded by the step and the prompt).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEMO_SPEC_K, demoAcceptLength, demoGeneration, newestDrafter, perPositionAcceptance } from '../../src/demo/specServer';
import { numbersFromReplies } from '../../src/core/eval/spec/server/stats';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

test('the per-position acceptance q gives 1 + Σ q^i = τ for τ across the curve, and clamps outside [1, K + 1]', () => {
  for (const step of [0, 2000, 10_000, 22_000, 60_000]) {
    const tau = demoAcceptLength(step);
    const q = perPositionAcceptance(tau, DEMO_SPEC_K);
    let sum = 1;
    for (let i = 1; i <= DEMO_SPEC_K; i++) sum += q ** i;
    assert.ok(Math.abs(sum - tau) < 1e-9, `step ${step}: ${sum} vs ${tau}`);
  }
  assert.equal(perPositionAcceptance(0.5, 5) < 1e-9, true);
  assert.equal(perPositionAcceptance(9, 5) > 1 - 1e-9, true);
});

test("a request's counts hold together: every token but the prefill's comes from a verify step, the histogram counts the steps, and p_k does not rise", () => {
  for (let i = 0; i < 50; i++) {
    const t = demoGeneration(12_000, `prompt ${i}`, 128);
    assert.ok(t.completionTokens >= 1 && t.completionTokens <= 128);
    assert.equal(t.completionTokens, 1 + t.steps + t.accepted, 'prefill token + one bonus token per step + accepted drafts');
    assert.equal(t.histogram.reduce((a, b) => a + b, 0), t.steps);
    assert.equal(t.drafted, t.steps * DEMO_SPEC_K);
    for (let k = 1; k < t.perPos.length; k++) assert.ok(t.perPos[k] <= t.perPos[k - 1]);
    assert.deepEqual(demoGeneration(12_000, `prompt ${i}`, 128), t, 'the same drafter and prompt: the same draws');
  }
});

test('over many prompts τ follows the curve, so a later checkpoint measures higher', () => {
  const measured = (step: number): number => {
    const replies = Array.from({ length: 400 }, (_, i) => {
      const t = demoGeneration(step, `prompt ${i}`, 1000);
      return { completionTokens: t.completionTokens, spec: { source: 'sglang-spec-details' as const, verifySteps: t.steps, acceptedDraftTokens: t.accepted, draftTokens: t.drafted, histogram: t.histogram } };
    });
    // 1 + accepted / steps, the τ the curve gives (SGLang's own adds the prefill token: a little higher).
    const n = numbersFromReplies(replies as Parameters<typeof numbersFromReplies>[0]);
    return Number(n.extra.tau_one_plus_accepted ?? 0);
  };
  const early = measured(2000);
  const late = measured(30_000);
  assert.ok(Math.abs(early - demoAcceptLength(2000)) < 0.08, `${early} vs ${demoAcceptLength(2000)}`);
  assert.ok(Math.abs(late - demoAcceptLength(30_000)) < 0.08, `${late} vs ${demoAcceptLength(30_000)}`);
  assert.ok(late > early + 1);
});

test('the served drafter is the newest step folder holding its checkpoint.pt, named as the demo host sees it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-drafter-'));
  try {
    assert.equal(newestDrafter(path.join(dir, 'missing'), '/c'), undefined);
    assert.equal(newestDrafter(dir, '/c'), undefined);
    for (const s of [2000, 4000, 10000]) {
      fs.mkdirSync(path.join(dir, `step_${s}`));
      fs.writeFileSync(path.join(dir, `step_${s}`, 'checkpoint.pt'), '');
    }
    fs.mkdirSync(path.join(dir, 'step_12000')); // being written: no checkpoint.pt yet
    fs.mkdirSync(path.join(dir, 'other'));
    assert.deepEqual(newestDrafter(dir, '/c'), { path: '/c/step_10000', step: 10000 });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
