/**
 * The round trip a connection keeps (src/core/ssh/roundTrip.ts): measured on first ask and shared, a failure not kept,
 * a caller's cancellation ending its own wait only; the fastest of the probes counts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fastestOf, RoundTrip, ROUND_TRIP_PROBES } from '../../src/core/ssh/roundTrip';
import { RemoteRunsError } from '../../src/core/types';

test('the fastest of the probes, run one after another', async () => {
  const times = [7, 3, 9];
  let running = 0;
  let most = 0;
  const ms = await fastestOf(async () => {
    most = Math.max(most, ++running);
    await new Promise((r) => setTimeout(r, 1));
    running--;
    return times.shift()!;
  });
  assert.equal(ms, 3);
  assert.equal(most, 1, 'never two probes at once');
  assert.equal(times.length, 3 - ROUND_TRIP_PROBES);
});

test('measured once: every ask, at once or later, gets the same figure', async () => {
  let measured = 0;
  const rt = new RoundTrip(async () => {
    measured++;
    await new Promise((r) => setTimeout(r, 5));
    return 0.4;
  });
  assert.deepEqual(await Promise.all([rt.get(), rt.get(), rt.get()]), [0.4, 0.4, 0.4]);
  assert.equal(await rt.get(), 0.4);
  assert.equal(measured, 1);
});

test('a failed measurement is not kept: the next ask measures again', async () => {
  let calls = 0;
  const rt = new RoundTrip(async () => {
    if (++calls === 1) throw new RemoteRunsError('unreachable', 'gone');
    return 12;
  });
  await assert.rejects(rt.get(), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'unreachable');
  assert.equal(await rt.get(), 12);
  assert.equal(calls, 2);
});

test("a caller's signal ends its own wait (cancelled), not the measurement another caller shares", async () => {
  let finish!: (ms: number) => void;
  const rt = new RoundTrip(() => new Promise<number>((r) => (finish = r)));
  const ac = new AbortController();
  const mine = rt.get(ac.signal);
  const theirs = rt.get();
  ac.abort();
  await assert.rejects(mine, (e: unknown) => e instanceof RemoteRunsError && e.kind === 'cancelled');
  finish(2.5);
  assert.equal(await theirs, 2.5);
  const aborted = new AbortController();
  aborted.abort();
  await assert.rejects(rt.get(aborted.signal), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'cancelled');
});
