/**
 * The speculative-server eval against the stand-in engine server (test/harness/specServer.ts) on 127.0.0.1, reached
 * only through the real test sshd's direct-tcpip forwarding (the pool's lease of the host's link): τ, acceptance rate
 * and p_k checked against the toy's own counts for each stats source (vLLM per-request metrics, SGLang
 * sglext.spec_tokens_details, the /metrics counters), the settings sent and recorded, the speedup against a baseline,
 * and every error of the eval saying what to do.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createServer } from 'node:net';
import { startSshd, type TestSshd } from '../harness/sshd';
import { startSpecServer, type SpecServer, type SpecServerOptions, type ToyCounts } from '../harness/specServer';
import { rejectsWith } from '../harness/assertKind';
import { forwardingHost, testPool } from '../builders/pool';
import type { ConnectionPool, PoolHost } from '../../src/core/ssh/pool';
import { runSpecServerEval } from '../../src/core/eval/spec/server/run';
import { readPromptSet, type PromptSet, type SpecServerProfile } from '../../src/core/eval/spec/server/profile';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-specserver-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

let sshd: TestSshd;
let pool: ConnectionPool;
let host: PoolHost;
const servers: SpecServer[] = [];

before(async () => {
  ({ sshd, pool, host } = await forwardingHost(dir));
});
after(async () => {
  pool?.dispose();
  await Promise.all(servers.map((s) => s.stop()));
  await sshd?.stop();
});

async function server(o: SpecServerOptions): Promise<SpecServer> {
  const s = await startSpecServer(o);
  servers.push(s);
  return s;
}

function profile(url: string, extra: Partial<SpecServerProfile> = {}): SpecServerProfile {
  return { kind: 'speculative-server', name: 'spec', server: url, temperature: 0, maxTokens: 40, concurrency: 2, ...extra };
}

/** Seven prompts, chat and plain, so both routes are used. */
const PROMPTS: PromptSet = {
  source: 'test prompts',
  prompts: [
    { messages: [{ role: 'user', content: 'one' }] },
    { messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'two' }] },
    { prompt: 'three' },
    { messages: [{ role: 'user', content: 'four' }] },
    { prompt: 'five' },
    { messages: [{ role: 'user', content: 'six' }] },
    { messages: [{ role: 'user', content: 'seven' }] },
  ],
};

/** p_k = Σ_{j≥k} h[j] / Σ h, from the toy's own histogram. */
function expectedPk(t: ToyCounts): number[] {
  const total = t.histogram.reduce((a, b) => a + b, 0);
  return t.histogram.slice(1).map((_, i) => t.histogram.slice(i + 1).reduce((a, b) => a + b, 0) / total);
}

