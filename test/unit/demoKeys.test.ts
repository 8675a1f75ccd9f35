/**
 * The demo's keys (src/demo/keys.ts). ssh2's ed25519 generator drops a leading zero byte of the public key, so about
 * 1 pair in 256 is malformed; the demo once failed to start with "bad demo client key: Malformed OpenSSH public key".
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { utils } from 'ssh2';
import { ensureDemoKeys, generateEd25519 } from '../../src/demo/keys';
import { demoPaths } from '../../src/demo/paths';

const N = 2000;

test("control: ssh2's own generator makes malformed ed25519 pairs (6000 tries)", () => {
  let malformed = 0;
  for (let i = 0; i < 6000; i++) if (utils.parseKey(utils.generateKeyPairSync('ed25519').public) instanceof Error) malformed++;
  // 1 in 256 on average: none in 6000 tries has a probability of about e^-23 (1 in 10^10).
  assert.ok(malformed > 0, 'the generator flaw this guards against is still there (if not, the retry can go)');
});

test(`every pair generateEd25519 makes parses, both halves agree, 32-byte public key (${N} pairs)`, () => {
  for (let i = 0; i < N; i++) {
    const pair = generateEd25519('c');
    const pub = utils.parseKey(pair.public);
    const priv = utils.parseKey(pair.private);
    assert.ok(!(pub instanceof Error) && !(priv instanceof Error), `pair ${i}: ${pair.public}`);
    const blob = (Array.isArray(pub) ? pub[0] : pub).getPublicSSH();
    assert.equal(blob.readUInt32BE(15), 32, 'a 32-byte ed25519 key');
    assert.deepEqual(blob, (Array.isArray(priv) ? priv[0] : priv).getPublicSSH());
  }
});

test('a key file left malformed by an earlier version is made anew, and a good one is kept', () => {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-keys-'));
  try {
    const paths = demoPaths(base);
    const first = ensureDemoKeys(paths);
    assert.deepEqual(ensureDemoKeys(paths), first, 'kept across starts');
    fs.writeFileSync(paths.clientKey, '-----BEGIN OPENSSH PRIVATE KEY-----\nbroken\n-----END OPENSSH PRIVATE KEY-----\n');
    const again = ensureDemoKeys(paths);
    assert.notEqual(again.clientPublicLine, first.clientPublicLine);
    assert.ok(!(utils.parseKey(again.clientPublicLine) instanceof Error));
    assert.equal(again.hostPublicLine, first.hostPublicLine, 'the host key stays (still trusted)');
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
});
