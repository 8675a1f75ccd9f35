/**
 * The speculative-server eval's edges: its profile in remoteRuns.evalProfiles (validated beside command profiles,
 * each bad field named), the prompt set (accepted shapes, every bad line named with file and line), and the reading
 * of one reply as each engine writes it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EVAL_PROFILE_JSON_SCHEMA, parseEvalProfile, parseEvalProfiles } from '../../src/core/eval/profiles';
import { builtinPrompts, parsePromptSet, SPEC_SERVER_PROFILE_JSON_SCHEMA } from '../../src/core/eval/spec/server/profile';
import { readReply, numbersFromReplies } from '../../src/core/eval/spec/server/stats';
import { parseServerUrl } from '../../src/core/eval/spec/server/http';
import { RemoteRunsError } from '../../src/core/types';

test('a speculative-server profile validates with its defaults, beside command profiles', () => {
  const { profiles, serverProfiles, problems } = parseEvalProfiles([
    { name: 'cmd', command: 'python eval.py ${checkpoint}' },
    { kind: 'speculative-server', name: 'dflash', server: 'http://10.0.0.5:30000' },
    { kind: 'speculative-server', name: 'full', server: 'http://[fd00::5]:8000', host: 'gpu2', model: 'Qwen/Qwen3-8B', prompts: '~/mtbench.jsonl', temperature: 0.7, maxTokens: 512, thinking: false, chatTemplate: 'x', concurrency: 4, baseline: 'http://10.0.0.6:30000' },
    { kind: 'speculative-server', name: 'recorded', server: 'http://gpu:1', baseline: 41.5 },
  ]);
  assert.deepEqual(problems, []);
  assert.deepEqual(profiles.map((p) => p.name), ['cmd']);
  assert.deepEqual(serverProfiles[0], { kind: 'speculative-server', name: 'dflash', server: 'http://10.0.0.5:30000', temperature: 0, maxTokens: 256, concurrency: 1 });
  assert.deepEqual(serverProfiles[1], {
    kind: 'speculative-server', name: 'full', server: 'http://[fd00::5]:8000', host: 'gpu2', model: 'Qwen/Qwen3-8B', prompts: '~/mtbench.jsonl',
    temperature: 0.7, maxTokens: 512, thinking: false, chatTemplate: 'x', concurrency: 4, baseline: { kind: 'server', url: 'http://10.0.0.6:30000' },
  });
  assert.deepEqual(serverProfiles[2].baseline, { kind: 'recorded', outputTokensPerSec: 41.5 });
  assert.deepEqual(parseServerUrl('http://[fd00::5]:8000'), { host: 'fd00::5', port: 8000, url: 'http://[fd00::5]:8000' });
});

test('each bad field of a speculative-server profile is named, the entry skipped, the others kept', () => {
  const entries = [
    { kind: 'speculative-server', name: 'ok', server: 'http://a:1' },
    { kind: 'speculative-server', name: 'noserver' },
    { kind: 'speculative-server', name: 'https', server: 'https://a:1' },
    { kind: 'speculative-server', name: 'path', server: 'http://a:1/v1' },
    { kind: 'speculative-server', name: 'nourl', server: '10.0.0.5 30000' },
    { kind: 'speculative-server', name: 'temp', server: 'http://a:1', temperature: -1 },
    { kind: 'speculative-server', name: 'max', server: 'http://a:1', maxTokens: 1.5 },
    { kind: 'speculative-server', name: 'conc', server: 'http://a:1', concurrency: '4' },
    { kind: 'speculative-server', name: 'think', server: 'http://a:1', thinking: 'no' },
    { kind: 'speculative-server', name: 'base', server: 'http://a:1', baseline: 0 },
    { kind: 'speculative-server', name: 'same', server: 'http://a:1', baseline: 'http://a:1/' },
    { kind: 'speculative-server', name: 'cmd', server: 'http://a:1', command: 'python x.py' },
    { kind: 'speculative-server', name: 'ok', server: 'http://b:1' },
    { kind: 'sglang-bench', name: 'k', server: 'http://a:1' },
    { kind: 'speculative-server', name: 'extra', server: 'http://a:1', maxtokens: 5 },
  ];
  const { serverProfiles, problems } = parseEvalProfiles(entries, 'p');
  assert.deepEqual(serverProfiles.map((p) => p.name), ['ok', 'extra']);
  const expect: [string, RegExp][] = [
    ['p[1].server', /is required/],
    ['p[2].server', /uses https; only plain http:\/\/ is supported/],
    ['p[3].server', /has a path \(\/v1\); give only http:\/\/host:port/],
    ['p[4].server', /is not a URL/],
    ['p[5].temperature', /must be ≥ 0, got -1/],
    ['p[6].maxTokens', /must be a whole number, got 1\.5/],
    ['p[7].concurrency', /must be a number, got "4"/],
    ['p[8].thinking', /must be true or false, got "no"/],
    ['p[9].baseline', /a recorded output tokens\/s \(a number > 0\), got number 0/],
    ['p[10].baseline', /is the same server as "server"/],
    ['p[11].command', /runs no command/],
    ['p[12].name', /duplicate name "ok" \(also p\[0\]\)/],
    ['p[13].kind', /unknown kind "sglang-bench" \(known: "speculative-server"/],
    ['p[14].maxtokens', /unknown field of a speculative-server profile, ignored/],
  ];
  assert.equal(problems.length, expect.length, problems.join('\n'));
  expect.forEach(([at, re], i) => {
    assert.ok(problems[i].startsWith(`${at}: `), `${problems[i]} should start with ${at}`);
    assert.match(problems[i], re);
  });
  // The schema lists exactly the fields the validator knows.
  assert.deepEqual(Object.keys(SPEC_SERVER_PROFILE_JSON_SCHEMA.properties).sort(), ['baseline', 'chatTemplate', 'concurrency', 'host', 'kind', 'maxTokens', 'model', 'name', 'prompts', 'server', 'temperature', 'thinking']);
  // parseEvalProfile, for command profiles only, says so of a server profile.
  assert.throws(() => parseEvalProfile({ kind: 'speculative-server', name: 'x', server: 'http://a:1' }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /runs no command/.test(e.message));
});

test('prompt sets: {"prompt"} and {"messages"} lines, extra keys ignored, blank lines skipped', () => {
  const set = parsePromptSet('{"prompt": "a", "id": 1}\r\n\n{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "category": "x"}\n', 'f.jsonl');
  assert.deepEqual(set.prompts, [{ prompt: 'a' }, { messages: [{ role: 'system', content: 's' }, { role: 'user', content: 'u' }] }]);
  const b = builtinPrompts();
  assert.ok(b.prompts.length >= 10 && b.prompts.length <= 20);
  assert.ok(b.prompts.every((p) => 'messages' in p && p.messages.length === 1 && p.messages[0].role === 'user' && p.messages[0].content.length > 10));
});

test('a prompt set that does not parse names every bad line (up to five) and is refused whole', () => {
  const lines = [
    '{"prompt": "ok"}',
    '[1, 2]',
    '{"prompt": ""}',
    '{"prompt": "a", "messages": []}',
    '{"messages": []}',
    '{"messages": [{"role": "bot", "content": "x"}]}',
    '{"messages": [{"role": "user", "content": 5}]}',
    '{"prompt": "cut',
  ];
  assert.throws(
    () => parsePromptSet(lines.join('\n'), '/data/p.jsonl'),
    (e: unknown) => {
      assert.ok(e instanceof RemoteRunsError && e.kind === 'bad-config');
      assert.match(e.message, /\/data\/p\.jsonl:2: expected an object with "prompt" or "messages", got an array/);
      assert.match(e.message, /:3: "prompt" must be a non-empty string, got ""/);
      assert.match(e.message, /:4: has both "prompt" and "messages"; give one/);
      assert.match(e.message, /:5: "messages" must be a non-empty list/);
      assert.match(e.message, /:6: messages\[0\]\.role must be "system", "user" or "assistant", got "bot"/);
      assert.match(e.message, /… and 2 more bad lines/);
      assert.equal((e.detail.problems as string[]).length, 7);
      assert.match((e.detail.problems as string[])[6], /:8: not JSON/);
      return true;
    },
  );
  assert.throws(() => parsePromptSet('\n\n', 'empty.jsonl'), /holds no prompt/);
});

test('a vLLM reply: metrics.speculative_decoding as RequestSpecDecodeMetrics.to_dict writes it', () => {
  // The numbers of vLLM-Omni's mirror of the class' own test (observe(3, 2), observe(3, 0)).
  const r = readReply(
    {
      id: 'chatcmpl-1', object: 'chat.completion', model: 'm', choices: [],
      usage: { prompt_tokens: 3, total_tokens: 8, completion_tokens: 5 },
      metrics: { speculative_decoding: { mean_acceptance_length: 2.0, draft_acceptance_rate: 1 / 3, acceptance_histogram: [1, 0, 1, 0], num_spec_steps: 2, num_accepted_draft_tokens: 2, num_draft_tokens: 6, num_spec_tokens: 3 } },
    },
    'r',
  );
  assert.deepEqual(r.spec, { source: 'vllm-per-request', verifySteps: 2, acceptedDraftTokens: 2, draftTokens: 6, histogram: [1, 0, 1, 0], numSpecTokens: 3, engineTau: 2 });
  const n = numbersFromReplies([r]);
  assert.equal(n.tau, 2, 'the engine’s own mean_acceptance_length');
  assert.equal(n.acceptanceRate, 1 / 3);
  assert.deepEqual(n.pk, [0.5, 0.5, 0]);
});

test('an SGLang reply: sglext.spec_tokens_details, and the same fields in /generate meta_info', () => {
  // The fields of SGLang's test_serving_completions.py `_spec_result`.
  const details = { spec_accept_rate: 0.5, spec_accept_length: 2.0, spec_cap_length: 1.0, spec_block_accept_length: 0.5, spec_num_correct_drafts: 1, spec_num_proposed_drafts: 2, spec_verify_ct: 1, spec_correct_drafts_histogram: [0, 1], spec_cap_lens_histogram: [0, 1] };
  const chat = readReply({ choices: [], usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }, sglext: { spec_tokens_details: details } }, 'r');
  const gen = readReply({ text: 'x', meta_info: { id: 'a', prompt_tokens: 10, completion_tokens: 2, cached_tokens: 0, finish_reason: { type: 'stop' }, ...details } }, 'g');
  assert.deepEqual(chat.spec, gen.spec);
  const n = numbersFromReplies([chat]);
  assert.equal(n.tauDefinition, 'completion-per-verify');
  assert.equal(n.tau, 2, 'completion tokens / verify steps = the engine’s spec_accept_length');
  assert.equal(n.extra.tau_one_plus_accepted, 2);
  assert.equal(n.acceptanceRate, 0.5);
  assert.deepEqual(n.pk, [1]);
  // Speculation off: no details, no spec.
  assert.equal(readReply({ usage: { completion_tokens: 4 } }, 'r').spec, undefined);
  // A version without the proposed count or the histogram sends 0 and [] (`or 0`, `or []`): unknown, not "none";
  // a request that ran no verify step (one token) really proposed none, and does not hide the others' numbers.
  const old = readReply({ usage: { completion_tokens: 5 }, sglext: { spec_tokens_details: { ...details, spec_verify_ct: 2, spec_num_correct_drafts: 2, spec_num_proposed_drafts: 0, spec_correct_drafts_histogram: [] } } }, 'r');
  assert.equal(old.spec?.draftTokens, undefined);
  assert.equal(old.spec?.histogram, undefined);
  const oneToken = readReply({ usage: { completion_tokens: 1 }, sglext: { spec_tokens_details: { ...details, spec_verify_ct: 0, spec_num_correct_drafts: 0, spec_num_proposed_drafts: 0, spec_correct_drafts_histogram: [] } } }, 'r');
  const both = numbersFromReplies([chat, oneToken]);
  assert.equal(both.acceptanceRate, 0.5);
  assert.deepEqual(both.pk, [1]);
  assert.equal(both.tau, 3, '(2 + 1) completion tokens / 1 verify step');
});

test('a reply whose stats are not counts is a protocol error naming the field', () => {
  assert.throws(() => readReply({ choices: [] }, 'POST x'), /POST x: the reply has no usage\.completion_tokens/);
  assert.throws(
    () => readReply({ usage: { completion_tokens: 3 }, metrics: { speculative_decoding: { num_spec_steps: 1.5, num_accepted_draft_tokens: 0, num_draft_tokens: 3 } } }, 'r'),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol' && /"num_spec_steps" is 1\.5, not a count/.test(e.message),
  );
  assert.throws(() => readReply({ usage: { completion_tokens: 3 }, sglext: { spec_tokens_details: { spec_verify_ct: 1, spec_num_correct_drafts: 1, spec_correct_drafts_histogram: [0, -1] } } }, 'r'), /histogram bucket 1 holds -1/);
});

test('package.json: remoteRuns.evalProfiles takes a command profile or a speculative-server profile, each schema the one its validator checks', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));
  const items = pkg.contributes.configuration.properties['remoteRuns.evalProfiles'].items;
  assert.equal(items.anyOf.length, 2);
  assert.deepEqual(Object.keys(items.anyOf[0].properties).sort(), Object.keys(EVAL_PROFILE_JSON_SCHEMA.properties).sort());
  assert.deepEqual(items.anyOf[0].required, ['name', 'command']);
  assert.deepEqual(items.anyOf[1], JSON.parse(JSON.stringify(SPEC_SERVER_PROFILE_JSON_SCHEMA)));
});
