/**
 * Following a growing log: the pure decisions, then the real poll script run by the local /bin/sh over real
 * files (the same bytes a remote poll returns, minus ssh), driven through MetricsFollower.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';
import { RemoteRunsError } from '../../src/core/types';
import { runCommand, type Executor, type ExecResult } from '../../src/core/remote';
import {
  applyTailRead,
  decideTail,
  DEFAULT_TAIL_COMPRESS_ABOVE,
  MetricsFollower,
  nextTailRequest,
  tailReadCommand,
  type TailReadResult,
  type TailState,
  type TailStat,
} from '../../src/core/metrics';

const HOST = { kind: 'host' as const, id: '' };

/** Runs the command line with the local sh, the way sshd hands it to a login shell; optional rc-file noise. */
function localExecutor(opts: { noise?: string; pathPrefix?: string } = {}): Executor {
  return {
    async exec(line): Promise<ExecResult> {
      const env = { ...process.env, PATH: opts.pathPrefix ? `${opts.pathPrefix}:${process.env.PATH}` : process.env.PATH };
      const r = spawnSync('sh', ['-c', `${opts.noise ? `printf '%s' '${opts.noise}'; ` : ''}${line}`], { env, maxBuffer: 1 << 30 });
      return { stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false };
    },
  };
}

let tmp: string;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-tail-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

// ---- pure decisions ------------------------------------------------------------------------------------------------

const st = (size: number, extra: Partial<TailStat> = {}): TailStat => ({ size, mtimeMs: 1000, inode: '42', head: 'aabb', ...extra });
const known = (offset: number, size = offset, extra: Partial<TailState> = {}): TailState => ({ ...st(size), offset, ...extra });

test('decideTail: growth, nothing new, truncation, replacement, first read', () => {
  assert.deepEqual(decideTail(undefined, st(10), 'append'), { kind: 'reread', reason: 'first' });
  assert.deepEqual(decideTail(known(10), st(25, { mtimeMs: 2000 }), 'append'), { kind: 'grew', from: 10 });
  assert.deepEqual(decideTail(known(10), st(10), 'append'), { kind: 'unchanged' });
  assert.deepEqual(decideTail(known(10), st(4), 'append'), { kind: 'reread', reason: 'truncated' });
  assert.deepEqual(decideTail(known(10), st(30, { inode: '43' }), 'append'), { kind: 'reread', reason: 'replaced' });
  assert.deepEqual(decideTail(known(10), st(30, { head: 'ccdd' }), 'append'), { kind: 'reread', reason: 'replaced' });
  // A head read while the file was short only has to lead the new one.
  assert.deepEqual(decideTail(known(2, 2, { head: 'aa' }), st(30, { head: 'aabbcc' }), 'append'), { kind: 'grew', from: 2 });
  assert.deepEqual(decideTail(known(2, 2, { head: 'aabb' }), st(30, { head: 'aa' }), 'append'), { kind: 'reread', reason: 'replaced' });
  // Unknown inode (busybox without one) does not count as a change.
  assert.deepEqual(decideTail(known(10, 10, { inode: '' }), st(12), 'append'), { kind: 'grew', from: 10 });
});

test('decideTail whole mode: any size or mtime change means read it all again', () => {
  assert.deepEqual(decideTail(known(10), st(10), 'whole'), { kind: 'unchanged' });
  assert.deepEqual(decideTail(known(10), st(10, { mtimeMs: 1500 }), 'whole'), { kind: 'reread', reason: 'rewritten' });
  assert.deepEqual(decideTail(known(10), st(12), 'whole'), { kind: 'reread', reason: 'rewritten' });
  assert.deepEqual(decideTail(known(4, 10), st(10), 'whole'), { kind: 'grew', from: 4 }, 'a capped whole read continues');
});

