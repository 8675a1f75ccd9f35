/** Smoothing, decimation and plateau detection: the pure math under the curve views. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decimateMinMax, detectPlateau, emaSmooth, metricDirection, pointsOf, type DecimatedSeries, type Segment } from '../../src/core/metrics';

const close = (a: ArrayLike<number>, b: number[], msg?: string) => {
  assert.equal(a.length, b.length, msg);
  for (let i = 0; i < b.length; i++) {
    if (Number.isNaN(b[i])) assert.ok(Number.isNaN(a[i]), `${msg ?? ''}[${i}] NaN`);
    else assert.ok(Math.abs(a[i] - b[i]) < 1e-12, `${msg ?? ''}[${i}]: ${a[i]} vs ${b[i]}`);
  }
};

// ---- EMA ---------------------------------------------------------------------------------------------------------

test('EMA is TensorBoard’s debiased average, by hand for w = 0.5', () => {
  // last: 0.5, 1.25, 2.125; debias: 0.5, 0.75, 0.875.
  close(emaSmooth([1, 2, 3], 0.5), [1, 1.25 / 0.75, 2.125 / 0.875]);
  // w = 0.6: last = 0.4, 0.24+0.8=1.04, 0.624+0.4=1.024; debias 0.4, 0.64, 0.784.
  close(emaSmooth([1, 2, 1], 0.6), [1, 1.04 / 0.64, 1.024 / 0.784]);
});

test('EMA restarts at every segment, skips non-finite values, passes constants and w = 0 through', () => {
  const segs: Segment[] = [{ start: 0, end: 3 }, { start: 3, end: 5 }];
  close(emaSmooth([1, 2, 3, 10, 20], 0.5, segs), [1, 1.25 / 0.75, 2.125 / 0.875, 10, 12.5 / 0.75]);
  // NaN is passed through and does not count: the third value debiases with k = 2.
  close(emaSmooth([1, NaN, 3], 0.5), [1, NaN, 1.75 / 0.75]);
  assert.deepEqual([...emaSmooth([0.1, 0.1, 0.1], 0.9)], [0.1, 0.1, 0.1]);
  assert.deepEqual([...emaSmooth([3, 1, 2], 0)], [3, 1, 2]);
  const heavy = emaSmooth([1, 2, 3], 1);
  assert.ok([...heavy].every(Number.isFinite), 'w = 1 is clamped, never 0/0');
});

// ---- decimation --------------------------------------------------------------------------------------------------

function spiky(n: number, seed: number): { x: Float64Array; y: Float64Array } {
  let s = seed >>> 0 || 1;
  const rand = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const x = new Float64Array(n);
  const y = new Float64Array(n);
  let step = 0;
  for (let i = 0; i < n; i++) {
    step += 1 + Math.floor(rand() * 3);
    x[i] = step;
    const r = rand();
    y[i] = Math.exp(-i / n) + (r < 0.01 ? 10 * rand() : r > 0.99 ? -10 * rand() : 0.05 * rand());
  }
  return { x, y };
}

/**
 * Check the band contract for one segment's output against the input, bucketing independently: each bucket is
 * drawn as its last point, carrying the bucket's smallest and largest values (the band), and nothing else of it.
 */
function checkBuckets(x: ArrayLike<number>, y: ArrayLike<number>, out: DecimatedSeries, xMin: number, xMax: number, width: number) {
  assert.ok(out.loIndex && out.hiIndex, 'a decimated output carries the band');
  assert.equal(out.loIndex.length, out.index.length);
  const at = new Map(out.index.map((src, k) => [src, k]));
  const buckets = new Map<number, number[]>();
  for (let i = 0; i < x.length; i++) {
    if (x[i] < xMin || x[i] > xMax) continue;
    const b = Math.min(width - 1, Math.floor(((x[i] - xMin) / (xMax - xMin)) * width));
    (buckets.get(b) ?? buckets.set(b, []).get(b)!).push(i);
  }
  for (const [b, idx] of buckets) {
    const ys = idx.map((i) => y[i]);
    const last = idx[idx.length - 1];
    const k = at.get(last);
    assert.ok(k !== undefined, `bucket ${b}: its last point ${last} is drawn`);
    assert.equal(y[out.loIndex[k]], Math.min(...ys), `bucket ${b}: the band reaches its minimum`);
    assert.equal(y[out.hiIndex[k]], Math.max(...ys), `bucket ${b}: the band reaches its maximum`);
    assert.ok(idx.includes(out.loIndex[k]) && idx.includes(out.hiIndex[k]), `bucket ${b}: its extremes are its own`);
    // Of a bucket's other points only the series' first may be drawn (as itself: where the line starts).
    for (const i of idx.slice(0, -1)) if (at.has(i)) assert.equal(i, out.index[0], `bucket ${b}: only its last point is drawn, not ${i}`);
  }
}

