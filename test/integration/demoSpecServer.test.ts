/**
 * The demo host's drafter server (src/demo/specServer.ts) as the speculative-server eval meets it: through the demo's
 * own SSH server's forwarding (the demo host's 127.0.0.1:30000, no port of its own), with the profile the headless
 * demo's CLI config holds, run by the built CLI. τ is checked against the server's own counts for the built-in
 * prompts; the draft model it reports names the checkpoint it serves (the live run's newest), and an eval naming
 * another one says so; the errors a user meets here say what to do.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureBuiltCli, runDemoCli } from '../harness/builtCli';
import { startDemoHost, type DemoHost } from '../../src/demo/demoHost';
import { DEMO_SPEC_K, demoGeneration } from '../../src/demo/specServer';
import { demoServerEvalProfile } from '../../src/demo/evalProfile';
import { builtinPrompts } from '../../src/core/eval/spec/server/profile';
import { forwardTarget } from '../../src/demo/server';

let host: DemoHost;
let base: string;
const PROFILE = String(demoServerEvalProfile().name);

before(async () => {
  ensureBuiltCli();
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-spec-'));
  // The trainer saves only when the test ticks it; the server answers at once.
  host = await startDemoHost({ base, lineIntervalMs: 3_600_000, specMsPerStep: 0 });
});
after(async () => {
  await host?.stop();
  if (base) fs.rmSync(base, { recursive: true, force: true });
});

const cli = (args: string[], config = host.paths.cliConfig): ReturnType<typeof runDemoCli> => runDemoCli({ ...host.paths, cliConfig: config }, base, args);

/** The newest checkpoint step of the live run, as the CLI lists it. */
async function newestStep(): Promise<number> {
  const ls = await cli(['ls', 'demo/pct:200/workspace']);
  assert.equal(ls.code, 0, ls.stderr);
  return Math.max(...ls.json.run.checkpoints.map((c: { step: number }) => c.step));
}

/** τ as SGLang defines it (completion tokens / verify steps) from the server's own generation of the built-in prompts. */
function expectedTau(step: number, maxTokens: number): { tau: number; steps: number; tokens: number } {
  let tokens = 0;
  let steps = 0;
  for (const p of builtinPrompts().prompts) {
    // The chat route keys a request by its messages as sent (JSON of the request's `messages`).
    const t = demoGeneration(step, JSON.stringify((p as { messages: unknown }).messages), maxTokens);
    tokens += t.completionTokens;
    steps += t.steps;
  }
  return { tau: tokens / steps, steps, tokens };
}

