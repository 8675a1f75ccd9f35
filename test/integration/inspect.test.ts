/**
 * `remote-runs inspect` and `diff` over the real test sshd, on the bare host and inside a pct container (the shim),
 * on checkpoints the real writers wrote (test/fixtures/real/make_inspect.py): the JSON output gives the writer's
 * tensor list (names, dtypes, shapes, roles; the order torch.save wrote them in), its parameter count and entries;
 * incomplete ones say why; the hostile ones are shown for what they are and the canary of the os.system pickle never
 * appears. Each inspection is ONE remote command, counted at the pool (every exec goes through it).
 */
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ROOT, ensureBuiltCli, runBuiltCli } from '../harness/builtCli';
import { startTestHost, type TestHost } from '../harness/testHost';

import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore, pickCheckpoint } from '../../src/core/service';
import { inspectRemote, listedFilesOf, InspectCache } from '../../src/core/inspect/remoteRead';
import { totals } from '../../src/core/inspect';
import type { HostConfig, TargetRef } from '../../src/core/types';
import { writtenAgo } from '../harness/mtimes';
import { testPool } from '../builders/pool';

const FIX = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'inspect');
const expected = JSON.parse(fs.readFileSync(path.join(FIX, 'expected.json'), 'utf8')) as Record<string, Record<string, unknown>>;
/** make_inspect_more.py: transformers 4.57.6's sharded .bin, DeepSpeed 0.16.5's ZeRO-2 layout, an edited architecture. */
const MORE = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'inspect_more');
const expectedMore = JSON.parse(fs.readFileSync(path.join(MORE, 'expected.json'), 'utf8')) as Record<string, Record<string, unknown>>;
/** make_inspect_state.py: training state beside a 321-param module, as Lightning, accelerate and the Trainer save it. */
const STATE = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'inspect_state');
const expectedState = JSON.parse(fs.readFileSync(path.join(STATE, 'expected.json'), 'utf8')) as { params: number; trainer: { global_step: number } };
/** The DeepSpeed run: the save_dir as DeepSpeed leaves it (global_stepN tags, `latest`, zero_to_fp32.py). */
const DS_RUN = 'ds-run';
const CANARY = expected['evil.pt'].canary as string;

/** Fixture → the checkpoint it becomes in the run (folders by step; two flat files as their writers name them). */
const LAYOUT: [fixture: string, checkpoint: string][] = [
  ['state_dict.pt', 'step_100'],
  ['train_state.pt', 'step_200'],
  ['truncated.pt', 'step_300'],
  ['legacy.pt', 'step_400'],
  ['hf_shards', 'step_500'],
  ['hf_shards_broken', 'step_600'],
  ['dcp', 'step_800'],
  ['evil.pt', 'step_900'],
  ['huge_header.safetensors', 'step_1000'],
  ['deep.pt', 'step_1100'],
  ['lightning.ckpt', 'epoch=0-step=3.ckpt'],
  ['train_state.pt', 'model_step_50.pt'],
  ['many_tensors.pt', 'step_1200'],
  ['../inspect_more/hf_bin', 'step_1300'],
  ['../inspect_more/hf_bin_broken', 'step_1400'],
  ['../inspect_more/base.pt', 'step_1500'],
  ['../inspect_more/edited.pt', 'step_1600'],
];

let host: TestHost;
let config: string;
const RUN = 'insp-run';

