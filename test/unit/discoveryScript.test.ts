/**
 * Runs the real list script with the local /bin/sh and GNU find over generated trees, and feeds its bytes to
 * the real parser: the same path a remote listing takes, minus ssh.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEFAULT_MAX_ENTRIES, listRunsCommand, type ListOptions } from '../../src/core/discovery/listScript';
import { readListRecords } from '../../src/core/discovery/listParse';
import type { RootListing, Run } from '../../src/core/types';
import {
  HOSTILE_NAMES,
  writeEmptyDir,
  writeFlatRun,
  writeHfRun,
  writeHostileNames,
  writeLightningRun,
  writeManyFiles,
  writeManyRuns,
  writeStoryRun,
  writeSymlinkLoop,
  writeUnrecognised,
  writeWalkHostile,
  WALK_SIBLINGS,
} from '../fixtures/generate';

let tmp: string;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-list-'));
  fs.chmodSync(tmp, 0o755); // the permission tests run the script as an unprivileged user
});
after(() => {
  for (const dir of walkDirs(tmp)) fs.chmodSync(dir, 0o755);
  fs.rmSync(tmp, { recursive: true, force: true });
});

function walkDirs(dir: string): string[] {
  const out = [dir];
  try {
    fs.chmodSync(dir, 0o755);
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) out.push(...walkDirs(path.join(dir, e.name)));
  } catch {
    /* gone already */
  }
  return out;
}

interface RunOptions extends ListOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Run as an unprivileged user (root ignores permissions); as a non-root test runner, run as ourselves. */
  unprivileged?: boolean;
}

function list(roots: string[], opts: RunOptions = {}): { roots: RootListing[]; remoteNow: number } {
  const cmd = listRunsCommand(roots, opts);
  const drop = opts.unprivileged && process.getuid?.() === 0 ? ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
  const argv = [...drop, ...cmd.argv];
  const r = spawnSync(argv[0], argv.slice(1), { cwd: opts.cwd ?? tmp, env: opts.env ?? process.env, maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.error, undefined);
  return cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, signal: r.signal ?? undefined, truncated: false });
}

function only(listing: RootListing): Run[] {
  assert.equal(listing.state, 'ok', listing.state === 'ok' ? '' : listing.message);
  return listing.state === 'ok' ? listing.runs : [];
}

function dir(name: string): string {
  const d = path.join(tmp, name);
  fs.mkdirSync(d, { recursive: true });
  return d;
}

test('the story tree: one run, 7 step folders in numeric order with sizes, live log', () => {
  const root = dir('story');
  writeStoryRun(root);
  const { roots, remoteNow } = list([root]);
  assert.ok(Math.abs(remoteNow - Date.now()) < 60_000);
  const runs = only(roots[0]);
  assert.equal(runs.length, 1);
  const run = runs[0];
  assert.equal(run.name, 'story');
  assert.equal(run.path, root);
  assert.deepEqual(run.metrics, [path.join(root, 'logs', 'train.jsonl')]);
  assert.equal(run.live, true);
  assert.deepEqual(
    run.checkpoints.map((c) => c.name),
    ['step_10000', 'step_12000', 'step_14000', 'step_16000', 'step_18000', 'step_20000', 'step_22000'],
  );
  for (const c of run.checkpoints) {
    assert.equal(c.layout, 'step_N');
    assert.equal(c.isDir, true);
    assert.equal(c.bytes, 3 * 1024 ** 3);
    assert.deepEqual(c.files.map((f) => [f.name, f.path, f.bytes]), [['checkpoint.pt', path.join(c.path, 'checkpoint.pt'), 3 * 1024 ** 3]]);
    assert.equal(c.newest, c.step === 22000);
  }
});

test('step_9000 sorts before step_10000, as numbers', () => {
  const root = dir('numeric');
  writeStoryRun(root, { firstStep: 8000, lastStep: 12000, every: 1000, checkpointBytes: 10 });
  const [listing] = list([root]).roots;
  assert.deepEqual(only(listing)[0].checkpoints.map((c) => c.step), [8000, 9000, 10000, 11000, 12000]);
});

