// The compact series store (src/core/metrics/series/compact.ts, series.ts): every value a real log holds comes back at the
// promised precision (steps and times exact / to the millisecond, values as float32: 7 significant digits), and a
// log of a million lines of five metrics costs at most 8 bytes per point.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createParser, decimateMinMax, describeRestarts, RunMetrics, Series } from '../../src/core/metrics';
import { BLOCK, CHUNK, ExactColumn, ValueColumn, shortestFloat32 } from '../../src/core/metrics/series/compact';

const anyDouble = fc.oneof(
  fc.double(),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.maxSafeInteger(),
  fc.constantFrom(0, -0, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), 2 ** 53 + 2, 1e300, Number.MIN_VALUE, NaN, Infinity, -Infinity, 0.5, 1e-12, 1e12),
);

test('ExactColumn: any float64, in any order and any mix across chunks, reads back as exactly what was pushed', () => {
  fc.assert(
    fc.property(fc.array(anyDouble, { maxLength: 3 * CHUNK + 50 }), (values) => {
      const c = new ExactColumn();
      for (const v of values) c.push(v);
      assert.equal(c.length, values.length);
      for (let i = 0; i < values.length; i++) assert.ok(Object.is(c.at(i), values[i]), `at ${i}: ${c.at(i)} for ${values[i]}`);
      assert.ok(Number.isNaN(c.at(-1)) && Number.isNaN(c.at(values.length)));
    }),
    { numRuns: 40 },
  );
});

test('ExactColumn: steps cost 4 bytes each, and a chunk with a fractional value falls back alone', () => {
  const c = new ExactColumn();
  for (let i = 0; i < 10 * CHUNK; i++) c.push(2 ** 52 + i * 1000);
  assert.ok(c.byteLength <= 10 * CHUNK * 4 + 10 * 8, `${c.byteLength} bytes for ${10 * CHUNK} steps`);
  c.push(0.5);
  assert.ok(c.byteLength <= 10 * CHUNK * 4 + 10 * 8 + CHUNK * 8 + 8, 'only the last chunk went to float64');
  assert.equal(c.at(10 * CHUNK), 0.5);
  assert.equal(c.at(10 * CHUNK - 1), 2 ** 52 + (10 * CHUNK - 1) * 1000);
});

test('ValueColumn: values across 1e-12…1e12 keep 7 significant digits; NaN, ±Infinity and out-of-float32 values exactly', () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.double({ min: 1e-12, max: 1e12, noNaN: true }),
          fc.double({ min: -1e12, max: -1e-12, noNaN: true }),
          fc.constantFrom(NaN, Infinity, -Infinity, 0, -0, 1e300, -1e300, 1e-300, Number.MIN_VALUE, 3.5e38, 1e-39),
        ),
        { maxLength: CHUNK + 100 },
      ),
      (values) => {
        const c = new ValueColumn();
        for (const v of values) c.push(v);
        for (let i = 0; i < values.length; i++) {
          const v = values[i];
          const got = c.at(i);
          const a = Math.abs(v);
          if (!Number.isFinite(v) || v === 0 || a > 3.4028234663852886e38 || a < 1.1754943508222875e-38) {
            assert.ok(Object.is(got, v), `${v} kept exactly, got ${got}`);
          } else {
            assert.ok(Math.abs(got - v) <= a * 2 ** -24, `${v}: ${got} is off by more than float32's rounding`);
            assert.ok(Math.abs(Number(shortestFloat32(got).toPrecision(7)) - v) <= a * 1e-6, `${v} shown as ${shortestFloat32(got)}`);
          }
        }
      },
    ),
    { numRuns: 40 },
  );
});

test('shortestFloat32 gives back what a log wrote with up to 7 significant digits', () => {
  for (const text of ['0.1', '5e-5', '3.0000e-4', '2.302585', '0.9999999', '1234567', '1e-12', '1e12', '-0.25', '6.103516e-5']) {
    const v = Number(text);
    assert.equal(shortestFloat32(Math.fround(v)), v, text);
  }
  assert.equal(shortestFloat32(1e300), 1e300, 'a value held exactly is returned as it is');
  assert.ok(Number.isNaN(shortestFloat32(NaN)));
});

