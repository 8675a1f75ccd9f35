/**
 * The parts of a download that need no server: the byte-range argv run through a real local `sh` (hostile
 * names, every range shape), the find record parser, and what the plan makes of local files, `.part`s and records.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseStatRecords, rangeArgv, statCheckpointCommand } from '../../src/core/transfer/remoteCommands';
import { linkWithin, localState, safeSegment } from '../../src/core/transfer/plan';
import { filePaths, writeJsonAtomic } from '../../src/core/transfer/records';
import { shellJoin } from '../../src/core/shell/quote';
import { HOSTILE_NAMES } from '../fixtures/generate';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-transfer-unit-'));
process.on('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));

test('rangeArgv streams exactly bytes [start, end) of files with hostile names, through a real sh', () => {
  const data = randomBytes(100_000);
  for (const name of HOSTILE_NAMES) {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, data);
    for (const [s, e] of [[0, data.length], [0, 1], [0, 65_536], [1, 2], [4096, 70_001], [99_999, 100_000], [12_345, 100_000]]) {
      const out = execFileSync('sh', ['-c', shellJoin(rangeArgv(file, s, e, data.length))]);
      assert.ok(out.equals(data.subarray(s, e)), `${JSON.stringify(name)} [${s}, ${e})`);
    }
  }
  assert.ok(!fs.existsSync(path.join(tmp, 'CANARY')));
});

test('find records: sizes, sub-second mtimes and relative paths holding tabs and newlines', () => {
  const dir = path.join(tmp, 'ck');
  fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'a\tb\nc.pt'), 'xyz');
  fs.writeFileSync(path.join(dir, 'sub', 'e.bin'), '');
  fs.utimesSync(path.join(dir, 'sub', 'e.bin'), 1_700_000_000.25, 1_700_000_000.25);
  const cmd = statCheckpointCommand(dir);
  const stdout = execFileSync('sh', ['-c', shellJoin(cmd.argv)]);
  const recs = cmd.parse({ stdout, stderr: Buffer.alloc(0), code: 0, truncated: false }).files.sort((a, b) => a.relative.localeCompare(b.relative));
  assert.deepEqual(recs.map((r) => [r.relative, r.bytes]), [['a\tb\nc.pt', 3], ['sub/e.bin', 0]]);
  assert.equal(recs[1].mtime, 1_700_000_000_250);
  // A flat file is its own root: relative ''.
  const flat = parseStatRecords(execFileSync('sh', ['-c', shellJoin(statCheckpointCommand(path.join(dir, 'a\tb\nc.pt')).argv)]));
  assert.deepEqual(flat.map((r) => r.relative), ['']);
  assert.throws(() => parseStatRecords(Buffer.from('garbage\0')), /Unexpected file record/);
});

test('a missing checkpoint is path-missing, not an empty list', () => {
  const cmd = statCheckpointCommand(path.join(tmp, 'nope'));
  let result;
  try {
    execFileSync('sh', ['-c', shellJoin(cmd.argv)], { stdio: 'pipe' });
    assert.fail('find should fail');
  } catch (e) {
    const err = e as { stdout: Buffer; stderr: Buffer; status: number };
    result = { stdout: err.stdout, stderr: err.stderr, code: err.status, truncated: false };
  }
  assert.throws(() => cmd.parse(result), (e: Error & { kind?: string }) => e.kind === 'path-missing');
});

test('local state (records in the root\'s state folder): absent, partial from a matching record, stale when the remote changed, differs without a record, legacy record beside the file', async () => {
  const remote = { bytes: 1000, mtime: 1_700_000_000_123.5 };
  const root = path.join(tmp, 'state');
  const file = path.join(root, 'run', 'step_1', 'model.pt');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const paths = filePaths(root, file);
  assert.equal(paths.part, path.join(root, '.remote-runs', 'partial', 'run', 'step_1', 'model.pt.part'));
  assert.equal(paths.doneRecord, path.join(root, '.remote-runs', 'done', 'run', 'step_1', 'model.pt.json'));
  fs.mkdirSync(path.dirname(paths.part), { recursive: true });
  fs.mkdirSync(path.dirname(paths.doneRecord), { recursive: true });
  assert.deepEqual(await localState(paths, '/r/model.pt', remote), { kind: 'absent' });

  fs.writeFileSync(paths.part, Buffer.alloc(600));
  await writeJsonAtomic(paths.partRecord, { version: 2, checked: [], remotePath: '/r/model.pt', remoteBytes: 1000, remoteMtime: remote.mtime, done: [[0, 300], [500, 900]] });
  // Only what the .part really reaches counts: [500, 900) is cut at its 600 bytes.
  assert.deepEqual(await localState(paths, '/r/model.pt', remote), { kind: 'partial', bytes: 400 });
  assert.deepEqual(await localState(paths, '/r/model.pt', { ...remote, mtime: remote.mtime + 1 }), { kind: 'stale-partial', bytes: 600 });
  assert.deepEqual(await localState(paths, '/r/other.pt', remote), { kind: 'stale-partial', bytes: 600 });
  fs.writeFileSync(paths.partRecord, '{not json');
  assert.equal((await localState(paths, '/r/model.pt', remote)).kind, 'stale-partial');

  fs.writeFileSync(file, Buffer.alloc(1000));
  assert.deepEqual(await localState(paths, '/r/model.pt', remote), { kind: 'differs', reason: 'no-record', localBytes: 1000 });
  const st = fs.statSync(file);
  // A record of an older version, beside the file, is still read.
  await writeJsonAtomic(paths.legacyDoneRecord, {
    version: 1, remotePath: '/r/model.pt', remoteBytes: 1000, remoteMtime: remote.mtime, verified: 'sha256', sha256: 'ab', localBytes: 1000, localMtimeMs: st.mtimeMs,
  });
  assert.deepEqual(await localState(paths, '/r/model.pt', remote), { kind: 'complete-verified', verified: 'sha256', sha256: 'ab' });
  fs.renameSync(paths.legacyDoneRecord, paths.doneRecord);
  assert.deepEqual(await localState(paths, '/r/model.pt', remote), { kind: 'complete-verified', verified: 'sha256', sha256: 'ab' });
  assert.deepEqual(await localState(paths, '/r/model.pt', { ...remote, bytes: 1001 }), { kind: 'differs', reason: 'remote-changed', localBytes: 1000 });
  fs.utimesSync(file, new Date(), new Date(Date.now() + 10_000));
  assert.deepEqual(await localState(paths, '/r/model.pt', remote), { kind: 'differs', reason: 'local-changed', localBytes: 1000 });
  // A file where a folder should be: nothing below it exists (the download then says not-a-directory).
  fs.writeFileSync(path.join(root, 'blocker'), 'x');
  assert.deepEqual(await localState(filePaths(root, path.join(root, 'blocker', 'a', 'model.pt')), '/r/model.pt', remote), { kind: 'absent' });
});

test('remote names become local path segments only when they are plain names', () => {
  for (const ok of HOSTILE_NAMES) assert.equal(safeSegment(ok, 'file name'), ok);
  for (const bad of ['', '.', '..', 'a/b', 'nul\0']) assert.throws(() => safeSegment(bad, 'file name'), /not a plain name/);
});

test('symlinks of a folder checkpoint: listed with their text; kept as links only when they name another file of it', () => {
  const dir = path.join(tmp, 'links');
  fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'model.safetensors'), 'weights');
  fs.symlinkSync('model.safetensors', path.join(dir, 'link\tname'));
  fs.symlinkSync('../model.safetensors', path.join(dir, 'sub', 'up'));
  fs.writeFileSync(path.join(tmp, 'outside-blob'), 'blob!');
  fs.symlinkSync(path.join(tmp, 'outside-blob'), path.join(dir, 'abs'));
  const cmd = statCheckpointCommand(dir);
  const recs = cmd.parse({ stdout: execFileSync('sh', ['-c', shellJoin(cmd.argv)]), stderr: Buffer.alloc(0), code: 0, truncated: false }).files;
  const by = new Map(recs.map((r) => [r.relative, r]));
  assert.deepEqual([...by.keys()].sort(), ['abs', 'link\tname', 'model.safetensors', 'sub/up']);
  assert.equal(by.get('link\tname')?.link, 'model.safetensors');
  assert.equal(by.get('link\tname')?.bytes, 7, "a link's size is its target's");
  assert.equal(by.get('abs')?.link, path.join(tmp, 'outside-blob'));
  assert.equal(by.get('model.safetensors')?.link, undefined);
  const names = new Set(by.keys());
  assert.equal(linkWithin('link\tname', 'model.safetensors', names), 'model.safetensors');
  assert.equal(linkWithin('sub/up', '../model.safetensors', names), '../model.safetensors');
  assert.equal(linkWithin('abs', path.join(tmp, 'outside-blob'), names), undefined, 'absolute: arrives as its file');
  assert.equal(linkWithin('sub/up', '../../model.safetensors', names), undefined, 'out of the checkpoint');
  assert.equal(linkWithin('a', 'missing', names), undefined, 'dangling within');
  assert.equal(linkWithin('a', 'a', names), undefined, 'itself');
  // A flat checkpoint that is itself a link is its own root: fetched as its file.
  const flat = statCheckpointCommand(path.join(dir, 'link\tname'));
  assert.deepEqual(flat.parse({ stdout: execFileSync('sh', ['-c', shellJoin(flat.argv)]), stderr: Buffer.alloc(0), code: 0, truncated: false }).files, [
    { relative: '', bytes: 7, mtime: by.get('model.safetensors')!.mtime },
  ]);
  assert.throws(() => parseStatRecords(Buffer.from('Lname\0')), /Unexpected link record/);
});
