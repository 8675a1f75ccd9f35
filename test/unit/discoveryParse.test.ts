/**
 * The list parser on record buffers built here the way the script prints them (protocol in listScript.ts):
 * edge cases the real script rarely produces, and garbage it never should.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { listRunsCommand } from '../../src/core/discovery/listScript';
import { pickCheckpoint, pickCheckpointWithNote, runListedInPart } from '../../src/core/service';
import { LIVE_WINDOW_MS, RemoteRunsError, type RootListing, type TargetListing } from '../../src/core/types';
import type { ExecResult } from '../../src/core/remote';

const NOW_S = 1_750_000_000;

/** Builds the script's output: records of NUL-terminated fields after the magic. */
class Records {
  private parts: string[] = ['\0@rr-list@3\0'];
  constructor(now = NOW_S) {
    this.rec('T', String(now));
  }
  rec(...fields: string[]): this {
    this.parts.push(fields.map((f) => `${f}\0`).join(''));
    return this;
  }
  root(index: number, status: string, path: string): this {
    return this.rec('R', String(index), status, path);
  }
  file(rel: string, bytes = 100, mtimeS = NOW_S - 3600): this {
    return this.rec('E', 'f', String(bytes), `${mtimeS}.5000000000`, rel, '');
  }
  dir(rel: string, mtimeS = NOW_S - 3600): this {
    return this.rec('E', 'd', '4096', `${mtimeS}.0000000000`, rel, '');
  }
  end(index: number, errors = '0'): this {
    return this.rec('X', String(index), errors);
  }
  done(): this {
    return this.rec('Z');
  }
  result(overrides: Partial<ExecResult> = {}, prefix = ''): ExecResult {
    return { stdout: Buffer.from(prefix + this.parts.join(''), 'utf8'), stderr: Buffer.alloc(0), code: 0, truncated: false, ...overrides };
  }
}

function parse(roots: string[], result: ExecResult, maxEntries?: number): { roots: RootListing[]; remoteNow: number } {
  return listRunsCommand(roots, { maxEntries }).parse(result);
}

function ok(l: RootListing) {
  assert.equal(l.state, 'ok');
  return l.state === 'ok' ? l.runs : [];
}

function throwsKind(fn: () => unknown, kind: string): void {
  assert.throws(fn, (e: unknown) => e instanceof RemoteRunsError && e.kind === kind);
}

test('noise from rc files before the marker is skipped', () => {
  const r = new Records().root(0, 'ok', '/w').dir('checkpoints').dir('checkpoints/step_5').file('checkpoints/step_5/checkpoint.pt').end(0).done();
  const out = parse(['/w'], r.result({}, 'Welcome to conda!\nmotd line\n'));
  assert.equal(out.remoteNow, NOW_S * 1000);
  assert.equal(ok(out.roots[0])[0].checkpoints[0].step, 5);
});

test('output without the marker is a protocol error, a failed script is command-failed', () => {
  throwsKind(() => parse(['/w'], { stdout: Buffer.from('bash: find: command not found\n'), stderr: Buffer.alloc(0), code: 0, truncated: false }), 'protocol');
  throwsKind(() => parse(['/w'], { stdout: Buffer.alloc(0), stderr: Buffer.from('sh: 1: Syntax error\n'), code: 2, truncated: false }), 'command-failed');
});

test('malformed records are protocol errors', () => {
  const base = () => new Records().root(0, 'ok', '/w');
  throwsKind(() => parse(['/w'], base().rec('Q', 'x').end(0).done().result()), 'protocol');
  throwsKind(() => parse(['/w'], base().rec('E', 'f', 'many', '1.0', 'a', '').end(0).done().result()), 'protocol');
  throwsKind(() => parse(['/w'], base().rec('E', 'f', '1', '1.0', '../etc/passwd', '').end(0).done().result()), 'protocol');
  throwsKind(() => parse(['/w'], new Records().root(0, 'weird', '/w').done().result()), 'protocol');
  throwsKind(() => parse(['/w'], new Records().root(1, 'ok', '/w').end(1).done().result()), 'protocol');
  throwsKind(() => parse(['/w'], new Records().file('a').done().result()), 'protocol');
  // Fewer roots than asked, with nothing cut by the executor: the script broke.
  throwsKind(() => parse(['/a', '/b'], new Records().root(0, 'missing', '/a').done().result()), 'protocol');
});

