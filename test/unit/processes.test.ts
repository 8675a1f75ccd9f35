/** The one process starter (core/util/processes.ts): holders and running sets follow a child's life; group signals; stdout placed at an offset. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pidRunning } from '../../src/core/util/pids';
import { signalProcess, startProcess, type ChildProcess } from '../../src/core/util/processes';

const exited = (c: ChildProcess): Promise<void> => new Promise((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve() : c.once('exit', () => resolve())));
const alive = pidRunning;

test('a held child is on its holder and in the running set from its start until it exits', async () => {
  const held: number[] = [];
  const holder = { add: (p: number | undefined) => p && held.push(p), remove: (p: number | undefined) => held.splice(held.indexOf(p!), 1) };
  const running = new Set<ChildProcess>();
  const child = startProcess('sh', ['-c', 'read x'], { stdio: ['pipe', 'ignore', 'ignore'], holder, running });
  assert.deepEqual(held, [child.pid]);
  assert.ok(running.has(child));
  child.stdin!.end('go\n');
  await exited(child);
  assert.deepEqual(held, []);
  assert.equal(running.size, 0);
});

test('a command that cannot start leaves nothing held', async () => {
  const held = new Set<number | undefined>();
  const running = new Set<ChildProcess>();
  const child = startProcess('/nonexistent/program', [], { stdio: 'ignore', holder: { add: (p) => held.add(p), remove: (p) => held.delete(p) }, running });
  await new Promise((resolve) => child.once('error', resolve));
  assert.equal(running.size, 0);
  assert.deepEqual([...held].filter((p) => p !== undefined), []);
});

test('a group signal reaches what a detached child started, also after the child itself exited', async () => {
  // The child starts a grandchild in its group, prints its pid and exits at once.
  const child = startProcess('sh', ['-c', 'sleep 60 & echo $!'], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
  const grandchild = await new Promise<number>((resolve) => child.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))));
  await exited(child);
  assert.ok(alive(grandchild), 'control: the grandchild outlives its parent');
  signalProcess(child, 'SIGKILL');
  assert.ok(alive(grandchild), 'a plain signal to an exited child reaches nothing');
  signalProcess(child, 'SIGKILL', { group: true });
  for (let i = 0; i < 100 && alive(grandchild); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(!alive(grandchild), 'the group signal ended it');
});

test('stdoutAt: the command writes its output from the offset on in a file that holds other bytes, as the pid it was started with; stdout that is no file is refused at once, a placement that fails is exit 125 with the reason', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-stdoutat-'));
  try {
    const file = path.join(dir, 'part');
    fs.writeFileSync(file, Buffer.alloc(64, 0x2e));
    const fd = fs.openSync(file, 'r+');
    try {
      const child = startProcess('sh', ['-c', 'printf "%s" "$$"'], { stdio: ['ignore', fd, 'pipe'], stdoutAt: 20 });
      const code = await new Promise((resolve) => child.once('close', resolve));
      assert.equal(code, 0);
      const text = fs.readFileSync(file, 'latin1');
      const pid = String(child.pid);
      assert.equal(text, `${'.'.repeat(20)}${pid}${'.'.repeat(64 - 20 - pid.length)}`, 'written at 20, nothing truncated; $$ is the started pid (exec)');
    } finally {
      fs.closeSync(fd);
    }
    // Only a regular file can be placed (dd would wait forever reading a pipe it cannot seek): said at once.
    assert.throws(() => startProcess('sh', ['-c', 'echo ran'], { stdio: ['ignore', 'pipe', 'pipe'], stdoutAt: 5 }), /stdoutAt needs the descriptor of a regular file/);
    // No dd to place it (a PATH with only sh): exit 125 with the shell's words, the command never runs.
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));
    const fd2 = fs.openSync(file, 'r+');
    try {
      const failing = startProcess('sh', ['-c', 'echo ran'], { stdio: ['ignore', fd2, 'pipe'], stdoutAt: 5, env: { PATH: bin } });
      let err = '';
      failing.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      const code = await new Promise((resolve) => failing.once('close', resolve));
      assert.equal(code, 125, err);
      assert.match(err, /^cannot place the output at 5: .*dd/);
      assert.equal(fs.readFileSync(file, 'latin1').includes('ran'), false);
    } finally {
      fs.closeSync(fd2);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