test('each way a root can hold nothing is told apart', () => {
  const file = path.join(dir('afile'), 'notes.txt');
  fs.writeFileSync(file, 'x');
  const empty = dir('empty');
  writeEmptyDir(empty);
  const unrecognised = dir('unrecognised');
  const names = writeUnrecognised(unrecognised);
  const missing = path.join(tmp, 'no', 'such', 'dir');
  const { roots } = list([missing, file, empty, unrecognised]);
  assert.deepEqual(roots.map((r) => r.state), ['path-missing', 'not-a-directory', 'empty', 'no-checkpoints']);
  assert.deepEqual(roots.map((r) => r.path), [missing, file, empty, unrecognised]);
  const seen = roots[3].state === 'no-checkpoints' ? roots[3].seen : [];
  assert.deepEqual(seen, names);
  for (const r of roots) if (r.state !== 'ok') assert.ok(r.message.includes(r.path), r.message);
});

test('Hugging Face, flat and Lightning runs are recognised side by side', () => {
  const root = dir('mixed');
  writeHfRun(path.join(root, 'hf-run'));
  writeFlatRun(path.join(root, 'flat-run'));
  writeLightningRun(path.join(root, 'pl-run'));
  writeStoryRun(path.join(root, 'story-run'), { checkpointBytes: 1000 });
  const runs = only(list([root]).roots[0]);
  assert.deepEqual(runs.map((r) => r.name), ['flat-run', 'hf-run', 'version_0', 'story-run']);
  const [flat, hf, pl] = runs;
  assert.deepEqual(flat.checkpoints.map((c) => [c.name, c.layout, c.step]), [
    ['model_step_500.pt', 'flat', 500],
    ['model_step_1000.pt', 'flat', 1000],
    ['model_step_1500.pt', 'flat', 1500],
    ['model_step_2000.pt', 'flat', 2000],
  ]);
  assert.deepEqual(flat.metrics, [path.join(root, 'flat-run', 'metrics.csv')]);
  assert.deepEqual(hf.checkpoints.map((c) => c.name), ['checkpoint-500', 'checkpoint-1000', 'checkpoint-1500']);
  const last = hf.checkpoints[2];
  assert.deepEqual(last.files.map((f) => f.name), ['config.json', 'model.safetensors', 'optimizer.pt', 'rng_state.pth', 'scheduler.pt', 'trainer_state.json', 'training_args.bin']);
  assert.equal(last.bytes, last.files.reduce((s, f) => s + f.bytes, 0));
  // Its files are the folder's files, not checkpoints of their own; the newest trainer_state.json is the log.
  assert.deepEqual(hf.metrics, [path.join(last.path, 'trainer_state.json')]);
  assert.deepEqual(pl.checkpoints.map((c) => [c.layout, c.step]), [['lightning', 250], ['lightning', 500], ['lightning', 750]]);
});

test('hostile names are listed exactly and never executed', () => {
  const root = dir('hostile');
  writeHostileNames(root);
  const { roots } = list([root, path.join(root, '$(touch CANARY)')], { cwd: root });
  const runs = only(roots[0]);
  assert.deepEqual(runs.map((r) => r.name).sort(), [...HOSTILE_NAMES].sort());
  for (const run of runs) {
    assert.equal(run.path, path.join(root, run.name));
    assert.deepEqual(run.checkpoints.map((c) => c.step), [100, 200]);
    assert.ok(fs.existsSync(run.checkpoints[0].files[0].path), run.checkpoints[0].files[0].path);
  }
  // A hostile root passed as an argument is a run itself.
  assert.equal(only(roots[1])[0].name, '$(touch CANARY)');
  assert.equal(fs.existsSync(path.join(root, 'CANARY')), false);
  assert.equal(fs.existsSync(path.join(tmp, 'CANARY')), false);
});

test('a symlink loop neither hangs nor hides the run next to it', () => {
  const root = dir('loop');
  writeSymlinkLoop(root);
  const listing = list([root]).roots[0];
  const runs = only(listing);
  assert.deepEqual(runs.map((r) => [r.name, r.checkpoints.length]), [['run_a', 3]]);
  assert.ok(listing.unreadable && listing.unreadable.count >= 1, 'the loop is reported');
});

test('more entries than the limit: the listing stops at its limit and says so', () => {
  const root = dir('many-files');
  writeStoryRun(path.join(root, 'a-run'), { checkpointBytes: 10 });
  writeManyFiles(root, DEFAULT_MAX_ENTRIES + 1000);
  const listing = list([root]).roots[0];
  assert.equal(listing.truncated, true);
  const small = list([root], { maxEntries: 50 }).roots[0];
  assert.equal(small.truncated, true);
});

