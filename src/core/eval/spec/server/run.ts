/**
 * The speculative-server eval: send a prompt set to a running OpenAI-compatible server (SGLang, vLLM) through a host's
 * SSH link (http.ts), with the settings pinned, read the speculative stats from the best source the server offers
 * (stats.ts) and give back a SpecResult (τ with its definition, acceptance rate, p_k, output tokens/s, speedup) and
 * its EvalResult line (evalResult.ts).
 *
 * Steps: `/v1/models` (the model must be served: a mismatch lists what is), SGLang's `/get_server_info` (the draft
 * settings; `speculative_algorithm` null means speculation is off) or vLLM's `/server_info` where it is served, `/metrics` before, the prompts, `/metrics`
 * after; then the baseline (a second server with speculation off, same prompts and settings) when the profile names
 * one.
 */
import { RemoteRunsError } from '../../../types';
import type { ConnectionPool, PoolHost } from '../../../ssh/pool';
import type { EvalResult } from '../../types';
import { TAU_DEFINITION_TEXT, outputTokensPerSecond, speedup as speedupOf } from '../definitions';
import { readSpecCounters } from '../counters';
import { specEvalResult } from '../evalResult';
import type { SpecResult } from '../types';
import { SettingsBuilder, isObject, optNum } from '../readers/common';
import { vllmEngineConfig } from '../readers/vllm';
import { httpRequest, linkToServer, parseServerUrl, type HttpReply, type ServerAddress, type ServerLink } from './http';
import { readPromptSet, type PromptSet, type SpecPrompt, type SpecServerProfile } from './profile';
import { STATS_SOURCE_TEXT, numbersFromCounters, numbersFromReplies, readReply, readScrape, type ReplyStats, type Scrape, type SpecNumbers } from './stats';

export type ServerEngine = 'sglang' | 'vllm';

/** What SGLang's `/get_server_info` says of speculation (its server_args, python/sglang/srt/server_args.py `ServerArgs`). */
export interface DraftSettings {
  method?: string;
  draftModel?: string;
  numSteps?: number;
  topk?: number;
  numDraftTokens?: number;
  numSpeculativeTokens?: number;
  /** SGLang's running `avg_spec_accept_length` (internal_states), the server's whole life, not this eval's. */
  serverAvgAcceptLength?: number;
}

export interface SpecServerOutcome {
  result: SpecResult;
  evalResult: EvalResult;
  engine: ServerEngine;
  model: string;
  source: SpecNumbers['source'];
}

export interface RunSpecServerOptions {
  pool: ConnectionPool;
  /** The host whose link reaches the server. */
  host: PoolHost;
  profile: SpecServerProfile;
  /** The prompt set; default: the profile's (readPromptSet). */
  prompts?: PromptSet;
  signal?: AbortSignal;
  /**
   * Called with the requests answered so far of the eval's total (the speculative server's, then a baseline server's
   * when the profile names one: `total` counts both), once with 0 before the first request.
   */
  onProgress?: (done: number, total: number) => void;
}

/** The flags that turn on speculation and its per-request stats, named in errors. */
export const ENABLE_HINT: Readonly<Record<ServerEngine, string>> = {
  sglang: 'start SGLang with speculative decoding (--speculative-algorithm EAGLE3 --speculative-draft-model-path DRAFTER --speculative-num-steps … --speculative-eagle-topk … --speculative-num-draft-tokens …); its replies then carry sglext.spec_tokens_details when asked (return_spec_tokens_details, sent by this eval), and --enable-metrics adds the /metrics counters',
  vllm: 'start vLLM with speculative decoding (--speculative-config \'{"method": "eagle3", "model": "DRAFTER", "num_speculative_tokens": 3}\') and --per-request-spec-decode-metrics summary, which puts each request\'s stats in its reply (without it the eval falls back to the /metrics counters, valid only on an idle server)',
};

