/**
 * A follow sees what the run writes next (issue 34, items 2, 3, 5), over the real test sshd, with the states real
 * writers left on disk (test/fixtures/real/make_livelogs.py: a transformers Trainer caught before its first save,
 * SIGKILLed at step 35 and resumed from checkpoint-30; Keras' fit caught before its first validation pass). A follow
 * (RunFeed, and the built CLI's `metrics --follow`) starts on the first state; the writer's later files are then laid
 * down on the remote as the writer wrote them (appended to, or created): the follow receives the new series, names
 * them as a one-shot `metrics --json` of the final state does, and the resumed Trainer is one `train/loss` 1…40 with
 * one segment boundary at step 31. The pre-save Trainer keeps its address when its first checkpoint appears.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import { RELIST_EVERY, RunFeed } from '../../src/core/metrics/follow/runFeed';
import { toRunRef } from '../../src/core/runRef';
import type { Run } from '../../src/core/types';
import { CLI, ROOT, ensureBuiltCli, runBuiltCli } from '../harness/builtCli';
import { startTestHost, type TestHost } from '../harness/testHost';
import { testPool } from '../builders/pool';

const LIVE = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'livelogs');
const expected = JSON.parse(fs.readFileSync(path.join(LIVE, 'expected.json'), 'utf8')) as {
  trainer: { series: Record<string, { count: number; first: [number, number]; last: [number, number]; restarts: { step: number; replaced: number }[] }> };
  keras: { series: Record<string, { count: number; first: [number, number]; last: [number, number] }> };
};

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let base: string;
let config: string;
const HOST = { kind: 'host' as const, id: '' };
const ROOTS = ['trainer-feed', 'trainer-cli', 'trainer-address', 'keras-cli'];

function files(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else out.push(path.relative(dir, path.join(d, e.name)));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * Lay the writer's later state `from` down over `to` as the writer wrote it: a file that grew gets the new bytes
 * appended (the writer appends: the old bytes are a prefix of the new), a new file is created.
 */
function layDown(from: string, to: string): void {
  for (const rel of files(from)) {
    const src = fs.readFileSync(path.join(from, rel));
    const dest = path.join(to, rel);
    if (fs.existsSync(dest)) {
      const have = fs.readFileSync(dest);
      if (have.equals(src)) continue;
      assert.ok(src.subarray(0, have.length).equals(have), `${rel} grew by appending`);
      fs.appendFileSync(dest, src.subarray(have.length));
    } else {
      fs.mkdirSync(path.dirname(dest), { recursive: true });
      fs.writeFileSync(dest, src);
    }
  }
  execFileSync('chmod', ['-R', 'a+rwX', to]);
}

function cli(args: string[]): { code: number; stdout: string; stderr: string } {
  return runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome, 60_000);
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  base = path.join(host.dir, 'follow');
  for (const r of ROOTS) fs.mkdirSync(path.join(base, r), { recursive: true });
  for (const r of ['trainer-feed', 'trainer-cli', 'trainer-address']) fs.cpSync(path.join(LIVE, 'trainer', 'presave'), path.join(base, r), { recursive: true });
  fs.cpSync(path.join(LIVE, 'keras', 'before_validation'), path.join(base, 'keras-cli'), { recursive: true });
  execFileSync('chmod', ['-R', 'a+rwX', base]);
  const hosts = [host.hostConfig('w', { runRoots: ROOTS.map((r) => path.join(base, r)), targets: ['host'] })];
  config = path.join(host.dir, 'follow.json');
  fs.writeFileSync(config, JSON.stringify({ hosts }));
  pool = testPool(host, { connectTimeoutMs: 30_000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) });
});

after(async () => {
  pool?.dispose();
  await host?.stop();
});

async function runIn(root: string): Promise<Run> {
  const listing = await core.listTarget('w', HOST);
  const r = listing.roots.find((x) => x.path === path.join(base, root));
  assert.ok(r && r.state === 'ok', `root ${root}: ${JSON.stringify(r)}`);
  assert.equal(r.runs.length, 1, JSON.stringify(r.runs.map((x) => x.path)));
  return r.runs[0];
}

