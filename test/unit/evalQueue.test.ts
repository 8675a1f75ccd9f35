/**
 * Evaluating several checkpoints in one go (core/eval/queue.ts): which checkpoints "since…" takes, the order of a
 * multi-select, and a queue that starts each eval only after the one before it ended, goes on past one that cannot
 * start, and stops between items when cancelled.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkpointsSince, queueOrder, runEvalQueue } from '../../src/core/eval/queue';
import type { Checkpoint } from '../../src/core/types';

const step = (n: number, extra: Partial<Checkpoint> = {}): Checkpoint => ({ name: `step_${n}`, kind: 'step', step: n, layout: 'step_N', path: `/r/step_${n}`, isDir: true, bytes: 1, mtime: 1, files: [], newest: false, ...extra });

test('every checkpoint since a step: complete step checkpoints from it on, in step order; aliases and ones being written left out', () => {
  const run = {
    checkpoints: [
      step(100),
      step(200),
      step(300),
      step(400, { incomplete: 'no weights file yet' }),
      { ...step(300), name: 'last.ckpt', kind: 'alias' as const, step: null, alias: { role: 'last' as const, of: 'step_300', step: 300, how: 'symlink' as const } },
      { ...step(0), name: 'final', kind: 'final' as const, step: null },
    ],
  };
  assert.deepEqual(checkpointsSince(run, 200).map((c) => c.name), ['step_200', 'step_300']);
  assert.deepEqual(checkpointsSince(run, 0).map((c) => c.name), ['step_100', 'step_200', 'step_300']);
  assert.deepEqual(checkpointsSince(run, 301), []);
});

test('a multi-select is queued once per checkpoint, in step order', () => {
  const picked = [step(300), step(100), step(300), step(200)].map((checkpoint) => ({ checkpoint }));
  assert.deepEqual(queueOrder(picked).map((p) => p.checkpoint.name), ['step_100', 'step_200', 'step_300']);
});

test('one at a time: the next eval starts only once the previous one ended; one that cannot start does not stop the rest', async () => {
  const events: string[] = [];
  const ends = new Map<string, () => void>();
  const done = runEvalQueue(
    ['a', 'b', 'c', 'd'],
    {
      async start(item) {
        events.push(`start ${item}`);
        if (item === 'b') throw new Error('profile failed to launch');
        if (item === 'c') return undefined; // skipped: the user declined the download it needs
        return item;
      },
      ended: (s) => new Promise<void>((resolve) => ends.set(s, () => (events.push(`end ${s}`), resolve()))),
      onDone: (item, o) => events.push(`done ${item}${o.error ? ' (error)' : ''}`),
    },
    new AbortController().signal,
  );
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['start a'], 'b waits for a');
  ends.get('a')!();
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(events, ['start a', 'end a', 'done a', 'start b', 'done b (error)', 'start c', 'start d']);
  ends.get('d')!();
  assert.deepEqual(await done, { started: 2, skipped: 1, failed: 1, notReached: 0 });
});

test('cancel stops the queue between items: the running eval is not waited for, later ones are not started', async () => {
  const controller = new AbortController();
  const started: string[] = [];
  const report = await runEvalQueue(
    ['a', 'b', 'c'],
    {
      async start(item) {
        started.push(item);
        return item;
      },
      ended: (_s, signal) =>
        new Promise<void>((_resolve, reject) => {
          signal.addEventListener('abort', () => reject(new Error('cancelled')));
          controller.abort();
        }),
    },
    controller.signal,
  );
  assert.deepEqual(started, ['a']);
  assert.deepEqual(report, { started: 1, skipped: 0, failed: 0, notReached: 2 });
});
