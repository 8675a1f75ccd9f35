/**
 * The readers of the real tools' speculative-decoding output, on files laid out as each tool writes them
 * (test/fixtures/spec/README.md names the source of each), and on empty, malformed and half-written input.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readSpecOutput, type SpecReadOutcome } from '../../src/core/eval/spec/detect';
import { specEvalResult } from '../../src/core/eval/spec/evalResult';
import type { SpecRead, SpecResult } from '../../src/core/eval/spec/types';
import { readSpecforgeBench as readSpecforgeBenchText } from '../../src/core/eval/spec/readers/specforge';

const FIX = join(__dirname, '..', 'fixtures', 'spec');
const fixture = (name: string) => readFileSync(join(FIX, name), 'utf8');
const close = (a: number | undefined, b: number, eps = 1e-9) => assert.ok(a !== undefined && Math.abs(a - b) <= eps, `${a} ≉ ${b}`);

function read(text: string, name?: string): SpecRead {
  const r: SpecReadOutcome = readSpecOutput(text, name);
  assert.ok(r.tool !== undefined, `not recognised: ${'reason' in r ? r.reason : ''}`);
  return r as SpecRead;
}
const byLabel = (r: SpecRead, label: string): SpecResult => {
  const x = r.results.find((res) => res.label === label);
  assert.ok(x, `no row ${label} among ${r.results.map((res) => res.label).join(', ')}`);
  return x;
};

test('SGLang bench_speculative rows: τ = acc_length (bonus counted), sweep settings, speedup over the steps=0 row', () => {
  const r = read(fixture('sglang_bench_speculative.jsonl'));
  assert.equal(r.tool, 'sglang-bench-speculative');
  assert.deepEqual(r.problems, []);
  assert.equal(r.incomplete, undefined);
  assert.equal(r.results.length, 5);
  const row = byLabel(r, 'bs=1 steps=3 topk=1 draft=4');
  assert.equal(row.tau, 3.0);
  assert.equal(row.tauDefinition, 'one-plus-accepted-per-draft', 'the server’s avg_spec_accept_length: 1 + accepted per request-step');
  assert.deepEqual(row.settings, { concurrency: 1, numSteps: 3, topk: 1, numDraftTokens: 4, temperature: 0, maxTokens: 512, ignoreEos: true });
  assert.deepEqual(row.settingSources, { concurrency: 'file', numSteps: 'file', topk: 'file', numDraftTokens: 'file', temperature: 'fixed', maxTokens: 'fixed', ignoreEos: 'fixed' });
  close(row.speedup, 212.388 / 81.001);
  close(byLabel(r, 'bs=4 steps=3 topk=1 draft=4').speedup, 195.744 / 76.922, 1e-9);
  const base = byLabel(r, 'bs=1 steps=0 topk=0 draft=0');
  assert.equal(base.speculative, false);
  assert.equal(base.speedup, undefined);
  assert.equal(row.extra.step_time, 0.01412);
});

test('SGLang bench_speculative caught mid-append: whole rows read, the cut line is incomplete, not an error', () => {
  const r = read(fixture('sglang_bench_speculative.partial.jsonl'));
  assert.equal(r.results.length, 2);
  assert.deepEqual(r.problems, []);
  assert.match(r.incomplete ?? '', /line 3 is not finished/);
});

test('SGLang rows with a missing or mistyped field are named by line, the others read', () => {
  const good = fixture('sglang_bench_speculative.jsonl').split('\n')[1];
  const text = `${good}\n{"batch_size": 1, "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": "3.1", "step_time": 0.01, "speed": 300}\n{"batch_size": 1, "steps": 3, "topk": 1, "num_draft_tokens": 4, "step_time": 0.01, "speed": 300, "acc_length": 0.5}\nnot json\n`;
  const r = read(text);
  assert.equal(r.results.length, 1);
  assert.deepEqual(r.problems, [
    { line: 2, message: 'not a bench_speculative row: "acc_length" is "3.1", not a number' },
    { line: 3, message: "acc_length 0.5 is below 1: bench_speculative's accept length counts the bonus token, so it is at least 1" },
    { line: 4, message: 'not JSON: not json' },
  ]);
});

test('SpecForge bench_eagle3 JSON: one row per benchmark and config, settings fixed by its code, speedup per benchmark', () => {
  const r = read(fixture('specforge_results_20261205_101500.jsonl'));
  assert.equal(r.tool, 'specforge-bench');
  assert.deepEqual(r.problems, []);
  assert.equal(r.results.length, 4);
  const mt = byLabel(r, 'mtbench bs=1 steps=3 topk=1 draft=4');
  close(mt.tau, 3.002114597544338);
  assert.equal(mt.tauDefinition, 'completion-per-verify');
  close(mt.speedup, 604.8228245308303 / 275.4115149833724);
  assert.deepEqual(mt.settings, { benchmark: 'mtbench', draftModel: '/ckpt/drafter/epoch_3_step_12000', concurrency: 1, numSteps: 3, topk: 1, numDraftTokens: 4, numPrompts: 80, temperature: 0, maxTokens: 2048 });
  assert.equal(mt.settingSources.temperature, 'fixed');
  const gsm = byLabel(r, 'gsm8k bs=1 steps=3 topk=1 draft=4');
  assert.equal(gsm.extra.accuracy, 0.785);
  close(gsm.speedup, 2413.4280405578115 / 958.52892087536);
  assert.equal(byLabel(r, 'gsm8k bs=1 steps=0 topk=0 draft=0').speculative, false);
});

test('SpecForge with --skip-launch-server: draft settings null in the file, not invented', () => {
  const r = read(fixture('specforge_skip_server_results_20261205_102000.jsonl'));
  const row = byLabel(r, 'mtbench bs=1');
  assert.equal(row.speculative, true);
  assert.equal(row.settings.numSteps, undefined);
  assert.equal(row.settings.numDraftTokens, undefined);
  assert.match(row.notes.join(' '), /skip-launch-server/);
});

test('SpecForge caught while json.dump writes: incomplete, no results, no problem', () => {
  const r = read(fixture('specforge_results.partial.jsonl'));
  assert.equal(r.tool, 'specforge-bench');
  assert.deepEqual(r.results, []);
  assert.deepEqual(r.problems, []);
  assert.match(r.incomplete ?? '', /cut short/);
});

test('vLLM spec_decode.py output: τ from the counts (bonus counted) agrees with the printed mean; p_k as printed', () => {
  const counts = JSON.parse(fixture('vllm_spec_decode.counts.json')) as { num_drafts: number; num_draft_tokens: number; num_accepted_tokens: number; per_pos: number[]; total_num_output_tokens: number };
  const r = read(fixture('vllm_spec_decode.txt'));
  assert.equal(r.tool, 'vllm-spec-decode');
  assert.deepEqual(r.problems, []);
  assert.equal(r.incomplete, undefined);
  assert.equal(r.results.length, 1, 'the engine’s interval "SpecDecoding metrics" log line is not a result');
  const [row] = r.results;
  close(row.tau, 1 + counts.num_accepted_tokens / counts.num_drafts);
  assert.equal(row.tauDefinition, 'one-plus-accepted-per-draft');
  close(row.acceptanceRate, counts.num_accepted_tokens / counts.num_draft_tokens);
  assert.deepEqual(row.pk, counts.per_pos.map((c) => Math.round((c / counts.num_drafts) * 100) / 100));
  assert.deepEqual(row.counts, { verifySteps: counts.num_drafts, draftTokens: counts.num_draft_tokens, acceptedDraftTokens: counts.num_accepted_tokens, completionTokens: counts.total_num_output_tokens });
  assert.deepEqual(row.settings, { numSpeculativeTokens: 3, model: 'meta-llama/Llama-3.1-8B-Instruct', method: 'eagle3', draftModel: 'yuhuili/EAGLE3-LLaMA3.1-Instruct-8B', temperature: 0, maxTokens: 256 });
  assert.equal(row.settingSources.temperature, 'default');
  assert.equal(row.settingSources.draftModel, 'file');
});

test('vLLM output caught before its mean is printed: incomplete; a mean that contradicts the counts is a problem', () => {
  const partial = read(fixture('vllm_spec_decode.partial.txt'));
  assert.deepEqual(partial.results, []);
  assert.match(partial.incomplete ?? '', /no "mean acceptance length" yet/);
  const lied = fixture('vllm_spec_decode.txt').replace(/mean acceptance length: [\d.]+/, 'mean acceptance length: 3.47');
  const r = read(lied);
  assert.equal(r.problems.length, 1);
  assert.match(r.problems[0].message, /does not match 1 \+ 12167\/8301/);
  const garbled = fixture('vllm_spec_decode.txt').replace(/num_drafts: \d+/, 'num_drafts: many');
  assert.match(read(garbled).problems.map((p) => p.message).join(' '), /num_drafts: "many" is not a count/);
});

test('EAGLE answers: τ = Σ new_tokens / Σ (idx + 1); the Σ idx ratio kept beside it; temperature from the name', () => {
  const r = read(fixture('eagle-llama3-8b-temperature-0.0.jsonl'), 'eagle-llama3-8b-temperature-0.0.jsonl');
  assert.equal(r.tool, 'eagle-answers');
  assert.deepEqual(r.problems, []);
  const [row] = r.results;
  close(row.tau, 984 / 324);
  assert.equal(row.tauDefinition, 'eagle-new-tokens-per-verify');
  close(row.extra.tau_new_tokens_per_idx, 984 / 318);
  assert.ok(row.extra.tau_new_tokens_per_idx > row.tau!, 'dividing by idx (one step fewer per turn) overstates τ');
  assert.deepEqual(row.counts, { verifySteps: 324, completionTokens: 984, requests: 6 });
  assert.equal(row.settings.temperature, 0);
  assert.equal(row.settings.draftModel, 'ess-llama3-8b-fp16');
  assert.equal(row.settings.numPrompts, 3);
  close(row.outputTokensPerSec, 72.50680517388999, 1e-6);
});

test('EAGLE baseline answers (naivegenerate): τ exactly 1, read as the run without speculation', () => {
  const r = read(fixture('eagle-llama3-8b-baseline-temperature-0.0.jsonl'));
  assert.equal(r.results[0].speculative, false);
  assert.equal(r.results[0].tau, 1);
  assert.equal(r.results[0].settings.temperature, undefined, 'no file name given: the temperature is not guessed');
});

test('EAGLE lines with mismatched per-turn lists are named, the rest read', () => {
  const lines = fixture('eagle-llama3-8b-temperature-0.0.jsonl').trimEnd().split('\n');
  const broken = JSON.parse(lines[1]) as { choices: { idxs: number[] }[] };
  broken.choices[0].idxs.pop();
  const r = read([lines[0], JSON.stringify(broken), lines[2]].join('\n') + '\n');
  assert.deepEqual(r.problems, [{ line: 2, message: 'choices[0]: 1 idxs, 2 new_tokens, 2 wall_time: one per turn each' }]);
  assert.equal(r.results[0].counts?.requests, 4);
});

test('aiperf summary: τ token-weighted from the totals, rate and p_k as aiperf’s own test expects, settings from the config', () => {
  const r = read(fixture('aiperf_profile_export_aiperf.json'));
  assert.equal(r.tool, 'aiperf');
  assert.deepEqual(r.problems, []);
  const [row] = r.results;
  assert.equal(row.tau, 1 + 36 / 16);
  assert.equal(row.tauDefinition, 'one-plus-accepted-per-draft');
  assert.equal(row.acceptanceRate, 0.5625, "aiperf's 'Overall Draft Acceptance Rate (%),56.25'");
  // aiperf's console line for this histogram: "0: 12%   1: 12%   2: 25%   3: 38%   4: 12%" → p_k = share with ≥ k.
  assert.deepEqual(row.pk, [14 / 16, 12 / 16, 8 / 16, 2 / 16]);
  assert.equal(row.extra.per_request_mean_acceptance_length, 3.3125);
  assert.equal(row.outputTokensPerSec, 431.25);
  assert.deepEqual(row.settings, { model: 'Qwen/Qwen3-8B', concurrency: 4, temperature: 0, maxTokens: 512, thinking: false });
});

test('aiperf summary: settings from run_info.cli_command when the config lacks them; no spec metrics names the vLLM flag', () => {
  const doc = JSON.parse(fixture('aiperf_profile_export_aiperf.json')) as Record<string, unknown>;
  delete doc.input_config;
  const r = read(JSON.stringify(doc, null, 2));
  assert.deepEqual(r.results[0].settings, { model: 'Qwen/Qwen3-8B', concurrency: 4, temperature: 0, maxTokens: 512 });
  const bare = read(JSON.stringify({ schema_version: '1.4', aiperf_version: '0.13.0', request_count: { unit: 'requests', avg: 4 } }, null, 2));
  assert.deepEqual(bare.results, []);
  assert.match(bare.problems[0].message, /--per-request-spec-decode-metrics/);
});

test('aiperf records: profiling records pooled (warmup skipped), a record without stats counted in a note', () => {
  const r = read(fixture('aiperf_profile_export.jsonl'));
  assert.equal(r.tool, 'aiperf');
  assert.deepEqual(r.problems, []);
  const [row] = r.results;
  // aiperf's pooled-histogram test: totals 11 steps / 20 accepted / 44 drafted, pooled {0:2,1:3,2:2,3:3,4:1}.
  assert.deepEqual(row.counts, { verifySteps: 11, acceptedDraftTokens: 20, draftTokens: 44, requests: 2 });
  assert.equal(row.tau, 1 + 20 / 11);
  assert.equal(row.acceptanceRate, 20 / 44);
  assert.deepEqual(row.pk, [9 / 11, 6 / 11, 4 / 11, 1 / 11]);
  assert.match(row.notes.join(' '), /1 profiling records carried no spec-decode stats/);
});

test('no tool recognised: said with the first lines seen; empty file; a lone half-written line', () => {
  const log = readSpecOutput('epoch 1 loss 0.5\nepoch 2 loss 0.4\n');
  assert.equal(log.tool, undefined);
  assert.match('reason' in log ? log.reason : '', /no line is JSON/);
  assert.deepEqual('seen' in log ? log.seen : [], ['epoch 1 loss 0.5', 'epoch 2 loss 0.4']);
  const other = readSpecOutput('{"acceptance_length": 3.1}\n');
  assert.equal(other.tool, undefined);
  assert.match('reason' in other ? other.reason : '', /line 1 is JSON of none of the known shapes/);
  const empty = readSpecOutput('');
  assert.equal(empty.tool, undefined);
  assert.match('reason' in empty ? empty.reason : '', /empty/);
  assert.ok(empty.incomplete);
  const half = readSpecOutput('{"batch_size": 1, "steps": 3, "top');
  assert.equal(half.tool, undefined);
  assert.match(half.incomplete ?? '', /line 1 is not finished/);
  const otherDoc = readSpecOutput('{\n  "loss": 1\n}\n');
  assert.match('reason' in otherDoc ? otherDoc.reason : '', /JSON document of none of the known shapes/);
});

test('vLLM real outputs (vllm PR #30319): a run with no draft says speculation did not run; the fixed run reads as printed', () => {
  const r = read(fixture('vllm_spec_decode.real-outputs.txt'));
  assert.equal(r.results.length, 2);
  const [before, after] = r.results;
  assert.equal(before.speculative, false);
  assert.equal(before.tau, undefined, 'the printed 1.00 is the script’s default, not a measured τ');
  assert.deepEqual(r.problems.map((p) => p.line), [6], "the summary's first line");
  assert.match(r.problems[0].message, /num_drafts is 0: .*speculative decoding did not run/);
  close(after.tau, 1 + 124787 / 122887);
  assert.equal(Math.round(after.tau! * 100) / 100, 2.02, 'the printed mean');
  close(after.acceptanceRate, 124787 / 245774);
  assert.deepEqual(after.pk, [0.69, 0.33]);
  assert.equal(after.settings.numSpeculativeTokens, 2);
});

test('vLLM output of a modified script (vllm PR #24344): extra lines are ordinary output, the upstream ones read', () => {
  const r = read(fixture('vllm_spec_decode.modified-script.txt'));
  assert.deepEqual(r.problems, []);
  assert.equal(r.results.length, 1);
  close(r.results[0].tau, 1 + 3562 / 993);
  assert.deepEqual(r.results[0].pk, [0.81, 0.74, 0.7, 0.68, 0.66]);
  assert.equal(r.results[0].settings.numSpeculativeTokens, 5);
});

test('a speculative config whose accept length is the tools’ default 1.0 is named, not read as τ = 1', () => {
  const sg = read('{"batch_size": 2, "steps": 3, "topk": 1, "num_draft_tokens": 4, "acc_length": 1.0, "step_time": 0.0131, "speed": 76.336, "completion_tokens": 512.0}\n');
  assert.equal(sg.results[0].tau, undefined);
  assert.match(sg.problems[0].message, /acc_length is 1.0 with steps=3: the server reported no accept length/);
  assert.equal(sg.problems[0].line, 1);
  const doc = JSON.parse(fixture('specforge_results_20261205_101500.jsonl')) as Record<string, { steps: number; metrics: { accept_length: number }[] }[]>;
  doc.mtbench[1].metrics[0].accept_length = 1.0;
  const sf = read(JSON.stringify(doc, null, 4));
  assert.equal(byLabel(sf, 'mtbench bs=1 steps=3 topk=1 draft=4').tau, undefined);
  assert.match(sf.problems[0].message, /"mtbench"\[1\]: accept_length is 1.0 with steps=3: the server sent no spec_verify_ct/);
});

test('specforge benchmark --output-json: τ = Σ completion / Σ verify; a target-only server is the run without speculation', () => {
  const doc = JSON.parse(fixture('specforge_benchmark_dflash_gsm8k.json')) as { output_tokens: number; spec_verify_count: number; average_acceptance_length: number };
  const r = read(fixture('specforge_benchmark_dflash_gsm8k.json'));
  assert.equal(r.tool, 'specforge-server-bench');
  const [row] = r.results;
  close(row.tau, doc.output_tokens / doc.spec_verify_count);
  assert.equal(row.tauDefinition, 'completion-per-verify');
  assert.equal(row.extra.average_acceptance_length, doc.average_acceptance_length);
  assert.deepEqual(row.settings, { benchmark: 'gsm8k', numPrompts: 64, temperature: 0, maxTokens: 2048, concurrency: 1, thinking: false });
  assert.equal(row.settingSources.temperature, 'default');
  const base = read(fixture('specforge_benchmark_target_only_gsm8k.json')).results[0];
  assert.equal(base.speculative, false);
  assert.equal(base.tau, undefined);
  assert.match(base.notes.join(' '), /target-only/);
});

test('a pretty-printed document cut right after a closing brace is still cut short; a closed broken one is not', () => {
  const whole = fixture('specforge_results_20261205_101500.jsonl');
  const afterBrace = whole.slice(0, whole.indexOf('}', whole.indexOf('"metrics"')) + 1);
  assert.ok(afterBrace.endsWith('}'));
  const r = read(afterBrace);
  assert.match(r.incomplete ?? '', /cut short/);
  assert.deepEqual(r.problems, []);
  const inString = whole.slice(0, whole.indexOf('epoch_3') + 3);
  assert.match(read(inString).incomplete ?? '', /cut short/);
  const broken = readSpecforgeBenchText('{\n    "model": "x",\n    "mtbench": [ , ]\n}\n');
  assert.equal(broken.incomplete, undefined);
  assert.deepEqual(broken.problems, [{ message: 'not JSON' }]);
});

test('property: any text or JSON gives a reading or a reason, never an exception, and every τ read is ≥ 1', () => {
  const check = (text: string) => {
    const r = readSpecOutput(text);
    if (r.tool === undefined) assert.ok(r.reason.length > 0);
    else for (const res of r.results) if (res.tau !== undefined) assert.ok(res.tau >= 1, `${res.tool} τ ${res.tau}`);
  };
  fc.assert(fc.property(fc.string(), check), { numRuns: 300 });
  fc.assert(fc.property(fc.jsonValue(), (v) => check(JSON.stringify(v) + '\n')), { numRuns: 300 });
  // Documents of each known shape with arbitrary values in their fields.
  const field = fc.oneof(fc.integer({ min: -5, max: 50 }), fc.double({ noNaN: false }), fc.constant(null), fc.string(), fc.constant(1.0));
  const aiperf = fc.record({ total_spec_decode_steps: fc.record({ unit: fc.constant('count'), avg: field }), total_accepted_draft_tokens: fc.record({ unit: fc.constant('count'), avg: field }), total_draft_tokens: fc.record({ unit: fc.constant('count'), avg: field }), pooled_spec_decode_acceptance_histogram: fc.dictionary(fc.oneof(fc.constantFrom('0', '1', '2', '3'), fc.string()), field) });
  fc.assert(fc.property(aiperf, (doc) => check(JSON.stringify(doc, null, 2))), { numRuns: 300 });
  const record = fc.record({ metadata: fc.record({ benchmark_phase: fc.constantFrom('profiling', 'warmup') }), metrics: fc.constant({}), spec_decode_acceptance: fc.record({ num_spec_steps: field, num_accepted_draft_tokens: field, num_draft_tokens: field, acceptance_histogram: fc.dictionary(fc.constantFrom('0', '1', '2'), field) }) });
  fc.assert(fc.property(fc.array(record, { minLength: 1, maxLength: 4 }), (recs) => check(recs.map((x) => JSON.stringify(x)).join('\n') + '\n')), { numRuns: 300 });
  const sglang = fc.record({ batch_size: field, steps: field, topk: field, num_draft_tokens: field, acc_length: field, step_time: field, speed: field });
  fc.assert(fc.property(fc.array(sglang, { minLength: 1, maxLength: 4 }), (rows) => check(rows.map((x) => JSON.stringify(x)).join('\n') + '\n')), { numRuns: 300 });
  const eagle = fc.record({ question_id: fc.nat(), choices: fc.array(fc.record({ idxs: fc.array(field, { maxLength: 3 }), new_tokens: fc.array(field, { maxLength: 3 }), wall_time: fc.array(field, { maxLength: 3 }) }), { maxLength: 2 }) });
  fc.assert(fc.property(fc.array(eagle, { minLength: 1, maxLength: 3 }), (rows) => check(rows.map((x) => JSON.stringify(x)).join('\n') + '\n')), { numRuns: 300 });
  const vllm = fc.tuple(field, field, field, field, fc.array(field, { maxLength: 3 }));
  fc.assert(
    fc.property(vllm, ([out, drafts, dt, acc, pos]) =>
      check(['-'.repeat(50), `total_num_output_tokens: ${out}`, `num_drafts: ${drafts}`, `num_draft_tokens: ${dt}`, `num_accepted_tokens: ${acc}`, 'mean acceptance length: 2.00', '-'.repeat(50), ...pos.map((p, i) => `acceptance at token ${i}: ${p}`)].join('\n') + '\n'),
    ),
    { numRuns: 300 },
  );
});

test('impossible counts are named: an EAGLE turn with fewer tokens than steps, aiperf totals with more accepted than drafted', () => {
  const e = read('{"question_id": 1, "model_id": "m", "choices": [{"index": 0, "turns": ["a"], "idxs": [9], "new_tokens": [4], "wall_time": [0.1]}]}\n');
  assert.deepEqual(e.results, []);
  assert.deepEqual(e.problems, [{ line: 1, message: 'choices[0] turn 0: 4 new_tokens in 10 steps (idx 9); each step adds at least one token' }]);
  const doc = JSON.parse(fixture('aiperf_profile_export_aiperf.json')) as Record<string, { avg: number }>;
  doc.total_accepted_draft_tokens.avg = 80;
  const a = read(JSON.stringify(doc, null, 2));
  assert.match(a.problems.map((p) => p.message).join(' '), /total_accepted_draft_tokens \(80\) exceeds total_draft_tokens \(64\)/);
  assert.equal(a.results[0].tau, 3.25, 'τ then comes from aiperf’s own token-weighted value');
  assert.equal(a.results[0].acceptanceRate, 0.5625, 'and the rate from its overall draft acceptance rate');
});

test('vLLM: the engine startup line gives models, method and K; an ngram config has no draft model; a K that disagrees is named', () => {
  const summary = fixture('vllm_spec_decode.modified-script.txt');
  const ngram = "INFO 12-05 10:15:05 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='Qwen/Qwen3-8B', speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=5), tokenizer='Qwen/Qwen3-8B'\n";
  const r = read(ngram + summary);
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.results[0].settings, { numSpeculativeTokens: 5, model: 'Qwen/Qwen3-8B', method: 'ngram', temperature: 0, maxTokens: 256 });
  const off = read(ngram.replace('num_spec_tokens=5', 'num_spec_tokens=7') + summary);
  assert.match(off.problems[0].message, /started with num_spec_tokens=7 but 5 "acceptance at token" lines follow/);
});

test('a result becomes an eval result line of its measured numbers only', () => {
  const [row] = read(fixture('aiperf_profile_export_aiperf.json')).results;
  assert.deepEqual(specEvalResult(row), { tau: 3.25, acceptance_rate: 0.5625, p_1: 14 / 16, p_2: 12 / 16, p_3: 8 / 16, p_4: 2 / 16, output_tokens_per_s: 431.25 });
  const sg = byLabel(read(fixture('sglang_bench_speculative.jsonl')), 'bs=1 steps=3 topk=1 draft=4');
  assert.deepEqual(Object.keys(specEvalResult(sg)), ['tau', 'output_tokens_per_s', 'speedup']);
  const none = read(fixture('specforge_benchmark_target_only_gsm8k.json')).results[0];
  assert.deepEqual(Object.keys(specEvalResult(none)), ['output_tokens_per_s'], 'no τ invented for a run without speculation stats');
});
