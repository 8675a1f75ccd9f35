/**
 * The demo's two keys, made on first start with ssh2's own pure-JS generator (nothing installed needed), kept for
 * later starts so a trusted host key stays trusted: the host key of the demo server and the one client key it accepts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { utils } from 'ssh2';
import type { DemoPaths } from './paths';

export interface DemoKeys {
  /** The server's private host key (OpenSSH format). */
  hostPrivate: Buffer;
  /** `ssh-ed25519 AAAA…`: what known_hosts lists for the demo host. */
  hostPublicLine: string;
  /** `ssh-ed25519 AAAA…` of the only key the server accepts. */
  clientPublicLine: string;
  /** Path of the client's private key (mode 0600), for identityFile settings. */
  clientKeyPath: string;
}

/** Load the demo keys, generating any that are missing. */
export function ensureDemoKeys(paths: DemoPaths): DemoKeys {
  fs.mkdirSync(path.dirname(paths.hostKey), { recursive: true, mode: 0o700 });
  const host = loadOrCreate(paths.hostKey, `${paths.hostKey}.pub`, 'remote-runs-demo host');
  const client = loadOrCreate(paths.clientKey, paths.clientPublicKey, 'remote-runs-demo client');
  return { hostPrivate: host.privateKey, hostPublicLine: host.publicLine, clientPublicLine: client.publicLine, clientKeyPath: paths.clientKey };
}

function loadOrCreate(privatePath: string, publicPath: string, comment: string): { privateKey: Buffer; publicLine: string } {
  if (fs.existsSync(privatePath) && fs.existsSync(publicPath)) {
    const privateKey = fs.readFileSync(privatePath);
    const parsed = utils.parseKey(privateKey);
    if (!(parsed instanceof Error)) {
      const key = Array.isArray(parsed) ? parsed[0] : parsed;
      return { privateKey, publicLine: `${key.type} ${key.getPublicSSH().toString('base64')}` };
    }
  }
  const pair = generateEd25519(comment);
  fs.writeFileSync(privatePath, pair.private, { mode: 0o600 });
  fs.writeFileSync(publicPath, `${pair.public}\n`, { mode: 0o644 });
  const publicLine = pair.public.trim().split(/\s+/).slice(0, 2).join(' ');
  return { privateKey: Buffer.from(pair.private), publicLine };
}

/**
 * An ed25519 key pair in OpenSSH format from ssh2's generator, made again until ssh2's own parser reads both halves
 * and they agree: the generator treats the 32-byte public key as a number and drops a leading zero byte, so about
 * 1 pair in 256 holds a 31-byte key that every parser (ssh2's and OpenSSH's) rejects as malformed. (Seen as "bad
 * demo client key: Malformed OpenSSH public key" when the demo started, in a loaded e2e run.)
 */
export function generateEd25519(comment?: string): { private: string; public: string } {
  for (let attempt = 1; ; attempt++) {
    const pair = utils.generateKeyPairSync('ed25519', comment === undefined ? {} : { comment });
    const pub = utils.parseKey(pair.public);
    const priv = utils.parseKey(pair.private);
    if (!(pub instanceof Error) && !(priv instanceof Error)) {
      const a = (Array.isArray(pub) ? pub[0] : pub).getPublicSSH();
      const b = (Array.isArray(priv) ? priv[0] : priv).getPublicSSH();
      if (a.length === 51 && a.equals(b)) return pair; // 4+11 ("ssh-ed25519") + 4+32
    }
    if (attempt >= 100) throw new Error('could not generate a well-formed ed25519 key pair');
  }
}
