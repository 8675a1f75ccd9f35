/**
 * A private, short-lived ssh-agent: serves the keys the pool has already unlocked (and, through it, the keys of the
 * user's own agent) on a Unix socket in a folder only this user can enter, so an OpenSSH client started for a
 * transfer logs in with exactly what the shared connection used, without a second passphrase prompt and without
 * the key ever being written to disk. It answers only "list keys" and "sign"; adding, removing and locking keys
 * and every extension are refused, as is signing with a key it does not hold. It lives as long as the transfer that started it.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { OpenSSHAgent, type ParsedKey } from 'ssh2';
import { listenPrivate } from '../../util/privateSocket';
import { sshString, u32 } from '../wire';

export interface PrivateAgent {
  /** For OpenSSH's IdentityAgent (or SSH_AUTH_SOCK). */
  readonly socketPath: string;
  /** The public keys it offers, in order, as `type base64 comment` lines (for IdentityFile .pub files). */
  readonly publicKeys: string[];
  /** Stop listening, drop every client, remove the socket and its folder. */
  dispose(): void;
}

export interface AgentOptions {
  /** Unlocked private keys (ssh2 ParsedKey) to sign with. */
  keys: ParsedKey[];
  /** The user's agent socket, whose keys are offered after `keys` and signed with by that agent. */
  upstream?: string;
  /** Parent of the 0700 folder holding the socket. Default: the OS temp folder. */
  dir?: string;
}

