/**
 * The JSONL fast path (flat objects of numbers read from the bytes) must give exactly what the general path
 * (JSON.parse per line) gives: same keys in the same order, same x, y, time and segments, same bad-line and
 * bad-value counts and first locations. The general path is the reference (JsonlParser with flatFastPath off).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { JsonlParser, MAX_LINE_BYTES, RunMetrics } from '../../src/core/metrics';
import { FlatBatcher } from '../../src/core/metrics/formats/flatBatch';

const enc = new TextEncoder();

function parse(text: string, flatFastPath: boolean, chunk = 0): RunMetrics {
  const p = new JsonlParser(new RunMetrics('line'), { flatFastPath });
  const bytes = enc.encode(text);
  if (chunk > 0) for (let at = 0; at < bytes.length; at += chunk) p.push(bytes.subarray(at, at + chunk));
  else p.push(bytes);
  p.end();
  return p.metrics;
}

/** Everything a view or a status line can see of parsed metrics, as comparable text (Object.is for -0). */
function seen(m: RunMetrics): string {
  const num = (v: number) => (Object.is(v, -0) ? '-0' : String(v));
  return JSON.stringify({
    keys: m.keys(),
    series: m.keys().map((k) => {
      const s = m.get(k)!;
      return { x: [...s.x].map(num), y: [...s.y].map(num), t: s.time ? [...s.time].map(num) : null, segments: s.segments };
    }),
    records: m.records,
    x: [m.xKey ?? null, m.xMissing],
    bad: [m.badLines, m.badValues, m.firstBadLine, m.firstBadValue],
  });
}

function assertSame(text: string, chunk = 0): void {
  assert.equal(seen(parse(text, true, chunk)), seen(parse(text, false, chunk)), `for ${JSON.stringify(text.slice(0, 300))}`);
}

/** What the series store holds of a value: float32, or the value itself where float32 cannot hold it (compact.ts). */
function held(v: number): number {
  const a = Math.abs(v);
  return v !== 0 && Number.isFinite(v) && (a > 3.4028234663852886e38 || a < 1.1754943508222875e-38) ? v : Math.fround(v);
}

test('numbers are read exactly as JSON.parse reads them (steps held exactly, values as the store holds them)', () => {
  const numbers = [
    '0', '-0', '0.0', '-0.0', '1', '-1', '42', '3.5', '0.1', '0.2', '0.3', '1e5', '1E5', '1e+5', '1e-5', '2.5e-3',
    '3.0000e-4', '1700000000.25', '123456789012345', '1234567890123456', '12345678901234567', '9007199254740993',
    '0.1234567890123456789', '0.30000000000000004', '2.2250738585072014e-308', '4.9e-324', '1.7976931348623157e308',
    '1e22', '1e23', '1e-22', '1e-23', '123.456e-20', '0.000001234', '100000000000000000000000', '5e-324',
  ];
  for (const n of numbers) {
    const m = parse(`{"step":1,"v":${n}}\n`, true);
    const y = m.get('v')!.yAt(0);
    assert.ok(Object.is(y, held(JSON.parse(n))), `${n}: got ${y}, JSON.parse gives ${JSON.parse(n)}`);
    assertSame(`{"step":1,"v":${n}}\n`);
    // As a step the same number is kept exactly; one past 2^53 is not exact, and its line is a bad line.
    const stepped = parse(`{"step":${n},"v":1}\n`, true);
    if (Math.abs(JSON.parse(n)) > Number.MAX_SAFE_INTEGER) {
      assert.equal(stepped.get('v'), undefined, `step ${n}`);
      assert.equal(stepped.badLines, 1);
      assert.match(stepped.firstBadLine!.reason, /^step is .*past 2\^53/);
    } else {
      const asStep = stepped.get('v')!.xAt(0);
      assert.ok(Object.is(asStep, JSON.parse(n)), `step ${n}: got ${asStep}`);
    }
    assertSame(`{"step":${n},"v":1}\n`);
  }
});