test('many runs come back sorted, each with all its checkpoints', () => {
  const root = dir('bench');
  writeManyRuns(root, 5, 12);
  const runs = only(list([root]).roots[0]);
  assert.deepEqual(runs.map((r) => r.name), ['run_000', 'run_001', 'run_002', 'run_003', 'run_004']);
  for (const r of runs) assert.equal(r.checkpoints.length, 12);
});

test('~ expands to the target HOME; trailing slashes and relative roots resolve', () => {
  const home = dir('home');
  writeStoryRun(path.join(home, 'runs', 'exp1'), { checkpointBytes: 1 });
  const env = { ...process.env, HOME: home };
  const { roots } = list(['~/runs', '~/runs/', 'runs', '~/nothing', '~'], { env, cwd: home });
  assert.deepEqual(roots.map((r) => r.path), [
    path.join(home, 'runs'),
    path.join(home, 'runs'),
    path.join(home, 'runs'),
    path.join(home, 'nothing'),
    home,
  ]);
  assert.deepEqual(roots.map((r) => r.root), ['~/runs', '~/runs/', 'runs', '~/nothing', '~']);
  assert.equal(only(roots[0])[0].name, 'exp1');
  assert.equal(roots[3].state, 'path-missing');
  assert.equal(only(roots[4])[0].path, path.join(home, 'runs', 'exp1'));
});

test('permission denied: an unreadable root, a root under a folder we cannot enter, an unreadable subfolder', () => {
  const locked = dir('locked');
  writeStoryRun(locked, { checkpointBytes: 1 });
  const closedParent = dir('closed-parent');
  writeStoryRun(path.join(closedParent, 'inner'), { checkpointBytes: 1 });
  const partly = dir('partly');
  writeStoryRun(path.join(partly, 'visible'), { checkpointBytes: 1 });
  writeStoryRun(path.join(partly, 'hidden'), { checkpointBytes: 1 });
  fs.chmodSync(locked, 0o000);
  fs.chmodSync(closedParent, 0o700);
  fs.chmodSync(path.join(partly, 'hidden'), 0o000);
  try {
    const { roots } = list([locked, path.join(closedParent, 'inner'), partly], { unprivileged: true });
    assert.equal(roots[0].state, 'permission-denied');
    assert.equal(roots[1].state, 'permission-denied', 'not path-missing: the parent cannot be entered');
    const runs = only(roots[2]);
    assert.deepEqual(runs.map((r) => r.name), ['visible']);
    assert.equal(roots[2].unreadable?.count, 1);
    assert.match(roots[2].unreadable?.messages[0] ?? '', /hidden.*Permission denied/);
  } finally {
    fs.chmodSync(locked, 0o755);
    fs.chmodSync(closedParent, 0o755);
    fs.chmodSync(path.join(partly, 'hidden'), 0o755);
  }
});

test('a root that is itself a run and holds other runs lists both', () => {
  const root = dir('workspace');
  writeStoryRun(root, { checkpointBytes: 1 });
  writeFlatRun(path.join(root, 'side-experiment'), [100, 200]);
  const runs = only(list([root]).roots[0]);
  assert.deepEqual(runs.map((r) => [r.name, r.checkpoints.length]), [['workspace', 7], ['side-experiment', 2]]);
});

test('busybox (no find -printf, no head -z) lists the same runs as GNU find', () => {
  // Needs Debian's `busybox` package on the test machine (apt-get install -y busybox).
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = dir('busybox-bin');
  for (const applet of ['sh', 'find', 'head', 'xargs', 'stat', 'tr', 'awk', 'date', 'readlink']) fs.symlinkSync(busybox, path.join(bb, applet));
  const root = dir('bb-tree');
  writeStoryRun(path.join(root, 'story'), { checkpointBytes: 3 * 1024 ** 3 });
  writeHfRun(path.join(root, 'hf'));
  writeHostileNames(path.join(root, 'hostile'));
  const cmd = listRunsCommand([root, path.join(root, 'missing')]);
  const r = spawnSync(path.join(bb, 'sh'), cmd.argv.slice(1), { env: { PATH: bb, HOME: tmp }, cwd: root });
  const viaBusybox = cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
  const viaGnu = list([root, path.join(root, 'missing')]);
  const shape = (l: RootListing) =>
    l.state === 'ok' ? l.runs.map((run) => [run.name, run.path, run.metrics, run.checkpoints.map((c) => [c.name, c.step, c.bytes, c.files.length])]) : l.state;
  assert.equal(viaBusybox.roots[0].state, 'ok');
  assert.equal(only(viaBusybox.roots[0]).length, 2 + HOSTILE_NAMES.length);
  assert.deepEqual(viaBusybox.roots.map(shape), viaGnu.roots.map(shape));
  assert.equal(viaBusybox.roots[0].unreadable, undefined);
  assert.equal(fs.existsSync(path.join(root, 'CANARY')), false);
});

