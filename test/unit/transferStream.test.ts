/**
 * The stream runner (stream.ts) over a real child process, the byte source of an OpenSSH stream: the range and the
 * remote side's SHA-256 arrive as hashedRangeArgv sends them, and a stream that ends well without its hash line keeps
 * its bytes (unproven, hashed again by the download) instead of failing the download.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { childSource, fileSource, OFFSETS_VISIBLE, openOffset, runStream, type StreamEnd } from '../../src/core/transfer/stream';
import { startProcess } from '../../src/core/util/processes';
import { hashedRangeArgv, rangeArgv, statAfterOf, statCheckpointCommand, withStatAfter } from '../../src/core/transfer/remoteCommands';
import { wrapForTarget } from '../../src/core/targets';
import { RemoteRunsError, isRemoteRunsError } from '../../src/core/types';
import type { RangeJob } from '../../src/core/transfer/lanes';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-stream-'));
const data = randomBytes(3 * 1024 * 1024 + 17);
const file = path.join(dir, 'model.bin');
fs.writeFileSync(file, data);
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const failure = (end: StreamEnd): RemoteRunsError | undefined => (end.code === 0 ? undefined : new RemoteRunsError('command-failed', `exit ${end.code}`));

/**
 * Run argv locally as a stream's source, sent as a lane sends it (wrapForTarget's fenced line, run by a login shell
 * that prints a banner first); the bytes written, by position.
 */
async function stream(argv: string[], job: RangeJob): Promise<{ hashes: Awaited<ReturnType<typeof runStream>>; got: Buffer }> {
  const got = Buffer.alloc(job.end - job.start);
  const child = spawn('/bin/sh', ['-c', `echo 'Welcome to GPU node 7'; echo 'module: loaded' >&2; ${wrapForTarget({ kind: 'host', id: '' }, argv)}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const hashes = await runStream(childSource(child, failure), job, async (pos, b) => void b.copy(got, pos - job.start), new AbortController().signal);
  return { hashes, got };
}

test('a hashed range (part of a file, and a whole file) arrives with both SHA-256s equal to the range', async () => {
  for (const [start, end] of [
    [1_000_003, data.length],
    [0, data.length],
  ]) {
    const job: RangeJob = { remotePath: file, size: data.length, start, end, hash: true };
    const { hashes, got } = await stream(hashedRangeArgv(file, start, end, data.length), job);
    assert.deepEqual(got, data.subarray(start, end));
    assert.deepEqual(hashes, { local: sha(data.subarray(start, end)), remote: sha(data.subarray(start, end)) });
  }
});

test('a stream that sends every byte and exits 0 without its hash line resolves with no remote hash, not an error', async () => {
  const start = 2 * 1024 * 1024;
  const job: RangeJob = { remotePath: file, size: data.length, start, end: data.length, hash: true };
  // What a server that loses the last stderr line delivers: the range, other stderr, exit 0.
  const argv = ['sh', '-c', 'tail -c +"$(($1 + 1))" -- "$2"; echo "some warning" >&2', 'sh', String(start), file];
  const { hashes, got } = await stream(argv, job);
  assert.deepEqual(got, data.subarray(start));
  assert.deepEqual(hashes, { local: sha(data.subarray(start)) });
});

test('a stream without its hash line that is also short is still the error it means (the file became shorter)', async () => {
  const job: RangeJob = { remotePath: file, size: data.length, start: 0, end: data.length, hash: true };
  await assert.rejects(stream(['head', '-c', '1000', file], job), (e: unknown) => isRemoteRunsError(e) && e.kind === 'changed');
});

test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('two ranges of one file written side by side by writers started at their place (stdoutAt), followed by the descriptor offset (openOffset), come out whole', { skip: !OFFSETS_VISIBLE && 'offsets are read from /proc' }, async () => {
  const out = path.join(dir, 'placed.part');
  // What the .part may hold around the ranges: bytes that must stay as they are.
  fs.writeFileSync(out, Buffer.alloc(data.length, 0x78));
  const cut = 1_500_001;
  const results = await Promise.all(
    [
      [7, cut],
      [cut, data.length - 5],
    ].map(async ([start, end]) => {
      const job: RangeJob = { remotePath: file, size: data.length, start, end, hash: true, direct: true, at: true };
      const fd = fs.openSync(out, 'r+');
      const offset = await openOffset(fd);
      try {
        // The writer as a placed stream's is: the range on its stdout, the descriptor itself (no pipe here), placed
        // at the range's start as it starts.
        const child = startProcess('sh', ['-c', 'sleep 0.05; exec "$@"', 'sh', ...hashedRangeArgv(file, start, end, data.length)], { stdio: ['ignore', fd, 'pipe'], stdoutAt: start });
        const seen: [number, number][] = [];
        const hashes = await runStream(
          fileSource(child, out, start, true, failure, offset.read),
          job,
          async () => undefined,
          new AbortController().signal,
          (pos, n) => seen.push([pos, n]),
        );
        return { start, end, hashes, seen };
      } finally {
        await offset.close();
        fs.closeSync(fd);
      }
    }),
  );
  const got = fs.readFileSync(out);
  for (const { start, end, hashes } of results) {
    assert.deepEqual(got.subarray(start, end), data.subarray(start, end));
    assert.deepEqual(hashes, { local: sha(data.subarray(start, end)), remote: sha(data.subarray(start, end)) });
  }
  assert.deepEqual(got.subarray(0, 7), Buffer.alloc(7, 0x78), 'nothing written before the first range');
  assert.deepEqual(got.subarray(data.length - 5), Buffer.alloc(5, 0x78), 'nothing written after the last');
});

test("a stream's look at its file after the last byte is the plan's own stat of it, and only a stream that ended well gives one", async () => {
  const run = (argv: string[]) => spawnSync(argv[0], argv.slice(1), { maxBuffer: 64 << 20 });
  const stat = statCheckpointCommand(file);
  const planned = stat.parse({ ...run(stat.argv), code: 0, truncated: false } as never).files[0];
  for (const argv of [rangeArgv(file, 0, data.length, data.length), hashedRangeArgv(file, 0, data.length, data.length)]) {
    const r = run(withStatAfter(argv, file));
    assert.equal(r.status, 0);
    assert.ok(r.stdout.equals(data), 'stdout is the file, nothing more');
    const stderr = r.stderr.toString('utf8');
    assert.deepEqual(statAfterOf(stderr), planned);
    if (argv[0] === 'sh' && argv.includes('all')) assert.match(stderr, new RegExp(`^rr-sha256 ${sha(data)}\\b`, 'm'));
  }
  // A stream that fails exits with its own status and says nothing of the file.
  const gone = run(withStatAfter(rangeArgv(path.join(dir, 'absent.bin'), 0, 10, 10), path.join(dir, 'absent.bin')));
  assert.notEqual(gone.status, 0);
  assert.equal(statAfterOf(gone.stderr.toString('utf8')), undefined);
  // Cut short (the end record missing), or naming something else than the file: not a look at it.
  const whole = run(withStatAfter(['true'], file)).stderr.toString('utf8');
  assert.equal(statAfterOf(whole.slice(0, whole.lastIndexOf('Z'))), undefined);
  assert.equal(statAfterOf(run(withStatAfter(['true'], dir)).stderr.toString('utf8')), undefined);
});
