/**
 * Downloads after the downloading process dies: the built CLI (`dist/cli.js`, what users run) pulls through a link of
 * the test's own (32 MiB/s, so a kill lands mid-transfer, not after a fast copy) and is killed with SIGKILL, alone or
 * with its whole process group, at several points. Then, against the real sshd, for both clients and every kind of
 * target:
 * - every process of the killed pull (ssh streams, the OpenSSH master, anything else it started) is gone, and so are
 *   the server's sessions of that pull;
 * - the next pull, started at once, takes over (never `busy` from a dead owner, never two writers), resumes from the
 *   record, fetches again at most what came after the last record (≤ 64 MiB), and ends with the remote's bytes;
 * - two pulls at once: the second fails with `busy` naming the first, which completes correctly;
 * - a local file changed after its download is found (identical ones are kept by hash) and replaced with --force;
 * - a remote file that keeps growing is `changed`; a read-only destination is a permission kind, a destination
 *   that is a file is `not-a-directory`;
 * - the checkpoint folder holds exactly the remote's files: no records or partial files beside them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { startTestHost, type ProxiedHost, type TestHost } from '../harness/testHost';
import { isRunning, processTree, recordedBytes } from '../harness/faults';
import { eventually } from '../harness/assertKind';
import { writtenAgo } from '../harness/mtimes';

const ROOT = path.join(__dirname, '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
const MiB = 1024 * 1024;
const SIZE = 128 * MiB;
/** What a kill may cost: the bytes written after the last record (the record is advanced every 64 MiB and 1 s). */
const REFETCH_BOUND = 64 * MiB;

let host: TestHost;
let link: ProxiedHost;
let config: string;
const sha = (b: Buffer | string): string => createHash('sha256').update(typeof b === 'string' ? fs.readFileSync(b) : b).digest('hex');

type TargetName = 'host' | 'pct:200' | 'docker:trainer';
const TARGETS: TargetName[] = ['host', 'pct:200', 'docker:trainer'];

/** Where runs of a target live on this machine, and as the target sees them. */
function runRoot(target: TargetName): { onDisk: string; remote: string } {
  if (target === 'host') return { onDisk: path.join(host.dir, 'crashruns'), remote: path.join(host.dir, 'crashruns') };
  const c = target === 'pct:200' ? host.containers.pct200 : host.containers.trainer;
  return { onDisk: path.join(c.workspace, 'crashruns'), remote: '/workspace/crashruns' };
}

function hostName(target: TargetName): string {
  return `crash-${target.replace(/[:]/g, '-')}`;
}

/** A run with one step folder holding `files` (random bytes); returns the data by name. */
function writeRun(target: TargetName, run: string, files: Record<string, Buffer>): string {
  const folder = path.join(runRoot(target).onDisk, run, 'checkpoints', 'step_100');
  fs.mkdirSync(folder, { recursive: true });
  for (const [name, data] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(folder, name)), { recursive: true });
    fs.writeFileSync(path.join(folder, name), data);
  }
  // Saved a minute ago, as a finished run leaves it: a save listed within seconds of its write is being written.
  writtenAgo(folder);
  execFileSync('chmod', ['-R', 'a+rX', runRoot(target).onDisk]);
  return folder;
}

