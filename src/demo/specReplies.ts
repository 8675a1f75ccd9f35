/**
 * The reply bodies of an SGLang or vLLM server with speculative decoding, built from one request's counts: the one
 * home of these shapes for the demo's drafter server (specServer.ts) and the tests' stand-in
 * (test/harness/specServer.ts). Each shape is the engine's own, with its source:
 *
 * - `GET /v1/models`: `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by", "root", …}]}`
 *   (vLLM vllm/entrypoints/openai/protocol.py `ModelList`/`ModelCard`, owned_by "vllm"; SGLang
 *   python/sglang/srt/entrypoints/openai/protocol.py `ModelList`/`ModelCard`, owned_by "sglang").
 * - `POST /v1/chat/completions` and `/v1/completions`: `ChatCompletionResponse` / `CompletionResponse` of either
 *   engine (choices, `usage` with prompt/completion/total tokens), plus vLLM's `metrics.speculative_decoding`
 *   (`--per-request-spec-decode-metrics summary`: vllm/v1/metrics/stats.py `RequestSpecDecodeMetrics.to_dict`) or
 *   SGLang's `sglext.spec_tokens_details` (asked with `return_spec_tokens_details`:
 *   python/sglang/srt/entrypoints/openai/utils.py `spec_tokens_details_from_meta_info`, the fields of SGLang's own
 *   test_serving_completions.py `_spec_result`).
 * - SGLang's `POST /generate`: `{"text", "meta_info": {id, finish_reason, prompt_tokens, completion_tokens,
 *   cached_tokens, spec_verify_ct, …}}` (python/sglang/srt/managers/tokenizer_manager.py builds meta_info).
 * - SGLang's `GET /get_server_info` (newer versions also `/server_info`): the server args flattened in,
 *   `internal_states[0].avg_spec_accept_length`, `version` (python/sglang/srt/entrypoints/http_server.py
 *   `get_server_info`).
 * - `GET /metrics`: Prometheus text with each engine's speculative counters (core/eval/spec/counters.ts names them
 *   with their sources) and the generated-token counter.
 */
import * as http from 'node:http';

export type SpecEngine = 'vllm' | 'sglang';

/** One request's generation: n completion tokens, a first token from the prefill, then verify steps. */
export interface SpecRequestCounts {
  completionTokens: number;
  steps: number;
  accepted: number;
  drafted: number;
  /** h[j]: steps that accepted exactly j draft tokens (j = 0…K). */
  histogram: number[];
  /** Steps whose draft token at position i was accepted. */
  perPos: number[];
  finish: 'stop' | 'length';
}

/**
 * A request's counts before its first verify step: `n` completion tokens of the `natural` length it would have run to
 * (cut by max tokens: finish `length`).
 */
export function requestCounts(n: number, natural: number, k: number): SpecRequestCounts {
  return { completionTokens: n, steps: 0, accepted: 0, drafted: 0, histogram: new Array<number>(k + 1).fill(0), perPos: new Array<number>(k).fill(0), finish: n < natural ? 'length' : 'stop' };
}

/** One verify step that accepted `a` of its `k` draft tokens (the first `a` positions), counted into `out`. */
export function countVerifyStep(out: SpecRequestCounts, a: number, k: number): void {
  out.steps++;
  out.accepted += a;
  out.drafted += k;
  out.histogram[a]++;
  for (let i = 0; i < a; i++) out.perPos[i]++;
}

/** Counts summed over requests (what the server's /metrics counters hold). */
export interface SpecTotals {
  requests: number;
  completionTokens: number;
  verifySteps: number;
  accepted: number;
  drafted: number;
  histogram: number[];
  perPos: number[];
}

export function emptyTotals(k: number): SpecTotals {
  return { requests: 0, completionTokens: 0, verifySteps: 0, accepted: 0, drafted: 0, histogram: new Array<number>(k + 1).fill(0), perPos: new Array<number>(k).fill(0) };
}

export function addToTotals(into: SpecTotals, t: SpecRequestCounts): void {
  into.requests++;
  into.completionTokens += t.completionTokens;
  into.verifySteps += t.steps;
  into.accepted += t.accepted;
  into.drafted += t.drafted;
  t.histogram.forEach((c, j) => (into.histogram[j] += c));
  t.perPos.forEach((c, i) => (into.perPos[i] += c));
}

/** The text of n generated tokens (the stand-ins generate no language). */
export function tokenText(n: number): string {
  return Array.from({ length: n }, (_, i) => `tok${i}`).join(' ');
}

