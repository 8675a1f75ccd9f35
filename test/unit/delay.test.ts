import { test } from 'node:test';
import assert from 'node:assert/strict';
import { delay } from '../../src/core/util/delay';
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
