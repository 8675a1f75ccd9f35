/**
 * What a panel says about a run's host and its logging, from the run's header: the connection (connected,
 * connecting, reconnecting since T, unreachable since T with the reason, refused, removed from settings) and the
 * activity (last logged N s ago; stopped logging; or unknown while the host cannot be asked). The two are never
 * folded into one: a frozen chart may be a run that stopped, or a host that is gone, and the panel says which.
 * Pure (the elapsed time since the header arrived is passed in), so it is unit-tested in node.
 */
import type { LinkWire, RunHeader } from '../shared/metricsProtocol';

export interface LivenessView {
  connection: { state: LinkWire['state']; text: string };
  activity: { activity: 'logging' | 'stopped' | 'unknown' | 'none'; text: string };
}

/** `45 s`, `12 min`, `1.5 h`, `3 h`, `2 d`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s`;
  const min = Math.round(s / 60);
  if (min < 90) return `${min} min`;
  const h = s / 3600;
  if (h < 48) return `${Number(h.toFixed(h < 10 ? 1 : 0))} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** `14:02:11`, local time. */
export function clockTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

const REFUSED: Record<Extract<LinkWire, { state: 'refused' }>['kind'], string> = {
  'auth-failed': 'login refused',
  'host-key-unknown': 'host key not trusted yet',
  'host-key-mismatch': 'host key changed',
};

/**
 * The texts for a run whose header arrived `elapsedMs` ago, with `now` this page's clock (for "since" times).
 * `host` names the run's host.
 */
export function liveness(header: Pick<RunHeader, 'link' | 'loggedAgoMs' | 'stoppedAfterMs'>, host: string, elapsedMs: number, now: number): LivenessView {
  const link = header.link;
  const since = (forMs: number): string => clockTime(now - forMs - elapsedMs);
  let text: string;
  switch (link.state) {
    case 'connected':
      text = `connected to ${host}`;
      break;
    case 'connecting':
      text = `connecting to ${host}…`;
      break;
    case 'reconnecting':
      text = `reconnecting to ${host} since ${since(link.forMs)}${link.attempt > 0 ? ` (attempt ${link.attempt})` : ''}${link.lastError ? `: connection lost: ${link.lastError}` : ''}`;
      break;
    case 'unreachable':
      text = `${host} unreachable since ${since(link.forMs)}: ${link.reason}${link.attempt > 0 ? ` (trying again, attempt ${link.attempt})` : ' (trying again at the next poll)'}`;
      break;
    case 'refused':
      text = `${host}: ${REFUSED[link.kind]} since ${since(link.forMs)}: ${link.reason}`;
      break;
    case 'removed':
      text = `host ${host} was removed from settings: this run is no longer followed`;
      break;
    default: {
      const never: never = link;
      text = String(never);
    }
  }
  return { connection: { state: link.state, text }, activity: activityOf(header, elapsedMs) };
}

function activityOf(header: Pick<RunHeader, 'link' | 'loggedAgoMs' | 'stoppedAfterMs'>, elapsedMs: number): LivenessView['activity'] {
  if (header.loggedAgoMs === null) return { activity: 'none', text: '' };
  const age = header.loggedAgoMs + elapsedMs;
  if (header.link.state === 'removed') return { activity: 'unknown', text: `last logged ${formatAge(age)} ago (when the host was last asked)` };
  if (header.link.state !== 'connected') {
    // What the run did since is unknown: neither stopped nor logging.
    return { activity: 'unknown', text: `last logged ${formatAge(age)} ago (before the connection was lost)` };
  }
  if (age > header.stoppedAfterMs) return { activity: 'stopped', text: `stopped logging: last logged ${formatAge(age)} ago` };
  return { activity: 'logging', text: `last logged ${formatAge(age)} ago` };
}
