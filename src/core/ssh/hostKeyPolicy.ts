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
  logger: Logger;
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
  const preferred = knownKeyTypes(knownFiles, hop.hostname, hop.port)
    .flatMap(algorithmsForKeyType)
    .filter((a) => DEFAULT_HOST_KEY_ALGORITHMS.includes(a));
  return [...new Set([...preferred, ...DEFAULT_HOST_KEY_ALGORITHMS])];
}

/** known_hosts decision for one presented host key; resolves when trusted, rejects with the reason otherwise. */
export async function verifyHostKey(hop: ResolvedHop, key: Buffer, ctx: HostKeyContext, prompter: Prompter, where: string): Promise<void> {
  const keyType = keyTypeOfBlob(key);
  const fingerprint = fingerprintSha256(key);
  // Read again: another connection may have just added this host.
  const files = await readKnownHostsFiles(ctx.knownHostsFiles);
  const r = checkHostKey(files, hop.hostname, hop.port, keyType, key);
  const name = knownHostsName(hop.hostname, hop.port);
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
      const file = ctx.knownHostsFiles[0];
      const trusted = await prompter.confirmHostKey({ hostPattern: name, hostname: hop.hostname, port: hop.port, keyType, fingerprint, knownHostsFile: file });
      if (!trusted) {
        // Every file looked in, so a user whose key sits in another file (or under another name) sees where we looked.
        const present = new Set(files.map((f) => f.path));
        const checked = ctx.knownHostsFiles.map((f) => (present.has(f) ? f : `${f} (does not exist)`));
        throw new RemoteRunsError(
          'host-key-unknown',
          `The host key of ${where} (${keyType} ${fingerprint}) was not found under the name ${name} in ${checked.join(', ')}, and was not accepted. ` +
            `Connect once with ssh (or in a terminal) to check and accept it, or add the server's key to one of these files.`,
          { hop: hop.alias, fingerprint, keyType, file, checked: ctx.knownHostsFiles },
        );
      }
      await appendKnownHost(file, knownHostsLine(hop.hostname, hop.port, keyType, key));
      ctx.logger.info(`Added ${name} ${keyType} ${fingerprint} to ${file}`);
      return;
    }
  }
}
