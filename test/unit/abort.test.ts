/** The one token → AbortSignal adapter (core/util/abort.ts): aborts with the token, and stops listening after. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withCancellation, type CancellationLike } from '../../src/core/util/abort';

/** A token as VS Code's CancellationTokenSource makes one: listeners, cancel(), and how many still listen. */
function source(cancelled = false): { token: CancellationLike; cancel(): void; listening(): number } {
  const listeners = new Set<() => unknown>();
  let state = cancelled;
  return {
    token: {
      get isCancellationRequested() {
        return state;
      },
      onCancellationRequested(l) {
        listeners.add(l);
        return { dispose: () => listeners.delete(l) };
      },
    },
    cancel() {
      state = true;
      for (const l of [...listeners]) l();
    },
    listening: () => listeners.size,
  };
}

test('a token cancelled while the work runs aborts its signal; the listener is removed when the work ends', async () => {
  const s = source();
  let seen: AbortSignal | undefined;
  const done = withCancellation(s.token, (signal) => {
    seen = signal;
    return new Promise<string>((resolve) => signal.addEventListener('abort', () => resolve('aborted')));
  });
  assert.equal(seen?.aborted, false);
  assert.equal(s.listening(), 1);
  s.cancel();
  assert.equal(await done, 'aborted');
  assert.equal(s.listening(), 0);
});

test('a token already cancelled gives an aborted signal; a failing work still stops listening', async () => {
  const s = source(true);
  assert.equal(await withCancellation(s.token, (signal) => signal.aborted), true);
  const t = source();
  await assert.rejects(withCancellation(t.token, () => Promise.reject(new Error('boom'))), /boom/);
  assert.equal(t.listening(), 0);
});
