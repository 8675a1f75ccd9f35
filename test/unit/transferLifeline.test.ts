/**
 * The lifeline of an OpenSSH session (openssh/session.ts): when its owner's pipe closes, it kills the pids it holds
 * and stays until they are gone, so whoever waits for the lifeline to exit (the lock's next owner) knows nothing it
 * killed still writes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Lifeline } from '../../src/core/util/lifeline';
import { streamsForRoundTrip } from '../../src/core/transfer/download';
import { alive as running } from '../harness/processes';

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail(`timed out waiting: ${what}`);
}

test('a closed lifeline kills what it holds, then exits only once they are gone', async () => {
  // Not our children (so no zombie lingers for our reaper): sh starts a sleep in the background and exits.
  const pids = [0, 1].map(() => {
    const out = spawn('sh', ['-c', 'sleep 60 & echo $!'], { stdio: ['ignore', 'pipe', 'ignore'] });
    return new Promise<number>((resolve) => out.stdout.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))));
  });
  const victims = await Promise.all(pids);
  const line = new Lifeline();
  const lifePid = line.pid!;
  for (const p of victims) line.add(p);
  line.remove(victims[1]);
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(victims.every(running), 'nothing is killed while the owner holds the pipe');
  line.close();
  await until(() => !running(lifePid), 'the lifeline exits');
  assert.equal(running(victims[0]), false, 'what it held is gone by the time it has exited');
  assert.equal(running(victims[1]), true, 'a pid taken off the list is left alone');
  process.kill(victims[1], 'SIGKILL');
});

test('streams per file follow the round trip: one on loopback or a LAN, eight or more at 50 ms', () => {
  assert.equal(streamsForRoundTrip(0.2), 1);
  assert.equal(streamsForRoundTrip(4), 1);
  assert.ok(streamsForRoundTrip(10) >= 2);
  assert.ok(streamsForRoundTrip(50) >= 8);
});