/** The entries of a raw listing as [type, extra] by path (extra: K<link>, C<text> or ''), for the fields the runs do not show. */
function rawEntries(stdout: Buffer): Map<string, [string, string]> {
  const { records } = readListRecords({ stdout, stderr: Buffer.alloc(0), code: 0, truncated: false }, 1);
  return new Map(records[0].entries.map((e) => [e.rel, [e.type, e.link !== undefined ? `K${e.link}` : e.text !== undefined ? `C${e.text}` : '']]));
}

test('symlinks carry their target and small pointer files their text, with GNU find and with busybox', () => {
  const root = dir('links');
  const ck = path.join(root, 'run', 'checkpoints');
  fs.mkdirSync(path.join(ck, 'global_step500'), { recursive: true });
  fs.writeFileSync(path.join(ck, 'global_step500', 'mp_rank_00_model_states.pt'), 'x');
  fs.symlinkSync('global_step500', path.join(ck, 'latest_link'));
  fs.symlinkSync('gone', path.join(ck, 'dangling'));
  fs.symlinkSync('gone', path.join(ck, 'best_dangling'));
  fs.writeFileSync(path.join(ck, 'latest'), 'global_step500'); // DeepSpeed's pointer (runtime/engine.py, save_checkpoint)
  fs.writeFileSync(path.join(ck, 'latest_checkpointed_iteration.txt'), '1000\n'); // Megatron-LM's
  fs.writeFileSync(path.join(ck, 'checkpoint'), Buffer.concat([Buffer.from('model_checkpoint_path: "ckpt-3"'), Buffer.from([0]), Buffer.from('x')]));
  fs.writeFileSync(path.join(root, 'run', 'big', ), 'y'.repeat(300));
  const cmd = listRunsCommand([root]);
  const gnu = spawnSync(cmd.argv[0], cmd.argv.slice(1), { cwd: tmp });
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = dir('busybox-bin-links');
  for (const applet of ['sh', 'find', 'head', 'xargs', 'stat', 'tr', 'awk', 'date', 'readlink']) fs.symlinkSync(busybox, path.join(bb, applet));
  const viaBusybox = spawnSync(path.join(bb, 'sh'), cmd.argv.slice(1), { env: { PATH: bb, HOME: tmp }, cwd: root });
  for (const [name, out] of [['GNU', gnu.stdout], ['busybox', viaBusybox.stdout]] as const) {
    const e = rawEntries(out);
    assert.deepEqual(e.get('run/checkpoints/latest_link'), ['d', 'Kglobal_step500'], name);
    assert.deepEqual(e.get('run/checkpoints/best_dangling'), ['l', 'Kgone'], name);
    // Only names an alias can have (latest*, last*, best*) pay for the extra stat that tells a link.
    assert.deepEqual(e.get('run/checkpoints/dangling'), ['l', ''], name);
    assert.deepEqual(e.get('run/checkpoints/latest'), ['f', 'Cglobal_step500'], name);
    assert.deepEqual(e.get('run/checkpoints/latest_checkpointed_iteration.txt'), ['f', 'C1000\n'], name);
    assert.deepEqual(e.get('run/checkpoints/checkpoint'), ['f', 'Cmodel_checkpoint_path: "ckpt-3"x'], `${name}: NULs are dropped`);
    assert.deepEqual(e.get('run/big'), ['f', ''], name);
    assert.deepEqual(e.get('run/checkpoints/global_step500'), ['d', ''], name);
    // The listing still parses, and the run is there.
    const parsed = cmd.parse({ stdout: out, stderr: Buffer.alloc(0), code: 0, truncated: false });
    assert.deepEqual(only(parsed.roots[0]).map((r) => r.name), ['run'], name);
  }
});

