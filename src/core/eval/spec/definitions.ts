/**
 * The quantities of a speculative-decoding eval, each defined once: τ (acceptance length), acceptance rate,
 * per-position acceptance p_k, rates from Prometheus counters, output tokens/s and speedup. Every reader in this
 * folder computes its numbers through these, so one tool's τ means what another's does, and a result says which
 * definition of τ it carries (TauDefinition).
 *
 * Terms, as the engines use them:
 * - a **verify step** (vLLM: a "draft", SGLang: a "verify", EAGLE: one pass of `eagenerate`'s loop) is one forward
 *   of the target model over the proposed draft tokens;
 * - **accepted draft tokens** of a step are the proposed tokens the target model agreed with (0 … K);
 * - the **bonus token** is the one token the target model samples itself at the end of every step (after the
 *   accepted prefix); so a step emits accepted + 1 tokens.
 *
 * Pure functions: no I/O, no vscode.
 */

/**
 * Which definition a τ was computed with. All of them count the bonus token (τ ≥ 1); they differ in what is divided
 * by what, so two τ of different definitions are close but not equal.
 *
 * - `completion-per-verify`: completion tokens / verify steps, from the per-request `meta_info` of SGLang
 *   (`completion_tokens / spec_verify_ct`): SpecForge's benchmarks/benchmarker/utils.py `compute_metrics`, SGLang's
 *   own test_eagle_infer.py `_test_acc_length`. The completion counts the first token, sampled by the prefill and
 *   not by a verify step, so this is 1 + accepted/steps + requests/steps: a little above the next one on short
 *   answers.
 * - `one-plus-accepted-per-draft`: 1 + accepted draft tokens / verify steps (a step of one request). vLLM's "mean
 *   acceptance length" (vllm/v1/spec_decode/metrics.py `SpecDecodingLogging.log`, `compute_acceptance_len`;
 *   examples/offline_inference/spec_decode.py), aiperf's `mean_acceptance_length`
 *   (src/aiperf/common/models/spec_decode_models.py `SpecDecodeAcceptanceRecord`), and SGLang's server-side
 *   `avg_spec_accept_length` (python/sglang/srt/managers/scheduler.py: per decode batch
 *   `spec_num_total_accepted_tokens += num_accepted_tokens + bs`, `spec_num_total_forward_ct += bs`;
 *   `get_internal_state` divides their running sums), which python/sglang/bench_serving.py reads from
 *   `/get_server_info` as its `accept_length`.
 * - `eagle-new-tokens-per-verify`: Σ new_tokens / Σ (idx + 1) over an EAGLE answer file. EAGLE's `eagenerate`
 *   (eagle/model/ea_model.py) adds accept_length + 1 to `new_token` per loop pass (eagle/model/utils.py
 *   `update_inference_inputs`: `new_token += accept_length + 1`) and returns the loop index `idx` it stopped at,
 *   so a turn took idx + 1 verify steps.
 * - `eagle-new-tokens-per-idx`: Σ new_tokens / Σ idx, the ratio as commonly computed from EAGLE's answer files;
 *   it divides by one step fewer per turn than were run, so it is above the previous one (by τ/idx per turn).
 * - `accepted-per-step-plus-one`: a tool's "accepted tokens per step" that leaves the bonus token out, plus one
 *   (tauFromAcceptedPerStep).
 */
export type TauDefinition =
  | 'completion-per-verify'
  | 'one-plus-accepted-per-draft'
  | 'eagle-new-tokens-per-verify'
  | 'eagle-new-tokens-per-idx'
  | 'accepted-per-step-plus-one';

/** One line per definition, for the card and the docs. */
export const TAU_DEFINITION_TEXT: Readonly<Record<TauDefinition, string>> = {
  'completion-per-verify': 'completion tokens / verify steps (bonus token counted; SGLang meta_info, SpecForge accept_length)',
  'one-plus-accepted-per-draft': '1 + accepted draft tokens / verify steps (bonus token counted; vLLM, aiperf, SGLang server accept length)',
  'eagle-new-tokens-per-verify': 'Σ new_tokens / Σ (idx + 1) (bonus token counted; EAGLE answer file)',
  'eagle-new-tokens-per-idx': 'Σ new_tokens / Σ idx (bonus token counted, one verify step per turn left out; EAGLE answer file)',
  'accepted-per-step-plus-one': '1 + accepted draft tokens per step (a tool that leaves the bonus token out)',
};

