/**
 * A stand-in for an SGLang or vLLM server with speculative decoding, on 127.0.0.1, for the speculative-server eval's
 * integration tests (test/integration/specServer.test.ts reaches it through the real test sshd's forwarding).
 *
 * It answers what the eval asks, with the bodies the engines send:
 * - `GET /v1/models`: `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by", "root", …}]}`
 *   (vLLM vllm/entrypoints/openai/protocol.py `ModelList`/`ModelCard`, owned_by "vllm"; SGLang
 *   python/sglang/srt/entrypoints/openai/protocol.py `ModelList`/`ModelCard`, owned_by "sglang").
 * - `POST /v1/chat/completions` and `/v1/completions`: `ChatCompletionResponse` / `CompletionResponse` of either
 *   engine (choices, `usage` with prompt/completion/total tokens), plus
 *   - vLLM, when started "with" `--per-request-spec-decode-metrics summary` (option `perRequest`, default on):
 *     `metrics.speculative_decoding` as vllm/v1/metrics/stats.py `RequestSpecDecodeMetrics.to_dict` writes it
 *     (mean_acceptance_length, draft_acceptance_rate, acceptance_histogram, num_spec_steps,
 *     num_accepted_draft_tokens, num_draft_tokens, num_spec_tokens);
 *   - SGLang, when the request asks `return_spec_tokens_details`: `sglext.spec_tokens_details` as
 *     python/sglang/srt/entrypoints/openai/utils.py `spec_tokens_details_from_meta_info` builds it from meta_info
 *     (the fields of SGLang's own test_serving_completions.py `_spec_result`).
 * - SGLang only: `GET /get_server_info` (server args flattened, `internal_states[0].avg_spec_accept_length`,
 *   `version`; python/sglang/srt/entrypoints/http_server.py `get_server_info`) and `POST /generate`
 *   (`{"text", "meta_info": {id, finish_reason, prompt_tokens, completion_tokens, cached_tokens, spec_verify_ct, …}}`).
 *   vLLM answers `/get_server_info` with FastAPI's 404 `{"detail": "Not Found"}`; with `devMode` it serves
 *   `/server_info` (VLLM_SERVER_DEV_MODE=1: `{"vllm_config": str(VllmConfig), "vllm_env", "system_env"}`).
 * - `GET /metrics`: Prometheus text with each engine's counters (counters.ts names them with their sources) and the
 *   generated-token counter (`vllm:generation_tokens_total`, `sglang:generation_tokens_total`).
 *
 * The toy "speculation" is deterministic: a request's accept lengths come from a PRNG seeded by the server's seed and
 * the request's prompt text (not its arrival order, so concurrency changes nothing), each verify step accepting
 * a ∈ [0, K] draft tokens and emitting a + 1 (the bonus token), after a first token from the prefill; a step never
 * runs past max_tokens (a is cut to what fits). `totals()` gives the toy's own counts, from which a test computes the
 * expected τ, acceptance rate and p_k exactly.
 *
 * Modes: `vllm`, `sglang`, `no-spec` (the engine given by `engine`, speculation off: no stats anywhere, SGLang's
 * speculative_algorithm null), `busy` (vLLM counters only, and every request of ours is accompanied by another
 * client's, which moves the counters but is not in our replies).
 */
import * as http from 'node:http';
import { rng } from '../fixtures/generate';
import type { AddressInfo } from 'node:net';

export type SpecServerMode = 'vllm' | 'sglang' | 'no-spec' | 'busy';

export interface SpecServerOptions {
  mode: SpecServerMode;
  /** For `no-spec`: whose bodies to send (default vllm). */
  engine?: 'vllm' | 'sglang';
  /** Served model names (default ["target-model"]). */
  models?: string[];
  /** Draft tokens per step (vLLM num_speculative_tokens; SGLang speculative_num_steps with topk 1). Default 3. */
  k?: number;
  seed?: number;
  /** vLLM: answer with per-request metrics (--per-request-spec-decode-metrics summary). Default true. */
  perRequest?: boolean;
  /** Omit the generated-token counter from /metrics (an engine build without it). */
  noGenerationCounter?: boolean;
  /** vLLM: serve `/server_info` as with VLLM_SERVER_DEV_MODE=1. */
  devMode?: boolean;
  /** SGLang: a version before return_spec_tokens_details (chat replies without sglext; /generate's meta_info as ever). */
  noSglext?: boolean;
  /** Prompts containing this text are answered with one token (the model stops at once: no verify step runs). */
  oneTokenFor?: string;
  /** Answer the n-th completion request (1-based) with a 500 as vLLM's ErrorResponse. */
  failAt?: number;
  /** Called as each completion request arrives, before it is answered (a test strikes mid-eval here). */
  onCompletion?: (n: number) => void;
}

