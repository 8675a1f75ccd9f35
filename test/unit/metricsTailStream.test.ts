/**
 * The tail read taken as one stream (src/core/metrics/follow/tailStream.ts): the real TAIL_SCRIPT run by this machine's
 * `sh` on a real file, its output cut into pieces at every kind of boundary (inside the marker, inside the status
 * line, one byte at a time), gives the same status and the same bytes as the whole reply read by parseTailOutput;
 * a stream that sends more than was asked for, or bytes after a `missing` status, is refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseTailOutput, tailReadCommand, type TailRequest } from '../../src/core/metrics/follow/tail';
import { TailStreamReader, type TailStreamHeader } from '../../src/core/metrics/follow/tailStream';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-tail-stream-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
const file = path.join(dir, 'train.jsonl');
let text = '';
for (let s = 0; s < 3000; s++) text += `{"step":${s},"loss":${(1 / (s + 1)).toFixed(6)}}\n`;
fs.writeFileSync(file, text);

/** The script's real output for `request`, with login-shell noise in front as some hosts print. */
function replyOf(request: TailRequest, noise = ''): Buffer {
  const [cmd, ...args] = tailReadCommand(file, request).argv;
  return Buffer.concat([Buffer.from(noise), execFileSync(cmd, args, { maxBuffer: 1 << 26 })]);
}

function readInPieces(reply: Buffer, request: TailRequest, cut: (i: number) => number, piece: number): { header: TailStreamHeader | undefined; data: Buffer; pieces: number[] } {
  let header: TailStreamHeader | undefined;
  const out: Uint8Array[] = [];
  const r = new TailStreamReader(request, 'test read', piece, (h) => (header = h), (d) => out.push(d));
  for (let at = 0, i = 0; at < reply.length; i++) {
    const n = Math.max(1, Math.min(cut(i), reply.length - at));
    r.push(reply.subarray(at, at + n));
    at += n;
  }
  r.end();
  return { header, data: Buffer.concat(out), pieces: out.map((d) => d.length) };
}

test('a stream cut anywhere gives the status line and the bytes of the whole reply, in pieces of the size asked for', () => {
  const size = fs.statSync(file).size;
  const first = 1000;
  const head = Buffer.from(text.slice(0, 64)).toString('hex');
  const ino = String(fs.statSync(file).ino);
  const request: TailRequest = { offset: first, maxBytes: size - first, expectHead: head, expectInode: ino, compressAbove: 0 };
  const reply = replyOf(request, 'Welcome to the login shell\n');
  const whole = parseTailOutput({ stdout: reply, stderr: Buffer.alloc(0), code: 0, truncated: false }, request, 'whole');
  assert.equal(whole.status, 'ok');
  if (whole.status !== 'ok') return;
  assert.equal(whole.from, first);
  assert.equal(Buffer.from(whole.data).toString(), text.slice(first));
  for (const [name, cut] of [
    ['one byte at a time', () => 1],
    ['7 bytes', () => 7],
    ['ragged', (i: number) => 1 + ((i * 7919) % 4099)],
    ['all at once', () => reply.length],
  ] as const) {
    const got = readInPieces(reply, request, cut, 16 * 1024);
    assert.deepEqual(got.header, { status: 'ok', stat: whole.stat, from: whole.from }, name);
    assert.equal(got.data.toString(), Buffer.from(whole.data).toString(), name);
    assert.ok(got.pieces.slice(0, -1).every((n) => n === 16 * 1024), `${name}: every piece but the last is full`);
  }
});

test('a file replaced since (another head): the script reads from 0 and the stream says so', () => {
  const request: TailRequest = { offset: 500, maxBytes: 1 << 20, expectHead: 'ff'.repeat(64), expectInode: '', compressAbove: 0 };
  const got = readInPieces(replyOf(request), request, () => 4096, 64 * 1024);
  assert.equal(got.header?.status, 'ok');
  assert.equal(got.header?.status === 'ok' && got.header.from, 0);
  assert.equal(got.data.toString(), text);
});

test('a missing file gives its status and no bytes; bytes after it, or more than asked for, are refused', () => {
  const missing: TailRequest = { offset: 0, maxBytes: 1 << 20, expectHead: '', expectInode: '', compressAbove: 0 };
  const [cmd, ...args] = tailReadCommand(path.join(dir, 'nope.jsonl'), missing).argv;
  const reply = execFileSync(cmd, args);
  const got = readInPieces(reply, missing, () => 3, 1024);
  assert.deepEqual(got.header, { status: 'missing' });
  assert.equal(got.data.length, 0);
  const r = new TailStreamReader(missing, 'test read', 1024, () => undefined, () => undefined);
  assert.throws(() => r.push(Buffer.concat([reply, Buffer.from('junk')])), /bytes after a missing status/);

  const small: TailRequest = { offset: 0, maxBytes: 100, expectHead: '', expectInode: '', compressAbove: 0 };
  const full = replyOf({ ...small, maxBytes: 1 << 20 });
  const over = new TailStreamReader(small, 'test read', 1024, () => undefined, () => undefined);
  assert.throws(() => over.push(full), /more than the 100 bytes asked for/);
});

test('output with no status line in its first 64 KiB is not a tail read', () => {
  const request: TailRequest = { offset: 0, maxBytes: 1 << 20, expectHead: '', expectInode: '', compressAbove: 0 };
  const r = new TailStreamReader(request, 'test read', 1024, () => undefined, () => undefined);
  r.push(Buffer.alloc(60 * 1024, 0x61));
  assert.throws(() => r.push(Buffer.alloc(8 * 1024, 0x61)), /no status line in the first 65536 bytes/);
});
