/**
 * Saves caught while the real writers wrote them (test/fixtures/real/make_livesaves.py: the Trainer, accelerate,
 * Lightning, Keras, a plain torch.save, torch.distributed.checkpoint and Orbax, each stopped with SIGSTOP at every file of its save; versions in
 * LIVESAVES_MANIFEST.txt), laid on disk stage by stage with their recorded sizes, texts and mtimes relative to now,
 * and listed over the real test sshd by the built CLI: the save in progress is listed `incomplete` with its
 * framework's reason and is never `latest`; finished (and listed FRESH_WRITE_MS later) it is. `pull …/latest` during
 * a save takes the previous complete one and says which it skipped.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ROOT, ensureBuiltCli, runBuiltCli, type CliResult } from '../harness/builtCli';
import { startTestHost, type TestHost } from '../harness/testHost';
import { FRESH_WRITE_MS } from '../../src/core/discovery/runTree';

const LIVE = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'livesaves');
interface Stage {
  event: string;
  path: string;
  files: { rel: string; type: 'f' | 'd'; bytes: number; mtimeOffsetMs: number }[];
}
interface Recorded {
  framework: string;
  watched: string;
  /** The bytes of the small text files, by `rel@bytes`. */
  texts: Record<string, string>;
  stages: Stage[];
}
interface Ck {
  name: string;
  kind: string;
  incomplete?: string;
}

/** What each framework's save in progress is said to lack (its marker), or the clock rule where it has none. */
const REASON: Record<string, RegExp> = {
  trainer: /trainer_state\.json not written yet: the Trainer is still saving|holds no files yet|being written/,
  accelerate: /random_states_0\.pkl not written yet: accelerate is still saving|holds no files yet|being written/,
  lightning: /^being written: changed/,
  keras: /^being written: changed/,
  torchsave: /^being written: changed/,
  // FileSystemWriter writes the shards, then .metadata as .metadata.tmp, then renames it (torch/distributed/checkpoint/filesystem.py, FileSystemWriter.finish).
  dcp: /^torch\.distributed\.checkpoint shards without their \.metadata \(written last\)$|^\.metadata\.tmp is still being written$|holds no files yet|^being written/,
  // The step is written as N.orbax-checkpoint-tmp-<n>/ and renamed (orbaxStep in checkpointLayout.ts).
  orbax: /^Orbax is still writing it/,
};

let host: TestHost;
let config: string;
let root: string;
const recorded: Recorded[] = fs.readdirSync(LIVE).filter((n) => n.endsWith('.json')).sort().map((n) => JSON.parse(fs.readFileSync(path.join(LIVE, n), 'utf8')) as Recorded);

function cli(args: string[]): CliResult {
  return runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome);
}

/** Lays a stage as the run folder `dir`: files of the recorded sizes (text files with their bytes), mtimes `now + offset - later`. */
function lay(dir: string, rec: Recorded, stage: Stage, later = 0): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const now = Date.now();
  for (const e of stage.files) if (e.type === 'd') fs.mkdirSync(path.join(dir, e.rel), { recursive: true });
  for (const e of stage.files) {
    if (e.type !== 'f') continue;
    const p = path.join(dir, e.rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    const text = rec.texts[`${e.rel}@${e.bytes}`];
    if (text !== undefined && Buffer.byteLength(text) === e.bytes) fs.writeFileSync(p, text);
    else fs.truncateSync((fs.writeFileSync(p, ''), p), e.bytes);
  }
  // Folders last (writing into one changes its mtime), deepest first.
  for (const e of [...stage.files].sort((a, b) => (a.type === b.type ? b.rel.length - a.rel.length : a.type === 'f' ? -1 : 1))) {
    const t = new Date(now + e.mtimeOffsetMs - later);
    fs.utimesSync(path.join(dir, e.rel), t, t);
  }
  fs.chmodSync(dir, 0o755);
  for (const e of stage.files) fs.chmodSync(path.join(dir, e.rel), e.type === 'd' ? 0o755 : 0o644);
}

