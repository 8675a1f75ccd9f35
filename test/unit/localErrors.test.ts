/**
 * An exception of this process is never reported as `command-failed` (that kind is for remote commands): a limit a
 * huge input reached is `too-large`, anything else `internal`; a RemoteRunsError keeps its kind.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asRemoteRunsError, RemoteRunsError } from '../../src/core/types';

test('a stack overflow or a string past its limit is too-large; another local fault is internal', () => {
  let overflow: unknown;
  const deep = (n: number): number => deep(n + 1) + 1;
  try {
    deep(0);
  } catch (e) {
    overflow = e;
  }
  assert.equal(asRemoteRunsError(overflow).kind, 'too-large');
  assert.match(asRemoteRunsError(overflow).message, /too large to summarise/);
  let long: unknown;
  try {
    'x'.repeat(2 ** 30);
  } catch (e) {
    long = e;
  }
  assert.equal(asRemoteRunsError(long).kind, 'too-large');
  assert.equal(asRemoteRunsError(new TypeError('x is undefined')).kind, 'internal');
  assert.match(asRemoteRunsError('oops').message, /not of the remote side/);
  const remote = new RemoteRunsError('command-failed', 'exit 1');
  assert.equal(asRemoteRunsError(remote), remote);
});