test('anything not a flat object of plain JSON numbers goes the general way, with the same result', () => {
  const lines = [
    '{"step":1,"loss":01}', // leading zero: not JSON
    '{"step":1,"loss":1.}',
    '{"step":1,"loss":.5}',
    '{"step":1,"loss":+1}',
    '{"step":1,"loss":-}',
    '{"step":1,"loss":1e}',
    '{"step":1,"loss":1e999}', // overflows to Infinity: a bad value
    '{"step":1,"loss":NaN,"acc":0.5}',
    '{"step":1,"loss":-Infinity}',
    '{"step":1,"loss":"0.5"}',
    '{"step":1,"loss":null,"acc":true}',
    '{"step":1,"eval":{"acc":0.5}}',
    '{"step":1,"a":[1,2]}',
    '{"step":1,"a":1,"a":2}', // duplicate key: JSON.parse keeps the last value
    '{"b":1,"2":3,"a":4}', // an index key: objects list it first
    '{"step":1,"l\\u006fss":2}', // escape in a key
    '{"step":1,"loss":2,}',
    '{"step":1 "loss":2}',
    '{"step":1,"loss":2} x',
    '{"step":1,"loss":2}}',
    '{}',
    '[1,2]',
    '7',
    '',
    '   ',
    ' \t{ "step" : 3 , "loss" :\t0.25 } \t',
    '{"step":2,"ü/loss":1.5,"日本":2}',
    '{"global_step":5,"_step":9,"iter":7,"x":1}',
    '{"_timestamp":1700000000,"time":"2023-11-14T22:13:20Z","x":1}',
    '{"time":1700000000123,"timestamp":5,"x":1}',
    '{"x":1,"__proto__":2,"constructor":3}',
  ];
  for (const line of lines) assertSame(`${line}\n`);
  assertSame(lines.join('\n'));
  assertSame(lines.join('\r\n') + '\r\n', 7);
});

test('a layout that changes between lines (keys added, dropped, reordered, renamed) reads the same', () => {
  const text = [
    '{"step":1,"loss":1,"acc":0.1}',
    '{"step":2,"loss":0.9,"acc":0.2,"lr":0.001}',
    '{"step":3,"acc":0.3,"loss":0.8}',
    '{"step":4,"loss":0.7}',
    '{"step":5,"lr":0.002,"loss":0.6,"acc":0.5,"lr2":1}',
    '{"step":3,"loss":0.65}', // resumed: new segment
    '{"loss":0.5}', // no x: keeps the last
    '{"step":6,"loss":0.4,"loss":0.3}',
    '{"step":7,"acc":0.9,"loss":0.2,"acc2":1}',
  ].join('\n');
  assertSame(text);
  assertSame(text, 3);
});

test('the first bad line is still located after many fast lines, and its byte offset is right', () => {
  const good = Array.from({ length: 50 }, (_, i) => `{"step":${i},"loss":${1 / (i + 1)}}`);
  const text = [...good, '{"step":50,"loss":', ...good, 'oops'].join('\n') + '\n';
  const m = parse(text, true);
  assert.equal(m.badLines, 2);
  assert.equal(m.firstBadLine?.line, 51);
  assert.equal(m.firstBadLine?.byteOffset, enc.encode(good.join('\n') + '\n').length);
  // The second 50 lines restart at step 0: the later process wins (series.ts).
  assert.equal(m.get('loss')!.length, 50);
  assert.equal(m.get('loss')!.replaced, 50);
  assertSame(text);
});