interface Pull {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function pull(target: TargetName, run: string, to: string, extra: string[] = [], client = 'auto', which = 'latest'): Pull {
  const child = spawn(
    process.execPath,
    [CLI, 'pull', `${hostName(target)}/${target}/${run}/${which}`, '--to', to, '--client', client, '--config', config, '--known-hosts', host.knownHostsFile, ...extra],
    // A process group of its own, so the test can kill the whole group as a terminal's Ctrl-\ or a job runner would.
    { env: { PATH: process.env.PATH, HOME: host.clientHome }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

function statePaths(to: string, run: string, file: string): { part: string; record: string } {
  const base = path.join(to, '.remote-runs', 'partial', run, 'step_100', file);
  return { part: `${base}.part`, record: `${base}.part.json` };
}

/** Bytes written to a file (its allocated blocks: ranges are written side by side, so its size runs ahead). */
function sizeOf(file: string): number {
  try {
    return fs.statSync(file).blocks * 512;
  } catch {
    return 0;
  }
}

/**
 * Kill a pull once its .part holds at least `atBytes`, with everything it started (all processes of its tree at that
 * moment, read from /proc). Returns what was on disk and recorded, and the pids that must now go away.
 */
async function killAt(p: Pull, part: string, record: string, atBytes: number, group: boolean): Promise<{ onDisk: number; tree: number[] }> {
  await eventually(() => sizeOf(part) >= atBytes || p.child.exitCode !== null, `the .part reaches ${atBytes} bytes`, 120_000);
  assert.equal(p.child.exitCode, null, 'the pull was still running when it was killed');
  const tree = processTree(p.child.pid!);
  const onDisk = sizeOf(part);
  if (group) process.kill(-p.child.pid!, 'SIGKILL');
  else p.child.kill('SIGKILL');
  await p.done;
  return { onDisk, tree };
}

before(async () => {
  if (!fs.existsSync(CLI)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
  host = await startTestHost();
  link = await host.throughProxy({ rateBytesPerSec: 32 * MiB });
  config = path.join(host.dir, 'crash-config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({ hosts: TARGETS.map((t) => link.hostConfig(hostName(t), { runRoots: [runRoot(t).remote], targets: [t] })) }),
  );
});
after(async () => {
  await host?.stop();
});

describe('a pull killed with SIGKILL, then pulled again', () => {
  for (const client of ['openssh', 'ssh2'] as const)
  for (const target of TARGETS) {
    test(`${target}, ${client}: no process outlives the kill, the next pull resumes within the bound and ends with the remote's bytes`, async () => {
      const run = `crash-${target.replace(':', '-')}-${client}`;
      const data = randomBytes(SIZE);
      writeRun(target, run, { 'model.safetensors': data });
      const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
      const { part, record } = statePaths(to, run, 'model.safetensors');
      const baseline = host.sshd.connectionPids().length;

      let recorded = 0;
      // Killed at 40%, alone; then at 80%, with its whole process group. Each next pull starts at once.
      for (const [fraction, group] of [
        [0.4, false],
        [0.8, true],
      ] as const) {
        const before = link.proxy.bytesDown;
        const p = pull(target, run, to, [], client);
        const { onDisk, tree } = await killAt(p, part, record, Math.floor(SIZE * fraction), group);
        const crossed = link.proxy.bytesDown - before;
        // This pull fetched only what the record left open (plus what a listing and ssh's framing cost).
        assert.ok(crossed <= (SIZE - recorded) * 1.05 + 2 * MiB + (onDisk - recorded), `the pull after a kill fetched ${crossed} bytes with ${recorded} recorded`);
        recorded = recordedBytes(record);
        assert.ok(recorded >= onDisk - REFETCH_BOUND, `the record keeps up with the disk: ${recorded} recorded of ${onDisk} written`);
        await eventually(() => tree.every((pid) => !isRunning(pid)), `every process of the killed pull is gone (${tree.join(' ')})`, 30_000);
        await eventually(() => host.sshd.connectionPids().length <= baseline, "the server's sessions of the killed pull close", 30_000);
        assert.ok(!fs.existsSync(path.join(to, run, 'step_100', 'model.safetensors')), 'no file that looks complete');
      }
      const before = link.proxy.bytesDown;
      const last = await pull(target, run, to, [], client).done;
      assert.equal(last.code, 0, last.stderr);
      const crossed = link.proxy.bytesDown - before;
      assert.ok(crossed <= (SIZE - recorded) * 1.05 + 2 * MiB, `the last pull fetched ${crossed} bytes with ${recorded} of ${SIZE} recorded`);
      const local = path.join(to, run, 'step_100', 'model.safetensors');
      assert.equal(last.stdout.trim(), path.join(to, run, 'step_100'));
      assert.equal(sha(local), sha(data), 'the local bytes are the remote bytes');
      assert.match(last.stderr, /resumed .*verified by SHA-256 on both sides/);
      assert.deepEqual(fs.readdirSync(path.dirname(local)), ['model.safetensors'], 'the checkpoint folder holds what the remote has, nothing else');
      assert.ok(!fs.existsSync(part) && !fs.existsSync(record), 'no partial state left once complete');
    });
  }
});

describe('pulls that meet', () => {
  test('two pulls of one checkpoint into one folder: the second fails at once with busy naming the first, which completes', async () => {
    const data = randomBytes(64 * MiB);
    writeRun('host', 'twice', { 'model.pt': data });
    const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
    const first = pull('host', 'twice', to);
    await eventually(() => sizeOf(statePaths(to, 'twice', 'model.pt').part) > 0, 'the first pull is writing', 60_000);
    const second = await pull('host', 'twice', to, ['--json']).done;
    assert.equal(second.code, 2, second.stderr);
    const err = JSON.parse(second.stdout) as { error: { kind: string; message: string } };
    assert.equal(err.error.kind, 'busy');
    assert.match(err.error.message, new RegExp(`remote-runs pull \\(pid ${first.child.pid}`));
    const one = await first.done;
    assert.equal(one.code, 0, one.stderr);
    assert.equal(sha(path.join(to, 'twice', 'step_100', 'model.pt')), sha(data));
  });

  test('with ssh2 too, and the file pulled afterwards is recognised as complete', async () => {
    const data = randomBytes(48 * MiB);
    writeRun('pct:200', 'twice2', { 'model.pt': data });
    const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
    const first = pull('pct:200', 'twice2', to, [], 'ssh2');
    await eventually(() => sizeOf(statePaths(to, 'twice2', 'model.pt').part) > 0, 'the first pull is writing', 60_000);
    const second = await pull('pct:200', 'twice2', to, ['--json'], 'ssh2').done;
    assert.equal(second.code, 2);
    assert.equal((JSON.parse(second.stdout) as { error: { kind: string } }).error.kind, 'busy');
    assert.equal((await first.done).code, 0);
    const third = await pull('pct:200', 'twice2', to, [], 'ssh2').done;
    assert.equal(third.code, 0, third.stderr);
    assert.match(third.stderr, /already there/);
    assert.equal(sha(path.join(to, 'twice2', 'step_100', 'model.pt')), sha(data));
  });
});

describe('a local file that is not the remote one', () => {
  test('changed after its download: found, kept without --force (exists), replaced with it; an identical copy is kept by hash', async () => {
    const data = randomBytes(8 * MiB);
    writeRun('host', 'flip', { 'model.pt': data });
    const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
    assert.equal((await pull('host', 'flip', to).done).code, 0);
    const local = path.join(to, 'flip', 'step_100', 'model.pt');
    // Flip one byte in the middle.
    const fd = fs.openSync(local, 'r+');
    fs.writeSync(fd, Buffer.from([data[4 * MiB] ^ 0x01]), 0, 1, 4 * MiB);
    fs.closeSync(fd);
    const kept = await pull('host', 'flip', to, ['--json']).done;
    assert.equal(kept.code, 2);
    const err = JSON.parse(kept.stdout) as { error: { kind: string; message: string } };
    assert.equal(err.error.kind, 'exists');
    assert.match(err.error.message, /--force/);
    assert.notEqual(sha(local), sha(data), 'nothing was overwritten without --force');
    const forced = await pull('host', 'flip', to, ['--force']).done;
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stderr, /replaced/);
    assert.equal(sha(local), sha(data));

    // The same bytes, copied by hand (no record): recognised by hash, kept, nothing fetched.
    const other = fs.mkdtempSync(path.join(host.dir, 'to-'));
    fs.mkdirSync(path.join(other, 'flip', 'step_100'), { recursive: true });
    fs.copyFileSync(local, path.join(other, 'flip', 'step_100', 'model.pt'));
    const same = await pull('host', 'flip', other).done;
    assert.equal(same.code, 0, same.stderr);
    assert.match(same.stderr, /identical by SHA-256 and kept/);
  });

  test('corrupted in place with its size and mtime kept: --verify hashes it again and fetches it anew', async () => {
    const data = randomBytes(8 * MiB);
    writeRun('docker:trainer', 'rot', { 'model.pt': data });
    const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
    const first = await pull('docker:trainer', 'rot', to).done;
    assert.equal(first.code, 0, first.stderr);
    const local = path.join(to, 'rot', 'step_100', 'model.pt');
    // Keep the mtime to the nanosecond (touch -r from a copy made with cp -p), as bit rot or a careless tool would.
    const ref = `${local}.ref`;
    execFileSync('cp', ['-p', local, ref]);
    const fd = fs.openSync(local, 'r+');
    fs.writeSync(fd, Buffer.from([data[1234] ^ 0x80]), 0, 1, 1234);
    fs.closeSync(fd);
    execFileSync('touch', ['-r', ref, local]);
    fs.rmSync(ref);
    const plain = await pull('docker:trainer', 'rot', to).done;
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stderr, /already there/, 'the record vouches for it until asked to check');
    const checked = await pull('docker:trainer', 'rot', to, ['--verify']).done;
    assert.equal(checked.code, 0, checked.stderr);
    assert.match(checked.stderr, /replaced/);
    assert.equal(sha(local), sha(data));
  });
});

describe('a destination or a remote file that will not do', () => {
  test('a remote file that keeps growing while it is pulled: changed', async () => {
    const folder = writeRun('host', 'growing', { 'train.log.pt': randomBytes(32 * MiB) });
    const file = path.join(folder, 'train.log.pt');
    const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
    const timer = setInterval(() => fs.appendFileSync(file, randomBytes(256 * 1024)), 100);
    try {
      // Growing, it is no `latest` (changed seconds before the listing): named, it is taken with a warning.
      const r = await pull('host', 'growing', to, ['--json'], 'auto', 'step_100').done;
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /step_100 is incomplete \(being written: changed [\d.]+ s before the listing.*\): taking it because it was named/);
      assert.equal((JSON.parse(r.stdout) as { error: { kind: string } }).error.kind, 'changed');
    } finally {
      clearInterval(timer);
    }
    assert.ok(!fs.existsSync(path.join(to, 'growing', 'step_100', 'train.log.pt')), 'no file that looks complete');
  });

  test('--to on a read-only file system: permission-denied naming the path; --to naming a file: not-a-directory', async () => {
    writeRun('host', 'small', { 'a.pt': randomBytes(1024) });
    const ro = fs.mkdtempSync(path.join(host.dir, 'ro-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,ro', 'rr-ro', ro]);
    try {
      const r = await pull('host', 'small', ro, ['--json']).done;
      assert.equal(r.code, 2);
      const e = (JSON.parse(r.stdout) as { error: { kind: string; message: string } }).error;
      assert.equal(e.kind, 'permission-denied', e.message);
      assert.match(e.message, /read-only file system/);
      assert.ok(e.message.includes(ro), e.message);
    } finally {
      execFileSync('umount', ['-l', ro]);
    }
    const file = path.join(host.dir, 'not-a-folder');
    fs.writeFileSync(file, 'x');
    const r = await pull('host', 'small', file, ['--json']).done;
    assert.equal(r.code, 2);
    const e = (JSON.parse(r.stdout) as { error: { kind: string; message: string } }).error;
    assert.equal(e.kind, 'not-a-directory');
    assert.ok(e.message.includes(file), e.message);
    assert.equal(fs.readFileSync(file, 'utf8'), 'x');
  });
});

describe('the checkpoint folder holds what the remote has', () => {
  /** name → `file SIZE` | `link TEXT`, walking without following links. */
  function listing(dir: string): Record<string, string> {
    const out: Record<string, string> = {};
    const walk = (rel: string): void => {
      for (const name of fs.readdirSync(path.join(dir, rel))) {
        const r = rel ? `${rel}/${name}` : name;
        const st = fs.lstatSync(path.join(dir, r));
        if (st.isSymbolicLink()) out[r] = `link ${fs.readlinkSync(path.join(dir, r))}`;
        else if (st.isDirectory()) walk(r);
        else out[r] = `file ${st.size}`;
      }
    };
    walk('');
    return out;
  }

  for (const [target, client] of [
    ['host', 'openssh'],
    ['pct:200', 'openssh'],
    ['docker:trainer', 'ssh2'],
  ] as const) {
    test(`${target}, ${client}: names, sizes and symlinks equal the remote's; a link out of the checkpoint arrives as its file`, async () => {
      const run = `listing-${target.replace(':', '-')}`;
      const folder = writeRun(target, run, {
        'model.safetensors': randomBytes(3 * MiB),
        'config.json': Buffer.from('{"hidden_size": 8}\n'),
        'sub/rng_state.pth': randomBytes(4096),
        'empty.txt': Buffer.alloc(0),
      });
      // As the target sees them: relative links within the checkpoint, and one to a blob outside it (a HF cache).
      fs.symlinkSync('model.safetensors', path.join(folder, 'link.safetensors'));
      fs.symlinkSync('../config.json', path.join(folder, 'sub', 'config.json'));
      const blob = path.join(runRoot(target).onDisk, run, 'blob-0123');
      fs.writeFileSync(blob, randomBytes(5000));
      fs.symlinkSync(path.posix.join(runRoot(target).remote, run, 'blob-0123'), path.join(folder, 'tokenizer.json'));
      writtenAgo(path.join(runRoot(target).onDisk, run));
      const to = fs.mkdtempSync(path.join(host.dir, 'to-'));
      const r = await pull(target, run, to, [], client).done;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, /2 symlinks within the checkpoint kept as links/);
      const expected = { ...listing(folder), 'tokenizer.json': 'file 5000' };
      assert.deepEqual(listing(path.join(to, run, 'step_100')), expected);
      assert.equal(sha(path.join(to, run, 'step_100', 'tokenizer.json')), sha(blob));
      // Pulled again: everything is already there, links included.
      const again = await pull(target, run, to, [], client).done;
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stderr, /already there/);
    });
  }
});
