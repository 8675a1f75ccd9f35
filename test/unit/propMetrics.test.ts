/**
 * Hostile input for the metrics log parsers (issue 8): whatever bytes a remote log holds, cut into whatever
 * chunks a read returns, a parser never throws anything but RemoteRunsError and never allocates more than a
 * linear function of what it was fed. Inputs are generated: random bytes, near-valid lines/rows/records with
 * hostile keys and values, and TFRecord frames with correct CRCs around random protobuf so the decoder itself
 * is reached (random bytes alone almost never pass the length CRC).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MlflowMetricParser, RunMetrics, createParser, crc32c, maskCrc, parseTailOutput, type MetricsFormat } from '../../src/core/metrics';
import { RemoteRunsError } from '../../src/core/types';

const RUNS = 150;

/** Bytes one parser may hold for an input of `n` bytes: a generous constant per input byte plus fixed buffers. */
function allowedBytes(n: number, perKeyBase: number): number {
  // Each new key costs up to three 64-slot float64 columns (x, y, time) even for a one-point series, and a key
  // needs at least ~2 input bytes; beyond that, doubling growth keeps at most 2 × 24 bytes per point.
  return 1024 * n + perKeyBase;
}

/** Cut bytes into chunks at the given fractions (sorted, deduplicated), like reads of a growing file. */
function chunk(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let from = 0;
  for (const c of at) {
    out.push(bytes.subarray(from, c));
    from = c;
  }
  out.push(bytes.subarray(from));
  return out;
}

/** Feed every chunk, then end; return what it holds. Throws only what the parser threw. */
function feed(format: MetricsFormat, chunks: Uint8Array[], end: boolean) {
  const p = createParser(format);
  let maxPending = 0;
  for (const c of chunks) {
    p.push(c);
    maxPending = Math.max(maxPending, p.pendingBytes);
  }
  if (end) p.end();
  let points = 0;
  for (const s of p.metrics.series.values()) points += s.length;
  return { metrics: p.metrics, maxPending, points };
}