/** Run the eval. Throws RemoteRunsError with what to do for each way it cannot be measured. */
export async function runSpecServerEval(o: RunSpecServerOptions): Promise<SpecServerOutcome> {
  const { profile, signal } = o;
  const prompts = o.prompts ?? readPromptSet(profile.prompts);
  const address = parseServerUrl(profile.server);
  const link = await linkToServer(o.pool, o.host, address, signal);
  const total = prompts.prompts.length * (profile.baseline?.kind === 'server' ? 2 : 1);
  let done = 0;
  const answered = (): void => o.onProgress?.(++done, total);
  o.onProgress?.(0, total);
  let run: MeasuredRun;
  try {
    run = await measure(link, address, profile, prompts, true, signal, answered);
  } finally {
    link.dispose();
  }
  const numbers = chooseNumbers(run, address);
  let baselineTps: number | undefined;
  const notes: string[] = [`stats from ${STATS_SOURCE_TEXT[numbers.source]}`, `τ: ${TAU_DEFINITION_TEXT[numbers.tauDefinition]}`];
  if (numbers.source === 'metrics-counters') {
    notes.push(run.countersChecked ? "the server's generated-token counter moved by exactly this eval's tokens: no other client was served meanwhile" : "the server exposes no generated-token counter: that nobody else used the server during the eval could not be checked");
  }
  if (run.draft.serverAvgAcceptLength !== undefined) notes.push(`SGLang's own avg_spec_accept_length since its start: ${run.draft.serverAvgAcceptLength} (all requests it served, not this eval's alone)`);
  if (profile.baseline?.kind === 'recorded') {
    baselineTps = profile.baseline.outputTokensPerSec;
    notes.push(`speedup against a recorded ${baselineTps} output tokens/s with speculation off`);
  } else if (profile.baseline?.kind === 'server') {
    const bAddress = parseServerUrl(profile.baseline.url);
    const bLink = await linkToServer(o.pool, o.host, bAddress, signal);
    try {
      const b = await measure(bLink, bAddress, { ...profile, model: run.model }, prompts, false, signal, answered);
      if (b.replies.some((r) => r.spec && r.spec.verifySteps > 0) || (b.draft.method !== undefined && b.engine === 'sglang')) {
        throw new RemoteRunsError('bad-config', `baseline: ${bAddress.url} runs with speculative decoding (${b.draft.method ?? 'its replies carry speculative stats'}); the baseline is the same model served with speculation off`, { field: 'baseline', server: bAddress.url });
      }
      baselineTps = b.tokensPerSec;
      notes.push(`speedup against ${bAddress.url} (speculation off), same prompts and settings: ${round(b.tokensPerSec)} output tokens/s`);
    } finally {
      bLink.dispose();
    }
  }
  const s = new SettingsBuilder()
    .set('model', run.model, 'pinned')
    .set('temperature', profile.temperature, 'pinned')
    .set('maxTokens', profile.maxTokens, 'pinned')
    .set('concurrency', profile.concurrency, 'pinned')
    .set('thinking', profile.thinking, 'pinned')
    .set('chatTemplate', profile.chatTemplate, 'pinned')
    .set('benchmark', prompts.source, 'pinned')
    .set('numPrompts', prompts.prompts.length, 'pinned')
    .set('method', run.draft.method, 'server')
    .set('draftModel', run.draft.draftModel, 'server')
    .set('numSteps', run.draft.numSteps, 'server')
    .set('topk', run.draft.topk, 'server')
    .set('numDraftTokens', run.draft.numDraftTokens, 'server')
    .set('numSpeculativeTokens', run.draft.numSpeculativeTokens ?? run.replies.find((r) => r.spec?.numSpecTokens !== undefined)?.spec?.numSpecTokens ?? countersK(run), 'server');
  const tps = run.tokensPerSec;
  const result: SpecResult = {
    tool: 'speculative-server',
    label: `${run.model} @ ${address.url} T=${profile.temperature} max=${profile.maxTokens} c=${profile.concurrency}`,
    speculative: true,
    tau: numbers.tau,
    tauDefinition: numbers.tauDefinition,
    acceptanceRate: numbers.acceptanceRate,
    pk: numbers.pk,
    outputTokensPerSec: tps,
    speedup: baselineTps === undefined || tps === undefined ? undefined : speedupOf(tps, baselineTps),
    counts: { verifySteps: numbers.verifySteps, completionTokens: run.completionTokens, acceptedDraftTokens: numbers.acceptedDraftTokens, draftTokens: numbers.draftTokens, requests: run.replies.length },
    extra: numbers.extra,
    settings: s.settings,
    settingSources: s.sources,
    notes,
  };
  return { result, evalResult: specEvalResult(result), engine: run.engine, model: run.model, source: numbers.source };
}

