/** The one process starter (core/util/processes.ts): holders and running sets follow a child's life; group signals. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
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
