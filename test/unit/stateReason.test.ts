// A state row's description (src/core/emptyStates.ts stateReason): the reason inline, never the raw kind (issue 17).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stateReason } from '../../src/core/emptyStates';

test('the reason is the first sentence of the message, without what the label already says, cut at ~80 characters', () => {
  assert.equal(stateReason('Unreachable', 'connect ECONNREFUSED 127.0.0.1:2222. Check the port.'), 'connect ECONNREFUSED 127.0.0.1:2222.');
  assert.equal(stateReason('/workspace: Path does not exist', '/workspace: Path does not exist'), '');
  assert.equal(stateReason('Authentication failed', 'Authentication failed: the server refused publickey id_ed25519\nTried: …'), 'the server refused publickey id_ed25519');
  const long = stateReason('Error', 'x'.repeat(200));
  assert.equal(long.length, 80);
  assert.ok(long.endsWith('…'));
  assert.ok(!/path-missing|auth-failed|unreachable/.test(stateReason('Path does not exist', '~/gone does not exist')), 'no raw kind');
});