test('pruned folders (.git, node_modules, virtualenvs, caches, .remote-runs) are listed but not entered, with GNU find and with busybox', () => {
  const root = dir('pruned');
  const pruned = ['.git', 'node_modules', '__pycache__', '.venv', 'venv', '.cache', '.ipynb_checkpoints', '.remote-runs'];
  for (const name of pruned) {
    fs.mkdirSync(path.join(root, 'run', name, 'inner', 'step_1'), { recursive: true });
    fs.writeFileSync(path.join(root, 'run', name, 'inner', 'step_1', 'model.pt'), 'x');
  }
  // Names that share a first letter with a pruned one, or hold one, are entered as usual.
  for (const name of ['nvidia', 'venv2', '_data', '.github']) {
    fs.mkdirSync(path.join(root, 'run', name), { recursive: true });
    fs.writeFileSync(path.join(root, 'run', name, 'file.txt'), 'x');
  }
  writeStoryRun(path.join(root, 'run'), { checkpointBytes: 1024 });
  const cmd = listRunsCommand([root]);
  const gnu = spawnSync(cmd.argv[0], cmd.argv.slice(1), { cwd: tmp });
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = dir('busybox-bin-pruned');
  for (const applet of ['sh', 'find', 'head', 'xargs', 'stat', 'tr', 'awk', 'date', 'readlink']) fs.symlinkSync(busybox, path.join(bb, applet));
  const viaBusybox = spawnSync(path.join(bb, 'sh'), cmd.argv.slice(1), { env: { PATH: bb, HOME: tmp }, cwd: root });
  for (const [name, out] of [['GNU', gnu.stdout], ['busybox', viaBusybox.stdout]] as const) {
    const rels = new Set(readListRecords({ stdout: out, stderr: Buffer.alloc(0), code: 0, truncated: false }, 1).records[0].entries.map((e) => e.rel));
    for (const p of pruned) {
      assert.ok(rels.has(`run/${p}`), `${name}: run/${p} is listed`);
      assert.ok(!rels.has(`run/${p}/inner`), `${name}: run/${p} is not entered`);
    }
    for (const p of ['nvidia', 'venv2', '_data', '.github']) assert.ok(rels.has(`run/${p}/file.txt`), `${name}: run/${p} is entered`);
    assert.ok(rels.has('run/checkpoints/step_22000/checkpoint.pt'), `${name}: the run's checkpoints are listed`);
  }
});

test("the remote clock is the target's now, with GNU find (the time of find's own /proc folder) and with busybox (date)", () => {
  const root = dir('clock');
  writeStoryRun(path.join(root, 'run'), { checkpointBytes: 1024 });
  const cmd = listRunsCommand([root]);
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = dir('busybox-bin-clock');
  for (const applet of ['sh', 'find', 'head', 'xargs', 'stat', 'tr', 'awk', 'date', 'readlink']) fs.symlinkSync(busybox, path.join(bb, applet));
  for (const [name, run] of [
    ['GNU', () => spawnSync(cmd.argv[0], cmd.argv.slice(1), { cwd: tmp })],
    ['busybox', () => spawnSync(path.join(bb, 'sh'), cmd.argv.slice(1), { env: { PATH: bb, HOME: tmp }, cwd: root })],
  ] as const) {
    const before = Date.now();
    const out = run();
    const after = Date.now();
    const { remoteNow } = cmd.parse({ stdout: out.stdout, stderr: out.stderr, code: out.status, truncated: false });
    // busybox's date has whole seconds.
    assert.ok(remoteNow >= before - 1000 && remoteNow <= after + 10, `${name}: remote clock ${remoteNow} not within ${before}..${after}`);
  }
});

/** The plain listing, and when it was cut short the fair one, as RemoteRunsCore.listTarget does. */
function listLikeCore(roots: string[], opts: RunOptions = {}): RootListing[] {
  const plain = list(roots, opts).roots;
  return plain.map((r, i) => (r.truncated ? list([roots[i]], { ...opts, mode: 'fair' }).roots[0] : r));
}