test('nextTailRequest: whole mode asks for the stat only once the file is read; append mode carries head and inode', () => {
  assert.deepEqual(nextTailRequest(undefined, 'append', 100), { offset: 0, maxBytes: 100, expectHead: '', expectInode: '', compressAbove: DEFAULT_TAIL_COMPRESS_ABOVE });
  assert.deepEqual(nextTailRequest(known(10), 'append', 100, 0), { offset: 10, maxBytes: 100, expectHead: 'aabb', expectInode: '42', compressAbove: 0 });
  assert.equal(nextTailRequest(known(10), 'whole', 100).maxBytes, 0);
  assert.equal(nextTailRequest(known(4, 10), 'whole', 100).maxBytes, 100);
});

test('applyTailRead never appends bytes that do not continue what was read', () => {
  const ok = (stat: TailStat, from: number, data: string, requestedBytes = 100): Extract<TailReadResult, { status: 'ok' }> => ({
    status: 'ok',
    stat,
    from,
    data: new TextEncoder().encode(data),
    requestedBytes,
  });
  // The script read from 10 but the client sees a replacement: take only the stat, restart from 0.
  const s1 = applyTailRead(known(10), ok(st(30, { head: 'ccdd' }), 10, 'x'.repeat(20)), 'append');
  assert.equal(s1.reset, true);
  assert.equal(s1.data.length, 0);
  assert.equal(s1.more, true);
  assert.equal(s1.state.offset, 0);
  // The script already fell back to 0: the bytes are the new file's.
  const s2 = applyTailRead(known(10), ok(st(5, { head: 'ccdd' }), 0, 'hello'), 'append');
  assert.deepEqual([s2.reset, s2.state.offset, s2.more, new TextDecoder().decode(s2.data)], [true, 5, false, 'hello']);
  // A capped read: more is waiting.
  const s3 = applyTailRead(known(10), ok(st(1000), 10, 'y'.repeat(100)), 'append');
  assert.deepEqual([s3.reset, s3.state.offset, s3.more], [false, 110, true]);
});

// ---- the real script over real files --------------------------------------------------------------------------------

async function poll(f: MetricsFollower, executor = localExecutor()) {
  const updates = [];
  for (let i = 0; i < 100; i++) {
    const u = f.apply(await runCommand(executor, HOST, f.nextCommand()));
    updates.push(u);
    if (!u.more) return updates;
  }
  throw new Error('the follower never settled');
}

const line = (step: number, loss: number) => `{"step": ${step}, "loss": ${loss}}\n`;

test('a growing JSONL log: growth, nothing new, a half-written line across polls, login-shell noise', async () => {
  const file = path.join(tmp, 'grow dir', "it's metrics.jsonl");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, line(1, 1) + line(2, 0.5));
  const exec = localExecutor({ noise: 'Welcome to the cluster\n@rr-tail' });
  const f = new MetricsFollower(file, 'jsonl');
  let u = await poll(f, exec);
  assert.deepEqual(u.map((x) => x.decision?.kind), ['reread']);
  assert.deepEqual([...f.metrics.get('loss')!.y], [1, 0.5]);

  u = await poll(f, exec);
  assert.deepEqual([u[0].decision, u[0].changed], [{ kind: 'unchanged' }, false]);

  fs.appendFileSync(file, line(3, 0.25) + '{"step": 4, "lo');
  u = await poll(f, exec);
  assert.deepEqual(u[0].decision, { kind: 'grew', from: Buffer.byteLength(line(1, 1) + line(2, 0.5)) });
  assert.deepEqual([...f.metrics.get('loss')!.x], [1, 2, 3]);
  assert.equal(f.metrics.badLines, 0, 'the half-written line is not an error');

  fs.appendFileSync(file, 'ss": 0.125}\n');
  await poll(f, exec);
  assert.deepEqual([...f.metrics.get('loss')!.x], [1, 2, 3, 4]);
  assert.equal(f.state?.offset, fs.statSync(file).size);
  assert.equal(f.state?.inode, String(fs.statSync(file).ino));
});