test('a series reads back every point of a real log at the promised precision: steps to 2^53, times to the ms, NaN markers', () => {
  const lines: string[] = [];
  const want: { step: number; loss: number; t: number }[] = [];
  for (let i = 0; i < 3 * CHUNK + 7; i++) {
    const step = i < 10 ? 2 ** 53 - 1000 + i * 100 : i * 7;
    const loss = Math.exp(-i / 1000) * (1 + 1e-7 * i) + (i % 97 === 0 ? 1e-12 : 0);
    const t = 1733050000.123456 + i * 0.731;
    lines.push(JSON.stringify({ step, loss, time: t }));
    want.push({ step, loss, t });
  }
  lines.splice(5, 0, '{"step": 5, "loss": NaN}');
  const p = createParser('jsonl');
  p.push(new TextEncoder().encode(`${lines.join('\n')}\n`));
  p.end();
  const s = p.metrics.get('loss')!;
  // The steps from 2^53 down to 70 are a restart: the later points win, the first ten are replaced (series.ts).
  const kept = want.slice(10);
  assert.equal(s.length, kept.length, 'the NaN marker is a skipped value, not a point');
  assert.equal(p.metrics.badValues, 1);
  for (let i = 0; i < kept.length; i++) {
    assert.equal(s.xAt(i), kept[i].step, `step ${i}`);
    assert.ok(Math.abs(s.yAt(i) - kept[i].loss) <= kept[i].loss * 2 ** -24, `value ${i}`);
    assert.equal(s.timeAt(i), Math.round(kept[i].t * 1000), `time ${i} to the millisecond`);
  }
  assert.deepEqual(s.restarts, [{ step: 70, index: 0, replaced: 10 }]);
  assert.equal(s.segments.length, 1);
});

test('the series of one log share its steps and times while dense; one that skips records holds its own, with the same points', () => {
  const m = new RunMetrics();
  const ref = new Map<string, [number, number, number][]>();
  const add = (key: string, x: number, y: number, t: number) => {
    m.add(key, x, y, t);
    let r = ref.get(key);
    if (!r) ref.set(key, (r = []));
    r.push([x, y, Math.round(t)]);
  };
  for (let i = 0; i < 20_000; i++) {
    const t = 1.7e12 + i * 1000;
    add('loss', i, i / 7, t);
    add('lr', i, 1e-4, t);
    if (i % 500 === 0) add('eval_loss', i, i / 3, t);
    if (i === 10_000) add('late', i, 1, t);
    if (i > 10_000) add('late', i, 2, t);
  }
  assert.ok(!m.get('loss')!.ownsAxis && !m.get('lr')!.ownsAxis, 'dense series share the axis');
  assert.ok(m.get('eval_loss')!.ownsAxis, 'a sparse series holds its own');
  assert.ok(!m.get('late')!.ownsAxis, 'a series that starts late and is dense from there shares it too');
  for (const [key, pts] of ref) {
    const s = m.get(key)!;
    assert.equal(s.length, pts.length, key);
    for (let i = 0; i < pts.length; i++) assert.deepEqual([s.xAt(i), Math.fround(pts[i][1]) === s.yAt(i), s.timeAt(i)], [pts[i][0], true, pts[i][2]], `${key}[${i}]`);
  }
  // Random interleavings: whatever is shared or not, every series reads back what was pushed into it.
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -5, max: 50 }), fc.boolean()), { maxLength: 400 }), (ops) => {
      const rm = new RunMetrics();
      const want = new Map<number, [number, number][]>();
      let x = 0;
      for (const [k, dx, sameLine] of ops) {
        if (!sameLine) x += dx;
        rm.add(`k${k}`, x, k, NaN);
        let w = want.get(k);
        if (!w) want.set(k, (w = []));
        w.push([x, k]);
      }
      for (const [k, w] of want) {
        const s = rm.get(`k${k}`)!;
        assert.deepEqual(Array.from({ length: s.length }, (_, i) => [s.xAt(i), s.yAt(i)]), laterWins(w));
      }
    }),
    { numRuns: 200 },
  );
});

