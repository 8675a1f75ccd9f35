/**
 * Keys unlocked in the main thread cross to transfer worker threads as text ssh2 parses without a passphrase
 * (src/core/transfer/workerKeys.ts): the same public key, and signatures the original key's public half verifies.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { utils, type ParsedKey } from 'ssh2';
import { keyToText } from '../../src/core/transfer/workerKeys';

function parse(text: string | Buffer, passphrase?: string): ParsedKey {
  const k = utils.parseKey(text, passphrase);
  if (k instanceof Error) throw k;
  return Array.isArray(k) ? k[0] : k;
}

/**
 * A passphrase-protected key as users have them: written by OpenSSH's ssh-keygen. (ssh2's own generateKeyPairSync
 * sometimes wrote an encrypted ed25519 key its parseKey then called malformed: a flaky test, not our code.)
 */
function keygen(type: string, bits: number | undefined, passphrase: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-keys-'));
  try {
    const file = path.join(dir, 'key');
    execFileSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-a', '4', '-N', passphrase, '-C', 'me@box', '-f', file]);
    return fs.readFileSync(file, 'utf8');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

for (const [type, bits] of [
  ['ed25519', undefined],
  ['ecdsa', 256],
  ['rsa', 2048],
] as const) {
  test(`${type}: a passphrase-protected key, once unlocked, becomes text that parses without asking`, () => {
    const privateText = keygen(type, bits, 'secret words');
    assert.ok(utils.parseKey(privateText) instanceof Error, 'the file itself needs its passphrase');
    const unlocked = parse(privateText, 'secret words');
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
