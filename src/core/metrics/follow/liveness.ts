/**
 * Is the run's host there, and is the run still logging? Two different questions that a frozen chart folds into
 * one (issue 17: stopping the host looked exactly like a run that stalled). Pure, so both are unit-tested:
 *
 * - `nextLink`: the connection as a panel shows it, from the pool's state changes for the run's host: connecting
 *   (never connected yet), connected, reconnecting since T (the connection was lost; attempts under way),
 *   unreachable since T with the reason (the attempts gave up: "connection refused"), refused since T (login or
 *   host key: retrying will not help), removed (the host is no longer in the settings). Later attempts after a
 *   give-up keep "unreachable since T" (the banner does not flicker between the two every poll).
 * - `stoppedAfterMs`: how long without a write to the run's logs makes it "stopped logging": five times the usual
 *   gap between the writes this feed saw, and never less than five minutes.
 *
 * Times are this process's clock (ms since the epoch). A log's age is measured on the remote clock (its mtime
 * against the remote's `date`), so a skewed clock does not make a run look stopped or fresh.
 */
import type { ConnectionState } from '../../ssh/types';

export type LinkState =
  | { state: 'connecting'; since: number; attempt: number }
  | { state: 'connected'; since: number }
  | { state: 'reconnecting'; since: number; attempt: number; lastError?: string }
  | { state: 'unreachable'; since: number; reason: string; attempt: number }
  | { state: 'refused'; kind: 'auth-failed' | 'host-key-unknown' | 'host-key-mismatch'; since: number; reason: string }
  | { state: 'removed'; since: number; reason: string };

/** The link before anything was heard from the pool: as it is now. */
export function initialLink(pool: ConnectionState, now: number): LinkState {
  return nextLink({ state: 'connecting', since: now, attempt: 0 }, pool, now);
}

/** The link after the pool reported `pool` for the run's host. */
export function nextLink(prev: LinkState, pool: ConnectionState, now: number): LinkState {
  if (prev.state === 'removed') return prev;
  const notConnectedSince = prev.state === 'connected' ? now : prev.since;
  switch (pool.kind) {
    case 'connected':
      return prev.state === 'connected' ? prev : { state: 'connected', since: now };
    case 'idle':
      // A clean close (idle timeout, settings changed): nothing is wrong; the next command connects again.
      return prev;
    case 'connecting':
      switch (prev.state) {
        case 'connected':
          return { state: 'reconnecting', since: now, attempt: pool.attempt };
        case 'reconnecting':
        case 'connecting':
        case 'unreachable':
          return { ...prev, attempt: pool.attempt };
        case 'refused':
          return prev;
      }
      return prev;
    case 'unreachable':
      // A connection that dropped with an error is being reconnected; the pool reports unreachable again once
      // its attempts gave up.
      if (prev.state === 'connected') return { state: 'reconnecting', since: now, attempt: 0, lastError: pool.message };
      if (prev.state === 'reconnecting' && prev.attempt === 0) return { ...prev, lastError: pool.message };
      return { state: 'unreachable', since: notConnectedSince, reason: pool.message, attempt: 0 };
    case 'auth-failed':
    case 'host-key-unknown':
    case 'host-key-mismatch':
      return { state: 'refused', kind: pool.kind, since: prev.state === 'refused' && prev.kind === pool.kind ? prev.since : notConnectedSince, reason: pool.message };
  }
}

/** The floor of "stopped logging": a run that writes its log every few minutes is not stopped between writes. */
export const STOPPED_MIN_MS = 5 * 60_000;
/** How many usual gaps without a write make a run stopped. */
export const STOPPED_GAPS = 5;

/** How long without a write makes the run stopped, from the gaps between the writes seen so far (ms). */
export function stoppedAfterMs(gaps: readonly number[]): number {
  if (gaps.length === 0) return STOPPED_MIN_MS;
  const sorted = [...gaps].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return Math.max(STOPPED_MIN_MS, STOPPED_GAPS * median);
}