test('a million lines of five metrics (step, time, five values) hold at most 8 bytes per point', () => {
  const m = new RunMetrics();
  const n = 1_000_000;
  const keys = ['loss', 'acc', 'lr', 'grad_norm', 'tokens_per_s'];
  for (let i = 0; i < n; i++) {
    const t = 1.7e12 + i * 731.5;
    for (let k = 0; k < keys.length; k++) m.seriesFor(keys[k]).push(i * 10, Math.sin(i + k), t);
  }
  const perPoint = m.byteLength / (n * keys.length);
  assert.ok(perPoint <= 8, `${perPoint.toFixed(2)} bytes per point`);
  const s = m.get('grad_norm')!;
  assert.equal(s.xAt(n - 1), (n - 1) * 10);
  assert.equal(s.timeAt(n - 1), Math.round(1.7e12 + (n - 1) * 731.5));
});

test('a series of its own (merged TensorBoard files) holds the same points', () => {
  const s = new Series('x');
  for (let i = 0; i < 5000; i++) s.push(i % 2000, i, i % 3 === 0 ? NaN : i * 1000.4);
  assert.ok(s.ownsAxis);
  // Two restarts at step 0: each replaces everything before it; the last process's 1000 points are left.
  assert.deepEqual(s.restarts, [
    { step: 0, index: 0, replaced: 2000 },
    { step: 0, index: 0, replaced: 2000 },
  ]);
  assert.equal(s.replaced, 4000);
  assert.equal(s.length, 1000);
  assert.equal(s.segments.length, 1);
  assert.equal(s.xAt(999), 4999 % 2000);
  assert.equal(s.timeAt(999), Math.round(4999 * 1000.4));
  assert.ok(Number.isNaN(s.timeAt(4998 - (4998 % 3) - 4000)));
});

/** The later-wins rule on plain points (series.ts): a step back drops the points at steps >= it. */
function laterWins<T extends [number, ...number[]]>(points: readonly T[]): T[] {
  const out: T[] = [];
  for (const p of points) {
    if (out.length > 0 && p[0] < out[out.length - 1][0]) while (out.length > 0 && out[out.length - 1][0] >= p[0]) out.pop();
    out.push(p);
  }
  return out;
}

test('later wins: a restart drops the earlier points at steps >= it, keeps the rest, and is a segment boundary', () => {
  const s = new Series('loss');
  for (let step = 1; step <= 35; step++) s.push(step, step / 100, 1000 * step);
  for (let step = 33; step <= 40; step++) s.push(step, -step / 100, 5000 * step);
  assert.equal(s.length, 40, 'steps 1…40, each once');
  assert.deepEqual(Array.from(s.x), Array.from({ length: 40 }, (_, i) => i + 1));
  assert.equal(s.yShown(31), 0.32, 'step 32 from the first process');
  assert.equal(s.yShown(32), -0.33, 'step 33 from the resumed one');
  assert.equal(s.timeAt(32), 5000 * 33);
  assert.deepEqual(s.segments, [
    { start: 0, end: 32 },
    { start: 32, end: 40 },
  ]);
  assert.deepEqual(s.restarts, [{ step: 33, index: 32, replaced: 3 }]);
  assert.equal(describeRestarts(s), 'resumed at step 33: 3 earlier points replaced');
  // Equal steps in a row are not a restart (several records of one step).
  const e = new Series('eval');
  e.push(5, 1);
  e.push(5, 2);
  assert.equal(e.length, 2);
  assert.equal(e.restartCount, 0);
  // The same through a log's shared axis, on the fast path of a record's values (JSONL).
  const p = createParser('jsonl');
  const lines = [];
  for (let step = 1; step <= 35; step++) lines.push(JSON.stringify({ step, loss: step, lr: 1 }));
  for (let step = 33; step <= 40; step++) lines.push(JSON.stringify({ step, loss: -step, lr: 2 }));
  p.push(new TextEncoder().encode(`${lines.join('\n')}\n`));
  p.end();
  for (const key of ['loss', 'lr']) {
    const t = p.metrics.get(key)!;
    assert.deepEqual(Array.from(t.x), Array.from({ length: 40 }, (_, i) => i + 1), key);
    assert.deepEqual(t.restarts, [{ step: 33, index: 32, replaced: 3 }], key);
  }
  assert.equal(p.metrics.get('loss')!.yShown(32), -33);
});