test('output cut by the executor: the root it fell in is truncated, roots never reached are an error', () => {
  const cut = new Records().root(0, 'ok', '/w').dir('run').dir('run/checkpoints').dir('run/checkpoints/step_1').file('run/checkpoints/step_1/checkpoint.pt');
  const buf = cut.result().stdout;
  const partial = Buffer.concat([buf, Buffer.from('E\0f\x0012')]); // a record cut in half
  const out = parse(['/w'], { stdout: partial, stderr: Buffer.alloc(0), code: 0, truncated: true });
  assert.equal(out.roots[0].truncated, true);
  assert.equal(ok(out.roots[0])[0].checkpoints.length, 1);
  throwsKind(() => parse(['/w', '/x'], { stdout: partial, stderr: Buffer.alloc(0), code: 0, truncated: true }), 'protocol');
});

test('one entry more than the limit means truncated, and the extra entry is dropped', () => {
  const r = new Records().root(0, 'ok', '/w');
  for (let i = 1; i <= 4; i++) r.file(`model_step_${i}.pt`);
  const out = parse(['/w'], r.end(0).done().result(), 3);
  assert.equal(out.roots[0].truncated, true);
  assert.deepEqual(ok(out.roots[0])[0].checkpoints.map((c) => c.step), [1, 2, 3]);
  const exact = parse(['/w'], r.result(), 4);
  assert.equal(exact.roots[0].truncated, false);
});

test('live means a metrics log changed within the window of the REMOTE clock', () => {
  const window = LIVE_WINDOW_MS / 1000;
  const r = new Records()
    .root(0, 'ok', '/w')
    .dir('fresh').dir('fresh/logs').file('fresh/logs/train.jsonl', 10, NOW_S - window + 5)
    .dir('stale').dir('stale/logs').file('stale/logs/train.jsonl', 10, NOW_S - window - 5)
    .end(0).done();
  const runs = ok(parse(['/w'], r.result()).roots[0]);
  assert.deepEqual(runs.map((x) => [x.name, x.live]), [['fresh', true], ['stale', false]]);
  assert.equal(runs[0].metricsMtime, (NOW_S - window + 5.5) * 1000);
});

test('find errors become the unreadable count with their first messages', () => {
  const r = new Records().root(0, 'ok', '/w').dir('a').end(0, "2\nfind: '/w/a/x': Permission denied\nfind: '/w/a/y': Permission denied").done();
  const out = parse(['/w'], r.result());
  assert.equal(out.roots[0].state, 'no-checkpoints');
  assert.deepEqual(out.roots[0].unreadable, { count: 2, messages: ["find: '/w/a/x': Permission denied", "find: '/w/a/y': Permission denied"] });
  assert.match(out.roots[0].state === 'no-checkpoints' ? out.roots[0].message : '', /2 places could not be read/);
});

test('runs nested in checkpoint folders or claimed containers are not runs; other subfolders are searched', () => {
  const r = new Records()
    .root(0, 'ok', '/w')
    .dir('checkpoints').dir('checkpoints/step_10').file('checkpoints/step_10/checkpoint.pt')
    // a log inside a checkpoint folder does not make the folder a run
    .dir('checkpoints/step_10/logs').file('checkpoints/step_10/logs/train.jsonl')
    .dir('logs').file('logs/train.jsonl')
    .dir('experiments').dir('experiments/ablation').file('experiments/ablation/ckpt_3.pt')
    .end(0).done();
  const runs = ok(parse(['/w'], r.result()).roots[0]);
  assert.deepEqual(runs.map((x) => [x.name, x.path, x.checkpoints.map((c) => c.name)]), [
    ['w', '/w', ['step_10']],
    ['ablation', '/w/experiments/ablation', ['ckpt_3.pt']],
  ]);
  assert.deepEqual(runs[0].checkpoints[0].files.map((f) => f.name), ['checkpoint.pt', 'logs/train.jsonl']);
});

test('the root / is handled without double slashes', () => {
  const r = new Records().root(0, 'ok', '/').dir('ckpts').file('ckpts/model_step_9.pt', 7).end(0).done();
  const run = ok(parse(['/'], r.result()).roots[0])[0];
  assert.equal(run.path, '/');
  assert.equal(run.name, '/');
  assert.equal(run.checkpoints[0].path, '/ckpts/model_step_9.pt');
});