test('RunFeed: a Trainer followed from before its first save through its crash and resume is one train/loss 1…40, one boundary at step 31', { timeout: 180_000 }, async () => {
  const run = await runIn('trainer-feed');
  assert.equal(run.name, 'output_dir', 'a Trainer before its first save is named by its output_dir');
  const feed = new RunFeed(toRunRef('w', HOST, run), { executor: () => core.executor('w'), intervalMs: () => 60_000 });
  try {
    await feed.pollNow();
    const first = [...feed.series().keys()];
    assert.ok(first.includes('train/loss'), first.join(', '));
    layDown(path.join(LIVE, 'trainer', 'crashed'), path.join(base, 'trainer-feed'));
    for (let i = 0; i <= RELIST_EVERY; i++) await feed.pollNow();
    assert.equal(feed.series().get('train/loss')!.lastX, 35, 'the crashed process got to step 35');
    layDown(path.join(LIVE, 'trainer', 'resumed'), path.join(base, 'trainer-feed'));
    const relists = feed.relistCount;
    for (let i = 0; i <= RELIST_EVERY; i++) await feed.pollNow();
    assert.ok(feed.relistCount > relists, 'the run folder was listed again');
    assert.equal(feed.paths.length, 2, `both runs/<date>_<host>/ logdirs are followed: ${feed.paths.join(', ')}`);
    const loss = feed.series().get('train/loss')!;
    const want = expected.trainer.series['train/loss'];
    assert.deepEqual(Array.from(loss.x), Array.from({ length: want.count }, (_, i) => i + 1), 'steps 1…40, each once');
    assert.deepEqual(loss.restarts.map((r) => ({ step: r.step, replaced: r.replaced })), want.restarts);
    assert.deepEqual(loss.segments.map((s) => loss.xAt(s.start)), [1, 31], 'one segment boundary, at the resume step');
    assert.equal(loss.yAt(loss.length - 1), Math.fround(want.last[1]));
    assert.equal(loss.yAt(30), Math.fround(loss.yAt(30)), 'step 31 is the resumed process');
    const oneShot = JSON.parse(cli(['metrics', 'w/host/trainer-feed/output_dir', '--json']).stdout);
    // The one-shot read is of the same final state: same names, same facts.
    assert.deepEqual([...feed.series().keys()].sort(), oneShot.series.map((s: { name: string }) => s.name).sort());
    const theirs = oneShot.series.find((s: { name: string }) => s.name === 'train/loss');
    assert.deepEqual({ points: theirs.points, segments: theirs.segments, restarts: theirs.restarts }, { points: 40, segments: 2, restarts: want.restarts });
  } finally {
    feed.dispose();
  }
});