test('truncation and replacement re-read from 0; a step going backwards in place starts a new segment (later wins)', async () => {
  const file = path.join(tmp, 'restart.jsonl');
  fs.writeFileSync(file, [1, 2, 3, 4].map((s) => line(s, 1 / s)).join(''));
  const f = new MetricsFollower(file, 'jsonl');
  await poll(f);
  assert.equal(f.metrics.get('loss')!.length, 4);

  // Resumed from step 2's checkpoint, appending to the same log.
  fs.appendFileSync(file, line(3, 0.3) + line(4, 0.2));
  await poll(f);
  // The later process wins at steps 3 and 4 (series.ts): steps 1…4 once, the restart a segment boundary.
  assert.deepEqual(f.metrics.get('loss')!.segments, [{ start: 0, end: 2 }, { start: 2, end: 4 }]);
  assert.deepEqual([...f.metrics.get('loss')!.y], [1, 0.5, 0.3, 0.2]);

  // Truncated in place (same inode, opened with "w" by a restarted run).
  fs.writeFileSync(file, line(1, 9));
  let u = await poll(f);
  assert.deepEqual(u[0].decision, { kind: 'reread', reason: 'truncated' });
  assert.deepEqual([...f.metrics.get('loss')!.y], [9]);
  assert.equal(f.metrics.get('loss')!.segments.length, 1);

  // Replaced by a new file (new inode) that is already longer and starts with the same bytes.
  const next = `${file}.new`;
  fs.writeFileSync(next, line(1, 9) + line(2, 7) + line(3, 7));
  fs.renameSync(next, file);
  u = await poll(f);
  assert.deepEqual(u[0].decision, { kind: 'reread', reason: 'replaced' }, 'only the inode tells');
  assert.deepEqual([...f.metrics.get('loss')!.y], [9, 7, 7]);
  assert.equal(f.metrics.get('loss')!.segments.length, 1);

  // Rewritten in place with other first bytes and a larger size: the head gives it away.
  fs.writeFileSync(file, '{"step": 100, "acc": 1}\n'.repeat(10));
  u = await poll(f);
  assert.deepEqual(u[0].decision, { kind: 'reread', reason: 'replaced' });
  assert.deepEqual(f.metrics.keys(), ['acc']);
  assert.equal(f.metrics.get('acc')!.length, 10);
});

test('a capped read continues over several polls in one go (more)', async () => {
  const file = path.join(tmp, 'big.jsonl');
  const text = Array.from({ length: 500 }, (_, i) => line(i, i)).join('');
  fs.writeFileSync(file, text);
  const f = new MetricsFollower(file, 'jsonl', 1000);
  const u = await poll(f);
  assert.ok(u.length >= Math.ceil(text.length / 1000), `${u.length} polls`);
  assert.ok(u.slice(0, -1).every((x) => x.more));
  assert.equal(f.metrics.get('loss')!.length, 500);
  assert.deepEqual([...f.metrics.get('loss')!.y.subarray(495)], [495, 496, 497, 498, 499]);
});

test('trainer_state.json: stat-only polls while unchanged, a whole re-read when rewritten', async () => {
  const file = path.join(tmp, 'trainer_state.json');
  const state = (n: number) => JSON.stringify({ log_history: Array.from({ length: n }, (_, i) => ({ step: (i + 1) * 10, loss: 1 / (i + 1) })) });
  fs.writeFileSync(file, state(3));
  const f = new MetricsFollower(file, 'trainer-state');
  await poll(f);
  assert.deepEqual([...f.metrics.get('loss')!.x], [10, 20, 30]);
  assert.equal(f.nextCommand().argv[6], '0', 'the next poll asks for the stat only');

  let u = await poll(f);
  assert.deepEqual(u.map((x) => x.decision?.kind), ['unchanged']);

  fs.writeFileSync(file, state(5));
  u = await poll(f);
  assert.deepEqual(u.map((x) => x.decision), [{ kind: 'reread', reason: 'rewritten' }, { kind: 'grew', from: 0 }]);
  assert.deepEqual([...f.metrics.get('loss')!.x], [10, 20, 30, 40, 50], 'replaced, not appended');
});

