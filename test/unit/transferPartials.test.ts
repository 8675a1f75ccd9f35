/**
 * Interrupted downloads, found from the local side only (core/transfer/partials.ts, localCopy.ts): a `.part` with its
 * record names the checkpoint it belongs to and how much is here; one whose download runs now (its lock held by a
 * live process) is not interrupted, one whose lock holder died is; Discard removes the files; the tree's mark for a
 * checkpoint says `partial` with the bytes here only for a record of the listed remote file and size.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { localCopyOf } from '../../src/core/transfer/localCopy';
import { discardPartialDownload, findPartialDownloads, partialPercent } from '../../src/core/transfer/partials';
import { filePaths, lockPath, writeJsonAtomic, type PartRecord } from '../../src/core/transfer/records';
import { acquireLock } from '../../src/core/transfer/lock';
import { checkpointLocalRoot } from '../../src/core/transfer/plan';
import type { Checkpoint } from '../../src/core/types';

const ck: Checkpoint = {
  name: 'step_100', kind: 'step', step: 100, layout: 'step_N', path: '/runs/exp/step_100', isDir: true, bytes: 1000, mtime: 1, newest: true,
  files: [{ name: 'model.bin', path: '/runs/exp/step_100/model.bin', bytes: 1000, mtime: 1 }],
};
const origin = { host: 'gpu1', target: { kind: 'pct' as const, id: '200' }, run: 'exp', checkpoint: 'step_100' };

/** What an interrupted download leaves: `have` bytes of model.bin in its .part, and the record saying so. */
async function interrupted(root: string, have: number, remoteBytes = 1000): Promise<void> {
  const paths = filePaths(root, path.join(checkpointLocalRoot(root, 'exp', ck), 'model.bin'));
  mkdirSync(path.dirname(paths.part), { recursive: true });
  writeFileSync(paths.part, Buffer.alloc(have, 1));
  const rec: PartRecord = { version: 2, remotePath: '/runs/exp/step_100/model.bin', remoteBytes, remoteMtime: 1, done: have ? [[0, have]] : [], checked: [], origin };
  await writeJsonAtomic(paths.partRecord, rec);
}

test('an interrupted download is found with its checkpoint and share; the tree mark says partial', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rr-partials-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  assert.deepEqual(await findPartialDownloads(root), [], 'nothing downloaded yet');
  await interrupted(root, 140);
  const [p, ...rest] = await findPartialDownloads(root);
  assert.deepEqual(rest, []);
  assert.deepEqual(p.origin, origin);
  assert.equal(p.running, false);
  assert.equal(partialPercent(p.bytesHere, p.bytesTotal), '14%');
  assert.deepEqual(await localCopyOf(root, 'exp', ck), { kind: 'partial', path: checkpointLocalRoot(root, 'exp', ck), bytesHere: 140, bytesTotal: 1000 });
  // A listing with another size: those bytes are of another version, nothing to resume.
  assert.equal((await localCopyOf(root, 'exp', { ...ck, files: [{ ...ck.files[0], bytes: 2000 }] })).kind, 'none');
});

test('a download that runs now is not interrupted; once its holder is gone it is; Discard removes what it left', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rr-partials-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  await interrupted(root, 990);
  const lock = await acquireLock(lockPath(root, checkpointLocalRoot(root, 'exp', ck)), 'exp/step_100', 'a test');
  const [held] = await findPartialDownloads(root);
  assert.equal(held.running, true, 'its lock is held by a live process');
  await assert.rejects(discardPartialDownload(held), /being downloaded/);
  await lock.release();
  const [p] = await findPartialDownloads(root);
  assert.equal(p.running, false);
  assert.equal(partialPercent(p.bytesHere, p.bytesTotal), '99%', '99.0% is not yet 100%');
  await discardPartialDownload(p);
  for (const { part, record } of p.parts) assert.ok(!existsSync(part) && !existsSync(record));
  assert.deepEqual(await findPartialDownloads(root), []);
});

test('a download killed before its first byte is not announced', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rr-partials-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  await interrupted(root, 0);
  assert.deepEqual(await findPartialDownloads(root), []);
});
