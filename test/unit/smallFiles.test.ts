/**
 * Batches of small files (src/core/transfer/smallFiles.ts), run by the local `sh` as the remote side would: each file's
 * bytes are cut out by its listed size and carry the remote SHA-256; a batch that does not add up gives nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { batchable, batches, smallBatchCommand, SMALL_FILE_BYTES } from '../../src/core/transfer/smallFiles';
import { shellJoin } from '../../src/core/shell/quote';
import { statCheckpointCommand } from '../../src/core/transfer/remoteCommands';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-small-'));

function run(files: { remotePath: string; bytes: number }[], hash = true) {
  const cmd = smallBatchCommand(files, hash);
  const r = spawnSync('sh', ['-c', shellJoin(cmd.argv)]);
  return cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status ?? -1, truncated: false });
}

test('each file of a batch arrives whole with its remote SHA-256, names with spaces, quotes and tabs included', () => {
  const names = ['a.bin', 'with space', "it's", 'tab\there', 'empty'];
  const files = names.map((n, i) => {
    const p = path.join(tmp, n);
    fs.writeFileSync(p, n === 'empty' ? '' : `content ${i}\n`.repeat(i + 1));
    return { remotePath: p, bytes: fs.statSync(p).size };
  });
  const pieces = run(files);
  for (const [i, f] of files.entries()) {
    const want = fs.readFileSync(f.remotePath);
    assert.deepEqual(pieces[i]?.data, want);
    const sha = createHash('sha256').update(want).digest('hex');
    assert.equal(pieces[i]?.local, sha);
    assert.equal(pieces[i]?.remote, sha);
  }
  assert.deepEqual(run(files, false).map((p) => p?.remote), files.map(() => undefined));
});

test('a batch whose sizes do not add up (a file grew, or is gone) gives nothing, never misplaced bytes', () => {
  const a = path.join(tmp, 'grows');
  const b = path.join(tmp, 'after');
  fs.writeFileSync(a, 'four');
  fs.writeFileSync(b, 'bbbb');
  assert.deepEqual(run([{ remotePath: a, bytes: 3 }, { remotePath: b, bytes: 4 }]), [undefined, undefined]);
  assert.deepEqual(run([{ remotePath: path.join(tmp, 'gone'), bytes: 0 }, { remotePath: b, bytes: 4 }]), [undefined, undefined]);
});

test('batches keep within their budgets and order; large, relative and newline names are not batched', () => {
  const many = Array.from({ length: 3000 }, (_, i) => ({ remotePath: `/ck/${'x'.repeat(40)}/${i}`, bytes: 10 }));
  const bs = [...batches(many)];
  assert.ok(bs.length > 1);
  assert.deepEqual(bs.flat(), many);
  for (const b of bs) assert.ok(b.reduce((n, f) => n + Buffer.byteLength(f.remotePath) + 1, 0) <= 24 << 10);
  assert.equal(batchable({ remotePath: '/a', bytes: SMALL_FILE_BYTES + 1 }), false);
  assert.equal(batchable({ remotePath: 'rel/a', bytes: 1 }), false);
  assert.equal(batchable({ remotePath: '/a\nb', bytes: 1 }), false);
  assert.equal(batchable({ remotePath: '/a', bytes: 1 }), true);
});

test('each file of a batch comes with its size and mtime as the walk lists them, after its bytes were read', () => {
  const dir = fs.mkdtempSync(path.join(tmp, 'stat-'));
  const names = ['one', 'two words', 'three'];
  for (const [i, n] of names.entries()) fs.writeFileSync(path.join(dir, n), 'x'.repeat(i + 1));
  fs.utimesSync(path.join(dir, 'two words'), new Date(1_700_000_000_123), new Date(1_700_000_000_123));
  const walkCmd = statCheckpointCommand(dir);
  const w = spawnSync('sh', ['-c', shellJoin(walkCmd.argv)]);
  const walk = walkCmd.parse({ stdout: w.stdout, stderr: w.stderr, code: w.status ?? -1, truncated: false });
  const files = names.map((n) => ({ remotePath: path.join(dir, n), bytes: fs.statSync(path.join(dir, n)).size }));
  for (const hash of [true, false]) {
    const pieces = run(files, hash);
    for (const [i, n] of names.entries()) {
      const listed = walk.files.find((f) => f.relative === n)!;
      assert.deepEqual(pieces[i]?.after, { bytes: listed.bytes, mtime: listed.mtime }, `${n}: the batch's stat is the walk's (hash ${hash})`);
    }
  }
  assert.ok(Math.abs(walk.files.find((f) => f.relative === 'two words')!.mtime - 1_700_000_000_123) < 0.01, 'mtimes below the second are kept');
});

test('a file of a batch that is no longer a regular file comes without a stat; the others keep theirs', () => {
  const dir = fs.mkdtempSync(path.join(tmp, 'nf-'));
  fs.writeFileSync(path.join(dir, 'a'), 'aa');
  fs.symlinkSync('/dev/null', path.join(dir, 'null'));
  const pieces = run([{ remotePath: path.join(dir, 'a'), bytes: 2 }, { remotePath: path.join(dir, 'null'), bytes: 0 }]);
  assert.equal(pieces[0]?.after?.bytes, 2);
  assert.ok(pieces[1], 'the batch still adds up');
  assert.equal(pieces[1]?.after, undefined, '/dev/null is not a regular file');
});
