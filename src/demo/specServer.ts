/**
 * The demo host's drafter server: a small stand-in for SGLang serving Qwen3-27B with speculative decoding, whose
 * drafter is the live run's (`pct:200` /workspace, v3-kpro6-ddtree-g10-b95, drafter-1b). It answers as SGLang does
 * (specReplies.ts, the shapes' one home, with their sources): `/v1/models`, `/v1/chat/completions` and
 * `/v1/completions` (with `sglext.spec_tokens_details` when asked `return_spec_tokens_details`), `/generate` (with
 * `meta_info`), `/get_server_info` and `/server_info` (its draft settings), `/metrics` (SGLang's speculative counters).
 *
 * Where it is: it listens on an ephemeral port of the real 127.0.0.1, and the demo's SSH server forwards the demo
 * host's `127.0.0.1:30000` (SGLang's default port, python/sglang/srt/server_args.py `ServerArgs.port`) to it and
 * nothing else (server.ts), so it is reached as a real server bound to a training host's loopback is: through the
 * host's SSH link (a direct-tcpip channel), never by a port of its own in a profile.
 *
 * Which drafter it serves: the newest complete checkpoint of the live run, reloaded as the trainer saves a new one
 * (as a dev loop that restarts SGLang with `--speculative-draft-model-path` on each save would); `/get_server_info`
 * says which (`speculative_draft_model_path`), and the eval records it with its settings. A server cannot serve the
 * checkpoint an eval merely names, so evaluating an older checkpoint measures the newest, and the result says so.
 *
 * Its acceptance: a drafter of step s accepts the draft token at each position with probability q(s), chosen so that
 * the expected acceptance length 1 + Σ_{i=1..K} q^i follows the demo's command eval (scripts.ts EVAL_SCRIPT:
 * 1.2 + 2.6 (1 − e^(−s/14000))); each verify step accepts the run of successes before the first miss, up to K. The
 * draws are seeded by the drafter's step and the prompt (at temperature 0), so the same checkpoint and prompts give
 * the same τ and a newer checkpoint a believably higher one; at a temperature above 0 the request's arrival number
 * joins the seed, as sampling would vary it. Generation takes `msPerStep` per verify step, so the eval's progress
 * and tokens/s look like a server's.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import {
  NOT_FOUND_BODY,
  addToTotals,
  completionBody,
  countVerifyStep,
  emptyTotals,
  generateBody,
  jsonRequestServer,
  metricsText,
  modelListBody,
  modelNotFoundBody,
  requestCounts,
  sendBody,
  sglangServerInfoBody,
  type SglangDraftArgs,
  type SpecRequestCounts,
} from './specReplies';
import { rng } from './rng';

/** The address the drafter server has on the demo host (its loopback), as a profile names it. */
export const DEMO_SPEC_HOST = '127.0.0.1';
export const DEMO_SPEC_PORT = 30000;
export const DEMO_SPEC_URL = `http://${DEMO_SPEC_HOST}:${DEMO_SPEC_PORT}`;
/** The target model it serves (the live run's config.yaml: `target: Qwen3-27B`). */
export const DEMO_SPEC_MODEL = 'Qwen3-27B';
/**
 * Draft settings: a standalone draft model, 5 steps of top-1 drafts (6 tokens verified per step), as an SGLang launch
 * of a small drafter for a big target sets them (`--speculative-algorithm STANDALONE --speculative-num-steps 5
 * --speculative-eagle-topk 1 --speculative-num-draft-tokens 6`).
 */
export const DEMO_SPEC_K = 5;

/** The expected acceptance length of a drafter at a step: the demo command eval's curve (scripts.ts EVAL_SCRIPT). */
export function demoAcceptLength(step: number): number {
  return 1.2 + 2.6 * (1 - Math.exp(-step / 14000));
}

/** The per-position acceptance q with 1 + Σ_{i=1..k} q^i = tau (bisection; tau is clamped to [1, k + 1]). */
export function perPositionAcceptance(tau: number, k: number): number {
  const want = Math.min(Math.max(tau - 1, 0), k);
  let lo = 0;
  let hi = 1;
  for (let i = 0; i < 60; i++) {
    const q = (lo + hi) / 2;
    let sum = 0;
    for (let j = 1; j <= k; j++) sum += q ** j;
    if (sum < want) lo = q;
    else hi = q;
  }
  return (lo + hi) / 2;
}

/** The drafter checkpoint being served: its folder as the demo host sees it and its step. */
export interface ServedDrafter {
  /** e.g. `/var/lib/lxc/200/rootfs/workspace/checkpoints/step_22000` (the server runs on the host, beside the container). */
  path: string;
  step: number;
}

/**
 * The newest complete `step_N/checkpoint.pt` in a checkpoints folder (`dir`, a real path), named as the demo host
 * sees it (`inside`). Undefined when there is none.
 */
export function newestDrafter(dir: string, inside: string): ServedDrafter | undefined {
  let best: number | undefined;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  for (const name of names) {
    const m = /^step_(\d+)$/.exec(name);
    if (!m) continue;
    const step = Number(m[1]);
    if ((best === undefined || step > best) && fs.existsSync(path.join(dir, name, 'checkpoint.pt'))) best = step;
  }
  return best === undefined ? undefined : { path: `${inside}/step_${best}`, step: best };
}

function hash(text: string): number {
  let h = 2166136261;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619);
  return h >>> 0;
}


