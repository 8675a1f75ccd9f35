import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closestName, editDistance } from '../../src/core/util/closest';

test('edit distance counts insertions, deletions and substitutions', () => {
  assert.equal(editDistance('tesbox', 'testbox'), 1);
  assert.equal(editDistance('gpu-1', 'gpu1'), 1);
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
});

test('the closest name is offered only when it is a likely typo', () => {
  assert.equal(closestName('tesbox', ['gpu1', 'testbox', 'bastion']), 'testbox');
  assert.equal(closestName('GPU1', ['gpu1']), 'gpu1');
  assert.equal(closestName('a100', ['box', 'bastion']), undefined);
  assert.equal(closestName('x', []), undefined);
  // The name itself is no suggestion.
  assert.equal(closestName('gpu1', ['gpu1']), undefined);
});
