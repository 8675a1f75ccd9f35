/**
 * The speculative-server eval end to end against a real engine: Hugging Face transformers' assisted generation (a
 * tiny target and drafter, greedy, CPU) behind SGLang's HTTP shape (test/fixtures/spec/engine/serve.py), replayed
 * from its recording (test/harness/recordedEngine.ts) and reached only through the real test sshd's direct-tcpip
 * forwarding. τ, acceptance rate and p_k are checked against the engine's own counts (the target's forwards, the
 * matches assisted decoding kept at each verify step), computed here with definitions.ts; and a request the eval
 * did not send when recording fails loudly.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startSshd, type TestSshd } from '../harness/sshd';
import { loadRecording, startRecordedEngine, type EngineRecording, type RecordedEngine } from '../harness/recordedEngine';
import { rejectsWith } from '../harness/assertKind';
import { testPool } from '../builders/pool';
import type { ConnectionPool, PoolHost } from '../../src/core/ssh/pool';
import { runSpecServerEval } from '../../src/core/eval/spec/server/run';
import type { PromptSet, SpecServerProfile } from '../../src/core/eval/spec/server/profile';
import { TAU_DEFINITION_TEXT, acceptanceRate, pkFromHistogram, tauFromAccepted, tauFromCompletion } from '../../src/core/eval/spec/definitions';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-specengine-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const rec: EngineRecording = loadRecording('sglang');
const vrec: EngineRecording = loadRecording('vllm');
const K = rec.manifest.k;
const prompts: PromptSet = { source: 'recorded engine prompts', prompts: rec.prompts };

let sshd: TestSshd;
let pool: ConnectionPool;
let host: PoolHost;
const engines: RecordedEngine[] = [];

before(async () => {
  sshd = await startSshd({ logLevel: 'DEBUG1' });
  const known = path.join(dir, 'known_hosts');
  fs.writeFileSync(known, `${sshd.knownHostsLine}\n`);
  pool = testPool({ knownHostsFile: known }, { agent: null, backoffBaseMs: 50, reconnectAttempts: 1, connectTimeoutMs: 5000 });
  host = { name: 'trainer', jumps: [], target: { alias: 'trainer', hostname: sshd.host, port: sshd.port, user: sshd.user, identityFiles: [sshd.clientKeyPath], identitiesOnly: true } };
});
after(async () => {
  pool?.dispose();
  await Promise.all(engines.map((e) => e.stop()));
  await sshd?.stop();
});

async function engine(r: EngineRecording = rec): Promise<RecordedEngine> {
  const e = await startRecordedEngine(r);
  engines.push(e);
  return e;
}

function profile(url: string, extra: Partial<SpecServerProfile> = {}): SpecServerProfile {
  return { kind: 'speculative-server', name: 'real engine', server: url, temperature: rec.manifest.temperature, maxTokens: rec.manifest.maxTokens, concurrency: 1, ...extra };
}

function close(actual: number | undefined, expected: number | undefined, what: string): void {
  assert.ok(actual !== undefined && expected !== undefined && Math.abs(actual - expected) < 1e-12, `${what}: ${actual} ≠ ${expected}`);
}

/** The engine's own totals over the recorded requests. */
const sum = (f: (c: EngineRecording['engineCounts'][number]) => number, r: EngineRecording = rec): number => r.engineCounts.reduce((a, c) => a + f(c), 0);
const forwards = sum((c) => c.target_forwards);
const completion = sum((c) => c.completion_tokens);
const accepted = sum((c) => c.accepted_draft_tokens);
const allSteps = rec.engineCounts.flatMap((c) => c.steps);