test('min-max decimation: each bucket is its last point with its min and max as a band, at most width+2 points, in x order', () => {
  fc.assert(
    fc.property(fc.integer({ min: 50, max: 20000 }), fc.integer({ min: 1, max: 400 }), fc.integer(), (n, width, seed) => {
      const { x, y } = spiky(n, seed);
      const out = decimateMinMax({ points: pointsOf(x, y) }, { width });
      assert.ok(out.x.length <= (n > 2 * width + 2 ? width + 2 : n), `${out.x.length} points for width ${width}`);
      for (let i = 1; i < out.x.length; i++) assert.ok(out.x[i] > out.x[i - 1], 'x order');
      assert.equal(out.index[0], 0, 'the first point');
      assert.equal(out.index[out.index.length - 1], n - 1, 'the last point');
      out.index.forEach((src, k) => assert.equal(out.y[k], y[src]));
      if (n > 2 * width + 2) checkBuckets(x, y, out, x[0], x[n - 1], width);
      else assert.equal(out.loIndex, undefined, 'passed through: no band');
    }),
    { numRuns: 60, seed: 20240601 },
  );
});

test('every single-step spike of a flat series survives, in the band', () => {
  const n = 100_000;
  const x = Float64Array.from({ length: n }, (_, i) => i);
  const y = new Float64Array(n).fill(1);
  const spikes = [17, 4242, 50_000, 77_777, 99_998];
  for (const i of spikes) y[i] = i % 2 ? 50 : -50;
  const out = decimateMinMax({ points: pointsOf(x, y) }, { width: 300 });
  for (const i of spikes) assert.ok(out.loIndex!.includes(i) || out.hiIndex!.includes(i), `spike at ${i}`);
  assert.ok(out.x.length <= 302);
});

test('a visible range: binary-searched ends, one point beyond each edge, buckets over the range only', () => {
  const { x, y } = spiky(50_000, 7);
  const xMin = x[10_000] + 0.5;
  const xMax = x[30_000] - 0.5;
  const out = decimateMinMax({ points: pointsOf(x, y) }, { xMin, xMax, width: 200 });
  assert.equal(out.index[0], 10_000, 'the point just left of the view');
  assert.equal(out.index[out.index.length - 1], 30_000, 'the point just right of the view');
  assert.ok(out.index.slice(1, -1).every((i) => x[i] >= xMin && x[i] <= xMax));
  assert.ok(out.x.length <= 202);
  checkBuckets(x, y, out, xMin, xMax, 200);
  // Zoomed in between two points: the two around the view are drawn.
  const gap = decimateMinMax({ points: pointsOf([0, 10], [1, 2]) }, { xMin: 4, xMax: 6, width: 100 });
  assert.deepEqual(gap.index, [0, 1]);
  assert.deepEqual(decimateMinMax({ points: pointsOf([0, 10], [1, 2]) }, { xMin: 20, xMax: 30, width: 100 }).x, []);
});

test('small input passes through exactly; segments are decimated separately and marked', () => {
  const x = [1, 2, 3, 4, 5];
  const y = [5, 3, 4, 1, 2];
  assert.deepEqual(decimateMinMax({ points: pointsOf(x, y) }, { width: 10 }), { x, y, index: [0, 1, 2, 3, 4], segmentStarts: [0] });

  // A resumed run: steps 0..999, then again 500..1499.
  const n1 = 1000;
  const n2 = 1000;
  const xs = Float64Array.from({ length: n1 + n2 }, (_, i) => (i < n1 ? i : 500 + i - n1));
  const ys = Float64Array.from({ length: n1 + n2 }, (_, i) => Math.sin(i));
  const segments = [{ start: 0, end: n1 }, { start: n1, end: n1 + n2 }];
  const out = decimateMinMax({ points: pointsOf(xs, ys), segments }, { xMin: 0, xMax: 1499, width: 50 });
  assert.equal(out.segmentStarts.length, 2);
  const second = out.segmentStarts[1];
  assert.ok(out.index.slice(0, second).every((i) => i < n1));
  assert.ok(out.index.slice(second).every((i) => i >= n1));
  assert.ok(second <= 52 && out.x.length - second <= 52);
  for (let k = 1; k < out.x.length; k++) if (k !== second) assert.ok(out.x[k] >= out.x[k - 1]);
});

// ---- plateau -----------------------------------------------------------------------------------------------------

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

test('a loss that flattened 4000 steps ago is a plateau, and says where it flattened', () => {
  const x = range(5001);
  const y = x.map((s) => Math.max(1 - s / 1000, 0.2));
  const r = detectPlateau(pointsOf(x, y), y, { window: 1000, fraction: 0.01, direction: 'lower' });
  assert.equal(r.state, 'plateau');
  assert.equal(r.flatSince, 798, 'the first step within 1% of the final best (0.202)');
  assert.equal(r.best, 0.2);
  assert.equal(r.bestStep, 800);
  assert.ok(r.recentImprovement <= 0.01);
});

test('a loss still improving by more than the fraction over the window is not a plateau', () => {
  const x = range(5001);
  const y = x.map((s) => 1 / (1 + s / 100));
  const r = detectPlateau(pointsOf(x, y), y, { window: 1000, fraction: 0.01, direction: 'lower' });
  assert.equal(r.state, 'improving');
  assert.ok(r.recentImprovement > 0.15, `improved ${r.recentImprovement}`);
  // The same curve with a looser threshold is flat.
  assert.equal(detectPlateau(pointsOf(x, y), y, { window: 1000, fraction: 0.25, direction: 'lower' }).state, 'plateau');
});

