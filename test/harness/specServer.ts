/**
 * A stand-in for an SGLang or vLLM server with speculative decoding, on 127.0.0.1, for the speculative-server eval's
 * integration tests (test/integration/specServer.test.ts reaches it through the real test sshd's forwarding).
 *
 * It answers what the eval asks, with the bodies the engines send (src/demo/specReplies.ts, their one home, cites
 * each engine's source): `/v1/models`, `/v1/chat/completions` and `/v1/completions` (vLLM's per-request metrics when
 * started "with" `--per-request-spec-decode-metrics summary`, option `perRequest`, default on; SGLang's sglext when the
 * request asks `return_spec_tokens_details`), SGLang's `/get_server_info` and `/generate`, and `/metrics`. vLLM
 * answers `/get_server_info` with FastAPI's 404 `{"detail": "Not Found"}`; with `devMode` it serves `/server_info`
 * (VLLM_SERVER_DEV_MODE=1: `{"vllm_config": str(VllmConfig), "vllm_env", "system_env"}`).
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
import {
  NOT_FOUND_BODY,
  addToTotals,
  completionBody,
  countVerifyStep,
  emptyTotals,
  generateBody,
  jsonRequestServer,
  metricsText as engineMetricsText,
  modelListBody,
  modelNotFoundBody,
  requestCounts,
  sendBody,
  sglangServerInfoBody,
  type SpecRequestCounts,
  type SpecTotals,
} from '../../src/demo/specReplies';

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
export type ToyCounts = SpecTotals;

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

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}

type ToyRequest = SpecRequestCounts;

/** One request's toy generation: n tokens (≤ maxTokens), a first token from the prefill, then verify steps. */
function generate(key: string, maxTokens: number, k: number, seed: number, speculative: boolean): ToyRequest {
  const r = rng(seed ^ hash(key));
  const natural = 5 + Math.floor(r() * 40);
  const n = Math.min(maxTokens, natural);
  const out: ToyRequest = requestCounts(n, natural, k);
  if (!speculative) return out;
  let emitted = 1;
  while (emitted < n) {
    const a = Math.min(Math.floor(r() * (k + 1)), n - emitted - 1);
    emitted += a + 1;
    countVerifyStep(out, a, k);
  }
  return out;
}

const add = addToTotals;
const emptyCounts = emptyTotals;

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

  const send = sendBody;

  const metricsText = (): string => {
    const all = emptyCounts(k);
    for (const c of [mine, others]) {
      all.completionTokens += c.completionTokens;
      all.verifySteps += c.verifySteps;
      all.accepted += c.accepted;
      all.drafted += c.drafted;
      c.perPos.forEach((v, i) => (all.perPos[i] += v));
    }
    return engineMetricsText(engine, models[0], all, { speculative, generationCounter: !o.noGenerationCounter });
  };

  const complete = (path: string, body: Record<string, unknown>, res: http.ServerResponse): void => {
    const model = body.model;
    if (typeof model !== 'string' || !models.includes(model)) return send(res, 404, modelNotFoundBody(model));
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : 16;
    const key = path === '/v1/chat/completions' ? JSON.stringify(body.messages) : String(body.prompt);
    const t = generate(key, o.oneTokenFor !== undefined && key.includes(o.oneTokenFor) ? 1 : maxTokens, k, seed, speculative);
    add(mine, t);
    if (o.mode === 'busy') add(others, generate(`other ${others.requests}`, 64, k, seed + 7, true));
    const spec = !speculative ? 'none' : engine === 'vllm' ? (perRequest ? 'vllm-metrics' : 'none') : body.return_spec_tokens_details === true && !o.noSglext ? 'sglext' : 'none';
    const reply = completionBody(engine, path as '/v1/chat/completions' | '/v1/completions', model, t, { id: ++ids, created, k, spec });
    send(res, 200, reply);
  };

  const server = jsonRequestServer({ error: { message: 'invalid JSON', type: 'BadRequestError', code: 400 } }, (req, res, path, body) => {
    if (req.method === 'GET' && path === '/v1/models') return send(res, 200, modelListBody(engine, models, created));
    if (req.method === 'GET' && path === '/metrics') return send(res, 200, metricsText(), 'text/plain; version=0.0.4; charset=utf-8');
    if (req.method === 'GET' && path === '/get_server_info' && engine === 'sglang') {
      const draft = speculative ? { algorithm: 'EAGLE3', draftModelPath: '/ckpt/drafter/step_2000', numSteps: k, topk: 1, numDraftTokens: k + 1 } : undefined;
      return send(res, 200, sglangServerInfoBody(models[0], draft, { completionTokens: mine.completionTokens + others.completionTokens, verifySteps: mine.verifySteps + others.verifySteps }));
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
      return send(res, 200, generateBody(t, ++ids, speculative));
    }
    send(res, 404, NOT_FOUND_BODY);
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
