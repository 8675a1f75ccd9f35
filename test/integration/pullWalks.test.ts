/**
 * Walks that must stay inside what they walk (issue 35, items 3 and 4), with the built CLI against the real test sshd:
 * a checkpoint holding a FIFO, links to `/dev/zero`, `/dev/urandom` and `/proc/self/fd/0`, a link loop, a broken
 * link, links to folders outside it (`up -> ../../..`, `root -> /`) and one to a folder inside it; a checkpoint that
 * is itself a link to `/`, with siblings beside it. The login user is the harness's unprivileged `rrtest`.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { ensureBuiltCli, runBuiltCli } from '../harness/builtCli';

let host: TestHost;
let config: string;
let runDir: string;
const SIBLINGS = [100, 300, 400, 500, 600, 700, 800, 900, 1000, 1100];
// Not yet here: `ls RUN` beside a checkpoint linked to / lists 2 to 11 of the 11 (the listing's walk follows the link and
// its entry budget runs out in /); src/core/discovery/listScript.ts is still to be bounded the same way.

function cli(args: string[], timeoutMs = 180_000): { code: number; stdout: string; stderr: string; json: any } {
  const r = runBuiltCli([...args, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome, timeoutMs);
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
  const cks = path.join(runDir, 'checkpoints');
  for (const step of SIBLINGS) {
    fs.mkdirSync(path.join(cks, `step_${step}`, 'sub'), { recursive: true });
    fs.writeFileSync(path.join(cks, `step_${step}`, 'model.pt'), `weights of ${step}\n`);
  }
  const ck = path.join(cks, 'step_100');
  fs.writeFileSync(path.join(ck, 'sub', 'optim.pt'), 'optimizer state\n');
  execFileSync('mkfifo', [path.join(ck, 'fifo')]);
  fs.symlinkSync('/dev/zero', path.join(ck, 'zero'));
  fs.symlinkSync('/dev/urandom', path.join(ck, 'urandom'));
  fs.symlinkSync('/proc/self/fd/0', path.join(ck, 'stdin'));
  fs.symlinkSync('loop', path.join(ck, 'loop'));
  fs.symlinkSync('nowhere', path.join(ck, 'broken'));
  fs.symlinkSync('../../..', path.join(ck, 'up'));
  fs.symlinkSync('/', path.join(ck, 'root'));
  fs.symlinkSync('sub', path.join(ck, 'sub_alias'));
  fs.symlinkSync('model.pt', path.join(ck, 'alias.pt'));
  // A whole checkpoint that is a link to the remote's root, among ten ordinary ones.
  fs.symlinkSync('/', path.join(cks, 'step_200'));
  execFileSync('chmod', ['-R', 'a+rX', root]);
  config = path.join(host.dir, 'walks-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('w', { runRoots: [root], targets: ['host'] })] }));
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
