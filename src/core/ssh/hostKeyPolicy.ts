/**
 * Host key policy: which host key algorithms to ask a hop for, and whether to trust the key it presents, decided
 * against known_hosts the way OpenSSH does (match: go on; @revoked or changed: refuse with the line to look at;
 * unknown: ask the user, and on yes append it to the first known_hosts file). Every refusal is a RemoteRunsError
 * whose kind (host-key-mismatch / host-key-unknown) and message name the hop.
 *
 * The known_hosts format itself (parsing, matching names, hashing) is in knownHosts.ts.
 *
 * This folder never imports `vscode`.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { RemoteRunsError } from '../types';
import {
  appendKnownHost,
  checkHostKey,
  fingerprintSha256,
  keyTypeOfBlob,
  knownHostsLine,
  knownHostsName,
  knownKeyTypes,
  readKnownHostsFiles,
} from './knownHosts';
import type { Logger, Prompter, ResolvedHop } from './types';

/** What the policy needs from the connection attempt. */
export interface HostKeyContext {
  /** Checked in order; new keys are appended to the first. */
  knownHostsFiles: string[];
  /** See HopContext.knownHostsPinned. */
  knownHostsPinned?: boolean;
  logger: Logger;
}

/** The known_hosts files for a hop: the ssh config's for it (unless the run pinned its own), else the connection's. */
export function knownHostsFor(hop: ResolvedHop, ctx: HostKeyContext): { files: string[]; appendTo?: string } {
  if (hop.knownHosts && !ctx.knownHostsPinned) return hop.knownHosts;
  return { files: ctx.knownHostsFiles, appendTo: ctx.knownHostsFiles[0] };
}

/** What known_hosts is searched for: HostKeyAlias verbatim (OpenSSH appends no port to it), else `[host]:port`. */
function lookupName(hop: ResolvedHop): { hostname: string; port: number } {
  return hop.hostKeyAlias !== undefined ? { hostname: hop.hostKeyAlias, port: 22 } : { hostname: hop.hostname, port: hop.port };
}

/** OpenSSH's default UserKnownHostsFile and GlobalKnownHostsFile. */
export function defaultKnownHostsFiles(): string[] {
  const home = os.homedir();
  return [
    path.join(home, '.ssh', 'known_hosts'),
    path.join(home, '.ssh', 'known_hosts2'),
    '/etc/ssh/ssh_known_hosts',
    '/etc/ssh/ssh_known_hosts2',
  ];
}

/** ssh2's host key algorithm names for a known_hosts key type. */
function algorithmsForKeyType(keyType: string): string[] {
  return keyType === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [keyType];
}

const DEFAULT_HOST_KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

/**
 * The server host key algorithms to offer a hop. Like OpenSSH, the key types already known for this host come
 * first, so a server with several host keys presents the one known_hosts can vouch for rather than an "unknown" one.
 */
export async function hostKeyAlgorithms(knownHostsFiles: readonly string[], hop: ResolvedHop): Promise<string[]> {
  const knownFiles = await readKnownHostsFiles(knownHostsFiles);
  const { hostname, port } = lookupName(hop);
  const preferred = knownKeyTypes(knownFiles, hostname, port)
    .flatMap(algorithmsForKeyType)
    .filter((a) => DEFAULT_HOST_KEY_ALGORITHMS.includes(a));
  return [...new Set([...preferred, ...DEFAULT_HOST_KEY_ALGORITHMS])];
}

/** known_hosts decision for one presented host key; resolves when trusted, rejects with the reason otherwise. */
export async function verifyHostKey(hop: ResolvedHop, key: Buffer, ctx: HostKeyContext, prompter: Prompter, where: string): Promise<void> {
  const keyType = keyTypeOfBlob(key);
  const fingerprint = fingerprintSha256(key);
  // Read again: another connection may have just added this host.
  const known = knownHostsFor(hop, ctx);
  const files = await readKnownHostsFiles(known.files);
  const { hostname, port } = lookupName(hop);
  const r = checkHostKey(files, hostname, port, keyType, key);
  const name = knownHostsName(hostname, port);
  switch (r.status) {
    case 'match':
      return;
    case 'revoked':
      throw new RemoteRunsError(
        'host-key-mismatch',
        `The ${keyType} host key of ${where} (${fingerprint}) is marked @revoked in ${r.file} line ${r.line}; refusing to connect.`,
        { hop: hop.alias, file: r.file, line: r.line, fingerprint, keyType },
      );
    case 'mismatch':
      throw new RemoteRunsError(
        'host-key-mismatch',
        `The ${keyType} host key of ${where} has changed (now ${fingerprint}); the known key is in ${r.file} line ${r.line}. ` +
          `Someone could be intercepting the connection, or the host was reinstalled. If you trust the new key, remove that line ` +
          `(ssh-keygen -R '${name}' -f '${r.file}').`,
        { hop: hop.alias, file: r.file, line: r.line, fingerprint, keyType },
      );
    case 'unknown': {
      if (r.otherTypes.length > 0) {
        ctx.logger.warn(
          `${where} presents a ${keyType} key not in known_hosts, but keys of other types are known for it: ` +
            r.otherTypes.map((o) => `${o.keyType} at ${o.file}:${o.line}`).join(', '),
        );
      }
      const file = known.appendTo;
      const strict = hop.strictHostKeyChecking ?? 'ask';
      // accept-new (and `no`, read as accept-new): a key never seen for this name is added without asking, as ssh does.
      const trusted =
        strict === 'accept-new' ||
        (strict === 'ask' &&
          (await prompter.confirmHostKey({ hostPattern: name, hostname: hop.hostname, port: hop.port, keyType, fingerprint, knownHostsFile: file ?? '(none)' })));
      if (!trusted) {
        // Every file looked in, so a user whose key sits in another file (or under another name) sees where we looked.
        const present = new Set(files.map((f) => f.path));
        const checked = known.files.map((f) => (present.has(f) ? f : `${f} (does not exist)`));
        const why = strict === 'yes' ? 'and StrictHostKeyChecking yes forbids adding it' : 'and was not accepted';
        throw new RemoteRunsError(
          'host-key-unknown',
          `The host key of ${where} (${keyType} ${fingerprint}) was not found under the name ${name} in ${checked.join(', ') || 'no file (UserKnownHostsFile none)'}, ${why}. ` +
            `Connect once with ssh (or in a terminal) to check and accept it, or add the server's key to one of these files.`,
          { hop: hop.alias, fingerprint, keyType, ...(file ? { file } : {}), checked: known.files },
        );
      }
      if (file === undefined) {
        ctx.logger.warn(`${where}: ${name} ${keyType} ${fingerprint} trusted for this connection only: UserKnownHostsFile is none`);
        return;
      }
      await appendKnownHost(file, knownHostsLine(hostname, port, keyType, key));
      ctx.logger.info(`Added ${name} ${keyType} ${fingerprint} to ${file}${strict === 'accept-new' ? ' (StrictHostKeyChecking accept-new)' : ''}`);
      return;
    }
  }
}