function place(root: string): void {
  const ck = path.join(root, RUN, 'checkpoints');
  fs.mkdirSync(ck, { recursive: true });
  for (const [fixture, name] of LAYOUT) {
    const src = path.join(FIX, fixture);
    if (fs.statSync(src).isDirectory()) fs.cpSync(src, path.join(ck, name), { recursive: true });
    else if (name.includes('.')) fs.copyFileSync(src, path.join(ck, name));
    else {
      fs.mkdirSync(path.join(ck, name));
      fs.copyFileSync(src, path.join(ck, name, path.basename(fixture)));
    }
  }
  fs.cpSync(path.join(MORE, 'deepspeed'), path.join(root, DS_RUN), { recursive: true });
  // Each writer's own layout: Trainer's output_dir/checkpoint-N, accelerate's project_dir/checkpoints/checkpoint_N,
  // Lightning's dirpath with a second run's clashing name suffixed -v1.
  fs.cpSync(path.join(STATE, 'trainer'), path.join(root, 'trainer-run'), { recursive: true });
  fs.cpSync(path.join(STATE, 'accelerate_state'), path.join(root, 'acc-run', 'checkpoints', 'checkpoint_0'), { recursive: true });
  fs.mkdirSync(path.join(root, 'lit-run', 'checkpoints'), { recursive: true });
  fs.copyFileSync(path.join(STATE, 'lightning_a.ckpt'), path.join(root, 'lit-run', 'checkpoints', 'epoch=2-step=12.ckpt'));
  fs.copyFileSync(path.join(STATE, 'lightning_b.ckpt'), path.join(root, 'lit-run', 'checkpoints', 'epoch=2-step=12-v1.ckpt'));
  // Finished saves, as a run leaves them: a checkpoint changed within 5 s of a listing is one being written.
  for (const run of [RUN, DS_RUN, 'trainer-run', 'acc-run', 'lit-run']) writtenAgo(path.join(root, run));
}

const TARGETS: [label: string, hostName: string, target: TargetRef, spec: string][] = [
  ['bare host', 'h', { kind: 'host', id: '' }, 'host'],
  ['pct container', 'c', { kind: 'pct', id: '200' }, 'pct:200'],
];

before(async () => {
  ensureBuiltCli();
  fs.rmSync(CANARY, { force: true });
  host = await startTestHost();
  const root = path.join(host.dir, 'inspect-root');
  place(root);
  place(path.join(host.containers.pct200.workspace, 'insp'));
  execFileSync('chmod', ['-R', 'a+rX', root, host.containers.pct200.workspace]);
  config = path.join(host.dir, 'inspect-config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: [host.hostConfig('h', { runRoots: [root], targets: ['host'] }), host.hostConfig('c', { runRoots: ['/workspace/insp'], targets: ['pct:200'] })],
    }),
  );
});

// One event-loop turn per test (the CLI runs synchronously; see frameworkLayouts.test.ts).
beforeEach(() => new Promise<void>((resolve) => setTimeout(resolve, 10)));

after(async () => {
  await host?.stop();
});

interface Json {
  summary: string;
  format: string;
  completeness: string;
  incomplete: string[];
  totals: { params: number; tensors: number };
  tensors: { name: string; dtype: string; shape: number[]; role: string; file?: string }[];
  entries: { name: string; kind: string; what: string; value?: unknown }[];
  opaque: { name: string; at: string }[];
  files: { name: string; problem?: { code: string; message: string }; note?: string; format: string }[];
  step?: number;
  remote: { commands: number; bytesRead: number };
}

