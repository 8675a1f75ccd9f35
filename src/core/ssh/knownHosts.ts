/**
 * OpenSSH known_hosts, read the way `ssh` reads it: plain and `[host]:port` names, hashed `|1|salt|hash` names,
 * `*`/`?` wildcards with `!` negation (OpenSSH's match_hostname, in ../util/wildcard), `@revoked` lines (refuse)
 * and `@cert-authority` lines (ignored: we only see plain host keys). Pure functions over file texts, plus the two small file operations the connection needs.
 *
 * This folder never imports `vscode`.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { matchHostname } from '../util/wildcard';

/** One known_hosts file's content, with the path used in messages. */
export interface KnownHostsFile {
  path: string;
  text: string;
}

/** Where a known_hosts entry lives, for messages such as "line 3 of ~/.ssh/known_hosts". */
export interface KnownHostsLocation {
  file: string;
  /** 1-based line number. */
  line: number;
}

export type HostKeyCheck =
  | ({ status: 'match' } & KnownHostsLocation)
  /** The host is known with a different key of the same type: possible man-in-the-middle, refuse. */
  | ({ status: 'mismatch'; knownType: string } & KnownHostsLocation)
  /** The presented key is listed under `@revoked` for this host: refuse. */
  | ({ status: 'revoked' } & KnownHostsLocation)
  /**
   * No entry of this key type for the host. `otherTypes` lists entries of other types (OpenSSH then warns
   * "keys of different type are already known for this host" before asking).
   */
  | { status: 'unknown'; otherTypes: (KnownHostsLocation & { keyType: string })[] };

interface Entry extends KnownHostsLocation {
  marker: '' | 'revoked' | 'cert-authority';
  hosts: string;
  keyType: string;
  key: Buffer;
}

/** The name OpenSSH looks up: `host` on port 22, `[host]:port` otherwise. */
export function knownHostsName(hostname: string, port: number): string {
  return port === 22 ? hostname : `[${hostname}]:${port}`;
}

/** Check a presented host key against known_hosts files, with OpenSSH's precedence: revoked, match, mismatch, unknown. */
export function checkHostKey(
  files: readonly KnownHostsFile[],
  hostname: string,
  port: number,
  keyType: string,
  keyBlob: Buffer,
): HostKeyCheck {
  const name = knownHostsName(hostname, port);
  const entries = files.flatMap(parseKnownHosts).filter((e) => e.marker !== 'cert-authority' && hostMatches(e.hosts, name));
  const revoked = entries.find((e) => e.marker === 'revoked' && e.key.equals(keyBlob));
  if (revoked) return { status: 'revoked', file: revoked.file, line: revoked.line };
  const plain = entries.filter((e) => e.marker === '');
  const match = plain.find((e) => e.keyType === keyType && e.key.equals(keyBlob));
  if (match) return { status: 'match', file: match.file, line: match.line };
  const changed = plain.find((e) => e.keyType === keyType);
  if (changed) return { status: 'mismatch', file: changed.file, line: changed.line, knownType: changed.keyType };
  return {
    status: 'unknown',
    otherTypes: plain.map((e) => ({ file: e.file, line: e.line, keyType: e.keyType })),
  };
}

/** Key types known for a host (plain entries only), in file order: used to prefer them in the key exchange, as OpenSSH does. */
export function knownKeyTypes(files: readonly KnownHostsFile[], hostname: string, port: number): string[] {
  const name = knownHostsName(hostname, port);
  const types = files
    .flatMap(parseKnownHosts)
    .filter((e) => e.marker === '' && hostMatches(e.hosts, name))
    .map((e) => e.keyType);
  return [...new Set(types)];
}

/** `SHA256:` + unpadded base64 of the key blob's SHA-256, exactly as `ssh-keygen -lf` prints it. */
export function fingerprintSha256(keyBlob: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '');
}