/**
 * vLLM's K from its /metrics: `SpecDecodingProm` (vllm/v1/spec_decode/metrics.py) creates one
 * `vllm:spec_decode_num_accepted_tokens_per_pos` series per draft position, `for pos in range(num_spec_tokens)`, at
 * start, so the positions are K even where none was accepted (SGLang's are not read so).
 */
function countersK(run: MeasuredRun): number | undefined {
  const c = run.after?.spec;
  return c?.engine === 'vllm' && c.acceptedPerPos && c.acceptedPerPos.length > 0 ? c.acceptedPerPos.length : undefined;
}

function round(x: number | undefined): string {
  return x === undefined ? '?' : x.toFixed(1);
}

interface MeasuredRun {
  engine: ServerEngine;
  model: string;
  draft: DraftSettings;
  replies: ReplyStats[];
  completionTokens: number;
  tokensPerSec?: number;
  before?: Scrape;
  after?: Scrape;
  countersChecked?: boolean;
  server: string;
}

async function getJson(link: ServerLink, address: ServerAddress, path: string, signal?: AbortSignal): Promise<{ reply: HttpReply; json?: unknown }> {
  const reply = await httpRequest(link.open, address, 'GET', path, undefined, signal);
  let json: unknown;
  try {
    json = JSON.parse(reply.body);
  } catch {
    json = undefined;
  }
  return { reply, json };
}

/** The served models (`/v1/models`: `{"object": "list", "data": [{"id": …}]}`, the OpenAI shape both engines answer). */
async function servedModels(link: ServerLink, address: ServerAddress, signal?: AbortSignal): Promise<string[]> {
  const { reply, json } = await getJson(link, address, '/v1/models', signal);
  if (reply.status !== 200 || !isObject(json) || !Array.isArray(json.data)) {
    throw new RemoteRunsError('protocol', `${address.url}/v1/models answered ${reply.status} ${excerpt(reply.body)}: not an OpenAI-compatible server (SGLang, vLLM)?`, { server: address.url });
  }
  return json.data.filter(isObject).map((m) => String(m.id));
}

function chooseModel(wanted: string | undefined, served: string[], url: string, field: string): string {
  if (wanted !== undefined) {
    if (served.includes(wanted)) return wanted;
    throw new RemoteRunsError('bad-config', `${field}: the server ${url} does not serve ${JSON.stringify(wanted)}; its /v1/models lists ${served.length ? served.map((m) => JSON.stringify(m)).join(', ') : 'no model'}. Set "model" to one of those (vLLM: --served-model-name; SGLang: --served-model-name)`, { field, served, server: url });
  }
  if (served.length === 1) return served[0];
  throw new RemoteRunsError('bad-config', `model: the server ${url} serves ${served.length === 0 ? 'no model' : `${served.length} models (${served.map((m) => JSON.stringify(m)).join(', ')})`}; set "model" to the one to evaluate`, { field: 'model', served, server: url });
}

/**
 * SGLang answers `/get_server_info` with its server args flattened in (python/sglang/srt/entrypoints/http_server.py
 * `get_server_info`: `**dataclasses.asdict(server_args)`, `**scheduler_info`, `internal_states` (one per DP rank, from
 * `tokenizer_manager.get_internal_state()`), `version`); vLLM has no such route (FastAPI's 404).
 */