test('any run name the filesystem allows comes back byte-identical', () => {
  const segment = fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).filter((s) => !s.includes('/') && !s.includes('\0') && s !== '.' && s !== '..' && !s.includes('\uFFFD') && Buffer.from(s, 'utf8').toString('utf8') === s);
  fc.assert(
    fc.property(fc.uniqueArray(segment, { minLength: 1, maxLength: 5 }), (names) => {
      const r = new Records().root(0, 'ok', '/w');
      for (const n of names) r.dir(n).dir(`${n}/checkpoints`).dir(`${n}/checkpoints/step_1`).file(`${n}/checkpoints/step_1/checkpoint.pt`);
      const runs = ok(parse(['/w'], r.end(0).done().result()).roots[0]);
      const expected = names.filter((n) => !['checkpoints', 'ckpt', 'ckpts', 'logs', '.git', 'node_modules'].includes(n) && !/^(step[_-]?\d+|checkpoint[-_]\d+|global[_-]?step[_-]?\d+|ckpt[_-]?\d+)$/i.test(n));
      assert.deepEqual(runs.map((x) => x.name).sort(), [...expected].sort());
    }),
    { numRuns: 200 },
  );
});

test('garbage after the marker only ever throws RemoteRunsError', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 300 }), fc.boolean(), (bytes, truncated) => {
      const stdout = Buffer.concat([Buffer.from('\0@rr-list@3\0T\x00123\0'), Buffer.from(bytes)]);
      try {
        parse(['/a', '/b'], { stdout, stderr: Buffer.alloc(0), code: 0, truncated });
      } catch (e) {
        assert.ok(e instanceof RemoteRunsError, String(e));
      }
    }),
    { numRuns: 500 },
  );
});

test("the extension's own .remote-runs folder (eval records with results.jsonl) never becomes a run", () => {
  const r = new Records()
    .root(0, 'ok', '/w')
    .dir('story').file('story/metrics.jsonl').dir('story/step_10').file('story/step_10/checkpoint.pt')
    .dir('story/.remote-runs').dir('story/.remote-runs/evals').dir('story/.remote-runs/evals/20261130-1-acc')
    .file('story/.remote-runs/evals/20261130-1-acc/results.jsonl')
    .file('story/.remote-runs/evals/20261130-1-acc/output.log')
    .dir('empty-run').dir('empty-run/.remote-runs').dir('empty-run/.remote-runs/evals').dir('empty-run/.remote-runs/evals/e1')
    .file('empty-run/.remote-runs/evals/e1/results.jsonl')
    .end(0).done();
  const runs = ok(parse(['/w'], r.result()).roots[0]);
  assert.deepEqual(runs.map((x) => x.path), ['/w/story']);
});

test('a checkpoint still being written is listed and marked, and the newest complete one is latest (the story: step_22000 holding only checkpoint.pt.tmp)', () => {
  const r = new Records().root(0, 'ok', '/w').dir('checkpoints');
  for (const s of [10000, 20000, 21000]) r.dir(`checkpoints/step_${s}`).file(`checkpoints/step_${s}/checkpoint.pt`);
  r.dir('checkpoints/step_22000').file('checkpoints/step_22000/checkpoint.pt.tmp');
  r.dir('checkpoints/step_23000'); // created, nothing in it yet
  const runs = ok(parse(['/w'], r.end(0).done().result()).roots[0]);
  const cks = runs[0].checkpoints;
  assert.deepEqual(cks.map((c) => [c.step, c.newest, c.incomplete ?? null]), [
    [10000, false, null],
    [20000, false, null],
    [21000, true, null],
    [22000, false, 'checkpoint.pt.tmp is still being written'],
    [23000, false, 'holds no files yet'],
  ]);
  assert.equal(pickCheckpoint(runs[0], 'latest').name, 'step_21000');
  assert.equal(pickCheckpoint(runs[0], '22000').name, 'step_22000', 'named, an incomplete checkpoint can still be taken');

  const only = new Records().root(0, 'ok', '/v').dir('checkpoints').dir('checkpoints/step_5').file('checkpoints/step_5/model.safetensors.tmp');
  const lone = ok(parse(['/v'], only.end(0).done().result()).roots[0])[0];
  assert.equal(lone.checkpoints[0].newest, false);
  assert.throws(
    () => pickCheckpoint(lone, 'latest'),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'not-found' && /no complete checkpoint yet: step_5 model\.safetensors\.tmp is still being written/.test(e.message),
  );
});

