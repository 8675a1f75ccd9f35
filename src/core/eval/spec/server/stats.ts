/**
 * What a server's replies say about speculative decoding, read field by field as each engine writes them, and the
 * result of a whole eval computed from them through definitions.ts (no second formula here).
 *
 * Sources, best first:
 * - vLLM's per-request metrics, `metrics.speculative_decoding` of a completion reply, present when the server runs
 *   with `--per-request-spec-decode-metrics summary` (or `detailed`): vllm/config/observability.py
 *   `ObservabilityConfig.per_request_spec_decode_metrics`; the object is vllm/v1/metrics/stats.py
 *   `RequestSpecDecodeMetrics.to_dict`: `mean_acceptance_length` (1 + accepted / steps), `draft_acceptance_rate`,
 *   `acceptance_histogram` (index = accepted draft tokens of a step, 0 … num_spec_tokens), `num_spec_steps`,
 *   `num_accepted_draft_tokens`, `num_draft_tokens`, `num_spec_tokens`. It sits at the reply's root
 *   (vllm/outputs.py `CompletionOutput.spec_decode_metrics`: "surfaced in the response as
 *   `metrics.speculative_decoding` for single-sequence (n == 1) requests"; aiperf reads it there too,
 *   `extract_spec_decode_stats`), null for n > 1: we send n = 1.
 * - SGLang's `sglext.spec_tokens_details` of a completion reply, present when the request asks
 *   `"return_spec_tokens_details": true`: python/sglang/srt/entrypoints/openai/utils.py
 *   `spec_tokens_details_from_meta_info` copies the request's `meta_info` fields `spec_verify_ct`,
 *   `spec_num_correct_drafts` (accepted draft tokens, bonus not counted), `spec_num_proposed_drafts`,
 *   `spec_correct_drafts_histogram` (index = accepted drafts of a verify step), `spec_accept_length`,
 *   `spec_accept_rate`; for n == 1 it is one object (SGLang's test_serving_completions.py
 *   `test_parallel_sampling_returns_spec_details_per_choice`). The same fields are the `meta_info` of `/generate`.
 * - Otherwise the difference of the server's `/metrics` counters before and after the eval (counters.ts), which
 *   counts every request the server served meanwhile: checked against the server's generation-token counter
 *   (vLLM `vllm:generation_tokens`, vllm/v1/metrics/loggers.py; SGLang `sglang:generation_tokens`,
 *   python/sglang/srt/metrics/collector.py), so another client's traffic is an error, not a wrong τ.
 */
import { RemoteRunsError } from '../../../types';
import { acceptanceRate, denseHistogram, pkFromHistogram, tauFromAccepted, tauFromCompletion } from '../definitions';
import { diffCounters, parsePrometheusText, ratesFromCounters, type SpecCounters } from '../counters';
import { isObject, optNum } from '../readers/common';

/** Which replies the numbers of an eval came from. */
export type StatsSource = 'vllm-per-request' | 'sglang-spec-details' | 'metrics-counters';

export const STATS_SOURCE_TEXT: Readonly<Record<StatsSource, string>> = {
  'vllm-per-request': "vLLM per-request metrics (metrics.speculative_decoding of each reply, --per-request-spec-decode-metrics)",
  'sglang-spec-details': 'SGLang per-request details (sglext.spec_tokens_details of each chat reply, return_spec_tokens_details; meta_info of /generate for plain prompts)',
  'metrics-counters': "the server's /metrics counters before and after the eval (valid only when nobody else used the server meanwhile)",
};

/** The speculative counts of one request, as its reply gives them. */
export interface RequestSpec {
  source: 'vllm-per-request' | 'sglang-spec-details';
  verifySteps: number;
  acceptedDraftTokens: number;
  /** Proposed draft tokens, when the reply says. */
  draftTokens?: number;
  /** h[j]: verify steps that accepted exactly j draft tokens. */
  histogram?: number[];
  /** vLLM's num_spec_tokens (K). */
  numSpecTokens?: number;
  /** The engine's own τ of this request (vLLM mean_acceptance_length, SGLang spec_accept_length). */
  engineTau?: number;
}

/** One reply: its completion tokens and, when it has them, its speculative counts. */
export interface ReplyStats {
  completionTokens: number;
  spec?: RequestSpec;
}

