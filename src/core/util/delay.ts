/**
 * An abortable pause, shared by the core's pollers and retry loops (eval following, download retries).
 */
import { RemoteRunsError } from '../types';

/**
 * Resolve after `ms`, or reject as soon as `signal` aborts (at once if it already has) with the error `onAbort`
 * makes — by default a `cancelled` RemoteRunsError — so a loop waiting between tries stops without waiting out
 * the pause. The timer and the abort listener are both removed whichever comes first.
 */
export function delay(ms: number, signal?: AbortSignal, onAbort: () => Error = () => new RemoteRunsError('cancelled', 'Cancelled')): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(onAbort());
    const abort = (): void => {
      clearTimeout(timer);
      reject(onAbort());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/**
 * The one backoff: the pause before retry `attempt` (1 for the first retry) is `baseMs` doubled per retry, at most
 * `maxMs`. Its users and their budgets: the pool's channel opens refused while the server reaps closed sessions
 * (20 ms, 6 retries: about 1.3 s), the pool's reconnects after a drop (500 ms, 4 attempts), a download's attempts
 * after a dropped connection (500 ms, 5 retries).
 */
export function backoffMs(attempt: number, baseMs: number, maxMs = 30_000): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1));
}

/**
 * Turns of the event loop for long synchronous work done in steps: `maybe()` after each step gives the loop a turn
 * (`setImmediate`, so timers, I/O and other requests run) once `sliceMs` of work have passed since the last turn, and
 * is a cheap clock read otherwise (a turn per step would cost a macrotask each). Everything a process runs in steps
 * shares one instance: once a slice is used up they all wait for the same turn, so the longest stretch without one
 * stays about `sliceMs` however many run at once. `hold(work)` makes them all wait while `work` runs (a request
 * someone waits for goes first), for at most `maxHoldMs`. With a signal that has aborted, `maybe()` rejects with
 * `cancelled` (or `onAbort()`), so an abandoned piece of work stops at its next step.
 */
export class LoopTurns {
  private since = Date.now();
  /** The turn everyone waits for once a slice is used up: one `setImmediate` for all of them. */
  private turn: Promise<void> | undefined;
  private held = 0;
  private release: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    readonly sliceMs = 20,
    readonly maxHoldMs = 200,
  ) {}

  async maybe(signal?: AbortSignal, onAbort: () => Error = () => new RemoteRunsError('cancelled', 'Cancelled')): Promise<void> {
    if (signal?.aborted) throw onAbort();
    while (this.held > 0) {
      if (!this.release) {
        let resolve = (): void => undefined;
        const promise = new Promise<void>((r) => (resolve = r));
        this.release = { promise, resolve };
      }
      await this.release.promise;
      this.since = Date.now();
    }
    if (!this.turn) {
      if (Date.now() - this.since < this.sliceMs) return;
      this.turn = new Promise((resolve) =>
        setImmediate(() => {
          this.turn = undefined;
          this.since = Date.now();
          resolve();
        }),
      );
    }
    await this.turn;
    if (signal?.aborted) throw onAbort();
  }

  /** Run `work` while every `maybe()` waits (until it ends, or `maxHoldMs` at most). `work` must not wait on them. */
  async hold<T>(work: () => Promise<T>): Promise<T> {
    this.held++;
    let released = false;
    const unhold = (): void => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      if (--this.held === 0) {
        const r = this.release;
        this.release = undefined;
        r?.resolve();
      }
    };
    const timer = setTimeout(unhold, this.maxHoldMs);
    try {
      return await work();
    } finally {
      unhold();
    }
  }
}
