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

/** Lines of ssh's stderr that say nothing about a failure (warnings, banners of success). */
const OPENSSH_NOISE = /^(Warning: Permanently added|debug\d?:|Pseudo-terminal|@+$|Connection to \S+ closed\.$)/;

/** The line of ssh's stderr that says what went wrong: the last that is not noise. */
function opensshLine(stderr: string): string {
  const lines = stderr
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !OPENSSH_NOISE.test(l));
  return lines[lines.length - 1] ?? '';
}

/** What ssh's stderr says went wrong at login, by OpenSSH 9.x's messages (sshconnect.c, sshconnect2.c, ssh.c). */
export type OpenSshFailure =
  | { kind: 'too-many-auth-failures' }
  | { kind: 'host-key-changed'; offending?: { file: string; line: number } }
  | { kind: 'host-key-unknown' }
  | { kind: 'denied'; methods: string[] }
  | { kind: 'socket'; code: string | undefined };

/**
 * The one reading of ssh's stderr: both OpenSSH users phrase their errors from it, here (mapOpenSshError for the
 * transport, classifySshFailure for a session beside the pool).
 */
export function readOpenSshFailure(stderr: string): OpenSshFailure {
  if (/Too many authentication failures/i.test(stderr)) return { kind: 'too-many-auth-failures' };
  if (/REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for \S+ has changed|REVOKED HOST KEY DETECTED|host key for \S+ was revoked/i.test(stderr)) {
    const offending = /Offending \S+ key in (\S+):(\d+)/.exec(stderr);
    return { kind: 'host-key-changed', ...(offending ? { offending: { file: offending[1], line: Number(offending[2]) } } : {}) };
  }
  if (/No \S+ host key is known for|Host key verification failed/.test(stderr)) return { kind: 'host-key-unknown' };
  const denied = /Permission denied \(([^)]*)\)/.exec(stderr);
  if (denied) return { kind: 'denied', methods: denied[1].split(',').filter(Boolean) };
  const codes: [RegExp, string][] = [
    [/Connection refused/, 'ECONNREFUSED'],
    [/Connection timed out|Operation timed out/, 'ETIMEDOUT'],
    [/No route to host/, 'EHOSTUNREACH'],
    [/Network is unreachable/, 'ENETUNREACH'],
    [/Could not resolve hostname|Name or service not known|nodename nor servname/, 'ENOTFOUND'],
  ];
  return { kind: 'socket', code: codes.find(([re]) => re.test(stderr))?.[1] };
}

/**
 * What the system ssh's failure to log in (its stderr, exit status 255) means, in the kinds ssh2's failures get
 * (mapClientError): `auth-failed` (with the IdentitiesOnly hint for too many failures), `host-key-mismatch` (a changed
 * or revoked key), `host-key-unknown` (naming the known_hosts files checked), `not-found` (a name neither configured
 * nor known to DNS, as for the built-in client), else `unreachable`. Messages are
 * OpenSSH 9.x's (sshconnect.c, sshconnect2.c, ssh.c); an unrecognised one is `unreachable` with ssh's own words.
 */
export function mapOpenSshError(stderr: string, hop: ResolvedHop, where: string, knownHostsFiles: readonly string[]): RemoteRunsError {
  const line = opensshLine(stderr) || 'ssh exited without saying why';
  const said = ` (OpenSSH: ${line})`;
  const failure = readOpenSshFailure(stderr);
  switch (failure.kind) {
    case 'too-many-auth-failures':
      return new RemoteRunsError(
        'auth-failed',
        `Authentication as ${hop.user} on ${where} failed: the server closed the connection after too many authentication failures ` +
          `(its MaxAuthTries), usually because the agent offers more keys than it allows. Offer only the right key: set "IdentitiesOnly yes" ` +
          `and "IdentityFile KEY" for this host in the ssh config.${said}`,
        { hop: hop.alias, user: hop.user, tooManyFailures: 1 },
      );
    case 'host-key-changed': {
      const offending = failure.offending;
      return new RemoteRunsError(
        'host-key-mismatch',
        `The host key of ${where} is not the one known for it${offending ? ` (${offending.file}:${offending.line})` : ''}: possibly someone in between; not connected.${said}`,
        { hop: hop.alias, ...(offending ? { file: offending.file, line: offending.line } : {}) },
      );
    }
    case 'host-key-unknown':
      return new RemoteRunsError(
        'host-key-unknown',
        `The host key of ${where} is not known (checked: ${knownHostsFiles.join(', ') || 'no known_hosts file'}) and was not accepted; ` +
          `connect once with ssh to check and add it, or add it to one of those files.${said}`,
        { hop: hop.alias, knownHostsFiles: [...knownHostsFiles] },
      );
    case 'denied':
      return new RemoteRunsError('auth-failed', `Authentication as ${hop.user} on ${where} failed. The server accepts: ${failure.methods.join(', ')}.${said}`, {
        hop: hop.alias,
        user: hop.user,
        serverMethods: failure.methods,
      });
    case 'socket': {
      const code = failure.code;
      if (code === 'ENOTFOUND' && hop.unconfigured) {
        // As hops.ts says it for the built-in client: a name neither configured nor known to DNS is most often a typo.
        const hint = hop.unconfigured.closest ? ` Did you mean ${hop.unconfigured.closest}?` : '';
        return new RemoteRunsError('not-found', `${hop.alias} is neither a configured host (settings or a Host line of the ssh config) nor a name DNS knows.${hint}${said}`, {
          hop: hop.alias,
          code,
          ...(hop.unconfigured.closest ? { closest: hop.unconfigured.closest } : {}),
        });
      }
      const reason = code ? SOCKET_REASONS[code] : undefined;
      return new RemoteRunsError('unreachable', `Connection to ${where} failed${reason ? `: ${reason}` : ''}${said}`, { hop: hop.alias, ...(code ? { code } : {}) });
    }
  }
}

/**
 * What an `ssh` of a session beside the pool (openssh/session.ts: its master, its streams) ending with status 255 means,
 * from the same reading of its stderr as mapOpenSshError: the login was refused (`auth-failed`), a hop's key is not the
 * one the pool trusted (`host-key-mismatch`), or the connection failed or dropped (`unreachable`, retried).
 * Undefined for a status that is the remote command's own.
 */
export function classifySshFailure(stderr: string, code: number | null): RemoteRunsError | undefined {
  if (code !== 255) return undefined;
  const line = stderr.split('\n').map((l) => l.trim()).find(Boolean) ?? '';
  // The session's known_hosts holds exactly the keys the pool's connection verified: a key it does not know is a
  // key other than the one trusted, as a changed one is.
  switch (readOpenSshFailure(stderr).kind) {
    case 'denied':
    case 'too-many-auth-failures':
      return new RemoteRunsError('auth-failed', `OpenSSH could not log in: ${line}`);
    case 'host-key-changed':
    case 'host-key-unknown':
      return new RemoteRunsError('host-key-mismatch', `OpenSSH was shown a host key other than the one the connection trusted: ${line}`);
    default:
      // "Permission denied, please try again." without the list of methods: still a refused login.
      if (/Permission denied/.test(stderr)) return new RemoteRunsError('auth-failed', `OpenSSH could not log in: ${line}`);
      return new RemoteRunsError('unreachable', `Connection lost (OpenSSH: ${line || 'exit 255'})`, { dropped: 'after-open' });
  }
}