test('a missing file, a folder, and a file under an unreadable folder each say so', async () => {
  const exec = localExecutor();
  const run = (p: string) => runCommand(exec, HOST, tailReadCommand(p, nextTailRequest(undefined, 'append')));
  assert.deepEqual(await run(path.join(tmp, 'nope.jsonl')), { status: 'missing' });
  assert.deepEqual(await run(tmp), { status: 'not-a-file' });
  const f = new MetricsFollower(path.join(tmp, 'nope.jsonl'), 'jsonl');
  assert.deepEqual(f.apply(await run(path.join(tmp, 'nope.jsonl'))), { status: 'missing', changed: false, more: false });
  if (process.getuid?.() === 0) {
    // root reads everything; run the check as nobody where possible.
    const locked = path.join(tmp, 'locked');
    fs.mkdirSync(locked, { mode: 0o700 });
    fs.writeFileSync(path.join(locked, 'm.jsonl'), line(1, 1));
    fs.chmodSync(tmp, 0o755);
    const cmd = tailReadCommand(path.join(locked, 'm.jsonl'), nextTailRequest(undefined, 'append'));
    const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...cmd.argv]);
    assert.equal(r.status, 0, r.stderr.toString());
    assert.deepEqual(cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false }), { status: 'permission-denied' });
  }
});

test('without GNU find -printf (busybox), stat supplies size, whole-second mtime and inode', async () => {
  const shim = path.join(tmp, 'shim-bin');
  fs.mkdirSync(shim);
  fs.writeFileSync(path.join(shim, 'find'), '#!/bin/sh\necho "find: unrecognized: -printf" >&2\nexit 1\n', { mode: 0o755 });
  const file = path.join(tmp, 'bb.jsonl');
  fs.writeFileSync(file, line(1, 1));
  const r = await runCommand(localExecutor({ pathPrefix: shim }), HOST, tailReadCommand(file, nextTailRequest(undefined, 'append')));
  assert.equal(r.status, 'ok');
  if (r.status !== 'ok') return;
  const s = fs.statSync(file);
  assert.equal(r.stat.size, s.size);
  assert.equal(r.stat.inode, String(s.ino));
  assert.equal(r.stat.mtimeMs, Math.floor(s.mtimeMs / 1000) * 1000);
  assert.equal(r.stat.head, Buffer.from(line(1, 1)).toString('hex'));
});

