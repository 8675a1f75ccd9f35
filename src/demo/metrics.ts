/**
 * The demo's training curves, as pure functions of the step: the same step always gives the same line, so the
 * live run's history and its new lines join seamlessly and every start of the demo shows the same run.
 * Shapes follow the origin story (a speculative-decoding drafter): loss falling with noise and rare spikes,
 * accuracy rising to ~0.28, learning rate with linear warmup then cosine decay, an acceptance "streak" near 3.5.
 */

/** One line of the live run's `logs/train.jsonl`. */
export interface DemoMetricLine {
  step: number;
  loss: number;
  acc: number;
  lr: number;
  streak: number;
  grad_norm: number;
  /** Wall clock, seconds since the epoch. */
  time: number;
}

/** Shape of the live run's schedule. */
export interface Schedule {
  warmupSteps: number;
  totalSteps: number;
  peakLr: number;
  minLr: number;
}

export const LIVE_SCHEDULE: Schedule = { warmupSteps: 2000, totalSteps: 60_000, peakLr: 3e-4, minLr: 3e-5 };

/** Uniform in [0, 1) from an integer and a salt: a hash, so no state carries from one step to the next. */
export function hashNoise(step: number, salt: number): number {
  let h = Math.imul(step ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(salt + 0x27d4eb2f, 0xc2b2ae35);
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  h = Math.imul(h, 0x297a2d39);
  h ^= h >>> 15;
  return (h >>> 0) / 4294967296;
}

/** Linear warmup to the peak, then cosine decay to `minLr` at `totalSteps` (flat after). */
export function learningRate(step: number, s: Schedule = LIVE_SCHEDULE): number {
  if (step < s.warmupSteps) return (s.peakLr * Math.max(0, step)) / s.warmupSteps;
  const progress = Math.min(1, (step - s.warmupSteps) / Math.max(1, s.totalSteps - s.warmupSteps));
  return s.minLr + (s.peakLr - s.minLr) * 0.5 * (1 + Math.cos(Math.PI * progress));
}

/** About one logged step in a hundred carries a loss spike (a bad batch), 0.5–1.5 above the curve. */
export function isSpike(step: number, seed = 0): boolean {
  return hashNoise(step, 7 + seed * 16) < 0.01;
}

/** The metrics logged at `step` (time is the caller's clock); another `seed` gives another run of the same shape. */
export function metricsAt(step: number, timeSeconds: number, seed = 0, s: Schedule = LIVE_SCHEDULE): DemoMetricLine {
  const noise = (st: number, salt: number): number => hashNoise(st, salt + seed * 16);
  const base = 0.85 + 2.7 * Math.exp(-step / 9000);
  let loss = base + (noise(step, 1) - 0.5) * 0.3 * Math.min(1, base);
  if (isSpike(step, seed)) loss += 0.5 + noise(step, 8);
  const acc = Math.min(0.99, 0.04 + 0.24 * (1 - Math.exp(-step / 12_000)) + (noise(step, 2) - 0.5) * 0.03);
  const streak = 1 + 2.7 * (1 - Math.exp(-step / 10_000)) + (noise(step, 3) - 0.5) * 0.25;
  const gradNorm = 0.6 + 1.8 * Math.exp(-step / 6000) + noise(step, 4) * 0.2 + (isSpike(step, seed) ? 3 : 0);
  return {
    step,
    loss: round(loss, 4),
    acc: round(Math.max(0, acc), 4),
    lr: Number(learningRate(step, s).toPrecision(4)),
    streak: round(streak, 3),
    grad_norm: round(gradNorm, 3),
    time: round(timeSeconds, 3),
  };
}

function round(x: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