test('min-max decimation read through block summaries picks exactly the points reading every point picks', () => {
  // Values with ties, NaN, infinities, values kept exactly beside float32 (1e39), steps that repeat, jump and go back
  // (segments); views over all of it and over parts, at widths from one bucket to about one bucket per block.
  const value = fc.oneof(
    { weight: 300, arbitrary: fc.integer({ min: -20, max: 20 }).map((v) => v / 4) },
    { weight: 100, arbitrary: fc.integer({ min: -1e9, max: 1e9 }).map((v) => v / 997) },
    // Rare, or no block would have a summary: a block holding one is read point by point.
    { weight: 1, arbitrary: fc.constantFrom(NaN, Infinity, -Infinity, 1e39, -1e39, 3e39, 0, -0) },
  );
  const stepGap = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(0, 1, 1, 1, 2) }, { weight: 1, arbitrary: fc.integer({ min: -400, max: 5000 }) });
  fc.assert(
    fc.property(
      fc.array(fc.tuple(stepGap, value), { minLength: 2 * BLOCK, maxLength: 12 * BLOCK, size: "max" }),
      // Widths below half the points in view, or every point would be passed through as it is.
      fc.integer({ min: 1, max: 40 }),
      fc.option(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })), { nil: undefined }),
      (points, width, view) => {
        const s = new Series('v');
        let x = 0;
        for (const [gap, v] of points) s.push((x += gap), v);
        const plain = { length: s.length, xAt: (i: number) => s.xAt(i), yAt: (i: number) => s.yAt(i) };
        const lo = s.xAt(0);
        const hi = s.lastX;
        const range = view ? { xMin: lo + Math.min(...view) * (hi - lo), xMax: lo + Math.max(...view) * (hi - lo), width } : { width };
        const fast = decimateMinMax({ points: s, segments: s.segments }, range);
        const slow = decimateMinMax({ points: plain, segments: s.segments }, range);
        assert.deepEqual(fast.index, slow.index);
        assert.deepEqual(fast.segmentStarts, slow.segmentStarts);
      },
    ),
    { numRuns: 500 },
  );
});

test('ValueColumn.read gives what at gives, over chunk edges and with values kept exactly', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 3 * CHUNK }),
      fc.array(fc.tuple(fc.nat(), fc.constantFrom(1e-40, -3e39, Number.MAX_VALUE, NaN, Infinity, 0.1, -0)), { maxLength: 12 }),
      fc.nat(),
      fc.nat(),
      (n, specials, a, b) => {
        const col = new ValueColumn();
        const at = new Map(specials.map(([i, v]) => [n ? i % n : 0, v]));
        for (let i = 0; i < n; i++) col.push(at.get(i) ?? Math.sin(i) * 1e3);
        const from = n ? a % (n + 1) : 0;
        const to = from + (n - from ? b % (n - from + 1) : 0);
        const out = new Float64Array(to - from + 2).fill(7);
        col.read(from, to, out);
        for (let i = from; i < to; i++) assert.ok(Object.is(out[i - from], col.at(i)), `at ${i}: ${out[i - from]} ≠ ${col.at(i)}`);
        // Nothing past what was asked for is written.
        assert.deepEqual([...out.subarray(to - from)], [7, 7]);
      },
    ),
    { numRuns: 200 },
  );
});
