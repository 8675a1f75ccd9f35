/**
 * The commands a pull sends, run by the local /bin/sh with GNU tools on PATH and again with only BusyBox's applets
 * on PATH (as on Alpine): the same records come back. Needs Debian's busybox (`npm run setup` installs it).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseStatRecords, rangeArgv, sha256Command, statCheckpointCommand, hashedRangeArgv } from '../../src/core/transfer/remoteCommands';
import type { ExecResult, RemoteCommand } from '../../src/core/remote';

const BUSYBOX = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
let tmp: string;
let bbPath: string;
let ckpt: string;

before(() => {
  assert.ok(BUSYBOX, 'busybox is not installed: apt-get install -y busybox');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-bbcmd-'));
  bbPath = path.join(tmp, 'bin');
  fs.mkdirSync(bbPath);
  execFileSync(BUSYBOX!, ['--install', '-s', bbPath]);
  ckpt = path.join(tmp, 'ckpt');
  fs.mkdirSync(path.join(ckpt, 'sub dir', 'deeper'), { recursive: true });
  fs.writeFileSync(path.join(ckpt, 'model.safetensors'), Buffer.alloc(3000, 7));
  fs.writeFileSync(path.join(ckpt, 'sub dir', 'it\'s "x"\tand\nnewline %s \\.bin'), 'abc');
  fs.writeFileSync(path.join(ckpt, 'sub dir', 'deeper', 'empty'), '');
  fs.symlinkSync('model.safetensors', path.join(ckpt, 'alias.safetensors'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function run<T>(command: RemoteCommand<T>, PATH: string): T {
  const [cmd, ...args] = command.argv;
  const r = spawnSync(cmd === 'sh' ? '/bin/sh' : cmd, args, { env: { PATH }, timeout: 30_000 });
  const result: ExecResult = { stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false };
  return command.parse(result);
}

const GNU = process.env.PATH ?? '/usr/bin:/bin';

test('the file list of a checkpoint: the same records from BusyBox (no find -printf) as from GNU find', () => {
  // The control: BusyBox's find really has no -printf, so the fallback is what runs.
  const probe = spawnSync('/bin/sh', ['-c', 'find . -maxdepth 0 -printf ""'], { env: { PATH: bbPath } });
  assert.match(probe.stderr.toString(), /unrecognized: -printf/);
  const norm = (list: ReturnType<typeof parseStatRecords>) =>
    list.map((f) => ({ ...f, mtime: Math.floor(f.mtime / 1000) })).sort((a, b) => a.relative.localeCompare(b.relative));
  const gnu = norm(run(statCheckpointCommand(ckpt), GNU));
  const bb = norm(run(statCheckpointCommand(ckpt), bbPath));
  assert.equal(gnu.length, 4);
  assert.deepEqual(bb, gnu);
  assert.equal(bb.find((f) => f.relative === 'alias.safetensors')?.link, 'model.safetensors');
  // A checkpoint that is one file is its own root ('').
  const flat = run(statCheckpointCommand(path.join(ckpt, 'model.safetensors')), bbPath);
  assert.deepEqual(flat.map((f) => [f.relative, f.bytes]), [['', 3000]]);
});

test('a range and its SHA-256 with only BusyBox: dd without iflag falls back to tail|head, sha256sum hashes', () => {
  const file = path.join(ckpt, 'model.safetensors');
  const bytes = fs.readFileSync(file);
  const r = spawnSync('/bin/sh', rangeArgv(file, 100, 1100, bytes.length).slice(1), { env: { PATH: bbPath } });
  assert.equal(r.status, 0, r.stderr.toString());
  assert.deepEqual(r.stdout, bytes.subarray(100, 1100));
  const h = spawnSync('/bin/sh', hashedRangeArgv(file, 100, 1100, bytes.length).slice(1), { env: { PATH: bbPath } });
  assert.equal(h.status, 0, h.stderr.toString());
  assert.deepEqual(h.stdout, bytes.subarray(100, 1100));
  assert.match(h.stderr.toString(), new RegExp(`rr-sha256 ${createHash('sha256').update(bytes.subarray(100, 1100)).digest('hex')}`));
  assert.equal(run(sha256Command(file), bbPath), createHash('sha256').update(bytes).digest('hex'));
});