/** Arbitrary flat-ish lines: mostly number fields (written the ways loggers write them), sometimes not. */
const key = fc.oneof(
  fc.constantFrom('step', 'global_step', 'iter', '_step', 'epoch', 'timesteps', 'time/total_timesteps', 'time', 'timestamp', 'loss', 'acc', 'lr', 'eval/acc', 'é', '0', '12', 'a"b', 'a\\b'),
  fc.string({ minLength: 0, maxLength: 4 }),
);
const numberText = fc.oneof(
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((v) => JSON.stringify(v)),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((v) => v.toFixed(6)),
  fc.double({ min: 1e-9, max: 1, noNaN: true }).map((v) => v.toExponential(4)),
  fc.double({ min: -1e3, max: 1e3, noNaN: true }).map((v) => v.toPrecision(17)),
  fc.integer({ min: -5, max: 100_000 }).map(String),
  fc.bigInt({ min: -(10n ** 25n), max: 10n ** 25n }).map(String),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e999', '-0', '01', '1.', '"x"', 'null', 'true', '{"a":1}', '[1]', '0.5e-400'),
);
const field = fc.tuple(key, numberText, fc.constantFrom('', ' ', '\t')).map(([k, v, ws]) => `${JSON.stringify(k)}${ws}:${ws}${v}`);
const line = fc.oneof(
  { weight: 8, arbitrary: fc.array(field, { maxLength: 6 }).map((fs) => `{${fs.join(',')}}`) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
);

test('property: any mix of lines, in any chunking, reads the same on both paths', () => {
  fc.assert(
    fc.property(fc.array(line, { maxLength: 12 }), fc.integer({ min: 0, max: 40 }), fc.boolean(), (lines, chunk, crlf) => {
      assertSame(lines.join(crlf ? '\r\n' : '\n') + (lines.length % 2 ? '\n' : ''), chunk);
    }),
    { numRuns: 2000 },
  );
});

// ---- Lines read in another thread (flatBatch.ts, the parse worker's half) -------------------------------------

/**
 * Parse `text` the way a follower with a parse worker does: the first `head` bytes pushed here, then the parser
 * detached and the rest read by a FlatBatcher in `chunk`-byte pieces, each batch moved as postMessage moves it,
 * applied and its buffers given back; then the parser takes the stream back from the last batch's state and pushes the rest itself. With
 * `stopAfter`, the "worker" dies after that many batches: the rest is read again from the end of the last batch
 * applied (what MetricsFollower does after a worker crash).
 */
function parseViaBatches(text: string, head: number, chunk: number, stopAfter?: number): RunMetrics {
  const p = new JsonlParser(new RunMetrics('line'));
  const bytes = enc.encode(text);
  const first = Math.min(head, bytes.length);
  p.push(bytes.subarray(0, first));
  const handoff = { state: p.detach(), offset: first };
  const batcher = new FlatBatcher(structuredClone(handoff.state));
  let resumeFrom = handoff;
  let batches = 0;
  const size = Math.max(1, chunk);
  // As the worker does: one read buffer filled again and again (given back after each batch), and each batch's
  // buffers transferred, then given back to be written into again once applied.
  const piece = new Uint8Array(size);
  for (let at = first; at < bytes.length; at += size) {
    if (stopAfter !== undefined && batches === stopAfter) break;
    const part = bytes.subarray(at, at + size);
    piece.set(part);
    const made = batcher.push(piece.subarray(0, part.length));
    // The batcher keeps no view of the read: what it holds of a cut line is its own copy.
    piece.fill(0x7b);
    const batch = structuredClone(made, { transfer: [made.meta.buffer, made.values.buffer, made.raw.buffer] as ArrayBuffer[] });
    p.applyBatch(batch);
    batcher.recycle({ meta: batch.meta.buffer as ArrayBuffer, values: batch.values.buffer as ArrayBuffer, raw: batch.raw.buffer as ArrayBuffer });
    batches++;
    resumeFrom = { state: batch.state, offset: Math.min(bytes.length, at + size) };
  }
  // The stream taken back: after the last batch (the backlog read), or after the last one applied (the worker died).
  p.resume(resumeFrom.state);
  p.push(bytes.subarray(resumeFrom.offset));
  p.end();
  return p.metrics;
}

test('property: lines read by a FlatBatcher and applied in order read the same as pushed here, also after taking the stream back', () => {
  fc.assert(
    fc.property(
      fc.array(line, { maxLength: 14 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 1, max: 40 }),
      fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
      fc.boolean(),
      (lines, head, chunk, stopAfter, crlf) => {
        const text = lines.join(crlf ? '\r\n' : '\n') + (lines.length % 2 ? '\n' : '');
        assert.equal(seen(parseViaBatches(text, head, chunk, stopAfter)), seen(parse(text, true, 0)), `for ${JSON.stringify(text.slice(0, 300))}`);
      },
    ),
    { numRuns: 2000 },
  );
});

test('a too-long line read by a FlatBatcher is counted where the parser counts it, and the lines around it are kept', () => {
  const long = `{"step":2,"loss":${'1'.repeat(MAX_LINE_BYTES + 10)}}`;
  const text = `{"step":1,"loss":0.5}\n${long}\n{"step":3,"loss":0.25}\n`;
  for (const chunk of [1 << 20, 7_000_001]) {
    assert.equal(seen(parseViaBatches(text, 5, chunk)), seen(parse(text, true, 1 << 20)));
  }
});
