/**
 * What ssh2's and the socket's failures mean, in our kinds (unreachable / auth-failed / protocol), with the hop
 * named in every message. Used while dialling each hop and when an open connection drops.
 *
 * This folder never imports `vscode`.
 */
import { RemoteRunsError } from '../types';
import { shellJoin } from '../shell/quote';
import { PROMPT_TRIES, type AuthTrace } from './auth';
import type { ResolvedHop } from './types';

const SOCKET_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'no route to host',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found (DNS)',
  EAI_AGAIN: 'host name lookup failed (DNS)',
};

/** A socket error code in words ("connection refused"), or `fallback` (the error's own message) for any other. */
export function socketReason(code: string | undefined, fallback: string): string {
  return SOCKET_REASONS[code ?? ''] ?? fallback;
}

/** What to do about encrypted keys that could not be used: each named, with the two ways to unlock it. */
function lockedText(trace: AuthTrace | undefined): string {
  if (!trace?.locked.length) return '';
  return trace.locked
    .map((l) =>
      l.why === 'no-passphrase'
        ? ` The key ${l.path} is encrypted and no passphrase was given (without a terminal nothing can be asked): ` +
          `unlock it once with "${shellJoin(['ssh-add', l.path])}" (the agent then offers it), or run in a terminal to type it.`
        : ` The passphrase given for ${l.path} was wrong ${PROMPT_TRIES} times: check it, or add the key with "${shellJoin(['ssh-add', l.path])}".`,
    )
    .join('');
}

/** ssh2 reports failures as Errors with a `level`; turn them into our kinds. */
export function mapClientError(e: Error & { level?: string; code?: string }, hop: ResolvedHop, trace: AuthTrace | undefined, where: string): RemoteRunsError {
  if (/too many authentication failures/i.test(e.message)) {
    // sshd's MaxAuthTries (6 by default) counts every key offered: an agent holding more keys than that gets the
    // connection closed before the right key (or a password) is tried. ssh says the same and the cure is the same.
    const tried = trace ? ` Tried: ${trace.tried.filter((t) => t !== 'none').join(', ') || 'nothing usable'}.` : '';
    return new RemoteRunsError(
      'auth-failed',
      `Authentication as ${hop.user} on ${where} failed: the server closed the connection after too many authentication ` +
        `failures (its MaxAuthTries), usually because the agent offers more keys than it allows.${tried} Offer only the ` +
        `right key: set "IdentitiesOnly yes" and "IdentityFile KEY" for this host in the ssh config (or "identityFile" in the ` +
        `host's settings, and IdentitiesOnly in the ssh config).`,
      { hop: hop.alias, user: hop.user, tooManyFailures: 1, ...(trace ? { tried: trace.tried, serverMethods: trace.serverMethods } : {}) },
    );
  }
  switch (e.level) {
    case 'client-authentication': {
      const accepts = trace?.serverMethods.length ? ` The server accepts: ${trace.serverMethods.join(', ')}.` : '';
      const tried = trace ? ` Tried: ${trace.tried.filter((t) => t !== 'none').join(', ') || 'nothing usable'}.` : '';
      return new RemoteRunsError('auth-failed', `Authentication as ${hop.user} on ${where} failed.${accepts}${tried}${lockedText(trace)}`, {
        hop: hop.alias,
        user: hop.user,
        ...(trace ? { tried: trace.tried, serverMethods: trace.serverMethods } : {}),
        ...(trace?.locked.length ? { locked: trace.locked.map((l) => l.path) } : {}),
      });
    }
    case 'client-timeout':
      return new RemoteRunsError('unreachable', `${where} stopped answering (${e.message})`, { hop: hop.alias, code: 'timeout' });
    case 'client-socket': {
      const reason = socketReason(e.code, e.message);
      return new RemoteRunsError('unreachable', `Connection to ${where} failed: ${reason}`, { hop: hop.alias, ...(e.code ? { code: e.code } : {}) });
    }
    case 'handshake':
      return new RemoteRunsError('protocol', `SSH handshake with ${where} failed: ${e.message}`, { hop: hop.alias });
    default:
      return new RemoteRunsError('unreachable', `Connection to ${where} failed: ${e.message}`, { hop: hop.alias });
  }
}