test('asked to, a big read comes gzip-compressed and reads the same; small reads, a gzip without levels and the default come plain', async () => {
  const file = path.join(tmp, 'gz.jsonl');
  const text = Array.from({ length: 12_000 }, (_, i) => line(i, i / 7)).join('');
  const ABOVE = 256 * 1024;
  assert.ok(text.length > ABOVE);
  fs.writeFileSync(file, text);
  // Record what the remote side sent, to see the encoding and the bytes on the wire.
  const replies: Buffer[] = [];
  const recording = (inner: Executor): Executor => ({
    async exec(l, o) {
      const r = await inner.exec(l, o);
      replies.push(r.stdout);
      return r;
    },
  });
  const statusOf = (reply: Buffer) => reply.toString('latin1').split('\n').find((l) => l.startsWith('ok ')) ?? '';

  const compressed = new MetricsFollower(file, 'jsonl', { compressAbove: ABOVE });
  await poll(compressed, recording(localExecutor()));
  assert.match(statusOf(replies[0]), / gz \d+$/);
  assert.ok(replies[0].length < text.length / 3, `${replies[0].length} bytes on the wire for ${text.length}`);
  assert.equal(compressed.metrics.get('loss')!.length, 12_000);
  assert.equal(compressed.state?.offset, text.length);

  // The next polls send a few new lines: below the threshold, plain.
  fs.appendFileSync(file, line(12_000, 1));
  replies.length = 0;
  await poll(compressed, recording(localExecutor()));
  assert.match(statusOf(replies[0]), / - \d+$/);
  assert.equal(compressed.metrics.get('loss')!.length, 12_001);

  // A gzip that refuses -1 (busybox without levels): plain, and still right.
  const shim = path.join(tmp, 'nolevels-bin');
  fs.mkdirSync(shim, { recursive: true });
  fs.writeFileSync(path.join(shim, 'gzip'), '#!/bin/sh\necho "gzip: invalid option -- 1" >&2\nexit 1\n', { mode: 0o755 });
  replies.length = 0;
  const plain = new MetricsFollower(file, 'jsonl', { compressAbove: ABOVE });
  await poll(plain, recording(localExecutor({ pathPrefix: shim })));
  assert.match(statusOf(replies[0]), / - \d+$/);
  // And by default nothing is compressed.
  replies.length = 0;
  const byDefault = new MetricsFollower(file, 'jsonl');
  await poll(byDefault, recording(localExecutor()));
  assert.match(statusOf(replies[0]), / - \d+$/);
  const snapshot = (f: MetricsFollower) => JSON.stringify([[...f.metrics.get('loss')!.x], [...f.metrics.get('loss')!.y]]);
  assert.equal(snapshot(plain), snapshot(compressed));
});