/** Write a CLI config: the demo host and the given profiles. */
function configWith(profiles: unknown[]): string {
  const file = path.join(base, `config-${Math.random().toString(36).slice(2)}.json`);
  const demo = JSON.parse(fs.readFileSync(host.paths.cliConfig, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(file, JSON.stringify({ ...demo, evalProfiles: profiles }));
  return file;
}

describe('demo drafter server: measured through the demo host\'s SSH link', () => {
  test('the headless config\'s profile measures the newest checkpoint: τ is the server\'s own count, the draft model names it, and the eval is recorded at its step', async () => {
    const step = await newestStep();
    const r = await cli(['eval', PROFILE, 'demo/pct:200/workspace/latest']);
    assert.equal(r.code, 0, r.stderr);
    const want = expectedTau(step, Number(demoServerEvalProfile().maxTokens));
    assert.equal(r.json.step, step);
    assert.equal(r.json.engine, 'sglang');
    assert.equal(r.json.model, 'Qwen3-27B');
    assert.ok(Math.abs(r.json.result.tau - want.tau) < 1e-9, `τ ${r.json.result.tau}, the server's counts give ${want.tau}`);
    assert.deepEqual([r.json.counts.verifySteps, r.json.counts.completionTokens, r.json.counts.requests], [want.steps, want.tokens, 12]);
    assert.equal(r.json.settings.draftModel, `/var/lib/lxc/200/rootfs/workspace/checkpoints/step_${step}`);
    assert.deepEqual([r.json.settings.method, r.json.settings.numSteps, r.json.settings.topk, r.json.settings.numDraftTokens], ['STANDALONE', DEMO_SPEC_K, 1, DEMO_SPEC_K + 1]);
    assert.equal(r.json.settings.temperature, 0);
    assert.ok(!r.json.notes.some((n: string) => n.includes('does not name')), r.json.notes.join('\n'));
    // Recorded as an eval of the checkpoint: the run's card lists it at its step.
    const card = await cli(['eval', '--card', 'demo/pct:200/workspace']);
    assert.equal(card.code, 0, card.stderr);
    const row = card.json.rows.find((x: { kind: string; step?: number }) => x.kind === 'checkpoint' && x.step === step);
    assert.ok(row, JSON.stringify(card.json.rows));
    assert.equal(row.profile, PROFILE);
    assert.ok(Math.abs(row.tau - want.tau) < 1e-9);
  });

  test('after the trainer saves the next checkpoint, the server serves it: another τ, the server\'s count for that step', async () => {
    const before = await newestStep();
    // A line per tick; ticks until the next multiple of the save interval has been saved.
    while ((await newestStep()) === before) for (let i = 0; i < 20; i++) host.trainer.tick();
    const step = await newestStep();
    const r = await cli(['eval', PROFILE, `demo/pct:200/workspace/step_${step}`]);
    assert.equal(r.code, 0, r.stderr);
    const want = expectedTau(step, 128);
    assert.ok(Math.abs(r.json.result.tau - want.tau) < 1e-9, `τ ${r.json.result.tau}, the server's counts give ${want.tau}`);
    assert.notEqual(want.tau, expectedTau(before, 128).tau, 'a different drafter, a different τ');
    assert.equal(r.json.settings.draftModel, `/var/lib/lxc/200/rootfs/workspace/checkpoints/step_${step}`);
  });

  test('an eval naming an older checkpoint measures the one served, and its note says which', async () => {
    const newest = await newestStep();
    const r = await cli(['eval', PROFILE, 'demo/pct:200/workspace/step_10000']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.step, 10000);
    const note = r.json.notes.find((n: string) => n.includes('does not name'));
    assert.ok(note, r.json.notes.join('\n'));
    assert.match(note, new RegExp(`draft model as /var/lib/lxc/200/rootfs/workspace/checkpoints/step_${newest}, which does not name step_10000`));
    assert.ok(Math.abs(r.json.result.tau - expectedTau(newest, 128).tau) < 1e-9, 'the τ is the served drafter\'s');
  });

  test('only the drafter server\'s address is forwarded: another port of the demo host fails to connect, and the message says to check the server listens there', async () => {
    assert.equal(forwardTarget([{ host: '127.0.0.1', port: 30000, to: 4242 }], 'localhost', 30000), 4242);
    assert.equal(forwardTarget([{ host: '127.0.0.1', port: 30000, to: 4242 }], '127.0.0.1', 30001), undefined);
    const config = configWith([{ kind: 'speculative-server', name: 'wrong port', server: 'http://127.0.0.1:30001' }]);
    const r = await cli(['eval', 'wrong port', 'demo/pct:200/workspace/latest'], config);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /the eval server http:\/\/127\.0\.0\.1:30001 cannot be reached from demo: the SSH link to demo is up, but demo could not connect to 127\.0\.0\.1:30001/);
    assert.match(r.stderr, /Is the server running and listening on that address/);
  });

  test('a model the server does not serve: the error lists what /v1/models serves and how to name it', async () => {
    const before = host.specServer.requests();
    const config = configWith([{ ...demoServerEvalProfile(), name: 'wrong model', model: 'Qwen3-8B' }]);
    const r = await cli(['eval', 'wrong model', 'demo/pct:200/workspace/latest'], config);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /does not serve "Qwen3-8B"; its \/v1\/models lists "Qwen3-27B"\. Set "model" to one of those/);
    assert.equal(host.specServer.requests(), before, 'no prompt was sent');
  });
});
