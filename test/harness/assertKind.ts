import assert from 'node:assert/strict';
import { RemoteRunsError, type ErrorKind } from '../../src/core/types';

/** Awaits `p` and asserts it failed with our typed error of this kind; returns the error for further checks. */
export async function rejectsWith(p: Promise<unknown>, kind: ErrorKind): Promise<RemoteRunsError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof RemoteRunsError, `expected RemoteRunsError, got ${String(e)}`);
    assert.equal(e.kind, kind, e.message);
    return e;
  }
  assert.fail(`expected a ${kind} error`);
}

/**
 * Polls until `check` holds: for effects that complete asynchronously (a channel's close being acknowledged).
 * A guard against hanging the suite, not a timing assertion.
 */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, limitMs = 20_000): Promise<void> {
  const giveUp = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > giveUp) assert.fail(`gave up waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