function close(actual: number | undefined, expected: number, what: string): void {
  assert.ok(actual !== undefined && Math.abs(actual - expected) < 1e-12, `${what}: ${actual} ≠ ${expected}`);
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('stats from each source, checked against the toy engine', () => {
  test('vLLM per-request metrics: τ = 1 + accepted / steps, acceptance, p_k from the summed histogram; settings sent and recorded; the traffic crossed sshd', async () => {
    const s = await server({ mode: 'vllm', k: 3, seed: 11 });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url, { thinking: false, chatTemplate: '{{ messages }}', temperature: 0.5 }), prompts: PROMPTS });
    const t = s.totals();
    assert.equal(t.requests, PROMPTS.prompts.length);
    assert.ok(t.verifySteps > 20, 'the toy ran enough verify steps to tell definitions apart');
    assert.equal(out.source, 'vllm-per-request');
    assert.equal(out.engine, 'vllm');
    assert.equal(out.result.tauDefinition, 'one-plus-accepted-per-draft');
    close(out.result.tau, 1 + t.accepted / t.verifySteps, 'τ');
    close(out.result.acceptanceRate, t.accepted / t.drafted, 'acceptance rate');
    assert.deepEqual(out.result.pk?.length, 3);
    out.result.pk?.forEach((p, i) => close(p, expectedPk(t)[i], `p_${i + 1}`));
    assert.deepEqual(out.result.counts, { verifySteps: t.verifySteps, completionTokens: t.completionTokens, acceptedDraftTokens: t.accepted, draftTokens: t.drafted, requests: 7 });
    assert.ok((out.result.outputTokensPerSec ?? 0) > 0);
    assert.equal(out.result.speedup, undefined, 'no baseline, no speedup');
    // The eval result line the charts read.
    assert.deepEqual(Object.keys(out.evalResult).sort(), ['acceptance_rate', 'output_tokens_per_s', 'p_1', 'p_2', 'p_3', 'tau']);
    // Settings pinned in every request and recorded with the result.
    const chats = s.received.filter((r) => r.path === '/v1/chat/completions');
    const plains = s.received.filter((r) => r.path === '/v1/completions');
    assert.equal(chats.length, 5);
    assert.equal(plains.length, 2);
    for (const r of s.received) {
      assert.equal(r.body.temperature, 0.5);
      assert.equal(r.body.max_tokens, 40);
      assert.equal(r.body.model, 'target-model');
      assert.equal('return_spec_tokens_details' in r.body, false, 'an SGLang-only field is not sent to vLLM');
    }
    for (const r of chats) {
      assert.deepEqual(r.body.chat_template_kwargs, { enable_thinking: false });
      assert.equal(r.body.chat_template, '{{ messages }}');
    }
    assert.deepEqual(out.result.settings, { model: 'target-model', temperature: 0.5, maxTokens: 40, concurrency: 2, thinking: false, chatTemplate: '{{ messages }}', benchmark: 'test prompts', numPrompts: 7, numSpeculativeTokens: 3 });
    assert.equal(out.result.settingSources.temperature, 'pinned');
    assert.equal(out.result.settingSources.numSpeculativeTokens, 'server');
    assert.match(sshd.log(), new RegExp(`target 127\\.0\\.0\\.1 port ${s.port}\\b`), 'sshd opened the channels to the server');
  });

  test('SGLang sglext.spec_tokens_details: τ = completion tokens / verify steps, 1 + accepted / steps beside it, draft settings from /get_server_info', async () => {
    const s = await server({ mode: 'sglang', k: 4, seed: 5 });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url, { concurrency: 3 }), prompts: PROMPTS });
    const t = s.totals();
    assert.equal(out.source, 'sglang-spec-details');
    assert.equal(out.engine, 'sglang');
    assert.equal(out.result.tauDefinition, 'completion-per-verify');
    close(out.result.tau, t.completionTokens / t.verifySteps, 'τ');
    close(out.result.extra.tau_one_plus_accepted, 1 + t.accepted / t.verifySteps, 'τ (1 + accepted / steps)');
    assert.ok((out.result.tau ?? 0) > out.result.extra.tau_one_plus_accepted, 'the prefill token makes completion/steps the larger');
    close(out.result.acceptanceRate, t.accepted / t.drafted, 'acceptance rate');
    assert.equal(out.result.pk?.length, 4);
    out.result.pk?.forEach((p, i) => close(p, expectedPk(t)[i], `p_${i + 1}`));
    // Chat prompts to the OpenAI route asking for the details; plain prompts to SGLang's /generate, whose meta_info has them.
    assert.deepEqual(s.received.map((r) => r.path).sort(), ['/generate', '/generate', ...Array<string>(5).fill('/v1/chat/completions')]);
    for (const r of s.received.filter((x) => x.path === '/v1/chat/completions')) assert.equal(r.body.return_spec_tokens_details, true);
    for (const r of s.received.filter((x) => x.path === '/generate')) assert.deepEqual(r.body.sampling_params, { temperature: 0, max_new_tokens: 40 });
    assert.equal(out.result.settings.method, 'EAGLE3');
    assert.equal(out.result.settings.numSteps, 4);
    assert.equal(out.result.settings.topk, 1);
    assert.equal(out.result.settings.numDraftTokens, 5);
    assert.equal(out.result.settings.draftModel, '/ckpt/drafter/step_2000');
    assert.equal(out.result.settingSources.method, 'server');
  });

  test('an SGLang without return_spec_tokens_details: plain prompts are measured through /generate; chat prompts get an error that says why', async () => {
    const s = await server({ mode: 'sglang', k: 3, seed: 17, noSglext: true });
    const plain: PromptSet = { source: 'plain', prompts: ['a', 'b', 'c', 'd'].map((prompt) => ({ prompt })) };
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url), prompts: plain });
    const t = s.totals();
    assert.equal(out.source, 'sglang-spec-details');
    close(out.result.tau, t.completionTokens / t.verifySteps, 'τ');
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS }), 'protocol');
    assert.match(e.message, /gave per-request speculative stats for 2 of 7 requests/);
    assert.match(e.message, /upgrade SGLang, or give plain \{"prompt"\} prompts/);
  });

  test('vLLM one-token replies (no verify step, so no metrics.speculative_decoding) count as zero steps, not as a server without stats', async () => {
    const s = await server({ mode: 'vllm', k: 3, seed: 21, oneTokenFor: 'two' });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS });
    const t = s.totals();
    assert.equal(out.source, 'vllm-per-request');
    assert.equal(out.result.counts?.requests, 7);
    close(out.result.tau, 1 + t.accepted / t.verifySteps, 'τ');
    close(out.result.acceptanceRate, t.accepted / t.drafted, 'acceptance rate');
    out.result.pk?.forEach((p, i) => close(p, expectedPk(t)[i], `p_${i + 1}`));
  });

  test("vLLM's /server_info (development mode): method, draft model and K recorded as the server reports them", async () => {
    const s = await server({ mode: 'vllm', k: 5, seed: 13, devMode: true });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS });
    assert.equal(out.result.settings.method, 'eagle3');
    assert.equal(out.result.settings.draftModel, '/ckpt/drafter/step_2000');
    assert.equal(out.result.settings.numSpeculativeTokens, 5);
    assert.equal(out.result.settingSources.method, 'server');
    assert.equal(out.result.pk?.length, 5);
    close(out.result.tau, 1 + s.totals().accepted / s.totals().verifySteps, 'τ');
  });

  test('vLLM without per-request metrics: the /metrics counters before and after, checked against the generated-token counter', async () => {
    const s = await server({ mode: 'vllm', k: 3, seed: 23, perRequest: false });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS });
    const t = s.totals();
    assert.equal(out.source, 'metrics-counters');
    assert.equal(out.result.settings.numSpeculativeTokens, 3, 'K from the per-position series vLLM creates at start');
    close(out.result.tau, 1 + t.accepted / t.verifySteps, 'τ');
    close(out.result.acceptanceRate, t.accepted / t.drafted, 'acceptance rate');
    out.result.pk?.forEach((p, i) => close(p, t.perPos[i] / t.verifySteps, `p_${i + 1}`));
    assert.equal(out.result.pk?.length, 3);
    assert.ok(out.result.notes.some((n) => /valid only when nobody else used the server/.test(n)), out.result.notes.join('\n'));
    assert.ok(out.result.notes.some((n) => /moved by exactly this eval's tokens/.test(n)), out.result.notes.join('\n'));
  });

  test('counters without a generated-token counter: the result says the idle server could not be checked', async () => {
    const s = await server({ mode: 'vllm', k: 2, seed: 3, perRequest: false, noGenerationCounter: true });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS });
    const t = s.totals();
    close(out.result.tau, 1 + t.accepted / t.verifySteps, 'τ');
    assert.ok(out.result.notes.some((n) => /could not be checked/.test(n)), out.result.notes.join('\n'));
  });

  test('a busy server (another client moves the counters): an error that says so, not a wrong τ', async () => {
    const s = await server({ mode: 'busy', k: 3, seed: 9 });
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS }), 'busy');
    assert.ok(s.other().requests > 0);
    assert.match(e.message, new RegExp(`generated ${s.totals().completionTokens + s.other().completionTokens} tokens`));
    assert.match(e.message, new RegExp(`got ${s.totals().completionTokens}`));
    assert.match(e.message, /--per-request-spec-decode-metrics/);
  });
});

