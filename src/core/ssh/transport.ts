/**
 * What the pool hands out for a host: a Transport, one logged-in connection that runs commands. Two kinds exist:
 * the built-in ssh2 client (SshConnection, connection.ts) and the system's OpenSSH client (OpenSshConnection,
 * openssh/connection.ts) for hosts whose ssh config asks for something ssh2 cannot do.
 *
 * This folder never imports `vscode`.
 */
import * as fs from 'node:fs';
import type { Executor } from '../remote';
import { certAuthoritiesFor, knownHostsName } from './knownHosts';
import type { ResolvedHost } from './types';
import type { RemoteRunsError } from '../types';
import type { Event } from '../util/event';

/** Why a connection closed: `error` is undefined when we closed it ourselves. */
export interface CloseEvent {
  error?: RemoteRunsError;
}

export type TransportKind = 'ssh2' | 'openssh';

/** One open connection to a host, whichever client carries it. Once closed it stays closed: the pool makes a new one. */
export interface Transport extends Executor {
  readonly kind: TransportKind;
  /** Fires once, when the connection is gone. */
  readonly onDidClose: Event<CloseEvent>;
  /** True once the connection is gone (or going). */
  readonly isClosed: boolean;
  /** Commands and streams running on it right now. */
  readonly openChannels: number;
  /**
   * The link's round trip in ms, measured on the link by a request that starts no process on the far side, once per
   * connection and kept (roundTrip.ts). Rejects `cancelled` on `signal`, `unreachable` if the link is gone.
   */
  roundTripMs(signal?: AbortSignal): Promise<number>;
  /** Close on purpose: pending commands reject with `cancelled`. */
  close(): void;
}

/** Which client a host uses, and the reasons when it is OpenSSH (each naming the config fact and what ssh2 lacks). */
export interface TransportChoice {
  kind: TransportKind;
  /** Empty for ssh2. */
  reasons: string[];
}

/** What chooseTransport reads of this machine: file contents (undefined: missing or unreadable). */
export interface TransportProbe {
  readFile(path: string): string | undefined;
}

/** The real file system. */
export const FS_PROBE: TransportProbe = {
  readFile(p) {
    try {
      return fs.readFileSync(p, 'utf8');
    } catch {
      return undefined;
    }
  },
};

/**
 * The client for a resolved host: ssh2 unless the ssh config asks for something only OpenSSH can do, for any hop.
 * ssh2 (1.x) cannot authenticate with user certificates (`CertificateFile`, or the `KEY-cert.pub` OpenSSH loads
 * beside every identity file it tries), cannot verify host certificates (a `@cert-authority` line for the host in
 * a known_hosts file in use), has no FIDO security keys (`sk-` key types need the authenticator's middleware) and
 * no GSSAPI. `knownHostsFiles` are the files the connection checks where the ssh config names none for a hop.
 * Pure over `probe`.
 */
export function chooseTransport(host: ResolvedHost, knownHostsFiles: readonly string[], probe: TransportProbe = FS_PROBE, knownHostsPinned = false): TransportChoice {
  const reasons: string[] = [];
  const hops = [...host.jumps, host.target];
  for (const hop of hops) {
    const on = hops.length > 1 ? ` (hop ${hop.alias})` : '';
    for (const c of hop.certificateFiles ?? []) reasons.push(`CertificateFile ${c.path} (${c.where})${on}: ssh2 cannot use user certificates`);
    for (const f of hop.identityFiles) {
      const base = f.endsWith('.pub') ? f.slice(0, -4) : f;
      const cert = `${base}-cert.pub`;
      if (probe.readFile(cert) !== undefined) reasons.push(`${cert} beside IdentityFile ${f}${on}: ssh2 cannot use user certificates`);
      const pub = probe.readFile(f.endsWith('.pub') ? f : `${f}.pub`);
      const type = pub?.trim().split(/\s+/)[0];
      if (type?.startsWith('sk-')) reasons.push(`IdentityFile ${f} is a FIDO security key (${type})${on}: ssh2 cannot use security keys`);
    }
    if (hop.gssapi) reasons.push(`GSSAPIAuthentication yes (${hop.gssapi.where})${on}: ssh2 has no GSSAPI`);
    const files = hop.knownHosts && !knownHostsPinned ? hop.knownHosts.files : knownHostsFiles;
    const texts = files.flatMap((p) => {
      const text = probe.readFile(p);
      return text === undefined ? [] : [{ path: p, text }];
    });
    const name = hop.hostKeyAlias ?? knownHostsName(hop.hostname, hop.port);
    for (const ca of certAuthoritiesFor(texts, name)) reasons.push(`@cert-authority for ${name} at ${ca.file}:${ca.line}${on}: ssh2 cannot verify host certificates`);
  }
  return reasons.length ? { kind: 'openssh', reasons } : { kind: 'ssh2', reasons: [] };
}

/** The transport in words, for the log and the host's tooltip: "OpenSSH (reason; reason)" or "built-in (ssh2)". */
export function describeTransport(choice: TransportChoice): string {
  return choice.kind === 'openssh' ? `OpenSSH (${choice.reasons.join('; ')})` : 'built-in client (ssh2)';
}

/**
 * The ssh config problems that still hold for a host on this transport: OpenSSH follows every option of the config
 * itself, so "not honoured" lines (written for the built-in client) are dropped for it; the rest stay.
 */
export function problemsFor(problems: readonly string[], choice: TransportChoice): string[] {
  return choice.kind === 'openssh' ? problems.filter((p) => !/ is not honoured by Remote Runs; ignored for /.test(p)) : [...problems];
}
