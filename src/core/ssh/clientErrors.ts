/**
 * What ssh2's and the socket's failures mean, in our kinds (unreachable / auth-failed / protocol), with the hop
 * named in every message. Used while dialling each hop and when an open connection drops.
 *
 * This folder never imports `vscode`.
 */
import { RemoteRunsError } from '../types';
import type { AuthTrace } from './auth';
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

/** ssh2 reports failures as Errors with a `level`; turn them into our kinds. */
export function mapClientError(e: Error & { level?: string; code?: string }, hop: ResolvedHop, trace: AuthTrace | undefined, where: string): RemoteRunsError {
  switch (e.level) {
    case 'client-authentication': {
      const accepts = trace?.serverMethods.length ? ` The server accepts: ${trace.serverMethods.join(', ')}.` : '';
      const tried = trace ? ` Tried: ${trace.tried.filter((t) => t !== 'none').join(', ') || 'nothing usable'}.` : '';
      return new RemoteRunsError('auth-failed', `Authentication as ${hop.user} on ${where} failed.${accepts}${tried}`, {
        hop: hop.alias,
        user: hop.user,
        ...(trace ? { tried: trace.tried, serverMethods: trace.serverMethods } : {}),
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