describe('speedup against speculation off', () => {
  test('a baseline server runs the same prompts and settings; speedup = tokens/s over its tokens/s', async () => {
    const spec = await server({ mode: 'vllm', k: 3, seed: 2 });
    const base = await server({ mode: 'no-spec', engine: 'vllm', seed: 2 });
    const out = await runSpecServerEval({ pool, host, profile: profile(spec.url, { baseline: { kind: 'server', url: base.url } }), prompts: PROMPTS });
    assert.equal(base.received.length, PROMPTS.prompts.length);
    const sent = (srv: SpecServer) => srv.received.map((r) => JSON.stringify([r.path, r.body.model, r.body.temperature, r.body.max_tokens, r.body.messages ?? r.body.prompt])).sort();
    assert.deepEqual(sent(base), sent(spec), 'the baseline got the same prompts with the same settings');
    const note = out.result.notes.find((n) => n.includes(base.url));
    assert.ok(note, out.result.notes.join('\n'));
    const baseTps = Number(/: ([0-9.]+) output tokens\/s/.exec(note)?.[1]);
    assert.ok(baseTps > 0);
    assert.ok(out.result.speedup !== undefined && out.result.speedup > 0);
    assert.ok(Math.abs((out.result.outputTokensPerSec ?? 0) / (out.result.speedup ?? 1) - baseTps) < 0.05 + baseTps * 1e-3, 'speedup is the ratio of the two speeds');
    assert.ok('speedup' in out.evalResult);
  });

  test('a recorded baseline: speedup = tokens/s / the recorded figure', async () => {
    const spec = await server({ mode: 'sglang', k: 2, seed: 4 });
    const out = await runSpecServerEval({ pool, host, profile: profile(spec.url, { baseline: { kind: 'recorded', outputTokensPerSec: 123.5 } }), prompts: PROMPTS });
    close(out.result.speedup, (out.result.outputTokensPerSec ?? NaN) / 123.5, 'speedup');
  });

  test('a baseline that speculates is refused', async () => {
    const spec = await server({ mode: 'vllm', seed: 6 });
    const alsoSpec = await server({ mode: 'vllm', seed: 6 });
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(spec.url, { baseline: { kind: 'server', url: alsoSpec.url } }), prompts: PROMPTS }), 'bad-config');
    assert.match(e.message, /baseline: .* runs with speculative decoding/);
  });
});

