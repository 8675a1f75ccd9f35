/**
 * `npm run demo` on a machine without code-server installs it first (minutes): a demo stopped or killed meanwhile
 * leaves nothing of the install running, and its demo host answers while the install runs. In a clone of this
 * repository (node_modules linked from this checkout) whose test/vscode/setup.sh is replaced by a stand-in that only
 * waits, so the test does not install code-server (test/quickstart does, for real): what is under test is the demo's
 * handling of the install's processes, not the install.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { eventually } from '../harness/assertKind';
import { ensureBuiltCli, CLI } from '../harness/builtCli';
import { groupMembers, spawnGroup, type GroupProcess } from '../e2e/processGroup';
import { killLeftovers, processesMentioning } from '../harness/processes';

const ROOT = path.join(__dirname, '..', '..');
let tmp: string;
let repo: string;
const started: GroupProcess[] = [];

before(() => {
  ensureBuiltCli();
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-install-'));
  repo = path.join(tmp, 'remote-runs');
  execFileSync('git', ['clone', '-q', ROOT, repo]);
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(repo, 'node_modules'));
  // The stand-in install: says it started, then waits (its marker names it among the processes).
  fs.writeFileSync(path.join(repo, 'test', 'vscode', 'setup.sh'), 'echo "stand-in install started"\nexec sleep 3600\n');
});
after(() => {
  killLeftovers(started.map((g) => g.pgid), tmp);
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** The stand-in install's `sleep 3600`, found by its parent's folder: the sleep replaced the clone's setup.sh shell. */
function installPids(): number[] {
  return fs.readdirSync('/proc').filter((e) => {
    if (!/^\d+$/.test(e)) return false;
    try {
      return fs.readFileSync(`/proc/${e}/cmdline`, 'utf8') === 'sleep\x003600\x00' && fs.readlinkSync(`/proc/${e}/cwd`) === repo;
    } catch {
      return false;
    }
  }).map(Number);
}

/** Start the demo from the clone (not built again: the clone's dist is this checkout's build), until it installs. */
async function startInstalling(name: string): Promise<{ demo: GroupProcess; base: string; install: number[] }> {
  const home = path.join(tmp, `home-${name}`);
  fs.mkdirSync(home);
  const base = path.join(tmp, `demo-${name}`);
  const noCode = (process.env.PATH ?? '').split(':').filter((d) => !fs.existsSync(path.join(d, 'code'))).join(':');
  fs.cpSync(path.join(ROOT, 'dist'), path.join(repo, 'dist'), { recursive: true });
  const demo = spawnGroup(process.execPath, ['--import', 'tsx', path.join(repo, 'src', 'demo', 'main.ts'), '--no-build'], {
    cwd: repo,
    env: { PATH: noCode, HOME: home, REMOTE_RUNS_DEMO_DIR: base },
  });
  started.push(demo);
  await eventually(() => /stand-in install started/.test(demo.output()) && installPids().length > 0, 'the install started', 120_000).catch(() => undefined);
  assert.match(demo.output(), /installing code-server into test\/vscode\//);
  const install = installPids();
  assert.equal(install.length, 1, demo.output());
  return { demo, base, install };
}

/** The built CLI's `ls` of the demo's live container, run without blocking this process. */
function lsLive(base: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, 'ls', 'demo/pct:200', '--json', '--config', path.join(base, 'cli-config.json'), '--known-hosts', path.join(base, 'known_hosts')], {
      env: { PATH: process.env.PATH, HOME: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const gone = (pids: number[]): boolean => pids.every((pid) => !fs.existsSync(`/proc/${pid}`));

test('while code-server installs, the demo host answers; Ctrl-C then ends the install and the demo', { timeout: 300_000 }, async () => {
  const { demo, base, install } = await startInstalling('sigint');
  const ls = await lsLive(base);
  assert.equal(ls.code, 0, ls.stderr);
  assert.deepEqual(JSON.parse(ls.stdout).runs.map((r: { name: string }) => r.name), ['workspace']);

  process.kill(-demo.pgid, 'SIGINT');
  await eventually(() => demo.child.exitCode !== null || demo.child.signalCode !== null, 'the demo exited', 60_000).catch(() => undefined);
  assert.equal(demo.child.exitCode, 0, `the demo did not exit after Ctrl-C:\n${demo.output()}`);
  assert.match(demo.output(), /Demo stopped; nothing of it is left running/);
  assert.doesNotMatch(demo.output(), /Could not open VS Code/);
  await eventually(() => gone(install) && processesMentioning(base).length === 0, 'the install and the demo machine ended', 60_000).catch(() => undefined);
  assert.deepEqual(install.filter((pid) => fs.existsSync(`/proc/${pid}`)), [], 'the install still runs');
  assert.deepEqual(processesMentioning(base), []);
  assert.deepEqual(groupMembers(demo.pgid), []);
});

test('the demo SIGKILLed during the install: the install and the demo machine end with it', { timeout: 300_000 }, async () => {
  const { demo, base, install } = await startInstalling('sigkill');
  const machine = processesMentioning(path.join(base, 'mnt'));
  assert.ok(machine.length > 0, 'control: the demo machine runs');
  process.kill(demo.child.pid!, 'SIGKILL');
  await demo.exited;
  await eventually(() => gone(install) && gone(machine), 'the install and the demo machine ended', 60_000).catch(() => undefined);
  assert.deepEqual(install.filter((pid) => fs.existsSync(`/proc/${pid}`)), [], 'the install outlived the demo');
  assert.deepEqual(machine.filter((pid) => fs.existsSync(`/proc/${pid}`)), [], 'the demo machine outlived the demo');
});
