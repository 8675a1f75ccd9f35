/**
 * Walks that must stay inside what they walk (issue 35, items 3 and 4), with the built CLI against the real test sshd:
 * a checkpoint holding a FIFO, links to `/dev/zero`, `/dev/urandom` and `/proc/self/fd/0`, a link loop, a broken
 * link, links to folders outside it (`up -> ../../..`, `root -> /`) and one to a folder inside it; a checkpoint that
 * is itself a link to `/`, with siblings beside it (test/fixtures/generate.ts writeWalkHostile); a run holding more
 * entries than the listing's budget. Pull, ls and inspect. The login user is the harness's unprivileged `rrtest`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { ensureBuiltCli, runBuiltCli } from '../harness/builtCli';
import { WALK_SIBLINGS, writeManyFiles, writeWalkHostile } from '../fixtures/generate';
import { DEFAULT_MAX_ENTRIES } from '../../src/core/discovery/listScript';

let host: TestHost;
let config: string;
let cutConfig: string;
let runDir: string;
let cutRoot: string;

function cli(args: string[], timeoutMs = 180_000, conf = config): { code: number; stdout: string; stderr: string; json: any } {
  const r = runBuiltCli([...args, '--config', conf, '--known-hosts', host.knownHostsFile], host.clientHome, timeoutMs);
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { ...r, json };
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  const root = path.join(host.dir, 'walks');
  runDir = path.join(root, 'hostile');
  writeWalkHostile(runDir);
  // A run linked into the root from elsewhere: the listing names the link, never walks it.
  const elsewhere = path.join(host.dir, 'elsewhere');
  fs.mkdirSync(path.join(elsewhere, 'exp1', 'checkpoints', 'step_5'), { recursive: true });
  fs.writeFileSync(path.join(elsewhere, 'exp1', 'checkpoints', 'step_5', 'model.pt'), 'weights of 5\n');
  fs.symlinkSync(path.join(elsewhere, 'exp1'), path.join(root, 'exp1'));
  // A run that is its own run root, holding more entries than the listing's budget (DEFAULT_MAX_ENTRIES): its data/
  // is listed in part, its checkpoints whole (the fair listing lists the root's own entries and small folders first).
  cutRoot = path.join(host.dir, 'cutrun');
  for (const step of [10, 20, 30]) {
    fs.mkdirSync(path.join(cutRoot, 'checkpoints', `step_${step}`), { recursive: true });
    fs.writeFileSync(path.join(cutRoot, 'checkpoints', `step_${step}`, 'model.pt'), `weights of ${step}\n`);
  }
  fs.writeFileSync(path.join(cutRoot, 'metrics.jsonl'), '{"step": 10, "loss": 1.5}\n');
  writeManyFiles(cutRoot, DEFAULT_MAX_ENTRIES + 5000);
  const old = new Date(Date.now() - 3600_000);
  for (const p of [cutRoot, path.join(cutRoot, 'metrics.jsonl'), ...[10, 20, 30].flatMap((s) => [path.join(cutRoot, 'checkpoints', `step_${s}`), path.join(cutRoot, 'checkpoints', `step_${s}`, 'model.pt')])]) fs.utimesSync(p, old, old);
  execFileSync('chmod', ['-R', 'a+rX', root, cutRoot]);
  config = path.join(host.dir, 'walks-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('w', { runRoots: [root], targets: ['host'] })] }));
  cutConfig = path.join(host.dir, 'cut-config.json');
  fs.writeFileSync(cutConfig, JSON.stringify({ hosts: [host.hostConfig('c', { runRoots: [cutRoot], targets: ['host'] })] }));
});
after(async () => {
  await host?.stop();
});

describe('pull: special files, broken links, loops and folder links leaving the checkpoint', () => {
  test('each is skipped with a line saying which and why, the rest arrives, and the summary never says only "verified"', () => {
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
    const r = cli(['pull', 'w/host/hostile/step_100', '--to', to, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const local = path.join(to, 'hostile', 'step_100');
    assert.equal(r.json.local, local);
    const lines = r.stderr.split('\n');
    const why = (name: string): string => lines.find((l) => l.includes(`skipped ${JSON.stringify(name)}:`)) ?? '';
    assert.match(why('fifo'), /FIFO/);
    assert.match(why('zero'), /character device.*\/dev\/zero/);
    assert.match(why('urandom'), /character device.*\/dev\/urandom/);
    assert.match(why('stdin'), /\/proc\/self\/fd\/0/);
    assert.match(why('loop'), /symbolic link loop/);
    assert.match(why('broken'), /symbolic link to nothing.*nowhere/);
    assert.match(why('up'), /folder outside the checkpoint, not followed.*\.\.\/\.\.\/\.\./);
    assert.match(why('root'), /folder outside the checkpoint, not followed: "\/"/);
    assert.equal(why('sub_alias'), '', 'a link to a folder inside the checkpoint is no skip');
    const summary = lines.filter((l) => /fetched/.test(l)).pop() ?? '';
    assert.match(summary, /verified by SHA-256/);
    assert.match(summary, /NOT COMPLETE: 6 entries skipped/);
    assert.match(summary, /2 links to folders outside the checkpoint not followed: "root" -> "\/", "up" -> "\.\.\/\.\.\/\.\."/);
    assert.deepEqual(
      r.json.entriesSkipped.map((s: { relative: string; why: string }) => `${s.relative}:${s.why}`),
      ['broken:broken-link', 'fifo:fifo', 'loop:link-loop', 'root:dir-link-outside', 'stdin:' + r.json.entriesSkipped.find((s: { relative: string }) => s.relative === 'stdin').why, 'up:dir-link-outside', 'urandom:char-device', 'zero:char-device'],
    );
    // What is a file arrived; links inside the checkpoint arrived as links; nothing else is there.
    assert.deepEqual(fs.readdirSync(local).sort(), ['alias.pt', 'model.pt', 'sub', 'sub_alias']);
    assert.equal(fs.readFileSync(path.join(local, 'model.pt'), 'utf8'), 'weights of 100\n');
    assert.equal(fs.readFileSync(path.join(local, 'sub', 'optim.pt'), 'utf8'), 'optimizer state\n');
    assert.equal(fs.readlinkSync(path.join(local, 'sub_alias')), 'sub');
    assert.equal(fs.readFileSync(path.join(local, 'sub_alias', 'optim.pt'), 'utf8'), 'optimizer state\n');
    assert.equal(fs.readlinkSync(path.join(local, 'alias.pt')), 'model.pt');
    // A second pull finds it there, and still names what it leaves out.
    const again = cli(['pull', 'w/host/hostile/step_100', '--to', to]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /already there/);
    assert.match(again.stderr, /NOT COMPLETE: 6 entries skipped/);
  });

  test('a checkpoint that is itself a link to / is refused at once, without walking the remote filesystem', () => {
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-'));
    const t0 = Date.now();
    const r = cli(['pull', 'w/host/hostile/step_200', '--to', to, '--json'], 60_000);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.json?.error?.kind, 'bad-address', r.stdout + r.stderr);
    assert.match(r.json.error.message, /symbolic link to "\/", a folder outside the one it is in; remote-runs does not follow it/);
    assert.ok(Date.now() - t0 < 60_000);
    assert.deepEqual(fs.readdirSync(to).filter((n) => n !== '.remote-runs'), [], 'nothing written for a refused pull');
  });
});

describe('ls and inspect: the listing stays inside the run, and a listing cut short says so', () => {
  const steps = [100, 200, ...WALK_SIBLINGS.slice(1)].map((s) => `step_${s}`);

  test('ls of the target and of the run: all 11 checkpoints, the one linked to / as a link with its target, its size not summed over /', () => {
    const target = cli(['ls', 'w/host', '--json']);
    assert.equal(target.code, 0, target.stderr);
    assert.deepEqual(target.json.roots.map((r: { truncated: boolean }) => r.truncated), [false], 'the budget was not spent in /');
    // The one link out of the root that is no checkpoint and in none: the run linked in, named, not walked.
    assert.deepEqual(target.json.roots[0].linksOut, { count: 1, links: [{ rel: 'exp1', link: path.join(host.dir, 'elsewhere', 'exp1') }] });
    assert.deepEqual(target.json.runs.map((r: { name: string }) => r.name), ['hostile']);
    const targetText = cli(['ls', 'w/host']);
    assert.match(targetText.stdout, /: 1 link to folders outside the root not followed: exp1 -> \/.*\/elsewhere\/exp1/);
    const [run] = target.json.runs;
    assert.deepEqual(run.checkpoints.map((c: { name: string }) => c.name), steps);
    assert.equal(run.latest, 'step_1100');
    assert.equal(run.listedInPart, undefined);
    const r = cli(['ls', 'w/host/hostile', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const cks = r.json.run.checkpoints;
    assert.deepEqual(cks.map((c: { name: string }) => c.name), steps);
    const link = cks.find((c: { name: string }) => c.name === 'step_200');
    assert.deepEqual([link.link, link.linkOutside, link.bytes], ['/', true, 0]);
    const ck = cks.find((c: { name: string }) => c.name === 'step_100');
    // model.pt, alias.pt (a link to it) and sub/optim.pt: what the links to folders lead to is not counted.
    assert.equal(ck.bytes, 46);
    const skipped = new Map(ck.skipped.map((s: { relative: string; why: string; link?: string }) => [s.relative, s]));
    assert.deepEqual(skipped.get('root'), { relative: 'root', why: 'dir-link-outside', link: '/' });
    assert.equal((skipped.get('fifo') as { why: string }).why, 'fifo');
    assert.equal((skipped.get('zero') as { why: string }).why, 'char-device');
    assert.equal(skipped.has('sub_alias'), false);
    // up -> ../../.. leads to the run root: GNU find -L calls that a loop (named on the root), or it is a link out.
    const loopSaid = (target.json.roots[0].unreadable?.messages ?? []).some((m: string) => m.includes('step_100/up') && /loop/.test(m));
    assert.ok(loopSaid || (skipped.get('up') as { why: string } | undefined)?.why === 'dir-link-outside', JSON.stringify(target.json.roots[0]));
    assert.ok((target.json.roots[0].unreadable?.messages ?? []).some((m: string) => m.includes('step_100/loop')), 'the link loop is named');
    const more = skipped.size - 5;
    assert.ok(cli(['ls', 'w/host/hostile']).stdout.includes(`note: step_100: ${more} more ${more === 1 ? 'entry' : 'entries'} left out (--json lists them all)`));
    const text = cli(['ls', 'w/host/hostile']);
    assert.equal(text.code, 0, text.stderr);
    const rows = text.stdout.split('\n');
    for (const name of steps) assert.equal(rows.filter((l) => l.includes(` ${name} `)).length, 1, `${name} is one row:\n${text.stdout}`);
    assert.match(rows.find((l) => l.includes(' step_200 ')) ?? '', /\s-\s+-\s+link to "\/", a folder outside: not followed/);
    assert.match(text.stdout, /note: step_100: "fifo" is left out: a FIFO/);
    assert.match(text.stdout, /note: step_100: "root" is left out: a link to a folder outside the checkpoint, not followed: "\/"/);
    assert.match(text.stdout, /note: "checkpoints\/last\.ckpt" is no checkpoint: a symbolic link to nothing: "epoch=0-step=50\.ckpt"/);
    assert.deepEqual(r.json.run.skipped, [{ relative: 'checkpoints/last.ckpt', why: 'broken-link', link: 'epoch=0-step=50.ckpt' }]);
    assert.doesNotMatch(text.stdout, /listed in part/);
  });

  test('inspect of the checkpoint linked to / is refused without reading /; inspect of its sibling names what it leaves out', () => {
    const r = cli(['inspect', 'w/host/hostile/step_200', '--json'], 60_000);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.json?.error?.kind, 'bad-address', r.stdout + r.stderr);
    assert.match(r.json.error.message, /step_200 is a symbolic link to "\/", a folder outside the one it is in; remote-runs does not follow it \(inspect the folder it names/);
    const sibling = cli(['inspect', 'w/host/hostile/step_100', '--json']);
    assert.match(sibling.stderr, /step_100: not inspected: "fifo": a FIFO/);
    assert.match(sibling.stderr, /step_100: not inspected: "root": a link to a folder outside the checkpoint, not followed: "\/"/);
  });

  test('a run listed in part says so in ls RUN, in --json, and in a not-found of pull and inspect', () => {
    const name = path.basename(cutRoot);
    const target = cli(['ls', 'c/host', '--json'], 180_000, cutConfig);
    assert.equal(target.code, 0, target.stderr);
    assert.equal(target.json.roots[0].truncated, true);
    assert.deepEqual(target.json.roots[0].tooLarge.map((t: { rel: string }) => t.rel), ['data']);
    assert.match(target.json.runs[0].listedInPart, /the run was listed in part: .*\/data \(over [\d,]+ entries\)/);
    // The fair listing lists the root's own entries and its small folders whole: every checkpoint is there.
    assert.deepEqual(target.json.runs[0].checkpoints.map((c: { name: string }) => c.name), ['step_10', 'step_20', 'step_30']);
    const text = cli(['ls', `c/host/${name}`], 180_000, cutConfig);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /note: the run was listed in part: .*\/data \(over [\d,]+ entries\) had more entries than the listing's budget, so checkpoints or logs of it may be missing/);
    const json = cli(['ls', `c/host/${name}`, '--json'], 180_000, cutConfig);
    assert.match(json.json.run.listedInPart, /the run was listed in part/);
    for (const verb of ['pull', 'inspect']) {
      const r = cli([verb, `c/host/${name}/step_40`, '--json', ...(verb === 'pull' ? ['--to', fs.mkdtempSync(path.join(host.dir, 'pull-'))] : [])], 180_000, cutConfig);
      assert.notEqual(r.code, 0);
      assert.equal(r.json?.error?.kind, 'not-found', r.stdout + r.stderr);
      assert.match(r.json.error.message, /No checkpoint "step_40" .*; the run was listed in part: .*\/data \(over [\d,]+ entries\)/, verb);
    }
    // latest is the newest of what was listed, and says so.
    const latest = cli(['pull', `c/host/${name}/latest`, '--to', fs.mkdtempSync(path.join(host.dir, 'pull-'))], 180_000, cutConfig);
    assert.equal(latest.code, 0, latest.stderr);
    assert.match(latest.stderr, /latest is the newest of what was listed; the run was listed in part/);
  });
});
