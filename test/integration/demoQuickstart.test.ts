/**
 * The quick start as a newcomer runs it: a fresh clone, the install, `npm run demo -- --headless`, the CLI `ls`
 * against the demo host it started, then Ctrl-C (SIGINT to the foreground process group, as a terminal sends it)
 * and nothing of the demo left running.
 *
 * The install is `node_modules` linked from this checkout rather than `npm ci` from the registry: the test asserts
 * the clone's package-lock.json is byte-identical to the one this node_modules was installed from, so the tree is
 * the one `npm ci` would build, without minutes of downloads in every test run. What this test is about (the
 * committed scripts, the build, the demo's start and stop from a clean folder) is all exercised.
 */
import { after, before, test } from 'node:test';
import { eventually } from '../harness/assertKind';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { groupMembers } from '../e2e/processGroup';
import { processesMentioning } from '../harness/processes';

const ROOT = path.join(__dirname, '..', '..');
let tmp: string;
let demo: ChildProcess | undefined;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-quickstart-'));
});
after(() => {
  if (demo?.pid !== undefined) {
    try {
      process.kill(-demo.pid, 'SIGKILL');
    } catch {
      // already gone, as it should be
    }
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

test('fresh clone → install → npm run demo -- --headless → CLI ls → Ctrl-C leaves nothing running', { timeout: 300_000 }, async () => {
  const repo = path.join(tmp, 'remote-runs');
  execFileSync('git', ['clone', '-q', ROOT, repo]);
  assert.equal(fs.readFileSync(path.join(repo, 'package-lock.json'), 'utf8'), fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(repo, 'node_modules'));
  assert.equal(fs.existsSync(path.join(repo, 'dist')), false, 'a fresh clone has no build');

  const home = path.join(tmp, 'home');
  const cache = path.join(tmp, 'cache');
  fs.mkdirSync(home);
  const env = { PATH: process.env.PATH ?? '', HOME: home, XDG_CACHE_HOME: cache };
  // Its own process group, like a terminal's foreground job; `code` is not looked for in headless mode.
  demo = spawn('npm', ['run', 'demo', '--', '--headless'], { cwd: repo, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pgid = demo.pid!;
  let output = '';
  demo.stdout!.on('data', (b: Buffer) => (output += b.toString()));
  demo.stderr!.on('data', (b: Buffer) => (output += b.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => demo!.on('exit', (code, signal) => resolve({ code, signal })));

  const deadline = Date.now() + 180_000;
  while (!/ready on 127\.0\.0\.1:\d+/.test(output)) {
    assert.ok(Date.now() < deadline, `the demo did not come up:\n${output}`);
    assert.equal(demo.exitCode, null, `the demo exited:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const base = path.join(cache, 'remote-runs-demo');
  const ls = execFileSync(
    process.execPath,
    [path.join(repo, 'dist', 'cli.js'), 'ls', 'demo/pct:200', '--json', '--config', path.join(base, 'cli-config.json'), '--known-hosts', path.join(base, 'known_hosts')],
    { encoding: 'utf8', env: { PATH: env.PATH, HOME: home } },
  );
  const runs = JSON.parse(ls).runs as { name: string; live: boolean; checkpoints: unknown[] }[];
  assert.deepEqual(runs.map((r) => [r.name, r.live]), [['workspace', true]]);
  assert.ok(runs[0].checkpoints.length >= 10);

  const machinePids = processesMentioning(path.join(base, 'mnt'));
  assert.ok(machinePids.length > 0, 'the demo machine runs (unshare with its mount point)');
  process.kill(-pgid, 'SIGINT');
  const { code, signal } = await exited;
  // npm itself dies of the SIGINT (as in a terminal); the demo under it must have stopped cleanly first.
  assert.ok(code === 0 || signal === 'SIGINT', `npm: code ${code}, signal ${signal}\n${output}`);
  // Generous waits (a loaded CI machine): they bound hanging, they measure nothing.
  await eventually(() => /Demo stopped/.test(output), 'the demo says it stopped', 60_000).catch(() => undefined);
  assert.match(output, /Demo stopped; nothing of it is left running/);
  // Give the group time to finish exiting, then nothing of it, nor of the demo machine, may remain.
  await eventually(() => groupMembers(pgid).length === 0 && processesMentioning(tmp).length === 0, 'the group exited', 60_000).catch(() => undefined);
  assert.deepEqual(groupMembers(pgid), []);
  assert.deepEqual(processesMentioning(tmp), []);
  for (const pid of machinePids) assert.equal(fs.existsSync(`/proc/${pid}`), false, `demo machine process ${pid} still runs`);
  assert.equal(fs.existsSync(path.join(base, 'running.json')), false);
});