test('a run is named by its shortest path below the root that no other run ends with', () => {
  const r = new Records().root(0, 'ok', '/runs');
  const run = (rel: string): void => void r.dir(rel).dir(`${rel}/checkpoints`).dir(`${rel}/checkpoints/step_1`).file(`${rel}/checkpoints/step_1/m.pt`);
  run('expA/seed1');
  run('expB/seed1');
  run('solo');
  run('outputs/2026-11-30/12-00-00');
  run('outputs/2026-12-01/12-00-00');
  run('outputs/2026-12-01/13-30-00');
  // torchtitan: <dump_folder>/checkpoint/step-N; the run is the dump folder.
  r.dir('titan/llama3_8b').dir('titan/llama3_8b/checkpoint').dir('titan/llama3_8b/checkpoint/step-100').file('titan/llama3_8b/checkpoint/step-100/.metadata');
  r.file('titan/llama3_8b/checkpoint/step-100/__0_0.distcp');
  const runs = ok(parse(['/runs'], r.end(0).done().result()).roots[0]);
  assert.deepEqual(runs.map((x) => [x.name, x.path]), [
    ['expA/seed1', '/runs/expA/seed1'],
    ['expB/seed1', '/runs/expB/seed1'],
    ['2026-11-30/12-00-00', '/runs/outputs/2026-11-30/12-00-00'],
    ['2026-12-01/12-00-00', '/runs/outputs/2026-12-01/12-00-00'],
    ['13-30-00', '/runs/outputs/2026-12-01/13-30-00'],
    ['solo', '/runs/solo'],
    ['llama3_8b', '/runs/titan/llama3_8b'],
  ]);
  assert.deepEqual(runs[6].checkpoints.map((c) => [c.name, c.step, c.incomplete ?? null]), [['step-100', 100, null]]);
});

test('a checkpoint folder at the walk depth (its files not listed) is not called empty: what it holds is unknown', () => {
  // Default depth 7: root/a/b/c/d/e/checkpoints/step_1 is listed, nothing inside it is.
  const r = new Records().root(0, 'ok', '/w').dir('a').dir('a/b').dir('a/b/c').dir('a/b/c/d').dir('a/b/c/d/e').dir('a/b/c/d/e/checkpoints').dir('a/b/c/d/e/checkpoints/step_1');
  // Hydra-like: a checkpoint folder whose files are listed, but one subfolder of it is at the depth.
  r.dir('h').dir('h/1').dir('h/1/2').dir('h/1/2/checkpoints').dir('h/1/2/checkpoints/iter_5').file('h/1/2/checkpoints/iter_5/meta.json', 10).dir('h/1/2/checkpoints/iter_5/mp_rank_00').dir('h/1/2/checkpoints/iter_5/mp_rank_00/x');
  r.dir('x').dir('x/checkpoints').dir('x/checkpoints/step_2'); // depth 3, truly empty
  r.dir('y').dir('y/checkpoints').dir('y/checkpoints/step_3').file('y/checkpoints/step_3/m.pt', 123); // all seen
  const runs = ok(parse(['/w'], r.end(0).done().result()).roots[0]);
  const deep = runs.find((x) => x.name === 'e')!;
  assert.equal(deep.checkpoints[0].incomplete, undefined);
  assert.equal(deep.checkpoints[0].newest, true);
  assert.equal(deep.checkpoints[0].partialSize, true, 'its size is a lower bound');
  const hydra = runs.find((x) => x.name === '2')!;
  assert.deepEqual([hydra.checkpoints[0].bytes, hydra.checkpoints[0].partialSize], [10, true]);
  const shallow = runs.find((x) => x.name === 'x')!;
  assert.equal(shallow.checkpoints[0].incomplete, 'holds no files yet');
  assert.equal(shallow.checkpoints[0].partialSize, undefined);
  const whole = runs.find((x) => x.name === 'y')!;
  assert.deepEqual([whole.checkpoints[0].bytes, whole.checkpoints[0].partialSize], [123, undefined]);
});