describe('the eval against a real speculative engine (transformers assisted generation), replayed', () => {
  test('the recording is of a real run worth checking: several verify steps, every accepted length 0 … K seen, the drafter right and wrong', () => {
    assert.equal(rec.engineCounts.length, rec.prompts.length);
    assert.equal(allSteps.length, forwards, 'one verify step per target forward');
    assert.equal(completion, accepted + forwards, 'each step emits its accepted drafts and the bonus token');
    for (const c of rec.engineCounts) assert.equal(c.greedy_equal, true, 'assisted greedy output is the target\'s own greedy output');
    assert.ok(forwards < sum((c) => c.plain_target_forwards), 'speculation saved target forwards against plain greedy');
    for (let j = 0; j <= K; j++) assert.ok(allSteps.some((s) => s.accepted === j), `some step accepted exactly ${j}`);
    // The replies carry the engine's counts, not numbers of their own (serve.py's meta_info of each request).
    const replies = rec.exchanges.filter((e) => e.method === 'POST').map((e) => JSON.parse(e.response) as Record<string, any>);
    replies.forEach((r, i) => {
      const meta = r.meta_info ?? r.sglext.spec_tokens_details;
      assert.equal(meta.spec_verify_ct, rec.engineCounts[i].target_forwards);
      assert.equal(meta.spec_num_correct_drafts, rec.engineCounts[i].accepted_draft_tokens);
    });
  });

  test("τ, acceptance rate and p_k through the real sshd equal what the engine's own counts give, and the result says which τ it is", async () => {
    const e = await engine();
    const out = await runSpecServerEval({ pool, host, profile: profile(e.url), prompts });
    assert.deepEqual(e.unexpected, [], 'every request the eval sent was recorded');
    assert.deepEqual(e.unanswered(), [], 'the eval sent every recorded request');
    assert.deepEqual(e.answered, rec.exchanges.map((_, i) => i), 'in the recorded order');
    assert.equal(out.engine, 'sglang');
    assert.equal(out.source, 'sglang-spec-details');
    assert.equal(out.model, 'tiny-llama-target');

    // τ as SGLang defines it: completion tokens / verify steps, the verify steps being the target's forwards.
    assert.equal(out.result.tauDefinition, 'completion-per-verify');
    assert.ok(out.result.notes.includes(`τ: ${TAU_DEFINITION_TEXT['completion-per-verify']}`), out.result.notes.join('\n'));
    close(out.result.tau, tauFromCompletion(completion, forwards), 'τ');
    close(out.result.tau, completion / forwards, 'τ by hand');
    // In assisted decoding the first target forward is the prefill and a verify step at once, so no token comes
    // from outside a verify step and 1 + accepted / steps is the same number (SGLang's prefill token makes it smaller there).
    close(out.result.extra.tau_one_plus_accepted, tauFromAccepted(accepted, forwards), 'τ (1 + accepted / steps)');
    close(out.result.extra.tau_one_plus_accepted, out.result.tau, 'the two definitions agree on this engine');
    assert.ok((out.result.tau ?? 0) > 1.2, `the drafter helped (τ ${out.result.tau})`);

    // Acceptance as SGLang counts proposals: steps × (speculative_num_draft_tokens − 1) = steps × K.
    close(out.result.acceptanceRate, acceptanceRate(accepted, forwards * K), 'acceptance rate');
    const drafted = sum((c) => c.drafter_proposed_tokens);
    assert.ok(drafted < forwards * K, 'the drafter proposed fewer than K near max_tokens, which SGLang\'s count does not see');

    // p_k from the steps themselves (the fraction of verify steps that accepted at least k drafts), not from a histogram.
    const pk = Array.from({ length: K }, (_, i) => allSteps.filter((s) => s.accepted >= i + 1).length / allSteps.length);
    assert.equal(out.result.pk?.length, K);
    out.result.pk?.forEach((p, i) => close(p, pk[i], `p_${i + 1}`));
    const summed = rec.engineCounts.reduce((h, c) => h.map((v, j) => v + c.histogram[j]), new Array<number>(K + 1).fill(0));
    out.result.pk?.forEach((p, i) => close(p, pkFromHistogram(summed, K)[i], `p_${i + 1} from the summed histogram`));

    assert.deepEqual(out.result.counts, { verifySteps: forwards, completionTokens: completion, acceptedDraftTokens: accepted, draftTokens: forwards * K, requests: rec.prompts.length });
    assert.equal(out.result.settings.method, 'STANDALONE');
    assert.equal(out.result.settings.draftModel, 'tiny-llama-drafter');
    assert.equal(out.result.settings.numSteps, K);
    assert.equal(out.result.settings.numDraftTokens, K + 1);
    assert.equal(out.result.settings.maxTokens, 24);
    assert.deepEqual(Object.keys(out.evalResult).sort(), ['acceptance_rate', 'output_tokens_per_s', 'p_1', 'p_2', 'p_3', 'tau']);
    close(out.evalResult.tau, out.result.tau, 'the eval line carries the same τ');
    assert.match(sshd.log(), new RegExp(`target 127\\.0\\.0\\.1 port ${e.port}\\b`), 'the traffic crossed sshd');
  });

  test('concurrent requests give the same numbers: the replies are matched by content, not by arrival', async () => {
    const e = await engine();
    const out = await runSpecServerEval({ pool, host, profile: profile(e.url, { concurrency: 3 }), prompts });
    assert.deepEqual(e.unexpected, []);
    assert.deepEqual(e.unanswered(), []);
    close(out.result.tau, completion / forwards, 'τ');
  });

  test('a request the eval did not send when recording fails loudly, naming the difference', async () => {
    const e = await engine();
    const err = await rejectsWith(runSpecServerEval({ pool, host, profile: profile(e.url, { maxTokens: 40 }), prompts }), 'protocol');
    assert.match(err.message, /answered 400/);
    assert.match(err.message, /sampling_params\.max_new_tokens: recorded 24, received 40/);
    assert.equal(e.unexpected.length, 1, 'the eval stopped at the first refused request');
  });
});

