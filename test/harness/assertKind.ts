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