function ratio(num: number, den: number, what: string): number | undefined {
  if (!Number.isFinite(num) || !Number.isFinite(den) || num < 0 || den < 0) throw new RangeError(`${what}: counts must be finite and non-negative (got ${num} / ${den})`);
  return den === 0 ? undefined : num / den;
}

/**
 * τ = completion tokens / verify steps (TauDefinition `completion-per-verify`). Undefined when no verify step ran
 * (speculation off: SGLang omits `spec_verify_ct`, and SpecForge then writes 1.0 by its own rule).
 */
export function tauFromCompletion(completionTokens: number, verifySteps: number): number | undefined {
  return ratio(completionTokens, verifySteps, 'τ from completion tokens');
}

/**
 * τ = 1 + accepted draft tokens / verify steps (TauDefinition `one-plus-accepted-per-draft`): vLLM's counters
 * `spec_decode_num_accepted_tokens` / `spec_decode_num_drafts` (one draft = one verify step of one request).
 */
export function tauFromAccepted(acceptedDraftTokens: number, verifySteps: number): number | undefined {
  const a = ratio(acceptedDraftTokens, verifySteps, 'τ from accepted tokens');
  return a === undefined ? undefined : 1 + a;
}

/** τ from a tool's "accepted tokens per step" that does not count the bonus token: τ = a + 1. */
export function tauFromAcceptedPerStep(acceptedPerStep: number): number {
  if (!Number.isFinite(acceptedPerStep) || acceptedPerStep < 0) throw new RangeError(`accepted tokens per step must be finite and ≥ 0 (got ${acceptedPerStep})`);
  return acceptedPerStep + 1;
}

/** The inverse: accepted draft tokens per step (bonus left out) = τ − 1. */
export function acceptedPerStepFromTau(tau: number): number {
  if (!Number.isFinite(tau) || tau < 1) throw new RangeError(`τ counts the bonus token, so it is ≥ 1 (got ${tau})`);
  return tau - 1;
}

/**
 * Acceptance rate = accepted draft tokens / proposed draft tokens, in [0, 1]; the bonus token is in neither.
 * vLLM: `num_accepted_tokens / num_draft_tokens` (vllm/v1/spec_decode/metrics.py); aiperf: `draft_acceptance_rate`;
 * SGLang's `spec_accept_rate` gauge ("accepted tokens / total draft tokens", python/sglang/srt/metrics/collector.py).
 */
export function acceptanceRate(acceptedDraftTokens: number, proposedDraftTokens: number): number | undefined {
  const r = ratio(acceptedDraftTokens, proposedDraftTokens, 'acceptance rate');
  if (r !== undefined && r > 1) throw new RangeError(`more draft tokens accepted (${acceptedDraftTokens}) than proposed (${proposedDraftTokens})`);
  return r;
}

/**
 * A histogram of accepted lengths: `h[j]` is the number of verify steps that accepted exactly j draft tokens
 * (j = 0 … K, the bonus token not counted), as aiperf's `acceptance_histogram` / `pooled_spec_decode_acceptance_histogram`
 * ("accepted-draft count j mapped to the number of verification steps that accepted exactly j draft tokens",
 * src/aiperf/common/models/spec_decode_models.py). An array (index j) or a sparse object keyed by j.
 */
export type AcceptHistogram = readonly number[] | Readonly<Record<string | number, number>>;

/** The histogram as a dense array h[0..K]; throws on a negative, fractional or non-integer-keyed bucket. */
export function denseHistogram(h: AcceptHistogram): number[] {
  const out: number[] = [];
  const entries: [string, number][] = Array.isArray(h) ? (h as readonly number[]).map((v, j) => [String(j), v]) : Object.entries(h);
  for (const [key, count] of entries) {
    if (!/^\d+$/.test(key)) throw new RangeError(`histogram key ${JSON.stringify(key)} is not an accepted length (an integer ≥ 0)`);
    if (!Number.isInteger(count) || count < 0) throw new RangeError(`histogram bucket ${key} holds ${count}, not a count`);
    const j = Number(key);
    while (out.length <= j) out.push(0);
    out[j] += count;
  }
  return out;
}