describe('errors that say what to do', () => {
  test('nothing listens at the address: unreachable, naming the host, the address and that the link is up', async () => {
    const port = await closedPort();
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(`http://127.0.0.1:${port}`), prompts: PROMPTS }), 'unreachable');
    assert.match(e.message, new RegExp(`the eval server http://127\\.0\\.0\\.1:${port} cannot be reached from trainer: the SSH link to trainer is up, but trainer could not connect to 127\\.0\\.0\\.1:${port}`));
    assert.equal(e.detail.link, 'up');
  });

  test('sshd refuses forwarding (AllowTcpForwarding no): unreachable, naming the sshd setting, not the server', async () => {
    const strict = await startSshd({ allowTcpForwarding: false });
    try {
      const known = path.join(dir, 'known_hosts_strict');
      fs.writeFileSync(known, `${strict.knownHostsLine}\n`);
      const p = testPool({ knownHostsFile: known }, { agent: null });
      const s = await server({ mode: 'vllm' });
      const h: PoolHost = { name: 'locked', jumps: [], target: { alias: 'locked', hostname: strict.host, port: strict.port, user: strict.user, identityFiles: [strict.clientKeyPath], identitiesOnly: true } };
      try {
        const e = await rejectsWith(runSpecServerEval({ pool: p, host: h, profile: profile(s.url), prompts: PROMPTS }), 'unreachable');
        assert.match(e.message, new RegExp(`the SSH link to locked is up, but its sshd refuses to forward to 127\\.0\\.0\\.1:${s.port}`));
        assert.match(e.message, /AllowTcpForwarding no/);
        assert.equal(e.detail.forwarding, 'refused');
        assert.equal(s.received.length, 0);
      } finally {
        p.dispose();
      }
    } finally {
      await strict.stop();
    }
  });

  test('the SSH link itself is down: unreachable, saying it is the link', async () => {
    const sshPort = await closedPort();
    const down: PoolHost = { name: 'gone', jumps: [], target: { ...host.target, alias: 'gone', port: sshPort } };
    const e = await rejectsWith(runSpecServerEval({ pool, host: down, profile: profile('http://10.0.0.5:30000'), prompts: PROMPTS }), 'unreachable');
    assert.match(e.message, /cannot reach the eval server http:\/\/10\.0\.0\.5:30000: the SSH link to gone itself is down/);
    assert.equal(e.detail.link, 'down');
  });

  test('vLLM with speculation off: no stats, naming --speculative-config and --per-request-spec-decode-metrics', async () => {
    const s = await server({ mode: 'no-spec', engine: 'vllm' });
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS }), 'bad-config');
    assert.match(e.message, /reports no speculative-decoding stats/);
    assert.match(e.message, /--speculative-config/);
    assert.match(e.message, /--per-request-spec-decode-metrics summary/);
  });

  test('SGLang with speculation off: refused before any prompt is sent, naming --speculative-algorithm', async () => {
    const s = await server({ mode: 'no-spec', engine: 'sglang' });
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS }), 'bad-config');
    assert.match(e.message, /speculative_algorithm is null/);
    assert.match(e.message, /--speculative-algorithm/);
    assert.equal(s.received.length, 0);
  });

  test('a model the server does not serve: the error lists /v1/models', async () => {
    const s = await server({ mode: 'vllm', models: ['Qwen/Qwen3-8B', 'other'] });
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url, { model: 'qwen3-8b' }), prompts: PROMPTS }), 'bad-config');
    assert.match(e.message, /does not serve "qwen3-8b"; its \/v1\/models lists "Qwen\/Qwen3-8B", "other"/);
    assert.deepEqual(e.detail.served, ['Qwen/Qwen3-8B', 'other']);
    assert.equal(s.received.length, 0, 'no prompt sent');
    // Two models and none named: which one is asked.
    const e2 = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS }), 'bad-config');
    assert.match(e2.message, /serves 2 models \("Qwen\/Qwen3-8B", "other"\); set "model"/);
  });

  test('a prompt file that does not parse: file, line and why, and nothing is sent', async () => {
    const s = await server({ mode: 'vllm' });
    const file = path.join(dir, 'prompts.jsonl');
    fs.writeFileSync(file, '{"prompt": "fine"}\n\n{"messages": [{"role": "user", "content": "ok"}]}\n{"prompt": 3}\nnot json\n{"text": "x"}\n');
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url, { prompts: file }) }), 'bad-config');
    assert.match(e.message, new RegExp(`${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:4: "prompt" must be a non-empty string, got number 3`));
    assert.match(e.message, /prompts\.jsonl:5: not JSON/);
    assert.match(e.message, /prompts\.jsonl:6: has neither "prompt" nor "messages" \(keys: text\)/);
    assert.equal(s.received.length, 0);
  });

  test('cancelled mid-eval: the eval stops with cancelled, sends no more prompts, and the link stays usable', async () => {
    const ac = new AbortController();
    const s = await server({ mode: 'vllm', onCompletion: (n) => n === 2 && ac.abort() });
    await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url, { concurrency: 1 }), prompts: PROMPTS, signal: ac.signal }), 'cancelled');
    assert.equal(s.received.length, 2, 'nothing sent after the abort');
    const again = await runSpecServerEval({ pool, host, profile: profile(s.url), prompts: PROMPTS });
    assert.ok((again.result.tau ?? 0) >= 1);
  });

  test('a request the server fails: the route, the prompt and the server\'s message; no further prompt is sent', async () => {
    const s = await server({ mode: 'vllm', failAt: 3 });
    const e = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(s.url, { concurrency: 2 }), prompts: PROMPTS }), 'protocol');
    assert.match(e.message, new RegExp(`${s.url}/v1/(chat/)?completions \\(prompt \\d of test prompts\\) answered 500: .*illegal memory access`));
    assert.ok(s.received.length <= 4, `at most the one request in flight beside the failed one went out (${s.received.length})`);
  });

  test('the built-in prompt set is used when the profile names none', async () => {
    const s = await server({ mode: 'vllm', seed: 8 });
    const out = await runSpecServerEval({ pool, host, profile: profile(s.url) });
    assert.equal(s.received.length, readPromptSet(undefined).prompts.length);
    assert.equal(out.result.settings.benchmark, 'built-in (12 short prompts)');
    close(out.result.tau, 1 + s.totals().accepted / s.totals().verifySteps, 'τ');
  });
});