test('a compressed reply that inflates beyond what was asked for, or is not gzip, is a protocol error', () => {
  const request = { offset: 0, maxBytes: 1000, expectHead: '', expectInode: '', compressAbove: 1 };
  const reply = (status: string, data: Buffer): ExecResult => ({
    stdout: Buffer.concat([Buffer.from(`\n@rr-tail@1\n${status}\n`), data]),
    stderr: Buffer.alloc(0),
    code: 0,
    truncated: false,
  });
  const ok = tailReadCommand('/x', request).parse(reply('ok 5000 1 2 0 - gz', gzipSync(Buffer.alloc(1000, 0x61))));
  assert.equal(ok.status === 'ok' && ok.data.length, 1000);
  const bomb = reply('ok 5000 1 2 0 - gz', gzipSync(Buffer.alloc(1_000_000, 0x61)));
  assert.throws(() => tailReadCommand('/x', request).parse(bomb), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol' && /more than the 1000 bytes/.test(e.message));
  const junk = reply('ok 5000 1 2 0 - gz', Buffer.from('not gzip at all'));
  assert.throws(() => tailReadCommand('/x', request).parse(junk), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol');
  const unknown = reply('ok 5000 1 2 0 - br', Buffer.from('x'));
  assert.throws(() => tailReadCommand('/x', request).parse(unknown), (e: unknown) => e instanceof RemoteRunsError && /bad status line/.test(e.message));
});

// ---- catchUp: a backlog with reads sent ahead ---------------------------------------------------------------------

/** Runs commands through the local sh asynchronously (so several are really in flight), counting them. */
function asyncRunner(executor = localExecutor()) {
  const sent: number[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  return {
    sent,
    get maxInFlight() {
      return maxInFlight;
    },
    run: async (command: ReturnType<MetricsFollower['nextCommand']>): Promise<TailReadResult> => {
      sent.push(Number(command.argv[5]));
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await new Promise((r) => setImmediate(r));
        return await runCommand(executor, HOST, command);
      } finally {
        inFlight--;
      }
    },
  };
}

test('catchUp reads a backlog with reads sent ahead: every line once, in order, reported chunk by chunk', async () => {
  const file = path.join(tmp, 'backlog.jsonl');
  const text = Array.from({ length: 300 }, (_, i) => line(i, i)).join('');
  fs.writeFileSync(file, text);
  for (const depth of [1, 2, 3]) {
    const f = new MetricsFollower(file, 'jsonl', { maxBytes: 500, compressAbove: 0 });
    const runner = asyncRunner();
    const chunks: boolean[] = [];
    const u = await f.catchUp(runner.run, { depth, onChunk: (c) => chunks.push(c.more) });
    assert.deepEqual([u.status, u.changed, u.more], ['ok', true, false]);
    assert.deepEqual([...f.metrics.get('loss')!.x], Array.from({ length: 300 }, (_, i) => i), `depth ${depth}`);
    assert.equal(f.metrics.badLines, 0);
    assert.equal(f.state?.offset, text.length);
    const reads = Math.ceil(text.length / 500);
    assert.deepEqual(runner.sent, Array.from({ length: reads }, (_, i) => i * 500), `depth ${depth}: each range asked for once, in order`);
    assert.equal(runner.maxInFlight, depth);
    assert.equal(chunks.length, reads - 1, 'every read but the last is reported as it is parsed');
  }
  // Caught up: the next catchUp is one stat-only round trip.
  const f = new MetricsFollower(file, 'jsonl', { maxBytes: 500 });
  await f.catchUp(asyncRunner().run);
  const again = asyncRunner();
  const u = await f.catchUp(again.run, { depth: 3 });
  assert.deepEqual([u.changed, u.decision, again.sent.length], [false, { kind: 'unchanged' }, 1]);
});

test('catchUp: a log replaced while reads are in flight is read again from its start, nothing of the old one kept', async () => {
  const file = path.join(tmp, 'replaced-midway.jsonl');
  fs.writeFileSync(file, Array.from({ length: 200 }, (_, i) => line(i, 1)).join(''));
  const f = new MetricsFollower(file, 'jsonl', { maxBytes: 400, compressAbove: 0 });
  const runner = asyncRunner();
  let calls = 0;
  const u = await f.catchUp(async (command) => {
    if (++calls === 4) {
      // A restarted run: a new file (new inode, other first bytes) under the same name.
      fs.writeFileSync(`${file}.new`, Array.from({ length: 150 }, (_, i) => line(1000 + i, 2)).join(''));
      fs.renameSync(`${file}.new`, file);
    }
    return runner.run(command);
  }, { depth: 3 });
  assert.equal(u.status, 'ok');
  // Later polls settle whatever this one left (a reply planned on the old file is never used).
  for (let i = 0; i < 5 && f.state?.offset !== fs.statSync(file).size; i++) await f.catchUp(runner.run, { depth: 3 });
  assert.deepEqual([...f.metrics.get('loss')!.x], Array.from({ length: 150 }, (_, i) => 1000 + i));
  assert.deepEqual(new Set(f.metrics.get('loss')!.y), new Set([2]));
  assert.equal(f.metrics.badLines, 0);
});

test('catchUp rejects with a failed read\'s error and leaves no unhandled rejection behind', async () => {
  const file = path.join(tmp, 'fails.jsonl');
  fs.writeFileSync(file, Array.from({ length: 200 }, (_, i) => line(i, 1)).join(''));
  const f = new MetricsFollower(file, 'jsonl', { maxBytes: 300, compressAbove: 0 });
  const runner = asyncRunner();
  let calls = 0;
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    await assert.rejects(
      f.catchUp(async (command) => {
        calls++;
        if (calls === 3 || calls === 4) throw new RemoteRunsError('unreachable', `read ${calls} lost`);
        return runner.run(command);
      }, { depth: 3 }),
      /read 3 lost/,
    );
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(unhandled, []);
    // What was read before the failure stays; the next catchUp goes on from there.
    const had = f.metrics.get('loss')!.length;
    assert.ok(had > 0 && had < 200, `${had} lines before the failure`);
    await f.catchUp(runner.run, { depth: 3 });
    assert.deepEqual([...f.metrics.get('loss')!.x], Array.from({ length: 200 }, (_, i) => i));
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
