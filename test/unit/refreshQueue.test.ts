import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RefreshQueue } from '../../src/core/tree/refreshQueue';

test('requests within the delay are coalesced into one batch', async () => {
  const batches: string[][] = [];
  const q = new RefreshQueue(async (ids) => {
    batches.push([...ids].sort());
  }, 20);
  q.push('a');
  q.push('b');
  q.push('a');
  await q.whenIdle();
  assert.deepEqual(batches, [['a', 'b']]);
  q.dispose();
});

test('a batch never overlaps the previous one', async () => {
  let running = 0;
  let maxRunning = 0;
  const seen: string[] = [];
  const q = new RefreshQueue(async (ids) => {
    running++;
    maxRunning = Math.max(maxRunning, running);
    await new Promise((r) => setTimeout(r, 30));
    seen.push(...ids);
    running--;
  }, 1);
  q.push('a');
  await new Promise((r) => setTimeout(r, 10)); // first batch is running now
  q.push('b');
  await new Promise((r) => setTimeout(r, 5));
  await q.whenIdle();
  assert.equal(maxRunning, 1);
  assert.deepEqual(seen, ['a', 'b']);
  q.dispose();
});

test('a failing batch does not stop later ones', async () => {
  const seen: string[] = [];
  const q = new RefreshQueue(async (ids) => {
    if (ids.has('bad')) throw new Error('boom');
    seen.push(...ids);
  }, 1);
  q.push('bad');
  await q.whenIdle();
  q.push('good');
  await q.whenIdle();
  assert.deepEqual(seen, ['good']);
  q.dispose();
});
