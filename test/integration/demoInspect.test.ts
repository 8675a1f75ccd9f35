/**
 * The demo host's checkpoints inspect as real ones (issue 33: every demo checkpoint was zero-filled, so inspect, the
 * hover and Compare Checkpoints all said "not readable"). Through the built CLI against a started demo host: the
 * live run's torch.save archives, the finished run's transformers sharded save and the Hugging Face Trainer folder
 * give the summaries their writers recorded (test/fixtures/real/written/.../expected.json), `diff` across the live
 * run's architecture change lists what changed, and a checkpoint the live run saves while the demo runs inspects too.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureBuiltCli, runDemoCli } from '../harness/builtCli';
import { startDemoHost, type DemoHost } from '../../src/demo/demoHost';
import { LIVE_CHECKPOINT_EVERY, LIVE_EDITED_FROM_STEP, LIVE_START_STEP, LIVE_STEPS_PER_LINE } from '../../src/demo/tree';

const WRITTEN = path.join(__dirname, '..', 'fixtures', 'real', 'written');
const expected = (file: string): Record<string, any> => JSON.parse(fs.readFileSync(path.join(WRITTEN, file, '..', 'expected.json'), 'utf8'))[path.basename(file)];

let host: DemoHost;
let base: string;

before(async () => {
  ensureBuiltCli();
  base = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-inspect-'));
  // The trainer's timer is stopped below and driven by hand: a test never waits two minutes for a checkpoint.
  host = await startDemoHost({ base });
  host.trainer.stop();
});
after(async () => {
  await host?.stop();
  if (base) fs.rmSync(base, { recursive: true, force: true });
});

/** The built CLI against the demo host (test/harness/builtCli.ts runDemoCli). */
const cli = (args: string[]): ReturnType<typeof runDemoCli> => runDemoCli(host.paths, base, args);

async function inspect(address: string): Promise<any> {
  const r = await cli(['inspect', address]);
  assert.equal(r.code, 0, `inspect ${address}: ${r.stderr}${r.stdout}`);
  return r.json;
}

/** Tensor name → "dtype [shape]", as a writer's expected.json or the CLI's JSON lists them. */
function tensorsOf(list: { name?: string; path?: string; dtype: string; shape: number[] }[]): Record<string, string> {
  return Object.fromEntries(list.map((t) => [t.name ?? t.path, `${t.dtype} [${t.shape.join(',')}]`]));
}

test("the live run's newest checkpoint (latest) is the edited model's torch.save archive, read as its writer wrote it", async () => {
  const x = await inspect('demo/pct:200/workspace/latest');
  const newest = Math.floor(LIVE_START_STEP / LIVE_CHECKPOINT_EVERY) * LIVE_CHECKPOINT_EVERY;
  assert.equal(x.checkpoint.name, `step_${newest}`);
  assert.equal(x.format, 'torch-zip');
  assert.equal(x.completeness, 'complete');
  const want = expected('inspect_more/edited.pt');
  assert.equal(x.totals.params, want.params);
  assert.deepEqual(tensorsOf(x.tensors), tensorsOf(want.tensors));
  assert.match(x.summary, /^384 params · fp32\/fp16 · 25 tensors/);
});

test('diff across the architecture change lists the added layer, the removed buffer and the changed shape and dtype', async () => {
  const before = `demo/pct:200/workspace/step_${LIVE_EDITED_FROM_STEP - LIVE_CHECKPOINT_EVERY}`;
  const afterChange = `demo/pct:200/workspace/step_${LIVE_EDITED_FROM_STEP}`;
  const r = await cli(['diff', before, afterChange]);
  assert.equal(r.code, 0, r.stderr);
  const against = expected('inspect_more/edited.pt').against_base as { added: string[]; removed: string[]; changed: string[] };
  const names = (l: { name?: string; path?: string }[]): string[] => l.map((t) => (t.name ?? t.path)!).sort();
  assert.deepEqual(names(r.json.added), against.added);
  assert.deepEqual(names(r.json.removed), against.removed);
  assert.deepEqual(names(r.json.changed), against.changed);
  assert.equal(r.json.a.totals.params, expected('inspect_more/base.pt').params);
  // Control: two checkpoints on the same side of the change do not differ.
  const same = await cli(['diff', afterChange, `demo/pct:200/workspace/step_${LIVE_EDITED_FROM_STEP + LIVE_CHECKPOINT_EVERY}`]);
  assert.deepEqual([same.json.added.length, same.json.removed.length, same.json.changed.length], [0, 0, 0]);
});

test("the finished run's checkpoints are a transformers sharded save: 5 shards and their index, complete", async () => {
  const x = await inspect('demo/host/baseline-ref/step_20000');
  const want = expected('inspect/hf_shards');
  assert.equal(x.format, 'safetensors-sharded');
  assert.equal(x.completeness, 'complete');
  assert.equal(x.totals.params, want.params);
  assert.deepEqual(tensorsOf(x.tensors), tensorsOf(want.tensors));
  assert.deepEqual(x.files.map((f: { name: string }) => f.name).filter((n: string) => n.endsWith('.safetensors')), want.shards);
});

test("the Hugging Face Trainer run's checkpoint folder: model.safetensors with a real header, and the optimizer state", async () => {
  const x = await inspect('demo/docker:hf-finetune/llama-sft/checkpoint-2000');
  // The writer's own header (safetensors format: an 8-byte little-endian length, then that much JSON), read here
  // independently of the reader under test.
  const file = fs.readFileSync(path.join(WRITTEN, 'hf_trainer', 'checkpoint-20', 'model.safetensors'));
  const header = JSON.parse(file.subarray(8, 8 + Number(file.readBigUInt64LE(0))).toString('utf8')) as Record<string, { dtype: string; shape: number[] }>;
  const params = Object.entries(header).filter(([k]) => k !== '__metadata__').reduce((n, [, t]) => n + t.shape.reduce((a, b) => a * b, 1), 0);
  assert.equal(x.totals.params, params, x.summary);
  const seen = tensorsOf(x.tensors);
  for (const [name, t] of Object.entries(header)) if (name !== '__metadata__') assert.equal(seen[name], `${t.dtype === 'F32' ? 'float32' : t.dtype} [${t.shape.join(',')}]`, name);
  assert.match(x.summary, /optimizer: AdamW state/);
  const model = x.files.find((f: { name: string }) => f.name === 'model.safetensors');
  assert.equal(model.format, 'safetensors', JSON.stringify(model));
});

test('a checkpoint the live run saves while the demo runs inspects at once', async () => {
  const next = (Math.floor(host.trainer.currentStep / LIVE_CHECKPOINT_EVERY) + 1) * LIVE_CHECKPOINT_EVERY;
  while (host.trainer.currentStep < next) host.trainer.tick();
  assert.ok(host.trainer.currentStep - next < LIVE_STEPS_PER_LINE);
  const x = await inspect(`demo/pct:200/workspace/step_${next}`);
  assert.equal(x.format, 'torch-zip');
  assert.equal(x.totals.params, expected('inspect_more/edited.pt').params);
});