/** Start the agent; resolves once it listens. */
export async function startPrivateAgent(options: AgentOptions): Promise<PrivateAgent> {
  const own = options.keys.filter((k) => k.isPrivateKey());
  const upstream = options.upstream ? new OpenSSHAgent(options.upstream) : undefined;
  const upstreamKeys = upstream ? await identitiesOf(upstream) : [];
  const offered: { key: ParsedKey; sign: (data: Buffer, hash: string | undefined) => Promise<Buffer> }[] = [];
  const seen = new Set<string>();
  for (const key of own) {
    const id = key.getPublicSSH().toString('base64');
    if (seen.has(id)) continue;
    seen.add(id);
    offered.push({ key, sign: async (data, hash) => sshSignature(key, key.sign(data, hash)) });
  }
  for (const key of upstreamKeys) {
    const id = key.getPublicSSH().toString('base64');
    if (seen.has(id) || !upstream) continue;
    seen.add(id);
    offered.push({
      key,
      sign: (data, hash) =>
        new Promise<Buffer>((resolve, reject) =>
          upstream.sign(key, data, hash === 'sha256' || hash === 'sha512' ? { hash } : {}, (err, sig) => (err || !sig ? reject(err ?? new Error('no signature')) : resolve(sig))),
        ),
    });
  }

  const folder = fs.mkdtempSync(path.join(options.dir ?? os.tmpdir(), 'rr-agent-'));
  fs.chmodSync(folder, 0o700);
  const socketPath = path.join(folder, 'agent.sock');
  const server = await listenPrivate(socketPath, (sock) => {
    serveConnection(sock, async (req) => {
      if (req.type === SSH_AGENTC_REQUEST_IDENTITIES) {
        const body = [u32(offered.length), ...offered.flatMap((o) => [sshString(o.key.getPublicSSH()), sshString(Buffer.from(o.key.comment ?? ''))])];
        return Buffer.concat([Buffer.from([SSH_AGENT_IDENTITIES_ANSWER]), ...body]);
      }
      if (req.type === SSH_AGENTC_SIGN_REQUEST) {
        const r = new Reader(req.payload);
        const blob = r.string();
        const data = r.string();
        const flags = r.u32();
        const entry = blob && offered.find((o) => o.key.getPublicSSH().equals(blob));
        if (!entry || !data || flags === undefined) return FAILURE;
        const isRsa = entry.key.type === 'ssh-rsa';
        const [format, hash] = !isRsa
          ? [entry.key.type, undefined]
          : flags & SSH_AGENT_RSA_SHA2_512
            ? ['rsa-sha2-512', 'sha512']
            : flags & SSH_AGENT_RSA_SHA2_256
              ? ['rsa-sha2-256', 'sha256']
              : ['ssh-rsa', 'sha1'];
        const sig = await entry.sign(data, hash);
        return Buffer.concat([Buffer.from([SSH_AGENT_SIGN_RESPONSE]), sshString(Buffer.concat([sshString(Buffer.from(format)), sshString(sig)]))]);
      }
      // Adding, removing, locking keys, extensions (session-bind@openssh.com): not ours to do.
      return FAILURE;
    });
  });
  let disposed = false;
  return {
    socketPath,
    publicKeys: offered.map((o) => `${o.key.type} ${o.key.getPublicSSH().toString('base64')}${o.key.comment ? ` ${o.key.comment.replace(/[\r\n]/g, ' ')}` : ''}`),
    dispose() {
      if (disposed) return;
      disposed = true;
      server.close();
      fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}

/** Message numbers of the agent protocol (draft-miller-ssh-agent). */
const SSH_AGENT_FAILURE = 5;
const SSH_AGENTC_REQUEST_IDENTITIES = 11;
const SSH_AGENT_IDENTITIES_ANSWER = 12;
const SSH_AGENTC_SIGN_REQUEST = 13;
const SSH_AGENT_SIGN_RESPONSE = 14;
const SSH_AGENT_RSA_SHA2_256 = 2;
const SSH_AGENT_RSA_SHA2_512 = 4;
const FAILURE = Buffer.from([SSH_AGENT_FAILURE]);
/** Requests above this are refused and the connection dropped (the protocol's own limit is 256 KiB). */
const MAX_MESSAGE = 256 * 1024;

/**
 * Frame a connection: `uint32 length, byte type, payload` in, one answer out per request, in order. Every message is
 * consumed whole by its length, so an unknown one (OpenSSH 8.9+ sends session-bind first) cannot desynchronise the
 * stream (ssh2's AgentProtocol server does not skip the body of a message it does not know).
 */
function serveConnection(sock: net.Socket, answer: (req: { type: number; payload: Buffer }) => Promise<Buffer>): void {
  let buf: Buffer = Buffer.alloc(0);
  let chain = Promise.resolve();
  sock.on('data', (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    while (buf.length >= 4) {
      const len = buf.readUInt32BE(0);
      if (len === 0 || len > MAX_MESSAGE) {
        sock.destroy();
        return;
      }
      if (buf.length < 4 + len) break;
      const type = buf[4];
      const payload = Buffer.from(buf.subarray(5, 4 + len));
      buf = buf.subarray(4 + len);
      chain = chain.then(async () => {
        const reply = await answer({ type, payload }).catch(() => FAILURE);
        if (!sock.destroyed) sock.write(Buffer.concat([u32(reply.length), reply]));
      });
    }
  });
}

/** Reads SSH wire types; undefined once past the end. */
class Reader {
  private p = 0;
  constructor(private readonly b: Buffer) {}
  u32(): number | undefined {
    if (this.p + 4 > this.b.length) return undefined;
    const v = this.b.readUInt32BE(this.p);
    this.p += 4;
    return v;
  }
  string(): Buffer | undefined {
    const n = this.u32();
    if (n === undefined || this.p + n > this.b.length) return undefined;
    const v = this.b.subarray(this.p, this.p + n);
    this.p += n;
    return v;
  }
}

function identitiesOf(agent: OpenSSHAgent): Promise<ParsedKey[]> {
  return new Promise((resolve) =>
    agent.getIdentities((err, keys) => resolve(err || !keys ? [] : keys.filter((k): k is ParsedKey => typeof (k as ParsedKey).getPublicSSH === 'function'))),
  );
}

/**
 * The signature blob an agent returns (after the format name, which AgentProtocol adds): as ssh2's key.sign gives it
 * for Ed25519 and RSA; ECDSA's DER `SEQUENCE { INTEGER r, INTEGER s }` becomes SSH's `mpint r, mpint s` (RFC 5656).
 */
export function sshSignature(key: ParsedKey, sig: Buffer): Buffer {
  if (!key.type.startsWith('ecdsa-')) return sig;
  const ints = derIntegers(sig);
  if (!ints || ints.length !== 2) throw new Error('unexpected ECDSA signature encoding');
  return Buffer.concat(ints.map(sshString));
}


/** The INTEGERs of a DER SEQUENCE, as mpint bodies (two's complement, minimal: DER's own encoding already is). */
function derIntegers(der: Buffer): Buffer[] | undefined {
  let p = 0;
  const readLen = (): number | undefined => {
    const first = der[p++];
    if (first === undefined) return undefined;
    if (first < 0x80) return first;
    const n = first & 0x7f;
    if (n === 0 || n > 4) return undefined;
    let len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[p++];
    return len;
  };
  if (der[p++] !== 0x30) return undefined;
  const seqLen = readLen();
  if (seqLen === undefined || p + seqLen !== der.length) return undefined;
  const out: Buffer[] = [];
  while (p < der.length) {
    if (der[p++] !== 0x02) return undefined;
    const len = readLen();
    if (len === undefined || p + len > der.length) return undefined;
    out.push(der.subarray(p, p + len));
    p += len;
  }
  return out;
}