/**
 * Per-position acceptance from a histogram: p_k = Σ_{j≥k} h[j] / Σ_j h[j] for k = 1 … K, the share of verify
 * steps that accepted at least k draft tokens (so p_1 ≥ p_2 ≥ … and p_1 ≤ 1). K is the histogram's last bucket,
 * or `k` when given (positions past the last bucket are 0). Empty when the histogram holds no step.
 */
export function pkFromHistogram(h: AcceptHistogram, k?: number): number[] {
  const dense = denseHistogram(h);
  const total = dense.reduce((s, v) => s + v, 0);
  const K = k ?? Math.max(0, dense.length - 1);
  if (total === 0) return [];
  const out: number[] = [];
  let atLeast = total - (dense[0] ?? 0);
  for (let pos = 1; pos <= K; pos++) {
    out.push(atLeast / total);
    atLeast -= dense[pos] ?? 0;
  }
  return out;
}

/** τ from a histogram: 1 + Σ_j j·h[j] / Σ_j h[j] (= 1 + Σ_k p_k), TauDefinition `one-plus-accepted-per-draft`. */
export function tauFromHistogram(h: AcceptHistogram): number | undefined {
  const dense = denseHistogram(h);
  const steps = dense.reduce((s, v) => s + v, 0);
  const accepted = dense.reduce((s, v, j) => s + j * v, 0);
  return tauFromAccepted(accepted, steps);
}

/**
 * Per-position acceptance from per-position accept counts: p_k = accepted_at[k − 1] / verify steps, where
 * `acceptedAt[i]` counts the steps whose draft token at position i (0-based) was accepted. That is vLLM's
 * `num_accepted_tokens_per_pos` (vllm/v1/spec_decode/metrics.py `SpecDecodingStats.observe_draft`: a step that
 * accepted n tokens adds 1 to positions 0 … n−1) and SGLang's `spec_decode_num_accepted_tokens_per_pos`
 * (python/sglang/srt/metrics/collector.py `increment_spec_decode_counters`, the same rule), so it equals the
 * histogram's p_k. Throws when the counts rise with the position (no such engine count can).
 */
export function pkFromPerPosition(acceptedAt: readonly number[], verifySteps: number): number[] {
  if (!Number.isFinite(verifySteps) || verifySteps < 0) throw new RangeError(`verify steps must be finite and ≥ 0 (got ${verifySteps})`);
  if (verifySteps === 0) return [];
  for (let i = 0; i < acceptedAt.length; i++) {
    const c = acceptedAt[i];
    if (!Number.isFinite(c) || c < 0) throw new RangeError(`accepted count at position ${i} is ${c}, not a count`);
    if (c > verifySteps) throw new RangeError(`position ${i} accepted ${c} times in ${verifySteps} verify steps`);
    if (i > 0 && c > acceptedAt[i - 1]) throw new RangeError(`position ${i} accepted more often (${c}) than position ${i - 1} (${acceptedAt[i - 1]}): not per-position accept counts`);
  }
  return acceptedAt.map((c) => c / verifySteps);
}

/** The histogram that per-position counts imply: h[j] = acceptedAt[j−1] − acceptedAt[j] (h[0] = steps − acceptedAt[0]). */
export function histogramFromPerPosition(acceptedAt: readonly number[], verifySteps: number): number[] {
  pkFromPerPosition(acceptedAt, verifySteps);
  const h: number[] = [];
  for (let j = 0; j <= acceptedAt.length; j++) {
    const atLeastJ = j === 0 ? verifySteps : acceptedAt[j - 1];
    const atLeastNext = j < acceptedAt.length ? acceptedAt[j] : 0;
    h.push(atLeastJ - atLeastNext);
  }
  return h;
}

/** Output tokens per second of wall time. */
export function outputTokensPerSecond(outputTokens: number, seconds: number): number | undefined {
  if (!(seconds > 0)) return undefined;
  return ratio(outputTokens, seconds, 'output tokens per second');
}

/**
 * Speedup = output tokens/s with speculation / output tokens/s of the same target model, prompts and settings with
 * speculation off (EAGLE's eagle/evaluation/speed.py compares the same way: mean tokens/s of the EAGLE answers over
 * the baseline answers'). Undefined without a positive baseline.
 */
export function speedup(specTokensPerSecond: number, baselineTokensPerSecond: number): number | undefined {
  if (!(baselineTokensPerSecond > 0) || !Number.isFinite(specTokensPerSecond)) return undefined;
  return specTokensPerSecond / baselineTokensPerSecond;
}