function ls(run: string): { latest: string | null; checkpoints: Ck[]; latestSkipped?: { name: string; incomplete: string }[] } {
  const r = cli(['ls', `w/host/${run}`, '--json']);
  assert.equal(r.code, 0, r.stderr);
  return (JSON.parse(r.stdout) as { run: { latest: string | null; checkpoints: Ck[]; latestSkipped?: { name: string; incomplete: string }[] } }).run;
}

/** The files of the watched save (Orbax's: in its temporary folder too), by name and size: a stage with all of them is the save as it ends. */
const signature = (rec: Recorded, s: Stage): string =>
  JSON.stringify(s.files.filter((x) => x.type === 'f' && (x.rel === rec.watched || x.rel.startsWith(`${rec.watched}/`) || x.rel.startsWith(`${rec.watched}.orbax-checkpoint-tmp/`))).map((x) => [x.rel, x.bytes]));
const nameOf = (rec: Recorded): string => rec.watched.slice(rec.watched.lastIndexOf('/') + 1);

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  root = path.join(host.dir, 'live');
  fs.mkdirSync(root, { recursive: true });
  fs.chmodSync(root, 0o755);
  config = path.join(host.dir, 'live-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('w', { runRoots: [root], targets: ['host'] })] }));
});

// Let sshd's log pipe drain between the synchronous CLI runs (as frameworkLayouts.test.ts does).
beforeEach(() => new Promise<void>((resolve) => setTimeout(resolve, 10)));

after(async () => {
  await host?.stop();
});

test('the recording holds the seven writers', () => {
  assert.deepEqual(recorded.map((r) => r.framework), ['accelerate', 'dcp', 'keras', 'lightning', 'orbax', 'torchsave', 'trainer']);
});

for (const rec of recorded) {
  test(`${rec.framework}: at every stage of its save ${nameOf(rec)} is incomplete and not latest; finished, it is latest`, () => {
    const finished = rec.stages[rec.stages.length - 1];
    const name = nameOf(rec);
    let caught = 0;
    for (const stage of rec.stages.slice(0, -1)) {
      const started = Date.now();
      lay(path.join(root, rec.framework), rec, stage);
      const run = ls(rec.framework);
      const where = `${rec.framework} after ${stage.event} of ${stage.path}`;
      // The clock rule needs the listing within FRESH_WRITE_MS of the laying: say so if the machine was too slow.
      assert.ok(Date.now() - started < FRESH_WRITE_MS, `${where}: laying and listing took ${Date.now() - started} ms`);
      // Orbax's step in progress is its temporary folder, listed under that name.
      const c = run.checkpoints.find((x) => x.name === name || x.name.startsWith(`${name}.orbax-checkpoint-tmp`));
      // With a file in Orbax's temporary folder, the save in progress is listed (and says why it is incomplete).
      if (stage.files.some((x) => x.type === 'f' && x.rel.startsWith(`${rec.watched}.orbax-checkpoint-tmp/`))) assert.ok(c, `${where}: the save in progress is not listed`);
      if (signature(rec, stage) === signature(rec, finished)) {
        // Every file there at its final size: complete by its marker, or being written while its clock is fresh.
        if (c?.incomplete !== undefined) assert.match(c.incomplete, /^being written/, where);
        continue;
      }
      caught++;
      assert.notEqual(run.latest, name, where);
      if (!c) continue; // nothing of it listed yet (a folder made, its first file not)
      assert.match(c.incomplete ?? '(complete)', REASON[rec.framework], where);
      // `ls --json` says what `latest` passed over, as pull does.
      if (run.latest !== null) assert.deepEqual(run.latestSkipped?.find((x) => x.name === c.name)?.incomplete, c.incomplete, where);
      if (rec.framework === 'accelerate') assert.equal(c.kind, 'save', `${where}: an accelerate save is never a step`);
    }
    assert.ok(caught > 0, `${rec.framework}: no stage caught its save unfinished`);
    lay(path.join(root, rec.framework), rec, finished, FRESH_WRITE_MS);
    const done = ls(rec.framework);
    assert.equal(done.latest, name);
    assert.equal(done.checkpoints.find((x) => x.name === name)?.incomplete, undefined);
  });
}