/** `GET /v1/models`. */
export function modelListBody(engine: SpecEngine, models: readonly string[], created: number): Record<string, unknown> {
  return {
    object: 'list',
    data: models.map((id) => ({ id, object: 'model', created, owned_by: engine, root: `/models/${id}`, ...(engine === 'vllm' ? { parent: null, max_model_len: 4096, permission: [] } : { max_model_len: 4096 }) })),
  };
}

/** vLLM's `metrics.speculative_decoding` of a reply (`RequestSpecDecodeMetrics.to_dict`). */
export function vllmSpecMetrics(t: SpecRequestCounts, k: number): Record<string, unknown> {
  return {
    mean_acceptance_length: t.steps ? 1 + t.accepted / t.steps : 1.0,
    draft_acceptance_rate: t.drafted ? t.accepted / t.drafted : 0.0,
    acceptance_histogram: [...t.histogram],
    num_spec_steps: t.steps,
    num_accepted_draft_tokens: t.accepted,
    num_draft_tokens: t.drafted,
    num_spec_tokens: k,
  };
}

/** SGLang's speculative fields of `meta_info` (and of `sglext.spec_tokens_details`). */
export function sglangSpecMeta(t: SpecRequestCounts): Record<string, unknown> {
  return {
    spec_accept_rate: t.drafted ? t.accepted / t.drafted : 0.0,
    spec_accept_length: t.steps ? t.completionTokens / t.steps : 0.0,
    spec_cap_length: 0.0,
    spec_block_accept_length: 0.0,
    spec_num_correct_drafts: t.accepted,
    spec_num_proposed_drafts: t.drafted,
    spec_verify_ct: t.steps,
    spec_correct_drafts_histogram: [...t.histogram],
    spec_cap_lens_histogram: [],
  };
}

/**
 * The reply of `/v1/chat/completions` or `/v1/completions`. `spec`: what to add of the request's speculative stats
 * (vLLM's per-request metrics, SGLang's sglext), or nothing.
 */
export function completionBody(
  engine: SpecEngine,
  route: '/v1/chat/completions' | '/v1/completions',
  model: string,
  t: SpecRequestCounts,
  o: { id: number; created: number; k: number; spec: 'vllm-metrics' | 'sglext' | 'none' },
): Record<string, unknown> {
  const text = tokenText(t.completionTokens);
  const usage = { prompt_tokens: 11, total_tokens: 11 + t.completionTokens, completion_tokens: t.completionTokens, prompt_tokens_details: null };
  const chat = route === '/v1/chat/completions';
  const choice = chat
    ? { index: 0, message: { role: 'assistant', content: text, reasoning_content: null, tool_calls: engine === 'vllm' ? [] : null }, logprobs: null, finish_reason: t.finish, ...(engine === 'vllm' ? { stop_reason: null } : { matched_stop: null }) }
    : { index: 0, text, logprobs: null, finish_reason: t.finish, ...(engine === 'vllm' ? { stop_reason: null, prompt_logprobs: null } : { matched_stop: null }) };
  const reply: Record<string, unknown> = {
    id: `${chat ? 'chatcmpl' : 'cmpl'}-${o.id.toString(16).padStart(32, '0')}`,
    object: chat ? 'chat.completion' : 'text_completion',
    created: o.created,
    model,
    choices: [choice],
    usage,
  };
  if (engine === 'vllm') {
    reply.prompt_logprobs = null;
    reply.kv_transfer_params = null;
    // vllm/outputs.py CompletionOutput.spec_decode_metrics: "populated on finish when speculative decoding ran".
    if (o.spec === 'vllm-metrics' && t.steps > 0) reply.metrics = { speculative_decoding: vllmSpecMetrics(t, o.k) };
  } else {
    reply.metadata = { weight_version: 'default' };
    if (o.spec === 'sglext') reply.sglext = { spec_tokens_details: sglangSpecMeta(t) };
  }
  return reply;
}

/** The reply of SGLang's native `/generate`. */
export function generateBody(t: SpecRequestCounts, id: number, speculative: boolean): Record<string, unknown> {
  return {
    text: tokenText(t.completionTokens),
    meta_info: {
      id: `gen-${id}`,
      finish_reason: t.finish === 'length' ? { type: 'length', length: t.completionTokens } : { type: 'stop', matched: 2 },
      prompt_tokens: 11,
      weight_version: 'default',
      completion_tokens: t.completionTokens,
      cached_tokens: 0,
      e2e_latency: 0.01,
      ...(speculative ? sglangSpecMeta(t) : {}),
    },
  };
}

/** SGLang's draft settings, as its server args name them (python/sglang/srt/server_args.py `ServerArgs`). */
export interface SglangDraftArgs {
  algorithm: string;
  draftModelPath: string;
  numSteps: number;
  topk: number;
  numDraftTokens: number;
}