test('a step that two checkpoints share is ambiguous by number, and each is taken by its name', () => {
  const r = new Records().root(0, 'ok', '/w').dir('checkpoints').dir('checkpoints/step_300').file('checkpoints/step_300/m.pt').file('checkpoints/epoch=2-step=300.ckpt');
  const run = ok(parse(['/w'], r.end(0).done().result()).roots[0])[0];
  assert.throws(
    () => pickCheckpoint(run, '300'),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'ambiguous' && /epoch=2-step=300\.ckpt, step_300|step_300, epoch=2-step=300\.ckpt/.test(e.message),
  );
  assert.equal(pickCheckpoint(run, 'step_300').name, 'step_300');
  assert.equal(pickCheckpoint(run, 'epoch=2-step=300.ckpt').name, 'epoch=2-step=300.ckpt');
});

/** An entry record with its detail field (`K<link>` for a symlink, as the script prints it). */
function entry(r: Records, type: string, rel: string, detail = '', bytes = type === 'd' ? 4096 : 100): Records {
  return r.rec('E', type, String(bytes), `${NOW_S - 3600}.0000000000`, rel, detail);
}

test('a checkpoint that is a link to a folder: one out of its folder is a link (no size, never latest), one to a sibling has its files; what a pull skips is named, never counted', () => {
  const r = new Records().root(0, 'ok', '/w');
  entry(r, 'd', 'run');
  entry(r, 'd', 'run/checkpoints');
  entry(r, 'd', 'run/checkpoints/step_1');
  entry(r, 'f', 'run/checkpoints/step_1/model.pt', '', 1000);
  entry(r, 'p', 'run/checkpoints/step_1/fifo', '', 0);
  entry(r, 'c', 'run/checkpoints/step_1/zero', '', 0);
  entry(r, 'l', 'run/checkpoints/step_1/broken', 'Knowhere', 7);
  entry(r, 'd', 'run/checkpoints/step_1/up', 'K../../..');
  entry(r, 'd', 'run/checkpoints/step_1/sub');
  entry(r, 'f', 'run/checkpoints/step_1/sub/optim.pt', '', 10);
  entry(r, 'd', 'run/checkpoints/step_1/sub_alias', 'Ksub');
  entry(r, 'd', 'run/checkpoints/step_2', 'K/');
  entry(r, 'd', 'run/checkpoints/step_3', 'Kstep_1');
  entry(r, 'd', 'run/checkpoints/step_4', 'K../../elsewhere/step_4');
  const [listing] = parse(['/w'], r.end(0).done().result()).roots;
  const cks = ok(listing)[0].checkpoints;
  const by = (name: string) => cks.find((c) => c.name === name)!;
  assert.deepEqual(cks.map((c) => c.name), ['step_1', 'step_2', 'step_3', 'step_4']);
  assert.equal(by('step_1').bytes, 1010, 'model.pt and sub/optim.pt; sub_alias is not counted twice');
  assert.deepEqual(by('step_1').files.map((f) => f.name), ['model.pt', 'sub/optim.pt']);
  assert.deepEqual(by('step_1').skipped, [
    { relative: 'broken', why: 'broken-link', link: 'nowhere' },
    { relative: 'fifo', why: 'fifo' },
    { relative: 'up', why: 'dir-link-outside', link: '../../..' },
    { relative: 'zero', why: 'char-device' },
  ]);
  for (const name of ['step_2', 'step_4']) {
    const c = by(name);
    assert.deepEqual([c.linkOutside, c.bytes, c.files.length, c.newest, c.incomplete], [true, 0, 0, false, undefined], name);
  }
  assert.equal(by('step_2').link, '/');
  // A link to a sibling listed beside it holds what the sibling holds.
  assert.deepEqual([by('step_3').link, by('step_3').linkOutside, by('step_3').bytes, by('step_3').files.map((f) => f.path)], ['step_1', undefined, 1010, by('step_1').files.map((f) => f.path)]);
  assert.equal(cks.find((c) => c.newest)?.name, 'step_3');
  // Checkpoints, and links inside them, are said on the checkpoint, not again on the root.
  assert.equal(listing.state === 'ok' ? listing.linksOut : 'not ok', undefined);
});