/** The key type stored inside an SSH public key blob (its first string), e.g. `ssh-ed25519`. */
export function keyTypeOfBlob(keyBlob: Buffer): string {
  if (keyBlob.length < 4) throw new Error('Host key blob too short');
  const len = keyBlob.readUInt32BE(0);
  if (len > keyBlob.length - 4) throw new Error('Host key blob malformed');
  return keyBlob.subarray(4, 4 + len).toString('latin1');
}

/** A known_hosts line for a host key: `host type base64` or `[host]:port type base64`. */
export function knownHostsLine(hostname: string, port: number, keyType: string, keyBlob: Buffer): string {
  return `${knownHostsName(hostname, port)} ${keyType} ${keyBlob.toString('base64')}`;
}

/**
 * The `@cert-authority` lines naming this host (`name` as looked up: `host`, `[host]:port` or a HostKeyAlias): a
 * host certificate signed by one of them is trusted by OpenSSH, which ssh2 cannot check (it sees no certificates).
 */
export function certAuthoritiesFor(files: readonly KnownHostsFile[], name: string): KnownHostsLocation[] {
  return files
    .flatMap(parseKnownHosts)
    .filter((e) => e.marker === 'cert-authority' && hostMatches(e.hosts, name))
    .map((e) => ({ file: e.file, line: e.line }));
}

/** Read known_hosts files; missing files count as empty (OpenSSH does the same). */
export async function readKnownHostsFiles(paths: readonly string[]): Promise<KnownHostsFile[]> {
  const out: KnownHostsFile[] = [];
  for (const p of paths) {
    try {
      out.push({ path: p, text: await fs.readFile(p, 'utf8') });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
  }
  return out;
}

/**
 * Append one line to a known_hosts file, creating its folder (0700, like ~/.ssh) and the file (0600) if needed,
 * and adding the missing newline at the end of an existing file first.
 */
export async function appendKnownHost(file: string, line: string): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  let prefix = '';
  try {
    const current = await fs.readFile(file, 'utf8');
    if (current.length > 0 && !current.endsWith('\n')) prefix = '\n';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await fs.appendFile(file, `${prefix}${line}\n`, { mode: 0o600 });
}

/** Parse one file into entries; malformed lines are skipped, as OpenSSH does. */
function parseKnownHosts(file: KnownHostsFile): Entry[] {
  const entries: Entry[] = [];
  const lines = file.text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const trimmed = lines[i].trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/[ \t]+/);
    let marker: Entry['marker'] = '';
    if (fields[0].startsWith('@')) {
      const m = fields.shift()!;
      if (m === '@revoked') marker = 'revoked';
      else if (m === '@cert-authority') marker = 'cert-authority';
      else continue; // Unknown marker: OpenSSH ignores the line.
    }
    if (fields.length < 3) continue;
    const [hosts, keyType, b64] = fields;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64)) continue;
    entries.push({ file: file.path, line: i + 1, marker, hosts, keyType, key: Buffer.from(b64, 'base64') });
  }
  return entries;
}

/**
 * Does a known_hosts host field name this host? A hashed name (`|1|salt|hash`) matches by HMAC-SHA1; anything else
 * is a comma list of OpenSSH patterns, where a matching `!pattern` vetoes the line and one positive match is
 * needed: hostfile.c asks match_hostname for exactly 1.
 */
function hostMatches(field: string, name: string): boolean {
  if (field.startsWith('|1|')) return hashedMatches(field, name);
  return matchHostname(name, field) === 1;
}

function hashedMatches(field: string, name: string): boolean {
  const parts = field.split('|'); // ['', '1', salt, hash]
  if (parts.length !== 4) return false;
  const salt = Buffer.from(parts[2], 'base64');
  const want = Buffer.from(parts[3], 'base64');
  if (salt.length !== 20 || want.length !== 20) return false;
  const got = createHmac('sha1', salt).update(name).digest();
  return timingSafeEqual(got, want);
}
