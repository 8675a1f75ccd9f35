/**
 * The tree's "downloaded" mark (core/transfer/localCopy.ts): a checkpoint counts as downloaded only when each listed
 * file is at its final place with the download's own done record, untouched since; partial files, files without a
 * record, changed or deleted files and a re-listing with another size never count.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { localCopyOf } from '../../src/core/transfer/localCopy';
import { filePaths, writeDoneRecord } from '../../src/core/transfer/records';
import type { Checkpoint } from '../../src/core/types';

const dirCheckpoint = (files: { name: string; bytes: number }[]): Checkpoint => ({
  name: 'step_100', kind: 'step', step: 100, layout: 'step_N', path: '/runs/exp/step_100', isDir: true,
  bytes: files.reduce((n, f) => n + f.bytes, 0), mtime: 1, newest: true,
  files: files.map((f) => ({ name: f.name, path: `/runs/exp/step_100/${f.name}`, bytes: f.bytes, mtime: 1 })),
});

/** A file as a finished download leaves it: at its place, with its done record. */
async function downloaded(root: string, local: string, remote: string, bytes: number): Promise<void> {
  mkdirSync(path.dirname(local), { recursive: true });
  writeFileSync(local, Buffer.alloc(bytes, 7));
  const st = statSync(local);
  await writeDoneRecord(filePaths(root, local), { version: 2, remotePath: remote, remoteBytes: bytes, remoteMtime: 1, verified: 'sha256', localBytes: st.size, localMtimeMs: st.mtimeMs });
}

test('a folder checkpoint is downloaded when all its files have done records and are unchanged', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rr-localcopy-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const ck = dirCheckpoint([{ name: 'model.pt', bytes: 100 }, { name: 'sub/opt.pt', bytes: 30 }]);
  const dir = path.join(root, 'exp', 'step_100');
  assert.deepEqual(await localCopyOf(root, 'exp', ck), { kind: 'none', path: dir }, 'nothing there');

  await downloaded(root, path.join(dir, 'model.pt'), '/runs/exp/step_100/model.pt', 100);
  assert.equal((await localCopyOf(root, 'exp', ck)).kind, 'none', 'one of two files is not downloaded');

  // The second file only as a partial download: bytes in .remote-runs/partial, nothing at its place.
  const partial = filePaths(root, path.join(dir, 'sub', 'opt.pt')).part;
  mkdirSync(path.dirname(partial), { recursive: true });
  writeFileSync(partial, Buffer.alloc(30));
  assert.equal((await localCopyOf(root, 'exp', ck)).kind, 'none', 'a partial file never counts');

  await downloaded(root, path.join(dir, 'sub', 'opt.pt'), '/runs/exp/step_100/sub/opt.pt', 30);
  assert.deepEqual(await localCopyOf(root, 'exp', ck), { kind: 'downloaded', path: dir });

  // Listed again with another size (rewritten remotely): not the copy we have.
  assert.equal((await localCopyOf(root, 'exp', dirCheckpoint([{ name: 'model.pt', bytes: 101 }, { name: 'sub/opt.pt', bytes: 30 }]))).kind, 'none');

  // Changed locally since it was verified (same size, other mtime): not ours any more.
  utimesSync(path.join(dir, 'model.pt'), new Date(2000, 1, 1), new Date(2000, 1, 1));
  assert.equal((await localCopyOf(root, 'exp', ck)).kind, 'none');
  await downloaded(root, path.join(dir, 'model.pt'), '/runs/exp/step_100/model.pt', 100);
  assert.equal((await localCopyOf(root, 'exp', ck)).kind, 'downloaded');

  // Deleted: the mark drops.
  rmSync(path.join(dir, 'sub', 'opt.pt'));
  assert.equal((await localCopyOf(root, 'exp', ck)).kind, 'none');
});

test('a file at its place without the download\'s record (copied by hand) is not a download', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rr-localcopy-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const ck = dirCheckpoint([{ name: 'model.pt', bytes: 10 }]);
  mkdirSync(path.join(root, 'exp', 'step_100'), { recursive: true });
  writeFileSync(path.join(root, 'exp', 'step_100', 'model.pt'), Buffer.alloc(10));
  assert.equal((await localCopyOf(root, 'exp', ck)).kind, 'none');
});

test('a flat checkpoint file, a run name with folders, and names that cannot be local paths', async (t) => {
  const root = mkdtempSync(path.join(tmpdir(), 'rr-localcopy-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const flat: Checkpoint = { name: 'model_step_500.pt', kind: 'step', step: 500, layout: 'flat', path: '/r/a/seed1/model_step_500.pt', isDir: false, bytes: 64, mtime: 1, newest: true, files: [] };
  const local = path.join(root, 'a', 'seed1', 'model_step_500.pt');
  await downloaded(root, local, flat.path, 64);
  assert.deepEqual(await localCopyOf(root, 'a/seed1', flat), { kind: 'downloaded', path: local });
  assert.equal((await localCopyOf(root, 'a/seed1', { ...flat, name: '..' })).kind, 'none');
  assert.equal((await localCopyOf(path.join(root, 'missing'), 'a/seed1', flat)).kind, 'none', 'no download folder yet');
});