function inspect(spec: string, hostName: string, checkpoint: string): Json {
  const r = runBuiltCli(['inspect', `${hostName}/${spec}/${RUN}/${checkpoint}`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Json;
}

/** The fields the writer reports, keys in its order (expected.json is written with sort_keys), to compare as text. */
const plain = (ts: Json['tensors'], withFile = false): unknown[] => ts.map((t) => ({ dtype: t.dtype, ...(withFile ? { file: t.file } : {}), name: t.name, role: t.role, shape: t.shape }));
const byName = (a: { name: string }, b: { name: string }): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

for (const [label, hostName, , spec] of TARGETS) {
  describe(`inspect over ssh: ${label}`, () => {
    for (const [fixture, ck] of [['state_dict.pt', 'step_100'], ['train_state.pt', 'step_200'], ['lightning.ckpt', 'epoch=0-step=3.ckpt'], ['train_state.pt', 'model_step_50.pt']]) {
      test(`${ck} (${fixture}): the writer's tensors in its order, its parameter count and scalars`, () => {
        const j = inspect(spec, hostName, ck);
        const exp = expected[fixture];
        assert.equal(j.format, 'torch-zip');
        assert.equal(JSON.stringify(plain(j.tensors)), JSON.stringify(exp.tensors));
        assert.equal(j.totals.params, exp.params);
        assert.equal(j.completeness, 'complete');
        for (const [k, v] of Object.entries(exp.scalars as Record<string, unknown>)) assert.deepEqual(j.entries.find((e) => e.name === k)?.value, v, k);
        assert.equal(j.remote.commands, 1);
      });
    }

    test('step_1200 (3000 tensors): past the first read, the writer tensor list still, in two commands', () => {
      const j = inspect(spec, hostName, 'step_1200');
      assert.equal(JSON.stringify(plain(j.tensors)), JSON.stringify(expected['many_tensors.pt'].tensors));
      assert.equal(j.totals.params, 3000);
      assert.equal(j.remote.commands, 2);
      assert.ok(j.remote.bytesRead < fs.statSync(path.join(FIX, 'many_tensors.pt')).size);
    });

    test('step_500: save_pretrained shards, every tensor with its shard, params as transformers counts them', () => {
      const j = inspect(spec, hostName, 'step_500');
      const exp = expected.hf_shards;
      assert.equal(j.format, 'safetensors-sharded');
      assert.equal(JSON.stringify(plain(j.tensors, true).sort(byName as never)), JSON.stringify(exp.tensors));
      assert.equal(j.totals.params, exp.hf_params);
      assert.equal(j.completeness, 'complete');
      assert.equal(j.remote.commands, 1);
      assert.ok(j.files.some((f) => f.name === 'config.json' && f.note === 'not a file inspect reads'), 'files not read are listed, not hidden');
    });

    test('step_600: the missing shard and the short shard, both said', () => {
      const j = inspect(spec, hostName, 'step_600');
      const exp = expected.hf_shards_broken as { missing: string[]; short: string[] };
      assert.equal(j.completeness, 'incomplete');
      assert.equal(j.incomplete.length, 2, j.incomplete.join('\n'));
      assert.ok(j.incomplete.some((r) => r.includes(`missing: ${exp.missing[0]}`)));
      assert.ok(j.incomplete.some((r) => r.startsWith(`${exp.short[0]} is `) && /its header says/.test(r)));
      assert.match(j.summary, /^INCOMPLETE/);
    });

    test('step_800: torch.distributed.checkpoint .metadata: keys, global shapes, dtypes', () => {
      const j = inspect(spec, hostName, 'step_800');
      assert.equal(j.format, 'dcp');
      assert.equal(JSON.stringify(plain(j.tensors).sort(byName as never)), JSON.stringify(expected.dcp.tensors));
      assert.equal(j.totals.params, expected.dcp.params);
      assert.deepEqual(j.entries.map((e) => e.name), expected.dcp.bytes_entries);
      assert.equal(j.remote.commands, 1);
    });

    test('step_300: an archive without its end record is incomplete, its tensors still listed from the head', () => {
      const j = inspect(spec, hostName, 'step_300');
      assert.equal(j.completeness, 'incomplete');
      assert.deepEqual(j.incomplete, ['truncated.pt has no zip end record: still being written, or cut short']);
      assert.equal(JSON.stringify(plain(j.tensors)), JSON.stringify(expected['train_state.pt'].tensors));
    });

    test('step_400: a legacy torch file is named for what it is and not read', () => {
      const j = inspect(spec, hostName, 'step_400');
      assert.equal(j.format, 'legacy-torch');
      assert.match(j.files[0].note ?? '', /legacy format/);
      assert.equal(j.completeness, 'unknown');
    });

    test('step_900: the os.system pickle is an opaque global and its canary never appears (remote or local)', () => {
      fs.rmSync(CANARY, { force: true });
      const j = inspect(spec, hostName, 'step_900');
      assert.deepEqual(j.opaque.map((o) => [o.name, o.at]), [[expected['evil.pt'].opaque, 'weights']]);
      assert.match(j.summary, /opaque global \(not called\): posix\.system/);
      // The remote is this machine (127.0.0.1): its /tmp is ours; inside the container too (the shim binds only /workspace).
      assert.equal(fs.existsSync(CANARY), false);
      const inside = runBuiltCli(['ls', `${hostName}/${spec}`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
      assert.equal(inside.code, 0, inside.stderr);
      assert.equal(fs.existsSync(CANARY), false);
    });

    test('step_1300: save_pretrained(safe_serialization=False) .bin shards through their index: the writer tensor list', () => {
      const j = inspect(spec, hostName, 'step_1300');
      const exp = expectedMore.hf_bin as { tensors: unknown[]; hf_params: number; total_size: number; shards: string[] };
      assert.equal(j.format, 'torch-zip-sharded');
      assert.equal(JSON.stringify(plain(j.tensors, true).sort(byName as never)), JSON.stringify(exp.tensors));
      assert.equal(j.totals.params, exp.hf_params);
      assert.equal(j.completeness, 'complete');
      assert.equal(j.remote.commands, 1);
      assert.equal(j.files.find((f) => f.name === 'pytorch_model.bin.index.json')?.note, `a shard index: ${exp.tensors.length} tensors in ${exp.shards.length} shards, total_size ${exp.total_size} bytes (the shards hold that)`);
    });

    test('step_1400: a .bin shard the index names is missing: incomplete in inspect, and never the latest in the listing', () => {
      const j = inspect(spec, hostName, 'step_1400');
      const exp = expectedMore.hf_bin_broken as { missing: string[]; missing_tensors: string[] };
      assert.equal(j.completeness, 'incomplete');
      assert.deepEqual(j.incomplete, [`4 of 5 shards named by pytorch_model.bin.index.json are there (missing: ${exp.missing[0]}; ${exp.missing_tensors.length} of the 21 tensors its weight_map names are in it)`]);
      const ls = runBuiltCli(['ls', `${hostName}/${spec}/${RUN}`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
      assert.equal(ls.code, 0, ls.stderr);
      const run = (JSON.parse(ls.stdout) as { run: { latest: string; checkpoints: { name: string; incomplete?: string }[] } }).run;
      assert.equal(run.checkpoints.find((c) => c.name === 'step_1400')?.incomplete, '4 of 5 shards of pytorch_model.bin are there');
      assert.equal(run.latest, 'step_1600');
      assert.ok(run.checkpoints.some((c) => c.name === 'step_1300' && c.incomplete === undefined));
    });

    test('a DeepSpeed save_dir: global_stepN tags, module tensors as params, ZeRO shards counted, the unfinished tag never latest', () => {
      const ls = runBuiltCli(['ls', `${hostName}/${spec}/${DS_RUN}`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
      assert.equal(ls.code, 0, ls.stderr);
      const run = (JSON.parse(ls.stdout) as { run: { latest: string; checkpoints: { name: string; step: number; incomplete?: string }[]; pointers: unknown[] } }).run;
      assert.deepEqual(run.checkpoints.map((c) => [c.name, c.step]), [['global_step20', 20], ['global_step30', 30], ['global_step40', 40]]);
      assert.equal(run.checkpoints[2].incomplete, "1 ZeRO optimizer shard where global_step30, which DeepSpeed's latest file names, has 2: still being saved (latest is written after every rank's shard)");
      assert.equal(run.latest, (expectedMore.deepspeed as { latest: string }).latest);
      assert.deepEqual(run.pointers, [{ file: 'latest', says: 'global_step30', checkpoint: 'global_step30' }]);
      for (const tag of ['global_step20', 'global_step30']) {
        const r = runBuiltCli(['inspect', `${hostName}/${spec}/${DS_RUN}/${tag}`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
        assert.equal(r.code, 0, r.stderr);
        const j = JSON.parse(r.stdout) as Json;
        const exp = expectedMore[`deepspeed/${tag}`] as { tensors: unknown[]; params: number; step: number };
        assert.equal(JSON.stringify(plain(j.tensors, true)), JSON.stringify(exp.tensors));
        assert.equal(j.totals.params, exp.params);
        assert.equal(j.step, exp.step);
        assert.equal(j.completeness, 'complete');
        assert.equal(j.remote.commands, 1);
        // Each tag is its files: the model states and one ZeRO shard per rank (not `latest` or zero_to_fp32.py).
        assert.deepEqual(j.files.map((f) => f.name), ['mp_rank_00_model_states.pt', 'zero_pp_rank_0_mp_rank_00_optim_states.pt', 'zero_pp_rank_1_mp_rank_00_optim_states.pt']);
        assert.equal(j.entries.find((e) => e.name === 'ZeRO optimizer shards')?.what, 'ZeRO stage 2 AdamW state (exp_avg, exp_avg_sq) in 2 of 2 data-parallel shards');
        assert.match(j.summary, new RegExp(`^324 params · fp32 · 9 tensors · optimizer: ZeRO stage 2 AdamW state \\(exp_avg, exp_avg_sq\\) in 2 of 2 data-parallel shards · step ${exp.step} · `));
      }
      const r = runBuiltCli(['inspect', `${hostName}/${spec}/${DS_RUN}/global_step40`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
      assert.equal(r.code, 0, r.stderr);
      const j = JSON.parse(r.stdout) as Json;
      assert.deepEqual(j.incomplete, ['1 of 2 ZeRO optimizer shards are there (dp_world_size 2 in mp_rank_00_model_states.pt; missing: zero_pp_rank_1_mp_rank_00_optim_states.pt): a save not finished']);
    });

    test('step_1000 and step_1100: a 2^64-1 header length is refused, a 100000-deep pickle bounded, both said', () => {
      const huge = inspect(spec, hostName, 'step_1000');
      assert.equal(huge.files[0].problem?.code, 'absurd-length');
      assert.match(huge.files[0].problem!.message, /18446744073709551615 bytes/);
      const deep = inspect(spec, hostName, 'step_1100');
      assert.equal(deep.files[0].problem?.code, 'too-large');
    });
  });
}

describe('remote commands per inspection, counted at the pool', () => {
  test('one per checkpoint on both targets, none again from the cache while nothing changed', async () => {
    const pool = testPool(host, { connectTimeoutMs: 5000 });
    let execs = 0;
    const realExec = pool.exec.bind(pool);
    pool.exec = (async (...a: Parameters<typeof realExec>) => {
      execs++;
      return realExec(...a);
    }) as typeof pool.exec;
    const hosts: HostConfig[] = JSON.parse(fs.readFileSync(config, 'utf8')).hosts;
    const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) });
    try {
      for (const [label, hostName, target] of TARGETS) {
        const { run } = await core.resolveRun(hostName, target, [RUN], 'none');
        const cache = new InspectCache();
        for (const [fixture, name] of LAYOUT) {
          const c = pickCheckpoint(run, name);
          const before = execs;
          const r = await inspectRemote(core.executor(hostName), target, listedFilesOf(c), { cache, host: hostName });
          // 3000 tensors: data.pkl runs past the first 128 KiB and the central directory past the last 64 KiB; one more
          // command reads exactly those ranges.
          const want = fixture === 'many_tensors.pt' ? 2 : 1;
          assert.equal(execs - before, want, `${label} ${name} (${fixture}): ${execs - before} remote commands`);
          assert.equal(r.commands, want);
          const again = await inspectRemote(core.executor(hostName), target, listedFilesOf(c), { cache, host: hostName });
          const complete = !['truncated.pt', 'hf_shards_broken', '../inspect_more/hf_bin_broken'].includes(fixture);
          // Read whole and unchanged: from the cache, no command at all.
          if (complete) assert.equal(execs - before, want, `${label} ${name}: read again`);
          assert.deepEqual(totals(again.inspection), totals(r.inspection));
        }
      }
    } finally {
      pool.dispose();
    }
  });
});

describe('diff', () => {
  test('the same checkpoint on the host and in the container: nothing differs', () => {
    const r = runBuiltCli(['diff', `h/host/${RUN}/step_200`, `c/pct:200/${RUN}/step_200`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(r.code, 0, r.stderr);
    const d = JSON.parse(r.stdout) as { added: unknown[]; removed: unknown[]; changed: unknown[]; same: number; a: { totals: { params: number } }; b: { totals: { params: number } } };
    assert.deepEqual([d.added.length, d.removed.length, d.changed.length, d.same], [0, 0, 0, (expected['train_state.pt'].tensors as { role: string }[]).filter((t) => t.role === 'model').length]);
    assert.equal(d.a.totals.params, d.b.totals.params);
  });

  test('a training state against its bf16 state dict: names aligned under model., every dtype changed', () => {
    const r = runBuiltCli(['diff', `h/host/${RUN}/step_200`, `h/host/${RUN}/step_100`, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /names aligned: A's tensors under "model\." compared with the other's top level/);
    assert.match(r.stdout, /^changed: 18$/m);
    assert.match(r.stdout, /~ layers\.0\.self_attn\.q_proj\.weight {2}float32 \[4, 4\] → bfloat16 \[4, 4\]/);
    assert.match(r.stdout, /^params: 266 → 266 \(\+0\)/m);
  });

  test('save_pretrained shards against the broken copy: the tensors of the missing shard are removed', () => {
    const r = runBuiltCli(['diff', `h/host/${RUN}/step_500`, `c/pct:200/${RUN}/step_600`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(r.code, 0, r.stderr);
    const d = JSON.parse(r.stdout) as { removed: { file: string }[]; added: unknown[]; b: { completeness: string } };
    assert.ok(d.removed.length > 0);
    assert.ok(d.removed.every((t) => t.file === (expected.hf_shards_broken.missing as string[])[0]));
    assert.equal(d.b.completeness, 'incomplete');
  });
});

describe('diff of a run\'s checkpoint against one on another host', () => {
  test('a base state dict on the bare host against its edited architecture in the container: added, removed, changed as the writer edited', () => {
    const r = runBuiltCli(['diff', `h/host/${RUN}/step_1500`, `c/pct:200/${RUN}/step_1600`, '--json', '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(r.code, 0, r.stderr);
    const d = JSON.parse(r.stdout) as { added: { name: string }[]; removed: { name: string }[]; changed: { name: string; changed: string[] }[]; a: { totals: { params: number } }; b: { totals: { params: number } } };
    const exp = (expectedMore['edited.pt'] as { against_base: { added: string[]; removed: string[]; changed: string[] } }).against_base;
    assert.deepEqual(d.added.map((t) => t.name).sort(), exp.added);
    assert.deepEqual(d.removed.map((t) => t.name).sort(), exp.removed);
    assert.deepEqual(d.changed.map((c) => [c.name, c.changed]).sort(), [['embed_tokens.weight', ['shape']], ['layers.1.norm.weight', ['dtype']]]);
    assert.equal(d.a.totals.params, (expectedMore['base.pt'] as { params: number }).params);
    assert.equal(d.b.totals.params, (expectedMore['edited.pt'] as { params: number }).params);
  });
});

test('text output: the summary line, module groups and entries', () => {
  const r = runBuiltCli(['inspect', `h/host/${RUN}/step_200`, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^h\/host\/insp-run\/step_200: 266 params · fp32 · 18 tensors · optimizer: AdamW state \(exp_avg, exp_avg_sq\) · step 20000$/m);
  assert.match(r.stdout, /^ {2}model › layers › 0 › self_attn {2}64 params {2}256 B$/m);
  assert.match(r.stdout, /^ {2}optimizer +AdamW state/m);
});

describe('training state beside the model (make_inspect_state.py), over ssh', () => {
  const cli = (args: string[]): string => {
    const r = runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };

  test("a Trainer checkpoint: the module's params, trainer_state.json's global_step read in the same one command", () => {
    const j = JSON.parse(cli(['inspect', 'h/host/trainer-run/checkpoint-6', '--json'])) as Json & { state: string[] };
    assert.equal(j.totals.params, expectedState.params);
    assert.equal(j.step, expectedState.trainer.global_step);
    assert.equal(j.remote.commands, 1);
    assert.deepEqual(j.state, [`optimizer 2 × ${expectedState.params}`, 'scheduler', 'RNG 5.1 KB']);
  });

  test("an accelerate save_state folder: the RNG pickle is not counted and its counter is no step", () => {
    const text = cli(['inspect', 'h/host/acc-run/checkpoint_0']);
    assert.match(text, new RegExp(`^h/host/acc-run/checkpoint_0: ${expectedState.params} params · fp32 · 6 tensors · optimizer: AdamW state \\(exp_avg, exp_avg_sq\\) · 4 opaque`, 'm'));
    assert.doesNotMatch(text.split('\n')[0], /step/);
    assert.match(text, /^other state \(not counted in params\): optimizer 2 × 321 · scheduler · RNG 5\.1 KB$/m);
  });

  test('diff of two Lightning runs of one module: no callback state added or removed', () => {
    const d = JSON.parse(cli(['diff', 'h/host/lit-run/epoch=2-step=12.ckpt', 'h/host/lit-run/epoch=2-step=12-v1.ckpt', '--json'])) as { added: unknown[]; removed: unknown[]; changed: unknown[]; same: number; a: { totals: { params: number } } };
    assert.deepEqual([d.added.length, d.removed.length, d.changed.length, d.same], [0, 0, 0, 6]);
    assert.equal(d.a.totals.params, expectedState.params);
  });
});
