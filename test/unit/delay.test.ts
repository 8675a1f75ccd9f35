import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, delay } from '../../src/core/util/delay';
import { rejectsWith } from '../harness/assertKind';

test('delay resolves when no signal aborts it', async () => {
  await delay(1);
});

test('delay rejects with cancelled at once when the signal has already aborted', async () => {
  const c = new AbortController();
  c.abort();
  // A long pause: only the abort can end it within the test.
  await rejectsWith(delay(3_600_000, c.signal), 'cancelled');
});

test('delay rejects when the signal aborts during the pause, with the caller\'s error', async () => {
  const c = new AbortController();
  const p = delay(3_600_000, c.signal, () => new Error('stopped following'));
  c.abort();
  await assert.rejects(p, /stopped following/);
});

test('the one backoff doubles from its base per retry and stops at its cap; the budgets its users name add up', () => {
  assert.deepEqual([1, 2, 3, 4].map((a) => backoffMs(a, 500)), [500, 1000, 2000, 4000]);
  assert.equal(backoffMs(12, 500), 30_000, 'capped at 30 s');
  assert.equal(backoffMs(3, 500, 1500), 1500);
  // The pool's refused channel opens: 6 retries from 20 ms are about 1.3 s in all, as pool.ts says.
  assert.equal([1, 2, 3, 4, 5, 6].reduce((sum, a) => sum + backoffMs(a, 20), 0), 1260);
});
