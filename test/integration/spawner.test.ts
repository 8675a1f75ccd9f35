/**
 * The process starter (src/core/util/spawner.ts): children started by a small `sh`, not by this process (whose every
 * start forks it), with what a stream reader needs of a ChildProcess, and nothing left when its owner is killed.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Spawner, type SpawnedChild } from '../../src/core/util/spawner';
import { alive } from '../harness/processes';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-spawner-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function ended(c: SpawnedChild): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = '';
  c.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  return new Promise((resolve) => c.once('close', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal, stderr })));
}

async function eventually(ok: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 20_000; Date.now() < end; ) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(what);
}

function parentOf(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

test('a child gets its last argument byte for byte, appends its stdout to the file, and its stderr and status come back', async () => {
  const s = new Spawner(['sh', '-c', 'printf %s "$1"; printf "to stderr\\n" >&2; exit 3', 'sh'], dir, process.env);
  try {
    const out = path.join(dir, 'out-1');
    fs.writeFileSync(out, 'before:');
    // Quotes, a command substitution, a newline inside and two at the end, non-ASCII: none of it is the helper's.
    const line = `it's "$(touch ${path.join(dir, 'pwned')})" \`id\` $HOME\n* ünïcode\n\n`;
    const c = s.run(line, out);
    let spawned = false;
    c.once('spawn', () => (spawned = true));
    const end = await ended(c);
    assert.ok(spawned, 'spawn before close');
    assert.deepEqual({ code: end.code, signal: end.signal, stderr: end.stderr }, { code: 3, signal: null, stderr: 'to stderr\n' });
    assert.equal(fs.readFileSync(out, 'utf8'), `before:${line}`);
    assert.equal(fs.existsSync(path.join(dir, 'pwned')), false, 'nothing in the line was run by the helper');
    assert.deepEqual(fs.readdirSync(dir).filter((f) => /^(cmd|err)-/.test(f)), [], 'no command or stderr file left');
  } finally {
    s.close();
  }
});

test('a child is not this process\'s child (no fork of it), and a kill ends it as a ChildProcess says it: code null, SIGKILL', async () => {
  const s = new Spawner(['sleep'], dir, process.env);
  try {
    const out = path.join(dir, 'out-2');
    fs.writeFileSync(out, '');
    const c = s.run('60', out);
    await new Promise<void>((r) => c.once('spawn', () => r()));
    const pid = c.pid!;
    assert.ok(alive(pid));
    assert.notEqual(parentOf(pid), process.pid, 'started by the helper');
    const done = ended(c);
    assert.equal(c.kill('SIGKILL'), true);
    const end = await done;
    assert.deepEqual({ code: end.code, signal: end.signal }, { code: null, signal: 'SIGKILL' });
    await eventually(() => !alive(pid), 'the killed child is gone');
  } finally {
    s.close();
  }
});

test('a file that cannot be opened ends the child before it starts, with status 126; many children at once each get their own', async () => {
  const s = new Spawner(['sh', '-c', 'printf %s "$1"', 'sh'], dir, process.env);
  try {
    const bad = s.run('x', path.join(dir, 'no-such-folder', 'out'));
    const b = await ended(bad);
    assert.equal(b.code, 126);
    assert.equal(bad.pid, undefined);
    const outs = Array.from({ length: 20 }, (_, i) => path.join(dir, `many-${i}`));
    for (const o of outs) fs.writeFileSync(o, '');
    const all = await Promise.all(outs.map((o, i) => ended(s.run(`child ${i}`, o))));
    assert.ok(all.every((e) => e.code === 0));
    assert.deepEqual(outs.map((o) => fs.readFileSync(o, 'utf8')), outs.map((_, i) => `child ${i}`));
  } finally {
    s.close();
  }
});

test('its owner killed with SIGKILL: the helper ends every child it started, and itself', async () => {
  const pidFile = path.join(dir, 'pids');
  const script = `
    const { Spawner } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'src', 'core', 'util', 'spawner.ts'))});
    const fs = require('node:fs');
    const s = new Spawner(['sleep'], ${JSON.stringify(dir)}, process.env);
    const out = ${JSON.stringify(path.join(dir, 'out-owner'))};
    fs.writeFileSync(out, '');
    const c = s.run('300', out);
    c.once('spawn', () => fs.writeFileSync(${JSON.stringify(pidFile)}, c.pid + ' ' + s.pid));
    setInterval(() => {}, 1000);
  `;
  const owner = spawn(process.execPath, ['--import', 'tsx', '-e', script], { stdio: 'ignore' });
  await eventually(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').includes(' '), 'the owner started a child');
  const [child, helper] = fs.readFileSync(pidFile, 'utf8').split(' ').map(Number);
  assert.ok(alive(child) && alive(helper));
  owner.kill('SIGKILL');
  await eventually(() => !alive(child), `the child ${child} outlived its owner: ${execFileSync('ps', ['-o', 'pid,ppid,args', '-e'], { encoding: 'utf8' })}`);
  await eventually(() => !alive(helper), 'the helper outlived its owner');
});

test('the helper killed: what it had running ends, it says why, and a child asked for after that ends at once with that error', async () => {
  const s = new Spawner(['sleep'], dir, process.env);
  const out = path.join(dir, 'out-dead');
  fs.writeFileSync(out, '');
  const running = s.run('60', out);
  await new Promise<void>((r) => running.once('spawn', () => r()));
  const pid = running.pid!;
  const done = ended(running);
  process.kill(s.pid!, 'SIGKILL');
  const end = await done;
  assert.equal(end.code, null, 'no status from a dead helper');
  await eventually(() => !alive(pid), 'its child was killed by pid');
  await eventually(() => s.failed !== undefined, 'the helper is known to be gone');
  const late = s.run('1', out);
  const errors: Error[] = [];
  late.on('error', (e: Error) => errors.push(e));
  await ended(late);
  assert.match(errors[0]?.message ?? '', /the process starter exited/);
});