/**
 * One request's generation by the drafter of `step`: a natural length of 40–200 tokens (cut at max tokens), the
 * first from the prefill, then verify steps each accepting the draft tokens up to the first miss (at most K, and
 * never past the length).
 */
export function demoGeneration(step: number, key: string, maxTokens: number, k: number = DEMO_SPEC_K): SpecRequestCounts {
  const r = rng(hash(`${step} ${key}`));
  const q = perPositionAcceptance(demoAcceptLength(step), k);
  const natural = 40 + Math.floor(r() * 161);
  const n = Math.max(1, Math.min(maxTokens, natural));
  const out = requestCounts(n, natural, k);
  let emitted = 1;
  while (emitted < n) {
    let a = 0;
    while (a < k && r() < q) a++;
    a = Math.min(a, n - emitted - 1);
    emitted += a + 1;
    countVerifyStep(out, a, k);
  }
  return out;
}

export interface DemoSpecServerOptions {
  /** The drafter served now (default: none, and completions answer 503 as a server still loading would). */
  drafter: () => ServedDrafter | undefined;
  /** Real milliseconds per verify step (default 25). */
  msPerStep?: number;
}

export interface DemoSpecServer {
  /** The real loopback port it listens on (the demo's SSH server forwards DEMO_SPEC_PORT here). */
  readonly port: number;
  /** Completion requests answered so far. */
  requests(): number;
  stop(): Promise<void>;
}

/** Start the drafter server on an ephemeral port of 127.0.0.1. */
export async function startDemoSpecServer(o: DemoSpecServerOptions): Promise<DemoSpecServer> {
  const k = DEMO_SPEC_K;
  const totals = emptyTotals(k);
  const created = Math.floor(Date.now() / 1000);
  const msPerStep = o.msPerStep ?? 25;
  let ids = 0;
  let arrivals = 0;
  const timers = new Set<NodeJS.Timeout>();

  const send = sendBody;
  const later = (ms: number, f: () => void): void => {
    if (ms <= 0) return f();
    const t = setTimeout(() => {
      timers.delete(t);
      f();
    }, ms);
    timers.add(t);
  };
  const draftArgs = (d: ServedDrafter): SglangDraftArgs => ({ algorithm: 'STANDALONE', draftModelPath: d.path, numSteps: k, topk: 1, numDraftTokens: k + 1 });
  const noDrafter = (res: http.ServerResponse): void =>
    send(res, 503, { object: 'error', message: 'The draft model is loading: the drafter run has no complete checkpoint yet', type: 'ServiceUnavailable', param: null, code: 503 });
  /** The generation of a request by the drafter served now, added to the counters, answered after its time. */
  const generateFor = (res: http.ServerResponse, key: string, maxTokens: number, temperature: number, answer: (t: SpecRequestCounts, d: ServedDrafter) => unknown): void => {
    const d = o.drafter();
    if (!d) return noDrafter(res);
    const arrival = ++arrivals;
    const t = demoGeneration(d.step, temperature > 0 ? `${key} #${arrival}` : key, maxTokens, k);
    addToTotals(totals, t);
    later(t.steps * msPerStep, () => send(res, 200, answer(t, d)));
  };

  const server = jsonRequestServer({ object: 'error', message: 'invalid JSON body', type: 'BadRequestError', param: null, code: 400 }, (req, res, route, body) => {
    if (req.method === 'GET' && route === '/v1/models') return send(res, 200, modelListBody('sglang', [DEMO_SPEC_MODEL], created));
    if (req.method === 'GET' && route === '/metrics') return send(res, 200, metricsText('sglang', DEMO_SPEC_MODEL, totals, { speculative: true, generationCounter: true }), 'text/plain; version=0.0.4; charset=utf-8');
    if (req.method === 'GET' && (route === '/get_server_info' || route === '/server_info')) {
      const d = o.drafter();
      // Loading (no checkpoint yet): the draft settings are there, the path not yet.
      return send(res, 200, sglangServerInfoBody(DEMO_SPEC_MODEL, { ...draftArgs(d ?? { path: '', step: 0 }) }, totals));
    }
    if (req.method === 'POST' && (route === '/v1/chat/completions' || route === '/v1/completions')) {
      if (body.model !== DEMO_SPEC_MODEL) return send(res, 404, modelNotFoundBody(body.model));
      const maxTokens = typeof body.max_tokens === 'number' && body.max_tokens > 0 ? body.max_tokens : 128;
      const temperature = typeof body.temperature === 'number' ? body.temperature : 1;
      const key = route === '/v1/chat/completions' ? JSON.stringify(body.messages) : String(body.prompt);
      return generateFor(res, key, maxTokens, temperature, (t) =>
        completionBody('sglang', route, DEMO_SPEC_MODEL, t, { id: ++ids, created, k, spec: body.return_spec_tokens_details === true ? 'sglext' : 'none' }),
      );
    }
    if (req.method === 'POST' && route === '/generate') {
      const sp = (body.sampling_params ?? {}) as Record<string, unknown>;
      const maxTokens = typeof sp.max_new_tokens === 'number' && sp.max_new_tokens > 0 ? sp.max_new_tokens : 128;
      const temperature = typeof sp.temperature === 'number' ? sp.temperature : 1;
      return generateFor(res, String(body.text), maxTokens, temperature, (t) => generateBody(t, ++ids, true));
    }
    send(res, 404, NOT_FOUND_BODY);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    requests: () => totals.requests,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        timers.clear();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