/** `metrics --follow --json` of `address` while `act` lays files down; its output once `done` holds. */
async function follow(address: string, act: () => void, done: (rows: { series: string; step: number; value: number }[]) => boolean): Promise<{ rows: { series: string; step: number; value: number }[]; stderr: string }> {
  const child = spawn(process.execPath, [CLI, 'metrics', address, '--follow', '--json', '--config', config, '--known-hosts', host.knownHostsFile], {
    env: { PATH: process.env.PATH, HOME: host.clientHome },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const rows = (): { series: string; step: number; value: number }[] => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  try {
    // The follow has started once the first poll's points are out (or, for a run with none yet, after a round).
    const started = Date.now();
    while (rows().length === 0 && Date.now() - started < 8000) await new Promise((r) => setTimeout(r, 100));
    act();
    const deadline = Date.now() + 90_000;
    while (!done(rows())) {
      if (Date.now() > deadline) throw new Error(`timed out: ${out.slice(-2000)} (stderr ${err})`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    child.kill('SIGINT');
  }
  assert.equal(await exited, 0, err);
  return { rows: rows(), stderr: err };
}

test("CLI metrics --follow: Keras' validation/ split appears after the first validation pass and is followed, named as a one-shot read names it", { timeout: 180_000 }, async () => {
  const before = cli(['metrics', 'w/host/fit', '--json']);
  assert.equal(before.code, 0, before.stderr);
  const { rows } = await follow(
    'w/host/fit',
    () => layDown(path.join(LIVE, 'keras', 'after'), path.join(base, 'keras-cli')),
    (r) => r.filter((x) => x.series === 'validation/epoch_loss').length >= expected.keras.series['validation/epoch_loss'].count && r.filter((x) => x.series === 'train/epoch_loss').length >= expected.keras.series['train/epoch_loss'].count,
  );
  const oneShot = JSON.parse(cli(['metrics', 'w/host/fit', '--json']).stdout) as { series: { name: string; points: number }[] };
  const printed = new Map<string, number[]>();
  for (const r of rows) printed.set(r.series, [...(printed.get(r.series) ?? []), r.step]);
  assert.deepEqual([...printed.keys()].sort(), oneShot.series.filter((s) => s.points > 0).map((s) => s.name).sort(), 'the same names as the one-shot read');
  for (const s of oneShot.series) assert.deepEqual(printed.get(s.name)?.length ?? 0, s.points, `${s.name}: each point once`);
  for (const [name, want] of Object.entries(expected.keras.series)) {
    const steps = printed.get(name)!;
    assert.deepEqual([steps[0], steps[steps.length - 1], steps.length], [want.first[0], want.last[0], want.count], name);
  }
});

test('CLI metrics --follow: the resumed Trainer is followed into its second runs/ folder, the repeated steps said and printed once more with the later values', { timeout: 180_000 }, async () => {
  layDown(path.join(LIVE, 'trainer', 'crashed'), path.join(base, 'trainer-cli'));
  const { rows, stderr } = await follow(
    'w/host/trainer-cli/output_dir',
    () => layDown(path.join(LIVE, 'trainer', 'resumed'), path.join(base, 'trainer-cli')),
    (r) => r.some((x) => x.series === 'train/loss' && x.step === 40),
  );
  assert.match(stderr, /^remote-runs: train\/loss: resumed at step 31: 5 earlier points replaced$/m);
  // Read as the stream says: a step printed again replaces what was printed for it.
  const loss = new Map<number, number>();
  for (const r of rows) if (r.series === 'train/loss') loss.set(r.step, r.value);
  assert.deepEqual([...loss.keys()].sort((a, b) => a - b), Array.from({ length: 40 }, (_, i) => i + 1));
  const csv = cli(['metrics', 'w/host/trainer-cli/output_dir', '--csv']).stdout.trim().split('\n').slice(1).map((l) => l.split(',')).filter((f) => f[0] === 'train/loss');
  assert.deepEqual(csv.map((f) => [Number(f[1]), Number(f[2])]), [...loss].sort((a, b) => a[0] - b[0]), 'the follow ends where a one-shot read of the final state is');
  const printedTwice = rows.filter((r) => r.series === 'train/loss').length - 40;
  assert.equal(printedTwice, 5, 'the five replaced steps are printed once more, and nothing else');
});

test("the pre-save Trainer's address keeps working once its first checkpoint appears; the logdir's name resolves to it with a note", { timeout: 120_000 }, async () => {
  // Three roots hold a copy of this Trainer: each is addressed by more of its path.
  const r1 = cli(['metrics', 'w/host/trainer-address/output_dir', '--json']);
  assert.equal(r1.code, 0, r1.stderr);
  assert.equal(JSON.parse(r1.stdout).run.name, 'output_dir');
  layDown(path.join(LIVE, 'trainer', 'crashed'), path.join(base, 'trainer-address'));
  const r2 = cli(['metrics', 'w/host/trainer-address/output_dir', '--json']);
  assert.equal(r2.code, 0, r2.stderr);
  assert.equal(JSON.parse(r2.stdout).run.path, JSON.parse(r1.stdout).run.path, 'the same run, at the same address');
  const logdir = fs.readdirSync(path.join(base, 'trainer-address', 'output_dir', 'runs'))[0];
  const name = `trainer-address/output_dir/runs/${logdir}`;
  const r3 = cli(['metrics', `w/host/${name}`, '--json']);
  assert.equal(r3.code, 0, r3.stderr);
  assert.equal(JSON.parse(r3.stdout).run.path, JSON.parse(r1.stdout).run.path);
  assert.ok(r3.stderr.includes(`remote-runs: "${name}" is no longer a run of its own: it is part of the run output_dir (`), r3.stderr);
});