test('higher-is-better metrics, too-short series, and only the last segment counts', () => {
  const x = range(3001);
  const acc = x.map((s) => Math.min(s / 1000, 0.9));
  const up = detectPlateau(pointsOf(x, acc), acc, { window: 1000, fraction: 0.005, direction: 'higher' });
  assert.equal(up.state, 'plateau');
  assert.equal(up.best, 0.9);
  // Read the wrong way round, a rising accuracy is a loss that got worse: flat from the start.
  const wrong = detectPlateau(pointsOf(x, acc), acc, { window: 1000, fraction: 0.005, direction: 'lower' });
  assert.ok(wrong.state === 'plateau' && wrong.flatSince === 0);

  assert.deepEqual(detectPlateau(pointsOf([0, 10, 20], [3, 2, 1]), [3, 2, 1], { window: 100, fraction: 0.01, direction: 'lower' }), { state: 'too-short', span: 20 });

  // Segment 1 flattened long ago; segment 2 (the resumed run) is still dropping.
  const xs = [...range(3000), ...range(3000).map((s) => 1000 + s)];
  const ys = [...range(3000).map(() => 0.5), ...range(3000).map((s) => 1 - s / 3000)];
  const r = detectPlateau(pointsOf(xs, ys), ys, { window: 1000, fraction: 0.01, direction: 'lower' }, [{ start: 0, end: 3000 }, { start: 3000, end: 6000 }]);
  assert.equal(r.state, 'improving');
});

test('metric direction from the key name', () => {
  for (const k of ['loss', 'train/loss', 'eval_loss', 'val/ppl', 'wer', 'test_error', 'mse']) assert.equal(metricDirection(k), 'lower', k);
  for (const k of ['acc', 'eval/accuracy', 'top1_acc', 'val_f1', 'bleu', 'rougeL', 'mean_reward', 'auc']) assert.equal(metricDirection(k), 'higher', k);
  for (const k of ['learning_rate', 'lr', 'grad_norm', 'epoch', 'grad_accum_steps', 'throughput']) assert.equal(metricDirection(k), undefined, k);
});

/** detectPlateau as first written (arrays of the finite points and of best-so-far): the definition, kept as the reference. */
function plateauReference(x: number[], y: number[], o: { window: number; fraction: number; direction: 'lower' | 'higher' }, segments?: Segment[]) {
  const seg = segments && segments.length > 0 ? segments[segments.length - 1] : { start: 0, end: x.length };
  const sign = o.direction === 'lower' ? 1 : -1;
  const idx: number[] = [];
  for (let i = seg.start; i < seg.end; i++) if (Number.isFinite(y[i])) idx.push(i);
  if (idx.length === 0) return { state: 'too-short', span: 0 };
  const lastX = x[idx[idx.length - 1]];
  const span = lastX - x[idx[0]];
  if (span < o.window) return { state: 'too-short', span };
  const bestSoFar: number[] = [];
  let best = Infinity;
  let bestAt = idx[0];
  for (const i of idx) {
    if (sign * y[i] < best) {
      best = sign * y[i];
      bestAt = i;
    }
    bestSoFar.push(best);
  }
  const improvement = (from: number, to: number) => (from - to) / (from === 0 ? 1 : Math.abs(from));
  let k = 0;
  while (k < idx.length && improvement(bestSoFar[k], best) > o.fraction) k++;
  const flatSince = x[idx[k]];
  let w = 0;
  while (w + 1 < idx.length && x[idx[w + 1]] <= lastX - o.window) w++;
  return {
    state: lastX - flatSince >= o.window ? 'plateau' : 'improving',
    flatSince,
    best: sign * best,
    bestStep: x[bestAt],
    recentImprovement: improvement(bestSoFar[w], best),
  };
}

test('property: plateau detection (one pass, no arrays) equals its reference definition', () => {
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.integer({ min: 0, max: 30 }), fc.oneof(fc.double({ min: -5, max: 5, noNaN: true }), fc.constant(NaN), fc.constant(0))), { maxLength: 120 }),
      fc.integer({ min: 1, max: 300 }),
      fc.constantFrom(0, 0.01, 0.2),
      fc.constantFrom('lower' as const, 'higher' as const),
      fc.integer({ min: 0, max: 119 }),
      (steps, window, fraction, direction, cut) => {
        let x = 0;
        const xs: number[] = [];
        const ys: number[] = [];
        for (const [dx, y] of steps) {
          x += dx;
          xs.push(x);
          ys.push(y);
        }
        const o = { window, fraction, direction };
        assert.deepEqual(detectPlateau(pointsOf(xs, ys), ys, o), plateauReference(xs, ys, o));
        if (cut > 0 && cut < xs.length) {
          const segs = [{ start: 0, end: cut }, { start: cut, end: xs.length }];
          assert.deepEqual(detectPlateau(pointsOf(xs, ys), ys, o, segs), plateauReference(xs, ys, o, segs));
        }
      },
    ),
    { numRuns: 3000 },
  );
});