async function serverInfo(link: ServerLink, address: ServerAddress, signal?: AbortSignal): Promise<{ engine: ServerEngine; draft: DraftSettings }> {
  const { reply, json } = await getJson(link, address, '/get_server_info', signal);
  if (reply.status !== 200 || !isObject(json)) {
    // vLLM tells its speculative config only on /server_info, a development route (VLLM_SERVER_DEV_MODE=1) whose
    // text form is str(VllmConfig), read as the startup line is (readers/vllm.ts); elsewhere K comes with the replies.
    const dev = await getJson(link, address, '/server_info', signal);
    const config = dev.reply.status === 200 && isObject(dev.json) && typeof dev.json.vllm_config === 'string' ? vllmEngineConfig(dev.json.vllm_config) : undefined;
    return { engine: 'vllm', draft: config ? { method: config.method, draftModel: config.draftModel, numSpeculativeTokens: config.numSpecTokens } : {} };
  }
  const method = typeof json.speculative_algorithm === 'string' ? json.speculative_algorithm : undefined;
  const states = Array.isArray(json.internal_states) ? json.internal_states.filter(isObject) : [];
  return {
    engine: 'sglang',
    draft: {
      method,
      draftModel: typeof json.speculative_draft_model_path === 'string' ? json.speculative_draft_model_path : undefined,
      numSteps: optNum(json, 'speculative_num_steps'),
      topk: optNum(json, 'speculative_eagle_topk'),
      numDraftTokens: optNum(json, 'speculative_num_draft_tokens'),
      serverAvgAcceptLength: states.length > 0 ? optNum(states[0], 'avg_spec_accept_length') : undefined,
    },
  };
}

async function scrape(link: ServerLink, address: ServerAddress, signal?: AbortSignal): Promise<Scrape | undefined> {
  const reply = await httpRequest(link.open, address, 'GET', '/metrics', undefined, signal);
  if (reply.status !== 200) return undefined;
  return readScrape(reply.body, readSpecCounters(reply.body));
}

function requestFor(p: SpecPrompt, model: string, profile: SpecServerProfile, engine: ServerEngine): { path: string; body: Record<string, unknown> } {
  const body: Record<string, unknown> = { model, temperature: profile.temperature, max_tokens: profile.maxTokens, n: 1, stream: false };
  // SGLang: ChatCompletionRequest/CompletionRequest.return_spec_tokens_details (python/sglang/srt/entrypoints/openai/protocol.py).
  if (engine === 'sglang') body.return_spec_tokens_details = true;
  if ('prompt' in p) {
    // SGLang's native route answers every version with meta_info (spec_verify_ct, spec_num_correct_drafts, the
    // histogram…: python/sglang/srt/managers/tokenizer_manager.py builds it), so a plain prompt goes there; its
    // sampling params are SamplingParams' own names (python/sglang/srt/sampling/sampling_params.py).
    if (engine === 'sglang') return { path: '/generate', body: { text: p.prompt, sampling_params: { temperature: profile.temperature, max_new_tokens: profile.maxTokens } } };
    return { path: '/v1/completions', body: { ...body, prompt: p.prompt } };
  }
  if (profile.thinking !== undefined) body.chat_template_kwargs = { enable_thinking: profile.thinking };
  if (profile.chatTemplate !== undefined) body.chat_template = profile.chatTemplate;
  return { path: '/v1/chat/completions', body: { ...body, messages: p.messages } };
}

