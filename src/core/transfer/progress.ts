/**
 * Speed and time left from a sliding window of samples, and a throttle so a UI is told at most a few times a
 * second. Pure, with the clock passed in for tests.
 */
export class SpeedMeter {
  private samples: { t: number; bytes: number }[] = [];

  constructor(private readonly windowMs = 5000) {}

  /** Record the running total of bytes fetched at time `t` (ms). */
  sample(t: number, totalFetched: number): void {
    this.samples.push({ t, bytes: totalFetched });
    while (this.samples.length > 2 && t - this.samples[1].t >= this.windowMs) this.samples.shift();
  }

  /** Bytes per second over the window; 0 until two samples 100 ms apart exist. */
  get bytesPerSec(): number {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.t - first.t < 100) return 0;
    return ((last.bytes - first.bytes) * 1000) / (last.t - first.t);
  }

  /** Seconds left for `remaining` bytes, undefined while the speed is unknown. */
  eta(remaining: number): number | undefined {
    const s = this.bytesPerSec;
    return s > 0 ? remaining / s : undefined;
  }
}
