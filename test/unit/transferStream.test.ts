/**
 * The stream runner (stream.ts) over a real child process, the byte source of an OpenSSH stream: the range and the
 * remote side's SHA-256 arrive as hashedRangeArgv sends them, and a stream that ends well without its hash line keeps
 * its bytes (unproven, hashed again by the download) instead of failing the download.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { childSource, runStream, type StreamEnd } from '../../src/core/transfer/stream';
import { hashedRangeArgv } from '../../src/core/transfer/remoteCommands';
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