test('a huge dataset folder beside runs never hides them, whatever the names sort to; the folder is named', () => {
  for (const [data, runA, runZ] of [
    ['aaa_dataset', 'mmm_run', 'zzz_run'],
    ['zzz_dataset', 'aaa_run', 'mmm_run'],
  ]) {
    const root = dir(`budget-${data}`);
    fs.mkdirSync(path.join(root, data));
    for (let i = 0; i < 1500; i++) fs.writeFileSync(path.join(root, data, `sample_${i}.txt`), '');
    for (const run of [runA, runZ]) writeStoryRun(path.join(root, run), { checkpointBytes: 10 });
    const plain = list([root], { maxEntries: 500 }).roots[0];
    assert.equal(plain.truncated, true, 'the plain walk hits the budget');
    const [fair] = listLikeCore([root], { maxEntries: 500 });
    assert.deepEqual(only(fair).map((r) => r.name), [runA, runZ].sort(), data);
    for (const r of only(fair)) assert.equal(r.checkpoints.length, 7, `${data}: ${r.name} has every checkpoint`);
    assert.equal(fair.truncated, true);
    assert.equal(fair.tooLarge?.length, 1);
    assert.equal(fair.tooLarge?.[0].rel, data);
    assert.ok((fair.tooLarge?.[0].entries ?? 0) > 400, JSON.stringify(fair.tooLarge));
  }
});

test('fair listing: a root with nothing but a huge folder says no run was recognised AND that it was listed in part', () => {
  const root = dir('budget-only-data');
  writeManyFiles(root, 800);
  const [fair] = listLikeCore([root], { maxEntries: 300 });
  assert.equal(fair.state, 'no-checkpoints');
  assert.equal(fair.truncated, true);
  assert.match('message' in fair ? fair.message : '', /listed in part, runs inside may be missing: .*\/data \(over \d+ entries\)/);
});

test('fair listing: a root holding more entries directly than the budget names the root itself', () => {
  const root = dir('budget-flat');
  for (let i = 0; i < 400; i++) fs.writeFileSync(path.join(root, `f${i}`), '');
  const [fair] = listLikeCore([root], { maxEntries: 300 });
  assert.deepEqual(fair.tooLarge, [{ rel: '', entries: 400 }]);
});

test('fair listing with busybox finds the same runs and names the same folder', () => {
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = dir('busybox-bin-fair');
  for (const applet of ['sh', 'find', 'head', 'xargs', 'stat', 'tr', 'awk', 'date', 'readlink', 'sort', 'wc']) fs.symlinkSync(busybox, path.join(bb, applet));
  const root = dir('budget-busybox');
  fs.mkdirSync(path.join(root, 'aaa_dataset'));
  for (let i = 0; i < 700; i++) fs.writeFileSync(path.join(root, 'aaa_dataset', `s${i}`), '');
  writeStoryRun(path.join(root, 'zzz_run'), { checkpointBytes: 10 });
  const cmd = listRunsCommand([root], { maxEntries: 300, mode: 'fair' });
  const r = spawnSync(path.join(bb, 'sh'), cmd.argv.slice(1), { env: { PATH: bb, HOME: tmp }, cwd: root });
  const viaBusybox = cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false }).roots[0];
  assert.deepEqual(only(viaBusybox).map((x) => [x.name, x.checkpoints.length]), [['zzz_run', 7]]);
  assert.equal(viaBusybox.tooLarge?.[0].rel, 'aaa_dataset');
  const viaGnu = list([root], { maxEntries: 300, mode: 'fair' }).roots[0];
  assert.deepEqual(viaGnu.tooLarge, viaBusybox.tooLarge);
});

