/**
 * One writer per download destination (src/core/transfer/lock.ts): a live holder makes a second download fail with
 * `busy` naming it; a dead one (SIGKILLed, or its pid now another process) is taken over; two takers of one stale
 * lock never both win; a lock taken from under its holder is noticed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { acquireLock } from '../../src/core/transfer/lock';
import { isRemoteRunsError } from '../../src/core/types';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-lock-'));
let n = 0;
const fresh = (): string => path.join(tmp, `d${n++}`, 'locks', 'run', 'step_1.lock');

async function busy(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    assert.ok(isRemoteRunsError(e) && e.kind === 'busy', String(e));
    return e.message;
  }
  assert.fail('expected busy');
}

test('a live holder: the second taker fails at once with busy naming it; after release the lock is free', async () => {
  const file = fresh();
  const a = await acquireLock(file, 'step_1', 'remote-runs pull');
  const msg = await busy(acquireLock(file, 'step_1', 'a VS Code window'));
  assert.match(msg, new RegExp(`step_1 is being downloaded by remote-runs pull \\(pid ${process.pid}, since `));
  await a.release();
  assert.ok(!fs.existsSync(file));
  const b = await acquireLock(file, 'step_1', 'x');
  assert.ok(b.owned);
  await b.release();
});

test('a holder killed with SIGKILL is taken over; a pid now running another program too', async () => {
  const file = fresh();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // A process that ran and is gone.
  const dead = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
  fs.writeFileSync(file, JSON.stringify({ pid: Number(dead), host: os.hostname(), what: 'remote-runs pull', since: 'then', token: 'old' }));
  const a = await acquireLock(file, 'step_1', 'me');
  assert.equal(JSON.parse(fs.readFileSync(file, 'utf8')).pid, process.pid);
  await a.release();
  // A pid that runs, but started at another time than the holder did: not the holder.
  const other = spawn('sleep', ['30']);
  try {
    fs.writeFileSync(file, JSON.stringify({ pid: other.pid, host: os.hostname(), what: 'remote-runs pull', since: 'then', token: 'old', procStart: '1' }));
    const b = await acquireLock(file, 'step_1', 'me');
    await b.release();
    // The same pid with its real start time (read by a lock it took itself) is live.
    fs.writeFileSync(file, JSON.stringify({ pid: other.pid, host: os.hostname(), what: 'remote-runs pull', since: 'then', token: 'old' }));
    await busy(acquireLock(file, 'step_1', 'me'));
  } finally {
    other.kill('SIGKILL');
  }
});

test("another machine's lock is live while it is refreshed, stale after a minute without", async () => {
  const file = fresh();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify({ pid: 1, host: 'elsewhere', what: 'remote-runs pull', since: 'then', token: 'x' }));
  assert.match(await busy(acquireLock(file, 'step_1', 'me')), /pid 1 on elsewhere/);
  const old = new Date(Date.now() - 120_000);
  fs.utimesSync(file, old, old);
  const a = await acquireLock(file, 'step_1', 'me');
  await a.release();
});

test('many takers of one stale lock at once: exactly one wins', async () => {
  for (let round = 0; round < 20; round++) {
    const file = fresh();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ pid: 999_999_999, host: os.hostname(), what: 'x', since: 'then', token: 'stale' }));
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => acquireLock(file, 'step_1', 'me')));
    const won = results.filter((r) => r.status === 'fulfilled');
    assert.equal(won.length, 1, `round ${round}: ${results.map((r) => r.status).join(' ')}`);
    for (const r of results) if (r.status === 'rejected') assert.ok(isRemoteRunsError(r.reason) && r.reason.kind === 'busy', String(r.reason));
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireLock>>>).value.release();
  }
});

test('a lock taken from under its holder is noticed by the holder', async () => {
  const file = fresh();
  const a = await acquireLock(file, 'step_1', 'me');
  let lost = false;
  a.onLost(() => (lost = true));
  fs.writeFileSync(file, JSON.stringify({ pid: process.pid, host: os.hostname(), what: 'another', since: 'now', token: 'someone-else' }));
  const until = Date.now() + 20_000;
  while (!lost && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
  assert.ok(lost && !a.owned, 'the holder saw its lock go');
  await a.release();
  assert.ok(fs.existsSync(file), "releasing never removes another holder's lock");
});

test("a taker waits until the writers a dead holder left (its lifeline) are gone, and the record names the holder's", async () => {
  const file = fresh();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const dead = spawnSync('sh', ['-c', 'echo $$']).stdout.toString().trim();
  fs.writeFileSync(file, JSON.stringify({ pid: Number(dead), host: os.hostname(), what: 'remote-runs pull', since: 'then', token: 'old' }));
  // Still running, as a lifeline that is killing its streams would be.
  const writer = spawn('sleep', ['30']);
  fs.writeFileSync(`${file}.writers`, JSON.stringify({ pid: writer.pid, host: os.hostname() }));
  let taken = false;
  const pending = acquireLock(file, 'step_1', 'me').then((l) => {
    taken = true;
    return l;
  });
  try {
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(taken, false, 'not taken while a writer of the dead holder runs');
    writer.kill('SIGKILL');
    const lock = await pending;
    assert.ok(lock.owned);
    assert.ok(!fs.existsSync(`${file}.writers`), 'the record of the old writers is gone');
    // The new holder names its own, and takes the name back.
    const own = spawn('sleep', ['30']);
    try {
      await lock.writers(own.pid);
      assert.equal(JSON.parse(fs.readFileSync(`${file}.writers`, 'utf8')).pid, own.pid);
      await lock.writers(undefined);
      assert.ok(!fs.existsSync(`${file}.writers`));
    } finally {
      own.kill('SIGKILL');
    }
    await lock.release();
  } finally {
    writer.kill('SIGKILL');
  }
});

test('a writers record of another machine, or of a pid now running another program, is not waited for', async () => {
  const file = fresh();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const other = spawn('sleep', ['30']);
  try {
    fs.writeFileSync(`${file}.writers`, JSON.stringify({ pid: other.pid, host: os.hostname(), procStart: '1' }));
    const a = await acquireLock(file, 'step_1', 'me');
    await a.release();
    fs.writeFileSync(`${file}.writers`, JSON.stringify({ pid: other.pid, host: 'elsewhere' }));
    const b = await acquireLock(file, 'step_1', 'me');
    await b.release();
  } finally {
    other.kill('SIGKILL');
  }
});

test('a holder whose heartbeat cannot read the lock (every descriptor busy: EMFILE) keeps it', async () => {
  // A pull of 100,000 small files once had every descriptor of the process in use; the heartbeat's read of the lock
  // failed with EMFILE, was taken for a loss, and the pull stopped itself with `busy` while no other process existed.
  const file = fresh();
  const a = await acquireLock(file, 'step_1', 'me');
  let lost = false;
  a.onLost(() => (lost = true));
  const fds: number[] = [];
  try {
    for (;;) fds.push(fs.openSync('/dev/null', 'r'));
  } catch (e) {
    assert.equal((e as NodeJS.ErrnoException).code, 'EMFILE', String(e));
  }
  try {
    // Longer than a heartbeat (3 s): at least one beat runs with no descriptor to read the lock with.
    await new Promise((r) => setTimeout(r, 4000));
  } finally {
    for (const fd of fds) fs.closeSync(fd);
  }
  await new Promise((r) => setTimeout(r, 3500));
  assert.ok(!lost && a.owned, 'the holder still holds its lock');
  await a.release();
  assert.ok(!fs.existsSync(file), 'and releases it');
});
