/**
 * Unlocked private keys in a form that crosses to a worker thread. ssh2's parsed keys are objects that
 * structured cloning cannot copy, so the main thread sends text that `utils.parseKey` reads without a passphrase:
 * the key's own PEM for RSA, ECDSA and DSA (PKCS#1 / SEC1 / DSA PEM), and for Ed25519 (whose PEM ssh2 keeps as
 * PKCS#8, a format it cannot parse) an unencrypted OpenSSH key built from the same seed. The text only ever lives
 * in memory, as the parsed key already did.
 */
import { createPrivateKey } from 'node:crypto';
import type { ParsedKey } from 'ssh2';
import { sshString, u32 } from '../ssh/wire';

/** Parseable, unencrypted text of an unlocked key, or undefined for a key we cannot carry (it is then skipped). */
export function keyToText(key: ParsedKey): string | undefined {
  const pem = key.getPrivatePEM();
  if (!pem) return undefined;
  if (/-----BEGIN (RSA|EC|DSA) PRIVATE KEY-----/.test(pem)) return pem;
  if (key.type !== 'ssh-ed25519') return undefined;
  const jwk = createPrivateKey(pem).export({ format: 'jwk' });
  if (typeof jwk.d !== 'string' || typeof jwk.x !== 'string') return undefined;
  return openSshEd25519(Buffer.from(jwk.d, 'base64url'), Buffer.from(jwk.x, 'base64url'), key.comment ?? '');
}

/** The openssh-key-v1 format (PROTOCOL.key in OpenSSH's sources), cipher and KDF "none". */
function openSshEd25519(seed: Buffer, pub: Buffer, comment: string): string {
  const str = sshString;
  const type = 'ssh-ed25519';
  const pubBlob = Buffer.concat([str(type), str(pub)]);
  let priv = Buffer.concat([u32(0x5eed5eed), u32(0x5eed5eed), str(type), str(pub), str(Buffer.concat([seed, pub])), str(comment)]);
  const pad: number[] = [];
  for (let i = 1; (priv.length + pad.length) % 8 !== 0; i++) pad.push(i);
  priv = Buffer.concat([priv, Buffer.from(pad)]);
  const body = Buffer.concat([Buffer.from('openssh-key-v1\0'), str('none'), str('none'), str(''), u32(1), str(pubBlob), str(priv)]);
  const lines = body.toString('base64').match(/.{1,70}/g) ?? [];
  return `-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----`;
}
