/**
 * A link's round trip, measured on the link itself and kept with it: the connection records (SshConnection,
 * OpenSshConnection) each hold one RoundTrip, so a link is measured once and every download over it reads the same
 * figure. What decides on it (how many streams a file gets, transfer/download.ts streamsForRoundTrip) then takes the
 * same path for the same pull on the same link every time.
 *
 * The probe must start no process on the far side: a remote shell's start (tens of ms on a loaded host, more with a
 * login rc file) is not link latency, and counted as such it made loopback look like a long link.
 *
 * This folder never imports `vscode`.
 */
import { RemoteRunsError } from '../types';

/** Probes per measurement; the fastest counts (the others met a busy moment on either end). */
export const ROUND_TRIP_PROBES = 3;

/** One probe, or a whole measurement: resolves with milliseconds. */
export type RoundTripProbe = () => Promise<number>;

/** The fastest of `probes` probes run one after another (never side by side: they would queue behind each other). */
export async function fastestOf(probe: RoundTripProbe, probes = ROUND_TRIP_PROBES): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < probes; i++) best = Math.min(best, await probe());
  return best;
}

/**
 * The round trip of one link, measured on first ask and kept for the link's life (the connection is the record: a
 * new link is a new connection, measured anew). A failed measurement is not kept, so the next ask tries again.
 */
export class RoundTrip {
  private measured: Promise<number> | undefined;

  /** `measure` is the whole measurement (for one request per round trip: `() => fastestOf(probe)`). */
  constructor(private readonly measure: RoundTripProbe) {}

  /** Milliseconds; `signal` only stops this caller's wait, never a measurement another caller shares. */
  get(signal?: AbortSignal): Promise<number> {
    if (!this.measured) {
      const m = this.measure();
      this.measured = m;
      m.catch(() => {
        if (this.measured === m) this.measured = undefined;
      });
    }
    const measured = this.measured;
    if (!signal) return measured;
    return new Promise<number>((resolve, reject) => {
      if (signal.aborted) return reject(new RemoteRunsError('cancelled', 'Round trip measurement cancelled'));
      const onAbort = (): void => reject(new RemoteRunsError('cancelled', 'Round trip measurement cancelled'));
      signal.addEventListener('abort', onAbort, { once: true });
      measured.then(
        (ms) => {
          signal.removeEventListener('abort', onAbort);
          resolve(ms);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }
}
