/** The download folder offered first (issue 17): outside the workspace, the platform's downloads folder when there is one. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isInside, offeredDownloadFolder } from '../../src/extension/download/downloadFolder';

test('the offered folder: ~/Downloads/remote-runs when ~/Downloads exists, else ~/remote-runs-downloads; never in the workspace', () => {
  assert.equal(offeredDownloadFolder('/home/u', (p) => p === '/home/u/Downloads'), '/home/u/Downloads/remote-runs');
  assert.equal(offeredDownloadFolder('/home/u', () => false), '/home/u/remote-runs-downloads');
  assert.equal(isInside(offeredDownloadFolder('/home/u', () => false), '/home/u/project'), false);
});

test('inside a folder: itself and below, not a sibling that shares a prefix', () => {
  assert.equal(isInside('/w/p', '/w/p'), true);
  assert.equal(isInside('/w/p/checkpoints', '/w/p'), true);
  assert.equal(isInside('/w/p2/checkpoints', '/w/p'), false);
  assert.equal(isInside('/w', '/w/p'), false);
});
