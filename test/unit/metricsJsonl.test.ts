/** JSONL metrics parsing: values, keys, x/time detection, and every kind of bad or partial line. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, describeSkipped, MAX_LINE_BYTES, type RunMetrics } from '../../src/core/metrics';

const enc = new TextEncoder();

function parseAll(text: string | Uint8Array, chunkSizes?: number[], end = true): RunMetrics {
  const p = createParser('jsonl');
  const bytes = typeof text === 'string' ? enc.encode(text) : text;
  if (chunkSizes) {
    let at = 0;
    for (const n of chunkSizes) {
      p.push(bytes.subarray(at, at + n));
      at += n;
    }
    p.push(bytes.subarray(at));
  } else p.push(bytes);
  if (end) p.end();
  return p.metrics;
}

function points(m: RunMetrics, key: string): Array<[number, number]> {
  const s = m.get(key);
  assert.ok(s, `series ${key} exists (have ${m.keys().join(', ')})`);
  return [...s.x].map((x, i) => [x, s.y[i]]);
}

test('numeric fields become series against step; nested objects are flattened with /', () => {
  const m = parseAll(
    '{"step": 1, "loss": 2.5, "eval": {"loss": 3, "acc": 0.1, "deep": {"x": 7}}, "phase": "train"}\n' +
      '{"step": 2, "loss": 2.0, "lr": 1e-4}\n',
  );
  assert.deepEqual(points(m, 'loss'), [[1, 2.5], [2, 2.0]]);
  assert.deepEqual(points(m, 'eval/loss'), [[1, 3]]);
  assert.deepEqual(points(m, 'eval/deep/x'), [[1, 7]]);
  assert.deepEqual(points(m, 'lr'), [[2, 1e-4]]);
  assert.equal(m.has('step'), false, 'the x key is not a metric');
  assert.equal(m.has('phase'), false, 'a text field never numeric is not a metric');
  assert.equal(m.badLines + m.badValues, 0);
  assert.equal(m.records, 2);
});

test('x key preference: step, global_step, iteration, iter, _step; else line number; a line without one keeps the last x', () => {
  assert.deepEqual(points(parseAll('{"global_step": 5, "_step": 99, "a": 1}\n'), 'a'), [[5, 1]]);
  assert.deepEqual(points(parseAll('{"iter": 7, "a": 1}\n'), 'a'), [[7, 1]]);
  assert.deepEqual(points(parseAll('{"_step": 3, "a": 1}\n'), 'a'), [[3, 1]]);
  assert.deepEqual(points(parseAll('{"a": 1}\n\n{"a": 2}\n'), 'a'), [[1, 1], [3, 2]], 'line numbers, blank line counted');
  const m = parseAll('{"step": 10, "loss": 1}\n{"final_acc": 0.9}\n');
  assert.deepEqual(points(m, 'final_acc'), [[10, 0.9]]);
  for (const k of ['global_step', 'iteration', 'iter', '_step', 'time', 'timestamp']) {
    assert.equal(parseAll(`{"step": 1, "${k}": 1, "a": 1}\n`).has(k), false, `${k} is an axis field`);
  }
});

test('time keys: seconds, milliseconds and ISO strings all become ms', () => {
  const m = parseAll(
    '{"step": 1, "a": 1, "time": 1700000000.5}\n' +
      '{"step": 2, "a": 1, "timestamp": 1700000001000}\n' +
      '{"step": 3, "a": 1, "wall_time": "2023-11-14T22:13:22Z"}\n' +
      '{"step": 4, "a": 1, "_timestamp": 1700000003}\n' +
      '{"step": 5, "a": 1}\n',
  );
  const t = m.get('a')!.time!;
  assert.deepEqual([...t.subarray(0, 4)], [1700000000500, 1700000001000, Date.parse('2023-11-14T22:13:22Z'), 1700000003000]);
  assert.ok(Number.isNaN(t[4]));
  assert.equal(parseAll('{"step": 1, "a": 1}\n').get('a')!.time, undefined, 'no time column allocated when no line has one');
});

test('bad lines are skipped and counted with the first one located; good lines around them are kept', () => {
  const text =
    '{"step": 1, "loss": 1}\n' + // byte 0
    'not json at all\n' + // byte 23
    '[1, 2, 3]\n' +
    '{"step": 2, "loss": 0.5}\n' +
    '42\n';
  const m = parseAll(text);
  assert.deepEqual(points(m, 'loss'), [[1, 1], [2, 0.5]]);
  assert.equal(m.badLines, 3);
  assert.deepEqual(m.firstBadLine, { line: 2, byteOffset: 23, excerpt: 'not json at all', reason: 'not JSON' });
  assert.match(describeSkipped(m)!, /^Skipped 3 bad lines \(first at line 2, byte 23: not JSON: not json at all\)$/);
});

test('NaN, Infinity (bare, as Python writes them, or as text) and overflowing numbers skip that value only', () => {
  const m = parseAll(
    '{"step": 1, "loss": NaN, "acc": 0.5}\n' +
      '{"step": 2, "loss": Infinity, "acc": 0.6, "note": "NaN in a string stays text"}\n' +
      '{"step": 3, "loss": -Infinity, "acc": 0.7}\n' +
      '{"step": 4, "loss": 1e999, "acc": 0.8}\n' +
      '{"step": 5, "loss": "nan", "acc": 0.9}\n' +
      '{"step": 6, "loss": 0.25, "acc": "n/a"}\n',
  );
  assert.deepEqual(points(m, 'acc'), [[1, 0.5], [2, 0.6], [3, 0.7], [4, 0.8], [5, 0.9]]);
  assert.deepEqual(points(m, 'loss'), [[6, 0.25]]);
  assert.equal(m.badLines, 0);
  assert.equal(m.badValues, 6, '5 non-finite loss values + text where acc was numeric');
  assert.equal(m.firstBadValue?.line, 1);
  assert.equal(m.firstBadValue?.key, 'loss');
  assert.equal(m.firstBadValue?.reason, 'non-finite value');
  assert.equal(m.has('note'), false);
});

test('a half-written last line is pending, not an error, and completes when its bytes arrive', () => {
  const p = createParser('jsonl');
  p.push(enc.encode('{"step": 1, "loss": 1}\n{"step": 2, "lo'));
  assert.equal(p.metrics.get('loss')!.length, 1);
  assert.equal(p.pendingBytes, 15);
  assert.equal(p.metrics.badLines, 0);
  p.push(enc.encode('ss": 0.5}\n'));
  assert.deepEqual(points(p.metrics, 'loss'), [[1, 1], [2, 0.5]]);
  assert.equal(p.pendingBytes, 0);
});

test('end(): a complete last line without newline is taken, a cut-off one is dropped silently', () => {
  assert.deepEqual(points(parseAll('{"step": 1, "loss": 1}\n{"step": 2, "loss": 3}'), 'loss'), [[1, 1], [2, 3]]);
  const cut = parseAll('{"step": 1, "loss": 1}\n{"step": 2, "lo');
  assert.deepEqual(points(cut, 'loss'), [[1, 1]]);
  assert.equal(cut.badLines, 0);
});

test('a step going backwards (a resumed run) starts a new segment, the later process winning where steps repeat', () => {
  const lines = [1, 2, 3, 2, 3, 4, 5].map((s, i) => `{"step": ${s}, "loss": ${i}}`).join('\n') + '\n';
  const s = parseAll(lines).get('loss')!;
  assert.deepEqual([...s.x], [1, 2, 3, 4, 5]);
  assert.deepEqual([...s.y], [0, 3, 4, 5, 6]);
  assert.deepEqual(s.segments, [{ start: 0, end: 1 }, { start: 1, end: 5 }]);
  assert.deepEqual(s.restarts, [{ step: 2, index: 1, replaced: 2 }]);
  const flat = parseAll('{"step": 1, "a": 1}\n{"step": 1, "a": 2}\n').get('a')!;
  assert.equal(flat.segments.length, 1, 'an equal step is not a restart');
});

test('CRLF line ends, a BOM and UTF-8 split across chunks', () => {
  const m = parseAll(new Uint8Array([0xef, 0xbb, 0xbf, ...enc.encode('{"step": 1, "ü/loss": 1}\r\n{"step": 2, "ü/loss": 2}\r\n')]), [5, 13, 1]);
  assert.deepEqual(points(m, 'ü/loss'), [[1, 1], [2, 2]]);
  assert.equal(m.badLines, 0);
});

test('every chunk boundary gives the same result as one push', () => {
  const sample =
    '{"step": 1, "loss": 2.5, "eval": {"acc": 0.25}, "time": 1700000000}\n' +
    'garbage\n' +
    '{"step": 2, "loss": NaN, "name": "é→✓"}\n' +
    '\n' +
    '{"step": 1, "loss": 1.5}\r\n' +
    '{"step": 3, "loss": 0.5';
  const bytes = enc.encode(sample);
  const whole = parseAll(bytes);
  const snapshot = (m: RunMetrics) =>
    JSON.stringify({
      keys: m.keys(),
      series: m.keys().map((k) => [[...m.get(k)!.x], [...m.get(k)!.y], m.get(k)!.segments]),
      bad: [m.badLines, m.badValues, m.firstBadLine, m.firstBadValue],
    });
  const expected = snapshot(whole);
  assert.match(expected, /"loss"/);
  for (let a = 0; a <= bytes.length; a++) {
    assert.equal(snapshot(parseAll(bytes, [a])), expected, `split at ${a}`);
  }
  for (let a = 0; a <= bytes.length; a += 3) {
    for (let b = 0; a + b <= bytes.length; b += 5) assert.equal(snapshot(parseAll(bytes, [a, b])), expected, `split at ${a}+${b}`);
  }
  // Byte by byte.
  assert.equal(snapshot(parseAll(bytes, Array.from({ length: bytes.length }, () => 1))), expected);
});

test('a line longer than the limit is reported, not held in memory, and the next line still parses', () => {
  const p = createParser('jsonl');
  p.push(enc.encode('{"step": 1, "a": 1}\n{"junk": "'));
  const block = new Uint8Array(1024 * 1024).fill(0x78);
  for (let i = 0; i <= MAX_LINE_BYTES / block.length; i++) p.push(block);
  assert.ok(p.pendingBytes > MAX_LINE_BYTES);
  p.push(enc.encode('"}\n{"step": 2, "a": 2}\n'));
  assert.deepEqual(points(p.metrics, 'a'), [[1, 1], [2, 2]]);
  assert.equal(p.metrics.badLines, 1);
  assert.equal(p.metrics.firstBadLine?.reason, 'line too long');
  assert.equal(p.metrics.firstBadLine?.line, 2);
});