test('pull …/latest during a save takes the previous complete checkpoint and says which it skipped (text and --json)', () => {
  // [framework, the checkpoint latest takes, what it says, the name of the save it skips when not the watched one's]
  const cases: [string, string, RegExp, string?][] = [
    ['trainer', 'checkpoint-10', /^latest is checkpoint-10; skipped checkpoint-20: trainer_state\.json not written yet/m],
    ['accelerate', 'checkpoint_0', /^latest is checkpoint_0; skipped checkpoint_1: (?:random_states_0\.pkl not written yet|being written: .*random_states_0\.pkl, which its framework writes last and in place)/m],
    ['lightning', 'epoch=0-step=5.ckpt', /^latest is epoch=0-step=5\.ckpt; skipped epoch=0-step=10\.ckpt: being written/m],
    ['orbax', '10', /^latest is 10; skipped 20\.orbax-checkpoint-tmp: Orbax is still writing it/m, '20.orbax-checkpoint-tmp'],
    ['dcp', 'step_10', /^latest is step_10; skipped step_20: (?:torch\.distributed\.checkpoint shards without their \.metadata \(written last\)|\.metadata\.tmp is still being written)/m],
  ];
  for (const [framework, previous, said, skippedName] of cases) {
    const rec = recorded.find((r) => r.framework === framework)!;
    const finished = rec.stages[rec.stages.length - 1];
    // The first stage where the save has a file but is not finished.
    const stage = rec.stages.find((s) => s !== finished && signature(rec, s) !== '[]' && signature(rec, s) !== signature(rec, finished))!;
    lay(path.join(root, framework), rec, stage);
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
    const text = cli(['pull', `w/host/${framework}/latest`, '--to', to]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stderr, said, framework);
    assert.equal(text.stdout.trim(), path.join(to, framework, previous));
    lay(path.join(root, framework), rec, stage);
    const json = cli(['pull', `w/host/${framework}/latest`, '--to', to, '--json']);
    assert.equal(json.code, 0, json.stderr);
    const out = JSON.parse(json.stdout) as { local: string; checkpoint: string; skipped: { name: string; incomplete: string }[] };
    assert.equal(out.checkpoint, previous);
    assert.deepEqual(out.skipped.map((s) => s.name), [skippedName ?? nameOf(rec)]);
    assert.match(`latest is ${out.checkpoint}; skipped ${out.skipped[0].name}: ${out.skipped[0].incomplete}`, said);
    assert.deepEqual(fs.readdirSync(path.join(to, framework)).filter((n) => !n.startsWith('.')), [previous]);
  }
});

test('an incomplete checkpoint named explicitly is pulled, with a warning that says why', () => {
  const rec = recorded.find((r) => r.framework === 'trainer')!;
  const finished = rec.stages[rec.stages.length - 1];
  const stage = rec.stages.find((s) => s !== finished && s.files.some((x) => x.rel === 'checkpoint-20/model.safetensors') && !s.files.some((x) => x.rel === 'checkpoint-20/trainer_state.json'))!;
  lay(path.join(root, 'trainer'), rec, stage);
  const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
  const r = cli(['pull', 'w/host/trainer/checkpoint-20', '--to', to]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /checkpoint-20 is incomplete \(trainer_state\.json not written yet: the Trainer is still saving.*\): taking it because it was named/);
  assert.ok(fs.existsSync(path.join(to, 'trainer', 'checkpoint-20', 'model.safetensors')));
});