test('a checkpoint linked to / and links out of a checkpoint are never walked: every sibling listed, the link as a link, nothing summed through it (GNU find, busybox, fair)', () => {
  const root = dir('walks');
  writeWalkHostile(path.join(root, 'hostile'));
  // And a link to / among the root's own folders, which the fair listing shares its budget among, and a run linked in
  // from elsewhere: listed as links out of the root, never walked.
  fs.symlinkSync('/', path.join(root, 'slash'));
  const elsewhere = dir('walks-elsewhere');
  writeStoryRun(path.join(elsewhere, 'exp1'), { checkpointBytes: 10 });
  fs.symlinkSync(path.join(elsewhere, 'exp1'), path.join(root, 'exp1'));
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = dir('busybox-bin-walks');
  for (const applet of ['sh', 'find', 'head', 'xargs', 'stat', 'tr', 'awk', 'date', 'readlink', 'sort', 'wc']) fs.symlinkSync(busybox, path.join(bb, applet));
  // A budget the remote filesystem would use up at once if a walk followed step_200 -> / (or slash -> /).
  const opts = { maxEntries: 200 };
  const viaBusybox = (mode: 'list' | 'fair'): RootListing => {
    const cmd = listRunsCommand([root], { ...opts, mode });
    const r = spawnSync(path.join(bb, 'sh'), cmd.argv.slice(1), { env: { PATH: bb, HOME: tmp }, cwd: root });
    return cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false }).roots[0];
  };
  const steps = [100, 200, ...WALK_SIBLINGS.slice(1)];
  for (const [name, listing] of [
    ['GNU', list([root], opts).roots[0]],
    ['GNU fair', list([root], { ...opts, mode: 'fair' }).roots[0]],
    ['busybox', viaBusybox('list')],
    ['busybox fair', viaBusybox('fair')],
  ] as const) {
    assert.equal(listing.truncated, false, `${name}: the budget was not spent outside the root`);
    const runs = only(listing);
    assert.deepEqual(runs.map((r) => r.name), ['hostile'], name);
    const cks = runs[0].checkpoints;
    assert.deepEqual(cks.map((c) => c.name), steps.map((s) => `step_${s}`), `${name}: all 11 checkpoints`);
    const link = cks.find((c) => c.name === 'step_200')!;
    assert.deepEqual([link.link, link.linkOutside, link.bytes, link.files, link.newest, link.incomplete], ['/', true, 0, [], false, undefined], name);
    const ck = cks.find((c) => c.name === 'step_100')!;
    // Files (a link to a file is its file); what a link to a folder holds is counted where it is, or not at all.
    assert.deepEqual(ck.files.map((f) => [f.name, f.bytes]), [['alias.pt', 15], ['model.pt', 15], ['sub/optim.pt', 16]], name);
    assert.equal(ck.bytes, 46, name);
    assert.equal(ck.incomplete, undefined, name);
    const skipped = new Map((ck.skipped ?? []).map((s) => [s.relative, s]));
    assert.deepEqual(skipped.get('root'), { relative: 'root', why: 'dir-link-outside', link: '/' }, name);
    assert.equal(skipped.has('sub_alias'), false, `${name}: a link to a folder inside the checkpoint is no skip`);
    for (const special of ['fifo', 'zero', 'urandom', 'stdin', 'broken']) assert.ok(skipped.has(special), `${name}: ${special} skipped`);
    if (name.startsWith('GNU')) {
      assert.equal(skipped.get('fifo')?.why, 'fifo');
      assert.equal(skipped.get('zero')?.why, 'char-device');
      assert.equal(skipped.get('broken')?.why, 'broken-link');
      // A link to itself is find's error, counted and named; GNU find -L may call a link to a folder above it a loop too.
      const errors = listing.unreadable?.messages ?? [];
      assert.ok(errors.some((m) => m.includes('step_100/loop')), JSON.stringify(errors));
      if (!errors.some((m) => m.includes('step_100/up'))) assert.deepEqual(skipped.get('up'), { relative: 'up', why: 'dir-link-outside', link: '../../..' }, name);
    } else assert.deepEqual(skipped.get('up'), { relative: 'up', why: 'dir-link-outside', link: '../../..' }, name);
    assert.equal(cks.find((c) => c.newest)?.name, 'step_1100', name);
    assert.deepEqual(runs[0].skipped?.map((s) => [s.relative, s.why]), [['checkpoints/last.ckpt', 'broken-link']], name);
    // The links out that are no checkpoint and in none: named on the root, so a run linked in is never lost in silence.
    assert.equal(listing.state === 'ok' ? listing.linksOut?.count : undefined, 2, name);
    assert.deepEqual(
      listing.state === 'ok' ? [...(listing.linksOut?.links ?? [])].sort((a, b) => a.rel.localeCompare(b.rel)) : [],
      [{ rel: 'exp1', link: path.join(elsewhere, 'exp1') }, { rel: 'slash', link: '/' }],
      name,
    );
  }
});
