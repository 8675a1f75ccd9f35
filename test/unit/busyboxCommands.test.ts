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
import { runCommand, type ExecResult, type Executor, type RemoteCommand } from '../../src/core/remote';
import { readFilesCommand } from '../../src/core/inspect/remoteRead';
import { smallBatchCommand } from '../../src/core/transfer/smallFiles';
import { runConfigCommand } from '../../src/core/runs/config';
import { isRemoteRunsError } from '../../src/core/types';

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
  const gnuWalk = run(statCheckpointCommand(ckpt), GNU);
  const bbWalk = run(statCheckpointCommand(ckpt), bbPath);
  const gnu = norm(gnuWalk.files);
  const bb = norm(bbWalk.files);
  assert.deepEqual(bbWalk.skipped, gnuWalk.skipped);
  assert.deepEqual(bbWalk.skipped, []);
  assert.equal(gnu.length, 4);
  assert.deepEqual(bb, gnu);
  assert.equal(bb.find((f) => f.relative === 'alias.safetensors')?.link, 'model.safetensors');
  // A checkpoint that is one file is its own root ('').
  const flat = run(statCheckpointCommand(path.join(ckpt, 'model.safetensors')), bbPath).files;
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

/** Runs each line as sshd would, with /bin/sh as the login shell and this PATH. */
function localSh(PATH: string): Executor {
  return {
    exec: async (line) => {
      const r = spawnSync('/bin/sh', ['-c', line], { env: { PATH }, timeout: 30_000 });
      return { stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false };
    },
  };
}

test('a tool the remote lacks is named, even where the script went on without it (od for inspect, base64 for the run config)', async () => {
  const lacking = path.join(tmp, 'lacking');
  fs.mkdirSync(lacking);
  execFileSync(BUSYBOX!, ['--install', '-s', lacking]);
  for (const t of ['od', 'base64']) fs.rmSync(path.join(lacking, t));
  fs.writeFileSync(path.join(ckpt, 'config.json'), '{"model_type": "gpt2"}');
  const host = { kind: 'host', id: '' } as const;
  const named = (tool: string) => (e: unknown) => isRemoteRunsError(e) && e.kind === 'command-failed' && e.message.includes(`no \`${tool}\``);
  await assert.rejects(runCommand(localSh(lacking), host, readFilesCommand([{ path: path.join(ckpt, 'model.safetensors'), spec: { kind: 'safetensors' } }])), named('od'));
  await assert.rejects(runCommand(localSh(lacking), host, runConfigCommand(ckpt)), named('base64'));
  // The control: with every applet, both answer.
  await runCommand(localSh(bbPath), host, readFilesCommand([{ path: path.join(ckpt, 'model.safetensors'), spec: { kind: 'safetensors' } }]));
  assert.equal((await runCommand(localSh(bbPath), host, runConfigCommand(ckpt))).files[0]?.name, 'config.json');
});

test('a batch of small files under BusyBox: the bytes, hashes and stats come back, the stats as the BusyBox walk lists them', () => {
  const names = ['model.safetensors', path.join('sub dir', 'deeper', 'empty')];
  const files = names.map((n) => ({ remotePath: path.join(ckpt, n), bytes: fs.statSync(path.join(ckpt, n)).size }));
  const walk = run(statCheckpointCommand(ckpt), bbPath);
  for (const PATH of [bbPath, GNU]) {
    const pieces = run(smallBatchCommand(files, true), PATH);
    for (const [i, n] of names.entries()) {
      const want = fs.readFileSync(files[i].remotePath);
      assert.deepEqual(pieces[i]?.data, want);
      assert.equal(pieces[i]?.remote, createHash('sha256').update(want).digest('hex'));
      const listed = walk.files.find((f) => f.relative === n)!;
      if (PATH === bbPath) assert.deepEqual(pieces[i]?.after, { bytes: listed.bytes, mtime: listed.mtime }, `${n}: BusyBox's batch stat is BusyBox's walk's`);
      else assert.equal(Math.floor(pieces[i]!.after!.mtime / 1000), Math.floor(listed.mtime / 1000));
    }
  }
});