function checkBounded(format: MetricsFormat, bytes: Uint8Array, cuts: number[], end: boolean): void {
  let out;
  try {
    out = feed(format, chunk(bytes, cuts), end);
  } catch (e) {
    assert.ok(e instanceof RemoteRunsError, `${format} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
    return;
  }
  const n = bytes.length;
  assert.ok(out.maxPending <= n, `${format}: holds ${out.maxPending} pending bytes of ${n} fed`);
  assert.ok(out.points <= 2 * n + 2, `${format}: ${out.points} points from ${n} bytes`);
  assert.ok(out.metrics.series.size <= n, `${format}: ${out.metrics.series.size} series from ${n} bytes`);
  assert.ok(out.metrics.byteLength <= allowedBytes(n, 4096), `${format}: ${out.metrics.byteLength} bytes held for ${n} bytes fed`);
  for (const s of out.metrics.series.values()) {
    for (let i = 0; i < s.length; i++) assert.ok(Number.isFinite(s.y[i]), `${format}: a non-finite value was kept for ${JSON.stringify(s.key)}`);
  }
}

const enc = new TextEncoder();
const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 });
/** Keys a hostile log might use: markup, prototype names, empty, huge, control characters, lone surrogates. */
const hostileKey = fc.oneof(
  fc.constantFrom('loss', 'step', '__proto__', 'constructor', 'toString', '', ' ', '<img src=x onerror=alert(1)>', 'a\u0000b', '\ud800', 'x'.repeat(300)),
  fc.string({ unit: 'binary', maxLength: 12 }),
);
const hostileNumberText = fc.constantFrom('NaN', 'Infinity', '-Infinity', 'inf', 'nan', '1e309', '-0', '0x10', '1_000', '', ' 3 ', '1e-400', '9'.repeat(400));
const jsonScalar = fc.oneof(fc.double(), fc.integer(), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null), hostileNumberText);

const jsonlLine = fc.oneof(
  fc.dictionary(hostileKey, jsonScalar, { maxKeys: 6 }).map((o) => JSON.stringify(o)),
  fc.dictionary(hostileKey, fc.oneof(jsonScalar, hostileNumberText), { maxKeys: 4 }).map((o) =>
    // Bare NaN / Infinity tokens, as Python's json.dumps writes them.
    `{${Object.entries(o).map(([k, v]) => `${JSON.stringify(k)}: ${typeof v === 'string' && /^-?(NaN|Infinity)$/.test(v) ? v : JSON.stringify(v)}`).join(', ')}}`,
  ),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('{', '}', '{"step": 1, "loss": 0.5', '\ufeff{"loss": 1}', '{"loss": 1}\r', '[1,2,3]', '{"a":' + '['.repeat(5000)),
);

test('JSONL: any lines, cut anywhere, never throw and stay linear', () => {
  fc.assert(
    fc.property(fc.array(jsonlLine, { maxLength: 30 }), fc.constantFrom('\n', '\r\n'), cuts, fc.boolean(), (lines, eol, c, end) => {
      checkBounded('jsonl', enc.encode(lines.join(eol)), c, end);
    }),
    { numRuns: RUNS },
  );
});

const csvCell = fc.oneof(fc.string({ unit: 'binary', maxLength: 10 }), hostileNumberText, fc.double().map(String), fc.constantFrom('"', '""', '"a,b"', '"x\ny"', ','));
test('CSV: any header and rows, cut anywhere, never throw and stay linear', () => {
  fc.assert(
    fc.property(
      fc.array(hostileKey, { maxLength: 8 }),
      fc.array(fc.array(csvCell, { maxLength: 10 }), { maxLength: 25 }),
      fc.constantFrom('\n', '\r\n', '\r'),
      cuts,
      fc.boolean(),
      (header, rows, eol, c, end) => {
        const text = [header.join(','), ...rows.map((r) => r.join(','))].join(eol);
        checkBounded('csv', enc.encode(text), c, end);
      },
    ),
    { numRuns: RUNS },
  );
});

test('trainer_state.json: any JSON, any log_history, never throw and stay linear', () => {
  const entry = fc.oneof(fc.dictionary(hostileKey, jsonScalar, { maxKeys: 6 }), fc.jsonValue({ maxDepth: 2 }));
  fc.assert(
    fc.property(
      fc.oneof(
        fc.record({ log_history: fc.oneof(fc.array(entry, { maxLength: 20 }), fc.jsonValue({ maxDepth: 2 })), global_step: jsonScalar }, { requiredKeys: [] }).map((o) => JSON.stringify(o)),
        fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? ''),
        fc.string({ unit: 'binary', maxLength: 80 }),
      ),
      cuts,
      fc.boolean(),
      (text, c, end) => {
        checkBounded('trainer-state', enc.encode(text), c, end);
      },
    ),
    { numRuns: RUNS },
  );
});

// --- TFRecord framing around generated protobuf ------------------------------------------------------------

function varint(n: bigint): number[] {
  const out: number[] = [];
  let v = BigInt.asUintN(64, n);
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) b |= 0x80;
    out.push(b);
  } while (v > 0n);
  return out;
}

/** One protobuf field: a tag with any field number and wire type, then a payload for that type (or junk). */
type Field = { field: number; wire: number; payload: Uint8Array; value: bigint };
const field: fc.Arbitrary<Field> = fc.record({
  field: fc.oneof(fc.constantFrom(1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 13, 16, 17), fc.integer({ min: 0, max: 1 << 29 })),
  wire: fc.integer({ min: 0, max: 7 }),
  payload: fc.uint8Array({ maxLength: 24 }),
  value: fc.bigInt({ min: -(1n << 63n), max: (1n << 64n) - 1n }),
});

function encodeFields(fields: Field[], nested: Uint8Array[] = []): Uint8Array {
  const out: number[] = [];
  fields.forEach((f, i) => {
    out.push(...varint(BigInt(f.field) * 8n + BigInt(f.wire)));
    if (f.wire === 0) out.push(...varint(f.value));
    else if (f.wire === 1) out.push(...f.payload.subarray(0, 8));
    else if (f.wire === 5) out.push(...f.payload.subarray(0, 4));
    else if (f.wire === 2) {
      const body = nested[i % Math.max(1, nested.length)] ?? f.payload;
      // A length that sometimes lies (longer than the body), as a corrupt writer would produce.
      out.push(...varint(f.value % 3n === 0n ? f.value : BigInt(body.length)), ...body);
    } else out.push(...f.payload);
  });
  return Uint8Array.from(out);
}

/** An Event-shaped message: fields 1/2/5 with nested Summary → Value → tensor/metadata, built from generated fields. */
const eventBytes = fc
  .tuple(fc.array(field, { maxLength: 5 }), fc.array(field, { maxLength: 5 }), fc.array(field, { maxLength: 5 }), fc.array(field, { maxLength: 4 }))
  .map(([outer, summary, value, tensor]) => {
    const tensorMsg = encodeFields(tensor);
    const valueMsg = encodeFields(value, [tensorMsg]);
    const summaryMsg = encodeFields(summary.map((f) => ({ ...f, field: 1, wire: 2 })), [valueMsg]);
    return encodeFields(
      [...outer, { field: 5, wire: 2, payload: new Uint8Array(), value: 0n }],
      [...outer.map(() => valueMsg), summaryMsg],
    );
  });

function frame(data: Uint8Array, corrupt: number): Uint8Array {
  const out = new Uint8Array(12 + data.length + 4);
  const view = new DataView(out.buffer);
  view.setBigUint64(0, BigInt(data.length), true);
  view.setUint32(8, maskCrc(crc32c(out, 0, 8)), true);
  out.set(data, 12);
  view.setUint32(12 + data.length, maskCrc(crc32c(data)), true);
  if (corrupt > 0) out[corrupt % out.length] ^= 0xff;
  return out;
}

/** A well-formed TF1 scalar event (wall_time, step, summary { value { tag, simple_value } }) with a hostile tag. */
const scalarEvent = fc.tuple(hostileKey, fc.float(), fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }), fc.double()).map(([tag, value, step, wall]) => {
  const tagBytes = enc.encode(tag);
  const v = new Uint8Array(5);
  new DataView(v.buffer).setFloat32(1, value, true);
  v[0] = (2 << 3) | 5;
  const valueMsg = Uint8Array.from([(1 << 3) | 2, ...varint(BigInt(tagBytes.length)), ...tagBytes, ...v]);
  const summary = Uint8Array.from([(1 << 3) | 2, ...varint(BigInt(valueMsg.length)), ...valueMsg]);
  const w = new Uint8Array(9);
  w[0] = (1 << 3) | 1;
  new DataView(w.buffer).setFloat64(1, wall, true);
  return Uint8Array.from([...w, (2 << 3) | 0, ...varint(step), (5 << 3) | 2, ...varint(BigInt(summary.length)), ...summary]);
});

test('tfevents: framed records of generated protobuf, garbage and corrupt frames never throw and stay linear', () => {
  let withPoints = 0;
  const record = fc.oneof(
    scalarEvent.map((d) => frame(d, 0)),
    fc.tuple(eventBytes, fc.constant(0)).map(([d, c]) => frame(d, c)),
    fc.tuple(fc.uint8Array({ maxLength: 60 }), fc.nat(200)).map(([d, c]) => frame(d, c)),
    fc.uint8Array({ maxLength: 40 }),
    // A valid header claiming a huge record: must be held (or skipped), never allocated up front.
    fc.constantFrom(0xffff_ffff, 200 * 1024 * 1024, 2 ** 40).map((len) => {
      const h = new Uint8Array(12);
      const v = new DataView(h.buffer);
      v.setBigUint64(0, BigInt(len), true);
      v.setUint32(8, maskCrc(crc32c(h, 0, 8)), true);
      return h;
    }),
  );
  fc.assert(
    fc.property(fc.array(record, { maxLength: 12 }), cuts, fc.boolean(), (records, c, end) => {
      const total = records.reduce((n, r) => n + r.length, 0);
      const bytes = new Uint8Array(total);
      let at = 0;
      for (const r of records) {
        bytes.set(r, at);
        at += r.length;
      }
      checkBounded('tfevents', bytes, c, end);
      if (feed('tfevents', [bytes], true).points > 0) withPoints++;
    }),
    { numRuns: RUNS * 2 },
  );
  // The generator reaches the decoder's happy path too, not only its error paths.
  assert.ok(withPoints > 0, 'no generated file produced a single point');
});

test('every format: random bytes, cut anywhere, never throw and stay linear', () => {
  fc.assert(
    fc.property(fc.constantFrom<MetricsFormat>('jsonl', 'csv', 'trainer-state', 'tfevents', 'mlflow'), fc.uint8Array({ maxLength: 600 }), cuts, fc.boolean(), (format, bytes, c, end) => {
      checkBounded(format, bytes, c, end);
    }),
    { numRuns: RUNS * 2 },
  );
});

test('MLflow metric files: near-valid lines, cut anywhere, never throw, stay linear, and every point is finite', () => {
  const num = fc.oneof(fc.integer().map(String), fc.double().map(String), fc.constantFrom('nan', 'inf', '-inf', '1e400', '', '0x10', '١٢'));
  const line = fc.oneof(
    fc.tuple(num, num, num).map((p) => p.join(' ')),
    fc.tuple(num, num).map((p) => p.join(' ')),
    fc.array(num, { maxLength: 5 }).map((p) => p.join(' ')),
    fc.string({ unit: 'binary', maxLength: 30 }),
  );
  fc.assert(
    fc.property(fc.array(line, { maxLength: 30 }), cuts, fc.boolean(), (lines, c, end) => {
      const bytes = new TextEncoder().encode(lines.join('\n'));
      checkBounded('mlflow', bytes, c, end);
      const m = new RunMetrics();
      const p = new MlflowMetricParser(m, 'k');
      for (const part of chunk(bytes, c)) p.push(part);
      if (end) p.end();
      for (const s of m.series.values()) for (let i = 0; i < s.length; i++) assert.ok(Number.isFinite(s.x[i]) && Number.isFinite(s.y[i]));
    }),
    { numRuns: RUNS * 2 },
  );
});

test('the tail poll reply: any bytes end in a typed result or RemoteRunsError, and the data is no larger than the reply', () => {
  const marker = '\n@rr-tail@1\n';
  const statusLine = fc.oneof(
    fc.constantFrom('missing', 'denied', 'notfile', 'ok 10 1700000000.5 123 0 abcd', 'ok 1e400 x y z w', 'ok', 'ok -1 NaN 1 1 -', 'ok 9007199254740993 1 1 1 -'),
    fc.array(fc.string({ unit: 'binary', maxLength: 12 }), { maxLength: 7 }).map((f) => `ok ${f.join(' ')}`),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 30 }), fc.boolean(), statusLine, fc.uint8Array({ maxLength: 100 }), fc.constantFrom(0, 0, 0, 1, 127, null), (noise, withMarker, status, data, code) => {
      const stdout = Buffer.concat([Buffer.from(noise + (withMarker ? marker : '') + status + '\n'), Buffer.from(data)]);
      try {
        const r = parseTailOutput({ stdout, stderr: Buffer.alloc(0), code, truncated: false }, { offset: 0, maxBytes: 1000, expectHead: '', expectInode: '' }, 'read x');
        if (r.status === 'ok') assert.ok(r.data.length <= stdout.length);
      } catch (e) {
        assert.ok(e instanceof RemoteRunsError, `threw ${String(e)}`);
      }
    }),
    { numRuns: RUNS * 2 },
  );
});

test('the bound is linear, not just finite: 4x the JSONL input holds at most ~4x the memory', () => {
  // 2,000 and 8,000 lines of distinct keys and values (the costliest shape: one series per key).
  const build = (n: number) => enc.encode(Array.from({ length: n }, (_, i) => JSON.stringify({ step: i, [`k${i % 500}`]: i / 7 })).join('\n') + '\n');
  const small = feed('jsonl', [build(2000)], true).metrics.byteLength;
  const large = feed('jsonl', [build(8000)], true).metrics.byteLength;
  assert.ok(large <= small * 4 * 1.6, `2,000 lines hold ${small} bytes, 8,000 hold ${large}`);
});