async function measure(link: ServerLink, address: ServerAddress, profile: SpecServerProfile, prompts: PromptSet, speculative: boolean, signal?: AbortSignal, answered?: () => void): Promise<MeasuredRun> {
  const served = await servedModels(link, address, signal);
  const model = chooseModel(profile.model, served, address.url, speculative ? 'model' : 'baseline');
  const { engine, draft } = await serverInfo(link, address, signal);
  if (speculative && engine === 'sglang' && draft.method === undefined) {
    throw new RemoteRunsError('bad-config', `the server ${address.url} (SGLang) runs without speculative decoding (/get_server_info: speculative_algorithm is null), so there is nothing to measure: ${ENABLE_HINT.sglang}`, { server: address.url, engine });
  }
  const before = speculative ? await scrape(link, address, signal) : undefined;
  const replies: ReplyStats[] = new Array(prompts.prompts.length);
  let next = 0;
  let failed = false;
  const t0 = performance.now();
  const worker = async (): Promise<void> => {
    while (!failed && next < prompts.prompts.length) {
      const i = next++;
      const { path, body } = requestFor(prompts.prompts[i], model, profile, engine);
      const reply = await httpRequest(link.open, address, 'POST', path, body, signal);
      const where = `${address.url}${path} (prompt ${i + 1} of ${prompts.source})`;
      if (reply.status !== 200) throw new RemoteRunsError('protocol', `${where} answered ${reply.status}: ${excerpt(reply.body)}`, { server: address.url, status: reply.status });
      let json: unknown;
      try {
        json = JSON.parse(reply.body);
      } catch {
        throw new RemoteRunsError('protocol', `${where}: the reply is not JSON: ${excerpt(reply.body)}`, { server: address.url });
      }
      replies[i] = readReply(json, where);
      answered?.();
    }
  };
  // The first failure stops every worker from taking another prompt: the eval is over, the server is not loaded further.
  const guarded = async (): Promise<void> => {
    try {
      await worker();
    } catch (e) {
      failed = true;
      throw e;
    }
  };
  const workers = Array.from({ length: Math.min(profile.concurrency, prompts.prompts.length) }, guarded);
  const settled = await Promise.allSettled(workers);
  const failure = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failure) throw failure.reason;
  const seconds = (performance.now() - t0) / 1000;
  const after = speculative ? await scrape(link, address, signal) : undefined;
  const completionTokens = replies.reduce((a, r) => a + r.completionTokens, 0);
  return { engine, model, draft, replies, completionTokens, tokensPerSec: outputTokensPerSecond(completionTokens, seconds), before, after, server: address.url };
}

/** Per-request stats when every reply has them, else the counters, else an error naming the flags. */
function chooseNumbers(run: MeasuredRun, address: ServerAddress): SpecNumbers {
  const withSpec = run.replies.filter((r) => r.spec !== undefined).length;
  if (withSpec === run.replies.length && withSpec > 0) return numbersFromReplies(run.replies);
  // vLLM fills a request's spec_decode_metrics "on finish when speculative decoding ran" (vllm/outputs.py
  // CompletionOutput): a one-token reply ran no verify step and comes without it. It counts as zero steps.
  const first = run.replies.find((r) => r.spec !== undefined)?.spec;
  if (first && run.replies.every((r) => r.spec !== undefined || r.completionTokens <= 1)) {
    return numbersFromReplies(run.replies.map((r) => r.spec ? r : { ...r, spec: { source: first.source, verifySteps: 0, acceptedDraftTokens: 0, draftTokens: first.draftTokens === undefined ? undefined : 0, histogram: first.histogram === undefined ? undefined : [] } }));
  }
  if (withSpec > 0) {
    const why =
      run.engine === 'sglang'
        ? "An SGLang version whose chat replies carry no sglext.spec_tokens_details (return_spec_tokens_details) while /generate's meta_info has the counts: upgrade SGLang, or give plain {\"prompt\"} prompts, which go to /generate"
        : 'Is it behind a load balancer with servers of different settings?';
    throw new RemoteRunsError('protocol', `the server ${address.url} gave per-request speculative stats for ${withSpec} of ${run.replies.length} requests; a τ over some of them would not be the eval's. ${why}`, { server: address.url });
  }
  if (run.before?.spec && run.after?.spec) {
    const { numbers, checked } = numbersFromCounters(run.before, run.after, run.completionTokens, address.url);
    run.countersChecked = checked;
    if (numbers.verifySteps === 0) throw new RemoteRunsError('bad-config', `the server ${address.url} ran no verify step for this eval (its speculative counters did not move): speculation is off or disabled for these requests; ${ENABLE_HINT[run.engine]}`, { server: address.url });
    return numbers;
  }
  throw new RemoteRunsError('bad-config', `the server ${address.url} (${run.engine === 'sglang' ? 'SGLang' : 'vLLM or another OpenAI-compatible server'}) reports no speculative-decoding stats: its replies carry none and its /metrics has no spec_decode counters. ${run.engine === 'sglang' ? ENABLE_HINT.sglang : ENABLE_HINT.vllm}`, { server: address.url, engine: run.engine });
}

function excerpt(text: string, max = 200): string {
  const t = text.trim().replace(/\s+/g, ' ');
  return t.length > max ? `${t.slice(0, max)}…` : t || '(empty body)';
}