/** The toy's counts (of our requests only; `busy` traffic is in `other`). */
export interface ToyCounts {
  requests: number;
  completionTokens: number;
  verifySteps: number;
  accepted: number;
  drafted: number;
  /** h[j]: steps that accepted exactly j draft tokens. */
  histogram: number[];
  /** Steps whose draft token at position i was accepted. */
  perPos: number[];
}

export interface SpecServer {
  readonly url: string;
  readonly port: number;
  readonly k: number;
  /** The request bodies received on the completion routes, in arrival order. */
  readonly received: { path: string; body: Record<string, unknown> }[];
  totals(): ToyCounts;
  /** What the other client of `busy` mode generated. */
  other(): ToyCounts;
  stop(): Promise<void>;
}

function emptyCounts(k: number): ToyCounts {
  return { requests: 0, completionTokens: 0, verifySteps: 0, accepted: 0, drafted: 0, histogram: new Array<number>(k + 1).fill(0), perPos: new Array<number>(k).fill(0) };
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

interface ToyRequest {
  completionTokens: number;
  steps: number;
  accepted: number;
  drafted: number;
  histogram: number[];
  perPos: number[];
  finish: 'stop' | 'length';
}

/** One request's toy generation: n tokens (≤ maxTokens), a first token from the prefill, then verify steps. */
function generate(key: string, maxTokens: number, k: number, seed: number, speculative: boolean): ToyRequest {
  const r = rng(seed ^ hash(key));
  const natural = 5 + Math.floor(r() * 40);
  const n = Math.min(maxTokens, natural);
  const out: ToyRequest = { completionTokens: n, steps: 0, accepted: 0, drafted: 0, histogram: new Array<number>(k + 1).fill(0), perPos: new Array<number>(k).fill(0), finish: n < natural ? 'length' : 'stop' };
  if (!speculative) return out;
  let emitted = 1;
  while (emitted < n) {
    const a = Math.min(Math.floor(r() * (k + 1)), n - emitted - 1);
    emitted += a + 1;
    out.steps++;
    out.accepted += a;
    out.drafted += k;
    out.histogram[a]++;
    for (let i = 0; i < a; i++) out.perPos[i]++;
  }
  return out;
}

function add(into: ToyCounts, t: ToyRequest): void {
  into.requests++;
  into.completionTokens += t.completionTokens;
  into.verifySteps += t.steps;
  into.accepted += t.accepted;
  into.drafted += t.drafted;
  t.histogram.forEach((c, j) => (into.histogram[j] += c));
  t.perPos.forEach((c, i) => (into.perPos[i] += c));
}

export async function startSpecServer(o: SpecServerOptions): Promise<SpecServer> {
  const engine: 'vllm' | 'sglang' = o.mode === 'sglang' ? 'sglang' : o.mode === 'no-spec' ? (o.engine ?? 'vllm') : 'vllm';
  const speculative = o.mode !== 'no-spec';
  const perRequest = o.mode === 'busy' ? false : (o.perRequest ?? true);
  const models = o.models ?? ['target-model'];
  const k = o.k ?? 3;
  const seed = o.seed ?? 1;
  const mine = emptyCounts(k);
  const others = emptyCounts(k);
  const received: { path: string; body: Record<string, unknown> }[] = [];
  let ids = 0;
  const created = 1_760_000_000;

  const send = (res: http.ServerResponse, status: number, body: unknown, type = 'application/json'): void => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const metricsText = (): string => {
    const all = emptyCounts(k);
    for (const c of [mine, others]) {
      all.completionTokens += c.completionTokens;
      all.verifySteps += c.verifySteps;
      all.accepted += c.accepted;
      all.drafted += c.drafted;
      c.perPos.forEach((v, i) => (all.perPos[i] += v));
    }
    const m = models[0];
    const lines: string[] = [];
    if (engine === 'vllm') {
      const l = `engine="0",model_name="${m}"`;
      lines.push('# HELP vllm:num_requests_running Number of requests in model execution batches.', '# TYPE vllm:num_requests_running gauge', `vllm:num_requests_running{${l}} 0.0`);
      if (!o.noGenerationCounter) lines.push('# HELP vllm:generation_tokens_total Number of generation tokens processed.', '# TYPE vllm:generation_tokens_total counter', `vllm:generation_tokens_total{${l}} ${all.completionTokens}.0`);
      if (speculative) {
        lines.push('# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.', '# TYPE vllm:spec_decode_num_drafts_total counter', `vllm:spec_decode_num_drafts_total{${l}} ${all.verifySteps}.0`);
        lines.push('# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.', '# TYPE vllm:spec_decode_num_draft_tokens_total counter', `vllm:spec_decode_num_draft_tokens_total{${l}} ${all.drafted}.0`);
        lines.push('# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.', '# TYPE vllm:spec_decode_num_accepted_tokens_total counter', `vllm:spec_decode_num_accepted_tokens_total{${l}} ${all.accepted}.0`);
        lines.push('# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.', '# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter');
        all.perPos.forEach((v, i) => lines.push(`vllm:spec_decode_num_accepted_tokens_per_pos_total{${l},position="${i}"} ${v}.0`));
      }
    } else {
      const l = `model_name="${m}"`;
      if (!o.noGenerationCounter) lines.push('# HELP sglang:generation_tokens_total Number of generation tokens processed.', '# TYPE sglang:generation_tokens_total counter', `sglang:generation_tokens_total{${l}} ${all.completionTokens}.0`);
      if (speculative) {
        lines.push('# HELP sglang:spec_decode_num_drafts_total Number of draft attempts.', '# TYPE sglang:spec_decode_num_drafts_total counter', `sglang:spec_decode_num_drafts_total{${l}} ${all.verifySteps}.0`);
        lines.push('# TYPE sglang:spec_decode_num_accepted_tokens_per_pos_total counter');
        all.perPos.forEach((v, i) => lines.push(`sglang:spec_decode_num_accepted_tokens_per_pos_total{${l},position="${i}"} ${v}.0`));
        lines.push('# TYPE sglang:spec_accept_length gauge', `sglang:spec_accept_length{${l}} 2.5`);
      }
    }
    return `${lines.join('\n')}\n`;
  };

  const vllmSpec = (t: ToyRequest): Record<string, unknown> => ({
    mean_acceptance_length: t.steps ? 1 + t.accepted / t.steps : 1.0,
    draft_acceptance_rate: t.drafted ? t.accepted / t.drafted : 0.0,
    acceptance_histogram: [...t.histogram],
    num_spec_steps: t.steps,
    num_accepted_draft_tokens: t.accepted,
    num_draft_tokens: t.drafted,
    num_spec_tokens: k,
  });
  const sglangMeta = (t: ToyRequest): Record<string, unknown> => ({
    spec_accept_rate: t.drafted ? t.accepted / t.drafted : 0.0,
    spec_accept_length: t.steps ? t.completionTokens / t.steps : 0.0,
    spec_cap_length: 0.0,
    spec_block_accept_length: 0.0,
    spec_num_correct_drafts: t.accepted,
    spec_num_proposed_drafts: t.drafted,
    spec_verify_ct: t.steps,
    spec_correct_drafts_histogram: [...t.histogram],
    spec_cap_lens_histogram: [],
  });

  const complete = (path: string, body: Record<string, unknown>, res: http.ServerResponse): void => {
    const model = body.model;
    if (typeof model !== 'string' || !models.includes(model)) {
      // vLLM's OpenAIServing._check_model: ErrorResponse(message=f"The model `{model}` does not exist.", type="NotFoundError", code=404)
      return send(res, 404, { error: { message: `The model \`${String(model)}\` does not exist.`, type: 'NotFoundError', param: 'model', code: 404 } });
    }
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : 16;
    const key = path === '/v1/chat/completions' ? JSON.stringify(body.messages) : String(body.prompt);
    const t = generate(key, o.oneTokenFor !== undefined && key.includes(o.oneTokenFor) ? 1 : maxTokens, k, seed, speculative);
    add(mine, t);
    if (o.mode === 'busy') add(others, generate(`other ${others.requests}`, 64, k, seed + 7, true));
    const text = Array.from({ length: t.completionTokens }, (_, i) => `tok${i}`).join(' ');
    const usage = { prompt_tokens: 11, total_tokens: 11 + t.completionTokens, completion_tokens: t.completionTokens, prompt_tokens_details: null };
    const id = ++ids;
    const chat = path === '/v1/chat/completions';
    const choice = chat
      ? { index: 0, message: { role: 'assistant', content: text, reasoning_content: null, tool_calls: engine === 'vllm' ? [] : null }, logprobs: null, finish_reason: t.finish, ...(engine === 'vllm' ? { stop_reason: null } : { matched_stop: null }) }
      : { index: 0, text, logprobs: null, finish_reason: t.finish, ...(engine === 'vllm' ? { stop_reason: null, prompt_logprobs: null } : { matched_stop: null }) };
    const reply: Record<string, unknown> = {
      id: `${chat ? 'chatcmpl' : 'cmpl'}-${id.toString(16).padStart(32, '0')}`,
      object: chat ? 'chat.completion' : 'text_completion',
      created,
      model,
      choices: [choice],
      usage,
    };
    if (engine === 'vllm') {
      reply.prompt_logprobs = null;
      reply.kv_transfer_params = null;
      // vllm/outputs.py CompletionOutput.spec_decode_metrics: "populated on finish when speculative decoding ran".
      if (speculative && perRequest && t.steps > 0) reply.metrics = { speculative_decoding: vllmSpec(t) };
    } else {
      reply.metadata = { weight_version: 'default' };
      if (speculative && body.return_spec_tokens_details === true && !o.noSglext) reply.sglext = { spec_tokens_details: sglangMeta(t) };
    }
    send(res, 200, reply);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      let body: Record<string, unknown> = {};
      if (chunks.length > 0) {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          return send(res, 400, { error: { message: 'invalid JSON', type: 'BadRequestError', code: 400 } });
        }
      }
      if (req.method === 'GET' && path === '/v1/models') {
        return send(res, 200, {
          object: 'list',
          data: models.map((id) => ({ id, object: 'model', created, owned_by: engine, root: `/models/${id}`, ...(engine === 'vllm' ? { parent: null, max_model_len: 4096, permission: [] } : { max_model_len: 4096 }) })),
        });
      }
      if (req.method === 'GET' && path === '/metrics') return send(res, 200, metricsText(), 'text/plain; version=0.0.4; charset=utf-8');
      if (req.method === 'GET' && path === '/get_server_info' && engine === 'sglang') {
        const all = mine.verifySteps + others.verifySteps;
        return send(res, 200, {
          model_path: `/models/${models[0]}`,
          served_model_name: models[0],
          tp_size: 1,
          speculative_algorithm: speculative ? 'EAGLE3' : null,
          speculative_draft_model_path: speculative ? '/ckpt/drafter/step_2000' : null,
          speculative_num_steps: speculative ? k : null,
          speculative_eagle_topk: speculative ? 1 : null,
          speculative_num_draft_tokens: speculative ? k + 1 : null,
          internal_states: [{ ...(speculative ? { avg_spec_accept_length: all ? (mine.completionTokens + others.completionTokens) / all : 0 } : {}), last_gen_throughput: 42.0 }],
          version: '0.5.4',
        });
      }
      if (req.method === 'GET' && path === '/server_info' && engine === 'vllm' && o.devMode) {
        // vLLM's show_server_info, config_format=text: str(vllm_config), whose start is the engine's startup line
        // (vllm/config/vllm.py VllmConfig.__str__; the line in test/fixtures/spec/vllm_spec_decode.txt).
        const spec = speculative ? `SpeculativeConfig(method='eagle3', model='/ckpt/drafter/step_2000', num_spec_tokens=${k})` : 'None';
        return send(res, 200, { vllm_config: `model='${models[0]}', speculative_config=${spec}, tokenizer='${models[0]}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, seed=0`, vllm_env: {}, system_env: {} });
      }
      if (req.method === 'POST' && (path === '/v1/chat/completions' || path === '/v1/completions')) {
        received.push({ path, body });
        o.onCompletion?.(received.length);
        if (received.length === o.failAt) return send(res, 500, { error: { message: 'CUDA error: an illegal memory access was encountered', type: 'InternalServerError', param: null, code: 500 } });
        return complete(path, body, res);
      }
      if (req.method === 'POST' && path === '/generate' && engine === 'sglang') {
        received.push({ path, body });
        const sp = (body.sampling_params ?? {}) as Record<string, unknown>;
        const maxTokens = typeof sp.max_new_tokens === 'number' ? sp.max_new_tokens : 128;
        const t = generate(String(body.text), maxTokens, k, seed, speculative);
        add(mine, t);
        return send(res, 200, {
          text: Array.from({ length: t.completionTokens }, (_, i) => `tok${i}`).join(' '),
          meta_info: {
            id: `gen-${++ids}`,
            finish_reason: t.finish === 'length' ? { type: 'length', length: t.completionTokens } : { type: 'stop', matched: 2 },
            prompt_tokens: 11,
            weight_version: 'default',
            completion_tokens: t.completionTokens,
            cached_tokens: 0,
            e2e_latency: 0.01,
            ...(speculative ? sglangMeta(t) : {}),
          },
        });
      }
      send(res, 404, { detail: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const copy = (c: ToyCounts): ToyCounts => ({ ...c, histogram: [...c.histogram], perPos: [...c.perPos] });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    k,
    received,
    totals: () => copy(mine),
    other: () => copy(others),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
