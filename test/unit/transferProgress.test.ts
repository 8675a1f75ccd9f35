/**
 * The one line a download's progress is shown as (the CLI's progress line, the extension's notification): the time
 * left only while bytes arrive, never a stale "1 s left" while the remote side finishes its SHA-256 or while resumed
 * ranges are hashed on both sides (issue 33: a minute-long check sat at "1 s left").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { progressText } from '../../src/core/transfer/progress';
import type { DownloadProgress } from '../../src/core/transfer/types';

const MB = 1_000_000;
const base: DownloadProgress = { bytesDone: 0, bytesTotal: 3400 * MB, bytesPerSec: 0, etaSec: undefined, fileIndex: 1, fileCount: 1, file: 'checkpoint.pt', phase: 'transfer' };

test('while bytes arrive: how many, how fast, the time left', () => {
  assert.equal(progressText({ ...base, bytesDone: 1700 * MB, bytesPerSec: 100 * MB, etaSec: 17 }), '1.7 GB of 3.4 GB · 100 MB/s · 17 s left');
  assert.equal(progressText({ ...base, bytesDone: 10 * MB }), '10 MB of 3.4 GB', 'no speed known yet: none shown');
});

test('every byte here, the streams waiting for the remote SHA-256: said so, no time left', () => {
  const text = progressText({ ...base, bytesDone: 3400 * MB, bytesPerSec: 1 * MB, etaSec: 0 });
  assert.equal(text, '3.4 GB of 3.4 GB · waiting for the remote SHA-256');
  assert.doesNotMatch(text, /left/);
});

test('the verify phase: "verifying SHA-256 · n of m", whatever speed and time the transfer left behind', () => {
  const text = progressText({ ...base, phase: 'verify', bytesDone: 3400 * MB, bytesPerSec: 50 * MB, etaSec: 0.2, verifyDone: 1200 * MB, verifyTotal: 3000 * MB });
  assert.equal(text, 'verifying SHA-256 · 1.2 GB of 3.0 GB');
  assert.equal(progressText({ ...base, phase: 'verify', bytesDone: 3400 * MB }), 'verifying SHA-256');
});

test('several files: which one', () => {
  assert.equal(progressText({ ...base, phase: 'verify', verifyDone: 0, verifyTotal: 5 * MB, fileIndex: 2, fileCount: 3 }), 'verifying SHA-256 · 0 B of 5.0 MB · file 2 of 3');
});

test('before the plan: the files are being listed, nothing else claimed', () => {
  assert.equal(progressText({ ...base, phase: 'list', bytesTotal: 0, fileCount: 0, fileIndex: 0, file: '' }), 'listing the files of the checkpoint');
});

test('every byte here and proven, files being put in place: how many, never "waiting for the remote SHA-256"', () => {
  const text = progressText({ ...base, phase: 'finish', bytesDone: 1 * MB, bytesTotal: 1 * MB, fileIndex: 100_000, fileCount: 100_000, filesPlaced: 41_279, filesToPlace: 100_000 });
  assert.equal(text, '1.0 MB of 1.0 MB · all here and proven, putting files in place · 41,279 of 100,000');
  assert.doesNotMatch(text, /waiting|left/);
});