/** SGLang's `/get_server_info`; `draft` undefined: speculation off (every speculative_* arg null). */
export function sglangServerInfoBody(model: string, draft: SglangDraftArgs | undefined, totals: Pick<SpecTotals, 'completionTokens' | 'verifySteps'>): Record<string, unknown> {
  return {
    model_path: `/models/${model}`,
    served_model_name: model,
    tp_size: 1,
    speculative_algorithm: draft ? draft.algorithm : null,
    speculative_draft_model_path: draft ? draft.draftModelPath : null,
    speculative_num_steps: draft ? draft.numSteps : null,
    speculative_eagle_topk: draft ? draft.topk : null,
    speculative_num_draft_tokens: draft ? draft.numDraftTokens : null,
    internal_states: [{ ...(draft ? { avg_spec_accept_length: totals.verifySteps ? totals.completionTokens / totals.verifySteps : 0 } : {}), last_gen_throughput: 42.0 }],
    version: '0.5.4',
  };
}

/** `GET /metrics` of either engine: the generated-token counter (unless left out) and, when speculating, the spec counters. */
export function metricsText(engine: SpecEngine, model: string, all: SpecTotals, o: { speculative: boolean; generationCounter: boolean }): string {
  const lines: string[] = [];
  if (engine === 'vllm') {
    const l = `engine="0",model_name="${model}"`;
    lines.push('# HELP vllm:num_requests_running Number of requests in model execution batches.', '# TYPE vllm:num_requests_running gauge', `vllm:num_requests_running{${l}} 0.0`);
    if (o.generationCounter) lines.push('# HELP vllm:generation_tokens_total Number of generation tokens processed.', '# TYPE vllm:generation_tokens_total counter', `vllm:generation_tokens_total{${l}} ${all.completionTokens}.0`);
    if (o.speculative) {
      lines.push('# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.', '# TYPE vllm:spec_decode_num_drafts_total counter', `vllm:spec_decode_num_drafts_total{${l}} ${all.verifySteps}.0`);
      lines.push('# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.', '# TYPE vllm:spec_decode_num_draft_tokens_total counter', `vllm:spec_decode_num_draft_tokens_total{${l}} ${all.drafted}.0`);
      lines.push('# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.', '# TYPE vllm:spec_decode_num_accepted_tokens_total counter', `vllm:spec_decode_num_accepted_tokens_total{${l}} ${all.accepted}.0`);
      lines.push('# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.', '# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter');
      all.perPos.forEach((v, i) => lines.push(`vllm:spec_decode_num_accepted_tokens_per_pos_total{${l},position="${i}"} ${v}.0`));
    }
  } else {
    const l = `model_name="${model}"`;
    if (o.generationCounter) lines.push('# HELP sglang:generation_tokens_total Number of generation tokens processed.', '# TYPE sglang:generation_tokens_total counter', `sglang:generation_tokens_total{${l}} ${all.completionTokens}.0`);
    if (o.speculative) {
      lines.push('# HELP sglang:spec_decode_num_drafts_total Number of draft attempts.', '# TYPE sglang:spec_decode_num_drafts_total counter', `sglang:spec_decode_num_drafts_total{${l}} ${all.verifySteps}.0`);
      lines.push('# TYPE sglang:spec_decode_num_accepted_tokens_per_pos_total counter');
      all.perPos.forEach((v, i) => lines.push(`sglang:spec_decode_num_accepted_tokens_per_pos_total{${l},position="${i}"} ${v}.0`));
      lines.push('# TYPE sglang:spec_accept_length gauge', `sglang:spec_accept_length{${l}} ${all.verifySteps ? (all.completionTokens / all.verifySteps).toFixed(4) : '0.0'}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** FastAPI's 404 (both engines' servers are FastAPI apps). */
export const NOT_FOUND_BODY = { detail: 'Not Found' } as const;

/** vLLM's OpenAIServing._check_model: ErrorResponse(message=f"The model `{model}` does not exist.", type="NotFoundError", code=404). */
export function modelNotFoundBody(model: unknown): Record<string, unknown> {
  return { error: { message: `The model \`${String(model)}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 } };
}

/** Write a reply: a body (JSON unless it is text already) with its type and length. */
export function sendBody(res: http.ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * An HTTP server whose handler gets each request's route (the path without its query) and its JSON body read whole
 * (`{}` without one); a body that is not JSON is answered 400 with `badJson`, the engine's own error shape.
 */
export function jsonRequestServer(badJson: Record<string, unknown>, handle: (req: http.IncomingMessage, res: http.ServerResponse, route: string, body: Record<string, unknown>) => void): http.Server {
  return http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      if (chunks.length > 0) {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          return sendBody(res, 400, badJson);
        }
      }
      handle(req, res, (req.url ?? '/').split('?')[0], body);
    });
  });
}
