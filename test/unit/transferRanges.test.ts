/** The range set behind resume: merges, holes and splits, checked against a byte-map model. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RangeSet, splitRanges } from '../../src/core/transfer/ranges';
import { SpeedMeter } from '../../src/core/transfer/progress';

test('adjacent and overlapping ranges merge; holes are the complement', () => {
  const r = new RangeSet();
  r.add(10, 20);
  r.add(30, 40);
  r.add(20, 25);
  assert.deepEqual(r.toJSON(), [[10, 25], [30, 40]]);
  assert.equal(r.total, 25);
  assert.deepEqual(r.missing(50), [[0, 10], [25, 30], [40, 50]]);
  r.add(0, 45);
  assert.deepEqual(r.toJSON(), [[0, 45]]);
  assert.equal(r.covers(45), true);
  assert.equal(r.covers(46), false);
  assert.equal(new RangeSet().covers(0), true);
  r.add(5, 5); // empty: ignored
  assert.deepEqual(r.toJSON(), [[0, 45]]);
});

test('any sequence of adds matches a byte map: total, missing and covers agree', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.nat(200), fc.nat(60)), { maxLength: 30 }), fc.integer({ min: 1, max: 260 }), (adds, size) => {
      const set = new RangeSet();
      const bytes = new Uint8Array(300);
      for (const [s, len] of adds) {
        set.add(s, s + len);
        bytes.fill(1, s, s + len);
      }
      assert.equal(set.total, bytes.reduce((n, b) => n + b, 0));
      const holes = set.missing(size);
      const model: number[] = [];
      for (let i = 0; i < size; i++) if (!bytes[i]) model.push(i);
      assert.deepEqual(holes.flatMap(([a, b]) => Array.from({ length: b - a }, (_, k) => a + k)), model);
      assert.equal(set.covers(size), model.length === 0);
      // Stored intervals are sorted, disjoint and never touch (so the sidecar stays small).
      const items = set.toJSON();
      for (let i = 1; i < items.length; i++) assert.ok(items[i][0] > items[i - 1][1]);
    }),
  );
});

test('splitRanges cuts into pieces of at most max bytes covering exactly the input', () => {
  assert.deepEqual(splitRanges([[0, 10], [20, 25]], 4), [[0, 4], [4, 8], [8, 10], [20, 24], [24, 25]]);
  assert.deepEqual(splitRanges([], 4), []);
});

test('speed comes from the window, and the time left from the speed', () => {
  const m = new SpeedMeter(5000);
  assert.equal(m.bytesPerSec, 0);
  assert.equal(m.eta(100), undefined);
  m.sample(0, 0);
  m.sample(1000, 1000);
  assert.equal(m.bytesPerSec, 1000);
  assert.equal(m.eta(5000), 5);
  // Old samples leave the window: a stall shows as a lower speed, not the all-time average.
  m.sample(10_000, 1000);
  m.sample(11_000, 1000);
  assert.equal(m.bytesPerSec, 0);
});
