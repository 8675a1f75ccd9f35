/**
 * A million-step log: storage stays in typed arrays (8 bytes per value, growth slack bounded), far below what
 * one object per point would need. Asserts on lengths and byte counts, never on time.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createParser, decimateMinMax, emaSmooth, pointsOf } from '../../src/core/metrics';

test('1,000,000 JSONL lines parse into typed arrays well under objects-per-point memory', () => {
  const N = 1_000_000;
  const p = createParser('jsonl');
  const enc = new TextEncoder();
  const BATCH = 20_000;
  for (let start = 0; start < N; start += BATCH) {
    let text = '';
    for (let i = start; i < start + BATCH; i++) text += `{"step":${i},"loss":${1 / (i + 1)},"lr":0.001}\n`;
    // Cut each batch mid-line, as network chunks are.
    const bytes = enc.encode(text);
    p.push(bytes.subarray(0, 777));
    p.push(bytes.subarray(777));
  }
  p.end();
  const m = p.metrics;
  assert.equal(m.records, N);
  assert.equal(m.badLines, 0);
  const loss = m.get('loss')!;
  assert.equal(loss.length, N);
  assert.equal(loss.x[N - 1], N - 1);
  assert.equal(loss.y[N - 1], 1 / N);
  assert.equal(loss.segments.length, 1);
  assert.equal(loss.time, undefined, 'no time column for a log without times');

  // Two series × (x, y) × 8 bytes × capacity ≤ 1.5·N (grown by doubling to 2^20, then by half as much).
  const perPointBytes = m.byteLength / (2 * N);
  assert.ok(perPointBytes <= 2 * 8 * 1.5, `${perPointBytes} bytes per point`);
  assert.ok(loss.x.buffer.byteLength <= 8 * 2 ** 20);
  // An {x, y} object per point costs at least 16 bytes of header + 2 × 8 bytes of fields + an 8-byte slot.
  const objectsPerPointFloor = 40;
  assert.ok(perPointBytes * 2 < objectsPerPointFloor, 'less than half of the most optimistic object layout');

  // What the view will do with it: smoothed, then decimated to a chart's width.
  const smoothed = emaSmooth(loss.y, 0.9, loss.segments);
  assert.equal(smoothed.length, N);
  const out = decimateMinMax({ points: pointsOf(loss.x, smoothed), segments: loss.segments }, { width: 1200 });
  assert.ok(out.x.length <= 2402);
  assert.equal(out.index[out.index.length - 1], N - 1);
});
