// Axis ticks (src/webview/ticks.ts): 1-2-5 steps, short labels, clock steps for relative time (issue 17).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { durationTicks, formatDurationTick, formatTick, logTicks, niceStep, niceTicks, stepOf } from '../../src/webview/ticks';

test('a zoomed x axis gets inner ticks at 1-2-5 steps, not only its two ends', () => {
  assert.deepEqual(niceTicks(12_345, 27_890, 6), [15_000, 20_000, 25_000]);
  assert.deepEqual(niceTicks(12_345, 27_890, 10), [14_000, 16_000, 18_000, 20_000, 22_000, 24_000, 26_000]);
  assert.deepEqual(niceTicks(0, 40_000, 6), [0, 10_000, 20_000, 30_000, 40_000]);
  assert.deepEqual(niceTicks(0.1, 0.3, 5), [0.1, 0.15, 0.2, 0.25, 0.3]);
  assert.deepEqual(niceTicks(5, 5, 6), [5]);
});

test('any range: ticks ascend inside it, at one step from {1,2,5}×10^k, at most ~maxCount+1 of them', () => {
  fc.assert(
    fc.property(fc.double({ min: -1e12, max: 1e12, noNaN: true }), fc.double({ min: 1e-9, max: 1e12, noNaN: true }), fc.integer({ min: 2, max: 10 }), (min, span, n) => {
      const max = min + span;
      fc.pre(max > min && span > Math.abs(min) * 1e-9); // below that the range is under float64's resolution
      const t = niceTicks(min, max, n);
      const step = niceStep(max - min, n);
      const mantissa = step / 10 ** Math.floor(Math.log10(step));
      assert.ok([1, 2, 5, 10].some((m) => Math.abs(m - mantissa) < 1e-6), `step ${step}`);
      assert.ok(t.length <= n + 1, `${t.length} ticks for ${n}`);
      for (let i = 0; i < t.length; i++) {
        assert.ok(t[i] >= min - step * 1e-6 && t[i] <= max + step * 1e-6, `${t[i]} outside [${min}, ${max}]`);
        if (i) assert.ok(t[i] > t[i - 1]);
      }
    }),
    { numRuns: 300 },
  );
});

test('labels as short as the step allows: 10k, 12.5k, 1.5M, 5e-5, 0.25', () => {
  assert.deepEqual([0, 10_000, 20_000].map((v) => formatTick(v, 10_000)), ['0', '10k', '20k']);
  assert.equal(formatTick(12_500, 2_500), '12.5k');
  // One axis, one way: a zoomed axis stepping by 2,000 reads 8k, 10k, 12k (issue 17's e2e saw `8000, 10k`).
  assert.deepEqual([8000, 10_000, 12_000].map((v) => formatTick(v, 2000)), ['8k', '10k', '12k']);
  assert.deepEqual([500, 1000, 1500].map((v) => formatTick(v, 500)), ['500', '1000', '1500'], 'finer steps stay plain numbers');
  assert.equal(formatTick(1_500_000, 500_000), '1.5M');
  assert.equal(formatTick(5e-5, 1e-5), '5e-5', 'not 5.0000e-5');
  assert.equal(formatTick(1.5e-4, 5e-5), '1.5e-4');
  assert.equal(formatTick(0.25, 0.05), '0.25');
  assert.equal(formatTick(0.3, 0.05), '0.3');
  assert.equal(formatTick(120, 20), '120');
  assert.equal(formatTick(-2_000_000_000, 1e9), '-2B');
  assert.equal(formatTick(NaN, 1), 'NaN');
});

test('relative time ticks fall on clock steps and read 20m, 1h 20m', () => {
  const t = durationTicks(0, 2 * 3600_000, 6);
  assert.deepEqual(t.map(formatDurationTick), ['0s', '20m', '40m', '1h', '1h 20m', '1h 40m', '2h']);
  assert.deepEqual(durationTicks(0, 50 * 60_000, 5).map(formatDurationTick), ['0s', '10m', '20m', '30m', '40m', '50m'], 'not 8m 20s, 16m 40s');
  assert.equal(formatDurationTick(80 * 60_000), '1h 20m');
  assert.equal(formatDurationTick(45_000), '45s');
  assert.equal(formatDurationTick((2 * 24 + 3) * 3600_000), '2d 3h');
  assert.equal(formatDurationTick(500), '0.5s');
  assert.equal(stepOf([{ value: 0 }, { value: 600_000 }]), 600_000);
});

test('log ticks: the densest of 1-2-3-5, 1-2-5, 1-5, powers of ten that fits; labelled short (1e-5, not 2.0000e-5)', () => {
  // A learning rate from 7.5e-7 to 1.5e-4: 1-2-5 would be 7 ticks, so 1 and 5.
  const lr = logTicks(7.5e-7, 1.5e-4, 6);
  assert.deepEqual(lr, [1e-6, 5e-6, 1e-5, 5e-5, 1e-4]);
  assert.deepEqual(lr.map((v) => formatTick(v, v)), ['1e-6', '5e-6', '1e-5', '5e-5', '1e-4']);
  // A loss inside one decade and a bit: every integer mantissa.
  assert.deepEqual(logTicks(0.9, 3.5, 6), [1, 2, 3]);
  assert.deepEqual(logTicks(2e-5, 9e-5, 6).map((v) => formatTick(v, v)), ['2e-5', '3e-5', '5e-5']);
  // Ten decades: powers of ten, every other one.
  const wide = logTicks(1e-8, 1e2, 6);
  assert.ok(wide.length <= 6 && wide.length >= 3, String(wide));
  assert.ok(wide.every((v) => Number.isInteger(Math.log10(v))), String(wide));
  // Too narrow for two of those: linear steps inside the range, all positive.
  const narrow = logTicks(0.91, 0.99, 5);
  assert.ok(narrow.length >= 2 && narrow.every((v) => v >= 0.91 && v <= 0.99), String(narrow));
  assert.deepEqual(logTicks(0, 1, 5), []);
  assert.deepEqual(logTicks(20_000, 60_000, 6).map((v) => formatTick(v, v)), ['20k', '30k', '50k']);
});
