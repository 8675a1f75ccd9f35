/**
 * TensorBoard event files: a tiny TFRecord + Event protobuf writer (below, written from the .proto field
 * numbers independently of the reader) produces files with simple_value and tensor scalars, non-scalar
 * summaries, a record with a corrupted data CRC, a corrupted length CRC, and a record still being written.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, crc32c, maskCrc, type RunMetrics } from '../../src/core/metrics';

// ---- protobuf writer -------------------------------------------------------------------------------------------

function varint(n: bigint | number): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
const fVarint = (field: number, v: bigint | number) => [...key(field, 0), ...varint(v)];
const fBytes = (field: number, b: ArrayLike<number>) => [...key(field, 2), ...varint(b.length), ...Array.from(b)];
const fString = (field: number, s: string) => fBytes(field, new TextEncoder().encode(s));
function le(kind: 'f32' | 'f64', v: number): number[] {
  const b = new DataView(new ArrayBuffer(kind === 'f32' ? 4 : 8));
  if (kind === 'f32') b.setFloat32(0, v, true);
  else b.setFloat64(0, v, true);
  return Array.from(new Uint8Array(b.buffer));
}
const fFloat = (field: number, v: number) => [...key(field, 5), ...le('f32', v)];
const fDouble = (field: number, v: number) => [...key(field, 1), ...le('f64', v)];

const metadata = (plugin: string) => fBytes(1, fString(1, plugin));
const shape = (dims: number[]) => dims.flatMap((d) => fBytes(2, fVarint(1, d)));

/** Summary.Value variants. */
const simpleValue = (tag: string, v: number) => [...fString(1, tag), ...fFloat(2, v)];
const tensorValue = (tag: string, tensor: number[], plugin?: string) => [
  ...fString(1, tag),
  ...(plugin !== undefined ? fBytes(9, metadata(plugin)) : []),
  ...fBytes(8, tensor),
];
const floatTensor = (v: number) => [...fVarint(1, 1), ...fBytes(2, shape([])), ...fBytes(5, le('f32', v))];
const doubleContentTensor = (v: number) => [...fVarint(1, 2), ...fBytes(2, shape([])), ...fBytes(4, le('f64', v))];
const int64Tensor = (v: number) => [...fVarint(1, 9), ...fBytes(10, varint(v))];
const halfTensor = (bits: number) => [...fVarint(1, 19), ...fBytes(13, varint(bits))];
const histogramTensor = () => [...fVarint(1, 2), ...fBytes(2, shape([2, 3])), ...fBytes(6, [0, 1, 2, 3, 4, 5].flatMap((v) => le('f64', v)))];

function event(wallTime: number, step: number | bigint, values: number[][]): number[] {
  return [...fDouble(1, wallTime), ...fVarint(2, step), ...fBytes(5, values.flatMap((v) => fBytes(1, v)))];
}

function u32(n: number): number[] {
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, (n >>> 24) & 0xff];
}

/** One TFRecord: length, masked CRC of length, data, masked CRC of data. */
function frame(data: number[]): Uint8Array {
  const len = [...u32(data.length), 0, 0, 0, 0];
  const bytes = [...len, ...u32(maskCrc(crc32c(Uint8Array.from(len)))), ...data, ...u32(maskCrc(crc32c(Uint8Array.from(data))))];
  return Uint8Array.from(bytes);
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

// ---- tests ------------------------------------------------------------------------------------------------------

test('CRC-32C matches the published check values (RFC 3720 B.4)', () => {
  assert.equal(crc32c(new TextEncoder().encode('123456789')), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assert.equal(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i)), 0x46dd794e);
});

const T0 = 1_700_000_000.25;

function sampleFile(): { bytes: Uint8Array; records: Uint8Array[] } {
  const records = [
    frame([...fDouble(1, T0), ...fString(3, 'brain.Event:2')]),
    frame(event(T0 + 1, 0, [simpleValue('train/loss', 2.5), tensorValue('eval/acc', floatTensor(0.125), 'scalars')])),
    frame(event(T0 + 2, 1, [simpleValue('train/loss', 2.25), tensorValue('eval/acc', floatTensor(0.25))])),
    frame(event(T0 + 3, 2, [tensorValue('hist', histogramTensor(), 'histograms'), tensorValue('double', doubleContentTensor(1 / 3), 'scalars')])),
    frame(event(T0 + 4, 2n ** 40n, [tensorValue('int', int64Tensor(-7), 'scalars'), tensorValue('half', halfTensor(0x3c00), 'scalars')])),
    frame(event(T0 + 5, 3, [tensorValue('custom', floatTensor(9), 'my_plugin')])),
    frame(event(T0 + 6, 4, [tensorValue('custom', floatTensor(9)), simpleValue('train/loss', NaN)])),
    frame(event(T0 + 7, 5, [simpleValue('train/loss', 1.75)])),
  ];
  return { bytes: concat(records), records };
}

