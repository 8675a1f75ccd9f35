/**
 * Layouts of the frameworks people train with, listed over the real test sshd by the built CLI. Megatron-LM's and
 * fairseq's are written as their savers name them (cited beside the patterns in checkpointLayout.ts). Checkpoints
 * still being written, as the real writers leave them (test/fixtures/real/make_dcp.py: torch 2.13.0+cpu's
 * torch.distributed.checkpoint and safetensors 0.8.0), listed over the real test sshd by the built CLI: each is
 * listed and marked with why, and `latest` is the newest complete one, which is what `pull …/latest` fetches.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { ROOT, ensureBuiltCli, runBuiltCli, type CliResult } from '../harness/builtCli';
import { startTestHost, type TestHost } from '../harness/testHost';
import { writtenAgo } from '../harness/mtimes';

const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'real', 'written');
let host: TestHost;
let config: string;
let runDir: string;

interface Ck {
  name: string;
  kind: string;
  step: number | null;
  epoch?: number;
  save?: number;
  alias?: { role: string; of?: string; step?: number; how: string };
  files?: string[];
  incomplete?: string;
  pointedBy?: string[];
}
interface RunJson {
  name: string;
  latest: string | null;
  checkpoints: Ck[];
  pointers?: { file: string; says: string; checkpoint?: string; note?: string }[];
}

function lsRun(run: string): RunJson {
  const r = cli(['ls', `w/host/${run}`, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { run: RunJson }).run;
}

const expected = (fixture: string): Record<string, unknown> => JSON.parse(fs.readFileSync(path.join(FIXTURES, fixture, 'expected.json'), 'utf8')) as Record<string, unknown>;
const sha = (p: string): string => createHash('sha256').update(fs.readFileSync(p)).digest('hex');

function cli(args: string[]): CliResult {
  return runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  const root = path.join(host.dir, 'writing');
  runDir = path.join(root, 'dcp-run');
  const ck = path.join(runDir, 'checkpoints');
  fs.mkdirSync(ck, { recursive: true });
  fs.cpSync(path.join(FIXTURES, 'dcp_step_1000'), path.join(ck, 'step_1000'), { recursive: true });
  fs.cpSync(path.join(FIXTURES, 'hf_step_2000'), path.join(ck, 'step_2000'), { recursive: true });
  fs.cpSync(path.join(FIXTURES, 'dcp_step_3000'), path.join(ck, 'step_3000'), { recursive: true });
  // torch.save through an atomic writer: the bytes go to a temporary name first.
  fs.mkdirSync(path.join(ck, 'step_4000'));
  fs.writeFileSync(path.join(ck, 'step_4000', 'checkpoint.pt.tmp'), Buffer.alloc(4096, 7));
  fs.mkdirSync(path.join(ck, 'step_5000')); // made, nothing written yet
  // Megatron-LM: iter_{:07d}/mp_rank_00/model_optim_rng.pt and the tracker file; a staging folder of a later save.
  for (const it of ['0001000', '0002000', '0003000_tmp']) {
    fs.mkdirSync(path.join(root, 'megatron-run', `iter_${it}`, 'mp_rank_00'), { recursive: true });
    fs.writeFileSync(path.join(root, 'megatron-run', `iter_${it}`, 'mp_rank_00', 'model_optim_rng.pt'), Buffer.alloc(2048, 1));
  }
  fs.writeFileSync(path.join(root, 'megatron-run', 'latest_checkpointed_iteration.txt'), '2000');
  // fairseq: mid-epoch saves checkpoint_{epoch}_{updates}.pt.
  fs.mkdirSync(path.join(root, 'fairseq-run', 'checkpoints'), { recursive: true });
  for (const n of ['checkpoint_1_500.pt', 'checkpoint_2_1000.pt']) fs.writeFileSync(path.join(root, 'fairseq-run', 'checkpoints', n), Buffer.alloc(1024, 2));
  // Orbax CheckpointManager output (test/fixtures/real/make_orbax.py), and seed folders named by bare numbers that
  // hold runs of their own.
  fs.cpSync(path.join(FIXTURES, 'orbax'), path.join(root, 'orbax-run'), { recursive: true });
  for (const seed of ['0', '1']) {
    fs.mkdirSync(path.join(root, 'seeds', seed, 'checkpoints', 'step_10'), { recursive: true });
    fs.writeFileSync(path.join(root, 'seeds', seed, 'checkpoints', 'step_10', 'model.pt'), 'x');
  }
  // Two runs with the same last folder name.
  for (const exp of ['expA', 'expB']) {
    fs.mkdirSync(path.join(root, 'exps', exp, 'seed1', 'checkpoints', 'step_1'), { recursive: true });
    fs.writeFileSync(path.join(root, 'exps', exp, 'seed1', 'checkpoints', 'step_1', 'model.pt'), `weights of ${exp}`);
  }
  // The frameworks' own savers (test/fixtures/real/make_frameworks.py; versions in FRAMEWORKS_MANIFEST.txt).
  for (const [fixture, run] of [
    ['hf_trainer', 'hf-run'],
    ['hf_sharded', 'hf-sharded'],
    ['lightning', 'lightning-run'],
    ['lightning_link', 'lightning-link'],
    ['accelerate', 'accelerate-run'],
    ['keras', 'keras-run'],
    // tf.train.CheckpointManager (test/fixtures/real/make_tf.py; TF_MANIFEST.txt).
    ['tf', 'tf-run'],
  ]) {
    fs.cpSync(path.join(FIXTURES, fixture), path.join(root, run), { recursive: true, verbatimSymlinks: true });
  }
  // save_pretrained's shards with one of them not there yet.
  fs.cpSync(path.join(FIXTURES, 'hf_sharded'), path.join(root, 'hf-sharded-broken'), { recursive: true });
  fs.rmSync(path.join(root, 'hf-sharded-broken', 'model-00003-of-00005.safetensors'));
  // fairseq's end-of-epoch save and its best/last copies (fairseq/checkpoint_utils.py, save_checkpoint).
  for (const n of ['checkpoint2.pt', 'checkpoint_best.pt', 'checkpoint_last.pt']) fs.writeFileSync(path.join(root, 'fairseq-run', 'checkpoints', n), Buffer.alloc(1024, 3));
  // DeepSpeed: global_step{N} folders and the `latest` file naming the tag it saved last (deepspeed/runtime/engine.py,
  // save_checkpoint); here it names an older one than is listed, as after a save whose `latest` write failed.
  for (const n of ['global_step500', 'global_step600']) {
    fs.mkdirSync(path.join(root, 'deepspeed-run', n), { recursive: true });
    fs.writeFileSync(path.join(root, 'deepspeed-run', n, 'mp_rank_00_model_states.pt'), Buffer.alloc(512, 4));
  }
  fs.writeFileSync(path.join(root, 'deepspeed-run', 'latest'), 'global_step500');
  // NeMo: Lightning names with `-last` (nemo/utils/callbacks/nemo_model_checkpoint.py) and the `-unfinished` marker
  // of a save in progress (set_checkpoint_unfinished_marker, removed when the save is finalized).
  const nemo = path.join(root, 'nemo-run', 'checkpoints');
  fs.mkdirSync(nemo, { recursive: true });
  fs.writeFileSync(path.join(nemo, 'gpt--val_loss=2.10-step=2000-consumed_samples=4000.0.ckpt'), 'saved at 2000');
  fs.writeFileSync(path.join(nemo, 'gpt--val_loss=2.10-step=2000-consumed_samples=4000.0-last.ckpt'), 'saved at 2000');
  fs.writeFileSync(path.join(nemo, 'gpt--val_loss=2.00-step=3000-consumed_samples=6000.0.ckpt'), 'half');
  fs.writeFileSync(path.join(nemo, 'gpt--val_loss=2.00-step=3000-consumed_samples=6000.0-unfinished'), '');
  // MosaicML Composer: 'ep{epoch}-ba{batch}-rank{rank}.pt' and the 'latest-rank{rank}.pt' symlink to the newest
  // (composer/callbacks/checkpoint_saver.py; save_latest_filename in composer/trainer/trainer.py).
  const composer = path.join(root, 'composer-run', 'checkpoints');
  fs.mkdirSync(composer, { recursive: true });
  fs.writeFileSync(path.join(composer, 'ep1-ba20-rank0.pt'), 'ba20');
  fs.writeFileSync(path.join(composer, 'ep2-ba40-rank0.pt'), 'ba40');
  fs.symlinkSync('ep2-ba40-rank0.pt', path.join(composer, 'latest-rank0.pt'));
  execFileSync('chmod', ['-R', 'a+rX', root]);
  // Laid as a run leaves them, a minute before the listings: none of them is being written now.
  writtenAgo(root);
  config = path.join(host.dir, 'writing-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('w', { runRoots: [root], targets: ['host'] })] }));
});

// The CLI runs synchronously, so sshd's log (a pipe read by this process) is only drained when the event loop turns;
// the test runner goes from one sync test to the next without turning it, and with this many connections the pipe
// filled: sshd then blocked writing its log before the banner and every later connection timed out. One turn per test.
beforeEach(() => new Promise<void>((resolve) => setTimeout(resolve, 10)));

after(async () => {
  await host?.stop();
});

test('checkpoints still being written are listed with why, and latest is the newest complete one', () => {
  const r = cli(['ls', 'w/host/dcp-run', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const run = JSON.parse(r.stdout).run as { latest: string | null; checkpoints: { name: string; incomplete?: string }[] };
  assert.deepEqual(
    run.checkpoints.map((c) => [c.name, c.incomplete ?? null]),
    [
      ['step_1000', null],
      ['step_2000', '1 of 2 shards of model.safetensors are there'],
      ['step_3000', 'torch.distributed.checkpoint shards without their .metadata (written last)'],
      ['step_4000', 'checkpoint.pt.tmp is still being written'],
      ['step_5000', 'holds no files yet'],
    ],
  );
  assert.equal(run.latest, 'step_1000');
  const text = cli(['ls', 'w/host/dcp-run']);
  assert.equal(text.code, 0, text.stderr);
  assert.match(text.stdout, /step_1000 .* newest/);
  assert.match(text.stdout, /step_4000 .* incomplete: checkpoint\.pt\.tmp is still being written/);
});

test('pull …/latest fetches the newest complete checkpoint, byte for byte; an incomplete one is taken only by name', () => {
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', 'w/host/dcp-run/latest', '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  const local = path.join(to, 'dcp-run', 'step_1000');
  const sha = (p: string): string => createHash('sha256').update(fs.readFileSync(p)).digest('hex');
  for (const f of ['.metadata', '__0_0.distcp']) assert.equal(sha(path.join(local, f)), sha(path.join(runDir, 'checkpoints', 'step_1000', f)));
  assert.deepEqual(fs.readdirSync(path.join(to, 'dcp-run')), ['step_1000']);
  const named = cli(['pull', 'w/host/dcp-run/step_3000', '--to', to]);
  assert.equal(named.code, 0, named.stderr);
  assert.deepEqual(fs.readdirSync(path.join(local, '..', 'step_3000')), ['__0_0.distcp']);
});

test('Megatron-LM iteration folders and fairseq update counts are runs with the right steps', () => {
  const mega = cli(['ls', 'w/host/megatron-run', '--json']);
  assert.equal(mega.code, 0, mega.stderr);
  const m = JSON.parse(mega.stdout).run as { latest: string; checkpoints: { name: string; step: number; bytes: number }[] };
  assert.deepEqual(m.checkpoints.map((c) => [c.name, c.step, c.bytes]), [
    ['iter_0001000', 1000, 2048],
    ['iter_0002000', 2000, 2048],
  ]);
  assert.equal(m.latest, 'iter_0002000');
  const fair = cli(['ls', 'w/host/fairseq-run', '--json']);
  assert.equal(fair.code, 0, fair.stderr);
  assert.deepEqual((JSON.parse(fair.stdout).run as { checkpoints: Ck[] }).checkpoints.map((c) => [c.name, c.kind, c.step, c.epoch ?? null]), [
    ['checkpoint_1_500.pt', 'step', 500, 1],
    ['checkpoint_2_1000.pt', 'step', 1000, 2],
    ['checkpoint2.pt', 'epoch', null, 2],
    ['checkpoint_best.pt', 'alias', null, null],
    ['checkpoint_last.pt', 'alias', null, null],
  ]);
  // Megatron's tracker names iter_0002000, which is ours too: said, with no note.
  assert.deepEqual((m as { pointers?: unknown }).pointers, [{ file: 'latest_checkpointed_iteration.txt', says: '2000', checkpoint: 'iter_0002000' }]);
  // `2` is no step of this run: the epoch checkpoint that carries the number is named, not taken silently.
  const two = cli(['pull', 'w/host/fairseq-run/2', '--to', fs.mkdtempSync(path.join(host.dir, 'pull-')), '--json']);
  assert.equal(two.code, 2, two.stdout + two.stderr);
  assert.match(two.stdout + two.stderr, /checkpoint2\.pt \(epoch 2/);
  const best = cli(['pull', 'w/host/fairseq-run/best', '--to', fs.mkdtempSync(path.join(host.dir, 'pull-'))]);
  assert.equal(best.code, 0, best.stderr);
});

test("Orbax's step folders are checkpoints, its temporary folder an incomplete one; bare-number seed folders stay runs", () => {
  const r = cli(['ls', 'w/host/orbax-run', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const run = JSON.parse(r.stdout).run as { latest: string; checkpoints: { name: string; step: number; incomplete?: string }[] };
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.step, c.incomplete ?? null]), [
    ['100', 100, null],
    ['200', 200, null],
    ['300.orbax-checkpoint-tmp', 300, 'Orbax is still writing it (a temporary folder until the save is renamed)'],
  ]);
  assert.equal(run.latest, '200');
  const all = cli(['ls', 'w/host', '--json']);
  assert.equal(all.code, 0, all.stderr);
  const names = (JSON.parse(all.stdout) as { runs: { name: string; path: string }[] }).runs.map((x) => x.path.split('/').slice(-2).join('/'));
  assert.ok(names.includes('seeds/0') && names.includes('seeds/1'), `the seed runs are listed: ${names.join(', ')}`);
});

test('runs with the same folder name are told apart by their path: listed, addressed, pulled into their own folders; a short name that fits both is ambiguous', () => {
  const all = cli(['ls', 'w/host', '--json']);
  assert.equal(all.code, 0, all.stderr);
  const names = (JSON.parse(all.stdout) as { runs: { name: string }[] }).runs.map((r) => r.name);
  assert.ok(names.includes('expA/seed1') && names.includes('expB/seed1'), names.join(', '));
  const one = cli(['ls', 'w/host/expB/seed1', '--json']);
  assert.equal(one.code, 0, one.stderr);
  assert.match((JSON.parse(one.stdout) as { run: { path: string } }).run.path, /\/exps\/expB\/seed1$/);

  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const both = cli(['pull', 'w/host/seed1/latest', '--to', to, '--json']);
  assert.equal(both.code, 2, both.stdout + both.stderr);
  const err = JSON.parse(both.stdout || both.stderr) as { error: { kind: string; message: string } };
  assert.equal(err.error.kind, 'ambiguous');
  assert.match(err.error.message, /expA\/seed1.*expB\/seed1/);
  assert.deepEqual(fs.readdirSync(to), [], 'nothing pulled');

  const b = cli(['pull', 'w/host/expB/seed1/latest', '--to', to]);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(fs.readFileSync(path.join(to, 'expB', 'seed1', 'step_1', 'model.pt'), 'utf8'), 'weights of expB');
  const a = cli(['pull', 'w/host/expA/seed1/1', '--to', to]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(fs.readFileSync(path.join(to, 'expA', 'seed1', 'step_1', 'model.pt'), 'utf8'), 'weights of expA');
});

test("transformers Trainer: the checkpoint-N folders save_total_limit kept, and save_model's step-less weights as 'final', pulled alone", () => {
  const facts = expected('hf_trainer') as { checkpoint_folders: string[]; final_files: string[]; global_step: number };
  const run = lsRun('hf-run');
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.step]), [...facts.checkpoint_folders.map((n) => [n, 'step', Number(n.slice('checkpoint-'.length))]), ['final', 'final', null]]);
  assert.equal(run.latest, `checkpoint-${facts.global_step}`, 'latest is the newest step checkpoint');
  assert.deepEqual(run.checkpoints[run.checkpoints.length - 1].files, facts.final_files);
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', 'w/host/hf-run/final', '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  const local = path.join(to, 'hf-run', 'final');
  assert.deepEqual(fs.readdirSync(local).sort(), facts.final_files, 'the final weights and their companions, none of the checkpoint folders');
  for (const f of facts.final_files) assert.equal(sha(path.join(local, f)), sha(path.join(FIXTURES, 'hf_trainer', f)), f);
  const text = cli(['ls', 'w/host/hf-run']);
  assert.match(text.stdout, /final +.*final weights \(no step\)/);
});

test("save_pretrained with shards: a run of final weights whose latest they are; a shard not there marks them", () => {
  const facts = expected('hf_sharded') as { files: string[]; shards: string[] };
  const run = lsRun('hf-sharded');
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.files, c.incomplete ?? null]), [['final', 'final', facts.files, null]]);
  assert.equal(run.latest, 'final');
  const broken = lsRun('hf-sharded-broken');
  assert.equal(broken.checkpoints[0].incomplete, `${facts.shards.length - 1} of ${facts.shards.length} shards of model.safetensors are there`);
  assert.equal(broken.latest, null);
});

test("Lightning ModelCheckpoint: top-k saves, last.ckpt and the -v1 names of a second fit are listed; a shared step and a shared role are ambiguous", () => {
  const facts = expected('lightning') as { files: string[]; first: { best_k: string[]; last: string }; second: { saved: string; last: string } };
  const run = lsRun('lightning-run');
  assert.deepEqual(run.checkpoints.map((c) => c.name).sort(), [...facts.files].sort());
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.step, c.alias?.role ?? null]), [
    ['epoch=0-step=20-v1.ckpt', 'step', 20, null],
    ['epoch=0-step=20.ckpt', 'step', 20, null],
    ['epoch=0-step=30.ckpt', 'step', 30, null],
    [facts.second.last, 'alias', null, 'last'],
    [facts.first.last, 'alias', null, 'last'],
  ]);
  assert.deepEqual(run.checkpoints.find((c) => c.name === 'last.ckpt')?.alias, { role: 'last', how: 'unknown' }, 'a copy: which save it holds is inside it');
  assert.equal(run.latest, 'epoch=0-step=30.ckpt');
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const step = cli(['pull', 'w/host/lightning-run/20', '--to', to, '--json']);
  assert.equal(step.code, 2, step.stdout + step.stderr);
  assert.match(step.stdout + step.stderr, /ambiguous[\s\S]*epoch=0-step=20-v1\.ckpt, epoch=0-step=20\.ckpt/);
  const last = cli(['pull', 'w/host/lightning-run/last', '--to', to, '--json']);
  assert.equal(last.code, 2, last.stdout + last.stderr);
  assert.match(last.stdout + last.stderr, /ambiguous/);
  assert.deepEqual(fs.readdirSync(to), [], 'nothing pulled');
  const named = cli(['pull', 'w/host/lightning-run/last.ckpt', '--to', to]);
  assert.equal(named.code, 0, named.stderr);
  assert.equal(sha(path.join(to, 'lightning-run', 'last.ckpt')), sha(path.join(FIXTURES, 'lightning', 'checkpoints', 'last.ckpt')));
});

test("Lightning save_last='link': last.ckpt is listed beside the save it links to, and pull …/last fetches that save", () => {
  const facts = expected('lightning_link') as { last_target: string; files: string[] };
  const run = lsRun('lightning-link');
  const last = run.checkpoints.find((c) => c.name === 'last.ckpt');
  const step = Number(/step=(\d+)/.exec(facts.last_target)?.[1]);
  assert.deepEqual(last?.alias, { role: 'last', of: facts.last_target, step, how: 'symlink' });
  assert.deepEqual(run.checkpoints.find((c) => c.name === facts.last_target)?.pointedBy, ['last.ckpt']);
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', 'w/host/lightning-link/last', '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`last\\.ckpt is a symlink to ${facts.last_target.replace(/[.=]/g, '\\$&')}`));
  assert.deepEqual(fs.readdirSync(path.join(to, 'lightning-link')), [facts.last_target]);
  assert.equal(sha(path.join(to, 'lightning-link', facts.last_target)), sha(path.join(FIXTURES, 'lightning_link', 'checkpoints', facts.last_target)));
  const text = cli(['ls', 'w/host/lightning-link']);
  assert.match(text.stdout, /last\.ckpt .*last → epoch=0-step=20\.ckpt \(step 20\)/);
});

test("accelerate's automatic checkpoint names count saves, not steps: said so, and a number is no step of them", () => {
  const facts = expected('accelerate') as { kept: string[]; saves: { step: number; folder: string }[] };
  const run = lsRun('accelerate-run');
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.step, c.save]), facts.kept.map((n) => [n, 'save', null, Number(n.slice('checkpoint_'.length))]));
  assert.equal(run.latest, facts.kept[facts.kept.length - 1]);
  // The writer saved checkpoint_1 at step 20: a listing cannot know that, and must not call it step 1.
  assert.equal(facts.saves.find((s) => s.folder === 'checkpoint_1')?.step, 20);
  const r = cli(['pull', 'w/host/accelerate-run/1', '--to', fs.mkdtempSync(path.join(host.dir, 'pull-')), '--json']);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /checkpoint_1 \(save 1 \(counts saves, not steps\)\)/);
  assert.match(cli(['ls', 'w/host/accelerate-run']).stdout, /checkpoint_2 .*save 2 \(counts saves, not steps\)/);
});

test('Keras ModelCheckpoint: per-epoch files are epochs, best.keras an alias taken by `best`', () => {
  const facts = expected('keras') as { epochs: number; files: string[] };
  const run = lsRun('keras-run');
  assert.deepEqual(run.checkpoints.map((c) => c.name).sort(), [...facts.files].sort());
  const epochs = run.checkpoints.filter((c) => c.kind === 'epoch').map((c) => c.epoch);
  assert.deepEqual(epochs, Array.from({ length: facts.epochs }, (_, i) => i + 1));
  assert.equal(run.latest, run.checkpoints.find((c) => c.epoch === facts.epochs)?.name);
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', 'w/host/keras-run/best', '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(sha(path.join(to, 'keras-run', 'best.keras')), sha(path.join(FIXTURES, 'keras', 'checkpoints', 'best.keras')));
});

test("TensorFlow's CheckpointManager: each kept ckpt-N (index + data shard) is one save, the checkpoint state file names the latest, a pull takes only its files", () => {
  const facts = expected('tf') as { kept: string[]; latest: string; files: string[] };
  const run = lsRun('tf-run');
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.step, c.save]), facts.kept.map((n) => [n, 'save', null, Number(n.slice('ckpt-'.length))]));
  assert.equal(run.latest, facts.latest);
  assert.deepEqual(run.pointers, [{ file: 'checkpoint', says: facts.latest, checkpoint: facts.latest }]);
  const second = run.checkpoints[1];
  assert.deepEqual([...(second.files ?? [])].sort(), facts.files.filter((f) => f.startsWith(`${second.name}.`)).sort());
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', `w/host/tf-run/${second.name}`, '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  const got = fs.readdirSync(path.join(to, 'tf-run', second.name)).sort();
  assert.deepEqual(got, facts.files.filter((f) => f.startsWith(`${second.name}.`)).sort(), 'its own files, not the other saves nor the state file');
  for (const f of got) assert.equal(sha(path.join(to, 'tf-run', second.name, f)), sha(path.join(FIXTURES, 'tf', 'checkpoints', f)));
});

test("DeepSpeed's latest file names an older tag than the newest listed: both said, ours stays latest", () => {
  const run = lsRun('deepspeed-run');
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.step, c.pointedBy ?? null]), [
    ['global_step500', 500, ['latest']],
    ['global_step600', 600, null],
  ]);
  assert.equal(run.latest, 'global_step600');
  assert.deepEqual(run.pointers, [{ file: 'latest', says: 'global_step500', checkpoint: 'global_step500', note: "DeepSpeed's latest file names global_step500; the newest complete checkpoint listed is global_step600" }]);
  assert.match(cli(['ls', 'w/host/deepspeed-run']).stdout, /note: DeepSpeed's latest file names global_step500/);
});

test("NeMo: the -last file holds the step its name says and does not make it ambiguous; an -unfinished marker marks its save", () => {
  const run = lsRun('nemo-run');
  const last = run.checkpoints.find((c) => c.name.endsWith('-last.ckpt'));
  assert.deepEqual(last?.alias, { role: 'last', step: 2000, how: 'name' });
  const s3000 = run.checkpoints.find((c) => c.step === 3000);
  assert.match(s3000?.incomplete ?? '', /-unfinished marker is beside it/);
  assert.equal(run.latest, 'gpt--val_loss=2.10-step=2000-consumed_samples=4000.0.ckpt');
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', 'w/host/nemo-run/2000', '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(fs.readdirSync(path.join(to, 'nemo-run')), ['gpt--val_loss=2.10-step=2000-consumed_samples=4000.0.ckpt']);
});

test("Composer: ep{E}-ba{B}-rank0.pt has step B; latest-rank0.pt is a symlink alias of the newest", () => {
  const run = lsRun('composer-run');
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.kind, c.step, c.epoch ?? null]), [
    ['ep1-ba20-rank0.pt', 'step', 20, 1],
    ['ep2-ba40-rank0.pt', 'step', 40, 2],
    ['latest-rank0.pt', 'alias', null, null],
  ]);
  assert.deepEqual(run.checkpoints[2].alias, { role: 'latest', of: 'ep2-ba40-rank0.pt', step: 40, how: 'symlink' });
  assert.equal(run.latest, 'ep2-ba40-rank0.pt');
});

test('every fixture run is listed under its own name', () => {
  const all = cli(['ls', 'w/host', '--json']);
  assert.equal(all.code, 0, all.stderr);
  const names = (JSON.parse(all.stdout) as { runs: { name: string }[] }).runs.map((r) => r.name).sort();
  for (const n of ['accelerate-run', 'composer-run', 'deepspeed-run', 'fairseq-run', 'hf-run', 'hf-sharded', 'hf-sharded-broken', 'keras-run', 'lightning-link', 'lightning-run', 'megatron-run', 'nemo-run']) {
    assert.ok(names.includes(n), `${n} in ${names.join(', ')}`);
  }
});
