/**
 * Layouts of the frameworks people train with, listed over the real test sshd by the built CLI. Megatron-LM's and
 * fairseq's are written as their savers name them (cited beside the patterns in checkpointLayout.ts). Checkpoints
 * still being written, as the real writers leave them (test/fixtures/real/make_dcp.py: torch 2.13.0+cpu's
 * torch.distributed.checkpoint and safetensors 0.8.0), listed over the real test sshd by the built CLI: each is
 * listed and marked with why, and `latest` is the newest complete one, which is what `pull …/latest` fetches.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { ROOT, ensureBuiltCli, runBuiltCli, type CliResult } from '../harness/builtCli';
import { startTestHost, type TestHost } from '../harness/testHost';

const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'real', 'written');
let host: TestHost;
let config: string;
let runDir: string;

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
  execFileSync('chmod', ['-R', 'a+rX', root]);
  config = path.join(host.dir, 'writing-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('w', { runRoots: [root], targets: ['host'] })] }));
});

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
  assert.deepEqual((JSON.parse(fair.stdout).run as { checkpoints: { name: string; step: number }[] }).checkpoints.map((c) => [c.name, c.step]), [
    ['checkpoint_1_500.pt', 500],
    ['checkpoint_2_1000.pt', 1000],
  ]);
});

test("Orbax's step folders are checkpoints, its temporary folder an incomplete one; bare-number seed folders stay runs", () => {
  const r = cli(['ls', 'w/host/orbax-run', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const run = JSON.parse(r.stdout).run as { latest: string; checkpoints: { name: string; step: number; incomplete?: string }[] };
  assert.deepEqual(run.checkpoints.map((c) => [c.name, c.step, c.incomplete ?? null]), [
    ['100', 100, null],
    ['200', 200, null],
    ['300.orbax-checkpoint-tmp-1764590400', 300, 'Orbax is still writing it (a temporary folder until the save is renamed)'],
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