function parse(bytes: Uint8Array, chunks: number[] = [], end = true): RunMetrics {
  const p = createParser('tfevents');
  let at = 0;
  for (const n of chunks) {
    p.push(bytes.subarray(at, at + n));
    at += n;
  }
  p.push(bytes.subarray(at));
  if (end) p.end();
  return p.metrics;
}

test('simple_value and tensor scalars (float, double content, int64, half) become series at step and wall time', () => {
  const m = parse(sampleFile().bytes);
  assert.deepEqual(m.keys().sort(), ['double', 'eval/acc', 'half', 'int', 'train/loss']);
  const loss = m.get('train/loss')!;
  assert.deepEqual([...loss.x], [0, 1, 5]);
  assert.deepEqual([...loss.y], [2.5, 2.25, 1.75]);
  assert.deepEqual([...loss.time!], [(T0 + 1) * 1000, (T0 + 2) * 1000, (T0 + 7) * 1000]);
  assert.deepEqual([...m.get('eval/acc')!.y], [0.125, 0.25], 'the second value has no metadata: the tag is remembered');
  assert.deepEqual([m.get('double')!.yAt(0)], [Math.fround(1 / 3)], 'held as float32 (compact.ts)');
  assert.deepEqual([...m.get('int')!.x], [2 ** 40]);
  assert.deepEqual([...m.get('int')!.y], [-7]);
  assert.deepEqual([...m.get('half')!.y], [1]);
  assert.equal(m.has('hist'), false, 'a 2x3 histogram tensor is not a scalar');
  assert.equal(m.has('custom'), false, 'another plugin’s tag stays out, also when later values lack metadata');
  assert.equal(m.badValues, 1, 'the NaN loss');
  assert.equal(m.badLines, 0);
  assert.equal(m.records, 8);
  assert.equal(m.unit, 'record');
});

test('a record with a bad data CRC is skipped and counted with its record number and offset', () => {
  const { records } = sampleFile();
  const bad = records[2].slice();
  bad[14] ^= 0xff; // inside the data
  const m = parse(concat([records[0], records[1], bad, records[7]]));
  assert.deepEqual([...m.get('train/loss')!.x], [0, 5]);
  assert.equal(m.badLines, 1);
  assert.equal(m.firstBadLine?.line, 3);
  assert.equal(m.firstBadLine?.byteOffset, records[0].length + records[1].length);
  assert.equal(m.firstBadLine?.reason, 'data CRC mismatch');
});

test('a bad length CRC loses the framing; the reader finds the next good record and counts one problem', () => {
  const { records } = sampleFile();
  const bad = records[2].slice();
  bad[9] ^= 0x01; // the length's CRC
  const m = parse(concat([records[1], bad, records[7]]));
  assert.deepEqual([...m.get('train/loss')!.x], [0, 5]);
  assert.equal(m.badLines, 1);
  assert.match(m.firstBadLine!.reason, /length CRC/);
  assert.equal(m.firstBadLine?.byteOffset, records[1].length);
});

test('a record still being written stays pending; more bytes complete it', () => {
  const { bytes, records } = sampleFile();
  const cut = bytes.length - 5;
  const p = createParser('tfevents');
  p.push(bytes.subarray(0, cut));
  assert.deepEqual([...p.metrics.get('train/loss')!.x], [0, 1]);
  assert.equal(p.pendingBytes, records[7].length - 5);
  assert.equal(p.metrics.badLines, 0);
  p.push(bytes.subarray(cut));
  assert.deepEqual([...p.metrics.get('train/loss')!.x], [0, 1, 5]);
  assert.equal(p.pendingBytes, 0);
  const ended = parse(bytes.subarray(0, cut));
  assert.equal(ended.badLines, 0, 'end() drops a partial record without calling it bad');
});

test('every chunk boundary gives the same result', () => {
  const { bytes } = sampleFile();
  const snap = (m: RunMetrics) => JSON.stringify([m.keys(), m.keys().map((k) => [...m.get(k)!.y]), m.badLines, m.badValues, m.records]);
  const expected = snap(parse(bytes));
  for (let i = 0; i <= bytes.length; i++) assert.equal(snap(parse(bytes, [i])), expected, `split at ${i}`);
  assert.equal(snap(parse(bytes, Array.from({ length: bytes.length }, () => 1))), expected, 'byte by byte');
});

test('a record with a valid CRC but not an Event protobuf is counted', () => {
  const m = parse(concat([frame([0x0a, 0x05, 0x01]), sampleFile().records[7]]));
  assert.equal(m.badLines, 1);
  assert.match(m.firstBadLine!.reason, /not an Event protobuf/);
  assert.deepEqual([...m.get('train/loss')!.y], [1.75]);
});