function count(o: Record<string, unknown>, key: string, where: string): number {
  const v = o[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new RemoteRunsError('protocol', `${where}: "${key}" is ${JSON.stringify(v)}, not a count`);
  return v;
}

function histogram(v: unknown, where: string): number[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw new RemoteRunsError('protocol', `${where}: the histogram is ${JSON.stringify(v)}, not a list of counts`);
  try {
    return denseHistogram(v as number[]);
  } catch (e) {
    throw new RemoteRunsError('protocol', `${where}: ${(e as Error).message}`);
  }
}

/**
 * The stats of one completion reply (chat or text completion, or SGLang `/generate`). `usage.completion_tokens` (or
 * `meta_info.completion_tokens` of `/generate`) is required: without it no tokens/s can be told.
 */
export function readReply(body: unknown, where: string): ReplyStats {
  if (!isObject(body)) throw new RemoteRunsError('protocol', `${where}: the reply is not a JSON object`);
  const usage = isObject(body.usage) ? body.usage : undefined;
  const meta = isObject(body.meta_info) ? body.meta_info : undefined;
  const completionTokens = usage ? count(usage, 'completion_tokens', `${where} usage`) : meta ? count(meta, 'completion_tokens', `${where} meta_info`) : undefined;
  if (completionTokens === undefined) throw new RemoteRunsError('protocol', `${where}: the reply has no usage.completion_tokens`);
  const out: ReplyStats = { completionTokens };
  const vllm = isObject(body.metrics) && isObject(body.metrics.speculative_decoding) ? body.metrics.speculative_decoding : undefined;
  if (vllm) {
    const w = `${where} metrics.speculative_decoding`;
    out.spec = {
      source: 'vllm-per-request',
      verifySteps: count(vllm, 'num_spec_steps', w),
      acceptedDraftTokens: count(vllm, 'num_accepted_draft_tokens', w),
      draftTokens: count(vllm, 'num_draft_tokens', w),
      histogram: histogram(vllm.acceptance_histogram, w),
      numSpecTokens: optNum(vllm, 'num_spec_tokens'),
      engineTau: optNum(vllm, 'mean_acceptance_length'),
    };
    return out;
  }
  const sglext = isObject(body.sglext) ? body.sglext : undefined;
  const details = sglext && isObject(sglext.spec_tokens_details) ? sglext.spec_tokens_details : meta && meta.spec_verify_ct !== undefined ? meta : undefined;
  if (details) {
    const w = `${where} ${sglext ? 'sglext.spec_tokens_details' : 'meta_info'}`;
    const verifySteps = count(details, 'spec_verify_ct', w);
    // spec_tokens_details_from_meta_info writes `meta.get(key) or 0` / `or []`: a version without the proposed count
    // or the histogram sends 0 / [] for them, which only means "none" when no verify step ran.
    const proposed = details.spec_num_proposed_drafts === undefined ? undefined : count(details, 'spec_num_proposed_drafts', w);
    const hist = histogram(details.spec_correct_drafts_histogram, w);
    out.spec = {
      source: 'sglang-spec-details',
      verifySteps,
      acceptedDraftTokens: count(details, 'spec_num_correct_drafts', w),
      draftTokens: proposed !== undefined && (proposed > 0 || verifySteps === 0) ? proposed : undefined,
      histogram: hist !== undefined && (hist.length > 0 || verifySteps === 0) ? hist : undefined,
      engineTau: optNum(details, 'spec_accept_length'),
    };
  }
  return out;
}

/** τ, acceptance rate, p_k and the counts behind them, with the τ definition used. */
export interface SpecNumbers {
  source: StatsSource;
  tauDefinition: 'completion-per-verify' | 'one-plus-accepted-per-draft';
  tau?: number;
  acceptanceRate?: number;
  pk?: number[];
  verifySteps: number;
  acceptedDraftTokens?: number;
  draftTokens?: number;
  /** τ under the other definition, when it can be told (SGLang: 1 + accepted / steps beside completion / steps). */
  extra: Record<string, number>;
}

/**
 * The numbers of a run whose every reply carried per-request stats. vLLM: τ = 1 + Σ accepted / Σ steps (its own
 * mean acceptance length), p_k from the summed histogram. SGLang: τ = Σ completion tokens / Σ verify steps (its own
 * accept length, the bonus and the prefill's first token counted), 1 + accepted / steps as `tau_one_plus_accepted`.
 */
export function numbersFromReplies(replies: readonly ReplyStats[]): SpecNumbers {
  const specs = replies.map((r) => r.spec).filter((s): s is RequestSpec => s !== undefined);
  if (specs.length !== replies.length || specs.length === 0) throw new Error('numbersFromReplies needs per-request stats on every reply');
  const source = specs[0].source;
  const steps = specs.reduce((a, s) => a + s.verifySteps, 0);
  const accepted = specs.reduce((a, s) => a + s.acceptedDraftTokens, 0);
  const proposedKnown = specs.every((s) => s.draftTokens !== undefined);
  const proposed = proposedKnown ? specs.reduce((a, s) => a + (s.draftTokens ?? 0), 0) : undefined;
  const hist: number[] = [];
  const histKnown = specs.every((s) => s.histogram !== undefined);
  if (histKnown) for (const s of specs) (s.histogram ?? []).forEach((c, j) => (hist[j] = (hist[j] ?? 0) + c));
  for (let j = 0; j < hist.length; j++) hist[j] ??= 0;
  const k = Math.max(0, ...specs.map((s) => s.numSpecTokens ?? 0));
  const pk = histKnown && hist.length > 0 ? pkFromHistogram(hist, k > 0 ? k : undefined) : undefined;
  const extra: Record<string, number> = {};
  let tau: number | undefined;
  let tauDefinition: SpecNumbers['tauDefinition'];
  if (source === 'sglang-spec-details') {
    tauDefinition = 'completion-per-verify';
    tau = tauFromCompletion(
      replies.reduce((a, r) => a + r.completionTokens, 0),
      steps,
    );
    const alt = tauFromAccepted(accepted, steps);
    if (alt !== undefined) extra.tau_one_plus_accepted = alt;
  } else {
    tauDefinition = 'one-plus-accepted-per-draft';
    tau = tauFromAccepted(accepted, steps);
  }
  return {
    source,
    tauDefinition,
    tau,
    acceptanceRate: proposed === undefined ? undefined : acceptanceRate(accepted, proposed),
    pk,
    verifySteps: steps,
    acceptedDraftTokens: accepted,
    draftTokens: proposed,
    extra,
  };
}

/** The counters of one `/metrics` scrape that the eval reads: speculative counters and generated tokens. */
export interface Scrape {
  spec?: SpecCounters;
  generationTokens?: number;
}

/** Read a `/metrics` text (counters.ts for the speculative counters). */
export function readScrape(text: string, spec: SpecCounters | undefined): Scrape {
  const { samples } = parsePrometheusText(text);
  let generationTokens: number | undefined;
  for (const name of ['vllm:generation_tokens', 'sglang:generation_tokens', 'generation_tokens']) {
    const hits = samples.filter((s) => s.name === `${name}_total` || s.name === name);
    if (hits.length > 0) {
      generationTokens = hits.reduce((a, s) => a + s.value, 0);
      break;
    }
  }
  return { spec, generationTokens };
}

/**
 * The numbers of a run from the counters before and after it. When the server's generated-token counter moved by
 * more than this eval's own completion tokens, someone else used the server meanwhile and the difference is not
 * this eval's: that is an error (kind `busy`) that says so, never a silently wrong τ. Without that counter the
 * result carries the caveat only.
 */
export function numbersFromCounters(before: Scrape, after: Scrape, ownCompletionTokens: number, server: string): { numbers: SpecNumbers; checked: boolean } {
  if (!before.spec || !after.spec) throw new Error('numbersFromCounters needs speculative counters in both scrapes');
  const diff = diffCounters(before.spec, after.spec);
  let checked = false;
  if (before.generationTokens !== undefined && after.generationTokens !== undefined) {
    const moved = after.generationTokens - before.generationTokens;
    if (moved !== ownCompletionTokens) {
      throw new RemoteRunsError(
        'busy',
        `the server ${server} generated ${moved} tokens during the eval, but the eval's own requests got ${ownCompletionTokens}: another client used the server meanwhile, so the difference of its /metrics counters is not this eval's. Run the eval when the server is idle, or enable per-request stats (vLLM: --per-request-spec-decode-metrics summary; SGLang: a version whose replies carry sglext.spec_tokens_details), which are exact under any load`,
        { server, generated: moved, own: ownCompletionTokens },
      );
    }
    checked = true;
  }
  const rates = ratesFromCounters(diff);
  return {
    numbers: {
      source: 'metrics-counters',
      tauDefinition: 'one-plus-accepted-per-draft',
      tau: rates.tau,
      acceptanceRate: rates.acceptanceRate,
      pk: rates.pk,
      verifySteps: rates.verifySteps,
      acceptedDraftTokens: diff.acceptedTokens,
      draftTokens: diff.draftTokens,
      extra: {},
    },
    checked,
  };
}