describe("the same engine in vLLM's shape (--per-request-spec-decode-metrics summary), replayed", () => {
  test('the two recordings are one engine run: the same tokens, steps and matches for every prompt', () => {
    assert.equal(vrec.manifest.shape, 'vllm');
    assert.deepEqual(vrec.prompts, rec.prompts);
    assert.deepEqual(vrec.engineCounts, rec.engineCounts, 'the engine is deterministic: seeded weights, greedy');
  });

  test("τ = 1 + accepted / steps, acceptance over the drafts actually proposed, p_k: what the engine's own counts give, under vLLM's definitions", async () => {
    const e = await engine(vrec);
    const out = await runSpecServerEval({ pool, host, profile: profile(e.url), prompts });
    assert.deepEqual(e.unexpected, []);
    assert.deepEqual(e.unanswered(), []);
    assert.equal(out.engine, 'vllm');
    assert.equal(out.source, 'vllm-per-request');
    assert.equal(out.result.tauDefinition, 'one-plus-accepted-per-draft');
    assert.ok(out.result.notes.includes(`τ: ${TAU_DEFINITION_TEXT['one-plus-accepted-per-draft']}`), out.result.notes.join('\n'));
    close(out.result.tau, tauFromAccepted(accepted, forwards), 'τ');
    // vLLM's RequestSpecDecodeMetrics.observe adds each step's own draft tokens: the drafter's actual proposals.
    const drafted = sum((c) => c.drafter_proposed_tokens, vrec);
    close(out.result.acceptanceRate, acceptanceRate(accepted, drafted), 'acceptance rate');
    assert.ok(Math.abs((out.result.acceptanceRate ?? 0) - accepted / (forwards * K)) > 0.01, "unlike SGLang's steps × K, so the two engines' rates differ on one run");
    const pk = Array.from({ length: K }, (_, i) => allSteps.filter((s) => s.accepted >= i + 1).length / allSteps.length);
    assert.equal(out.result.pk?.length, K);
    out.result.pk?.forEach((p, i) => close(p, pk[i], `p_${i + 1}`));
    assert.deepEqual(out.result.counts, { verifySteps: forwards, completionTokens: completion, acceptedDraftTokens: accepted, draftTokens: drafted, requests: rec.prompts.length });
    assert.equal(out.result.settings.numSpeculativeTokens, K, "K from the replies' num_spec_tokens");
    // Plain prompts went to /v1/completions, and nothing SGLang-only was sent.
    const posts = vrec.exchanges.filter((x) => x.method === 'POST');
    assert.deepEqual(posts.map((x) => x.path), ['/v1/completions', '/v1/completions', '/v1/chat/completions', '/v1/completions', '/v1/chat/completions']);
    for (const x of posts) assert.equal('return_spec_tokens_details' in (x.body as object), false);
  });
});

