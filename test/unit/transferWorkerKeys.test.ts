/**
 * Keys unlocked in the main thread cross to transfer worker threads as text ssh2 parses without a passphrase
 * (src/core/transfer/workerKeys.ts): the same public key, and signatures the original key's public half verifies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { utils, type ParsedKey } from 'ssh2';
import { keyToText } from '../../src/core/transfer/workerKeys';

function parse(text: string | Buffer, passphrase?: string): ParsedKey {
  const k = utils.parseKey(text, passphrase);
  if (k instanceof Error) throw k;
  return Array.isArray(k) ? k[0] : k;
}

for (const [type, opts] of [
  ['ed25519', {}],
  ['ecdsa', { bits: 256 }],
  ['rsa', { bits: 2048 }],
] as const) {
  test(`${type}: a passphrase-protected key, once unlocked, becomes text that parses without asking`, () => {
    const pair = utils.generateKeyPairSync(type, { ...opts, passphrase: 'secret words', cipher: 'aes256-ctr', rounds: 4, comment: 'me@box' });
    assert.ok(utils.parseKey(pair.private) instanceof Error, 'the file itself needs its passphrase');
    const unlocked = parse(pair.private, 'secret words');
    const text = keyToText(unlocked);
    assert.ok(text, 'carried');
    assert.doesNotMatch(text, /ENCRYPTED|aes256/i);
    const copy = parse(text);
    assert.ok(copy.isPrivateKey());
    assert.equal(copy.type, unlocked.type);
    assert.ok(copy.getPublicSSH().equals(unlocked.getPublicSSH()));
    const data = Buffer.from('session id and request');
    const sig = copy.sign(data);
    assert.ok(Buffer.isBuffer(sig));
    assert.equal(unlocked.verify(data, sig as Buffer), true);
  });
}