test('links to folders out of the root that are no checkpoint are named on the root; links inside it are not', () => {
  const r = new Records().root(0, 'ok', '/w');
  entry(r, 'd', 'run');
  entry(r, 'f', 'run/model_step_5.pt');
  entry(r, 'd', 'linked_run', 'K/scratch/me/linked_run');
  entry(r, 'd', 'run/ckpts', 'K../../elsewhere');
  entry(r, 'd', 'alias_of_run', 'Krun');
  entry(r, 'd', 'run/up', 'K..');
  const [listing] = parse(['/w'], r.end(0).done().result()).roots;
  assert.deepEqual(ok(listing).map((x) => x.name), ['run']);
  assert.deepEqual(listing.state === 'ok' ? listing.linksOut : undefined, {
    count: 2,
    links: [
      { rel: 'linked_run', link: '/scratch/me/linked_run' },
      { rel: 'run/ckpts', link: '../../elsewhere' },
    ],
  });
  // A root holding nothing but such a link says so in its no-checkpoints message.
  const only = new Records().root(0, 'ok', '/w');
  entry(only, 'd', 'exp1', 'K/scratch/exp1');
  const [empty] = parse(['/w'], only.end(0).done().result()).roots;
  assert.equal(empty.state, 'no-checkpoints');
  assert.match(empty.state === 'no-checkpoints' ? empty.message : '', /1 link to folders outside the root not followed: exp1 -> \/scratch\/exp1/);
});

test('a run of a root listed in part says so when the part not listed may be its own; a checkpoint not found there says it too', () => {
  const run = (path: string) => ({ name: path.slice(path.lastIndexOf('/') + 1), path, metrics: [], checkpoints: [], metricsMtime: 0, live: false });
  const a = run('/w/a');
  const b = run('/w/b');
  const listing = (truncated: boolean, tooLarge: { rel: string; entries: number; more?: true }[]): TargetListing => ({
    target: { kind: 'host', id: '' },
    remoteNow: 0,
    roots: [{ root: '/w', path: '/w', state: 'ok', runs: [a, b], truncated, tooLarge }],
  });
  assert.equal(runListedInPart(listing(false, []), a), undefined);
  assert.match(runListedInPart(listing(true, [{ rel: 'a/data', entries: 39990, more: true }]), a) ?? '', /^the run was listed in part: \/w\/a\/data \(over 39,990 entries\) had more entries than the listing's budget/);
  assert.equal(runListedInPart(listing(true, [{ rel: 'a/data', entries: 39990, more: true }]), b), undefined, 'a folder of another run');
  assert.match(runListedInPart(listing(true, [{ rel: '', entries: 50000 }]), b) ?? '', /listed in part/, 'the root itself');
  assert.match(runListedInPart(listing(true, []), b) ?? '', /the run was listed in part: the listing stopped after 40,000 entries/);
  const withCks = { ...run('/w/c'), checkpoints: [] as never[] };
  assert.throws(() => pickCheckpointWithNote(withCks, 'step_9', 'the run was listed in part: why'), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'not-found' && /; the run was listed in part: why$/.test(e.message));
});

test('an entry named as a checkpoint that is no file or folder (a broken last.ckpt link, a FIFO) is no checkpoint, and is said on the run', () => {
  const r = new Records().root(0, 'ok', '/w');
  entry(r, 'd', 'run');
  entry(r, 'd', 'run/checkpoints');
  entry(r, 'f', 'run/checkpoints/epoch=0-step=10.ckpt', '', 1000);
  entry(r, 'l', 'run/checkpoints/last.ckpt', 'Kepoch=0-step=5.ckpt', 19);
  entry(r, 'p', 'run/checkpoints/model_step_20.pt', '', 0);
  const [listing] = parse(['/w'], r.end(0).done().result()).roots;
  const [run] = ok(listing);
  assert.deepEqual(run.checkpoints.map((c) => c.name), ['epoch=0-step=10.ckpt']);
  assert.deepEqual(run.skipped, [
    { relative: 'checkpoints/last.ckpt', why: 'broken-link', link: 'epoch=0-step=5.ckpt' },
    { relative: 'checkpoints/model_step_20.pt', why: 'fifo' },
  ]);
});
