import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  appendKnownHost,
  checkHostKey,
  fingerprintSha256,
  keyTypeOfBlob,
  knownHostsLine,
  knownKeyTypes,
  readKnownHostsFiles,
  type KnownHostsFile,
} from '../../src/core/ssh/knownHosts';

/** Generate a real key pair with ssh-keygen and return its public blob (what a server presents). */
function generateKey(dir: string, name: string, type = 'ed25519'): { blob: Buffer; type: string; pubPath: string } {
  const file = path.join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', name, '-f', file]);
  const [keyType, b64] = readFileSync(`${file}.pub`, 'utf8').trim().split(' ');
  return { blob: Buffer.from(b64, 'base64'), type: keyType, pubPath: `${file}.pub` };
}

const dir = mkdtempSync(path.join(tmpdir(), 'rr-kh-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const a = generateKey(dir, 'a');
const b = generateKey(dir, 'b');
const rsa = generateKey(dir, 'r', 'rsa');

function file(lines: string[], p = '/home/u/.ssh/known_hosts'): KnownHostsFile {
  return { path: p, text: lines.join('\n') + '\n' };
}
const b64 = (k: { blob: Buffer }) => k.blob.toString('base64');

test('a plain entry matches on port 22, and only there', () => {
  const f = file(['# comment', '', `gpu1,10.0.0.5 ${a.type} ${b64(a)} me@laptop`]);
  assert.equal(checkHostKey([f], 'gpu1', 22, a.type, a.blob).status, 'match');
  assert.equal(checkHostKey([f], '10.0.0.5', 22, a.type, a.blob).status, 'match');
  assert.equal(checkHostKey([f], 'gpu1', 2222, a.type, a.blob).status, 'unknown');
  assert.equal(checkHostKey([f], 'gpu2', 22, a.type, a.blob).status, 'unknown');
});

test('[host]:port entries match only their port', () => {
  const f = file([`[gpu1]:2222 ${a.type} ${b64(a)}`]);
  assert.equal(checkHostKey([f], 'gpu1', 2222, a.type, a.blob).status, 'match');
  assert.equal(checkHostKey([f], 'gpu1', 22, a.type, a.blob).status, 'unknown');
});

test('hashed entries written by ssh-keygen -H match, for plain and [host]:port names', () => {
  const p = path.join(dir, 'hashed_known_hosts');
  writeFileSync(p, `gpu1 ${a.type} ${b64(a)}\n[gpu1]:2222 ${b.type} ${b64(b)}\n`);
  execFileSync('ssh-keygen', ['-q', '-H', '-f', p]);
  const text = readFileSync(p, 'utf8');
  assert.match(text, /^\|1\|/m, 'ssh-keygen hashed the names');
  assert.doesNotMatch(text, /gpu1/);
  const f = { path: p, text };
  assert.equal(checkHostKey([f], 'gpu1', 22, a.type, a.blob).status, 'match');
  assert.equal(checkHostKey([f], 'gpu1', 2222, b.type, b.blob).status, 'match');
  assert.equal(checkHostKey([f], 'GPU2', 22, a.type, a.blob).status, 'unknown');
  const changed = checkHostKey([f], 'gpu1', 2222, a.type, a.blob);
  assert.deepEqual(changed, { status: 'mismatch', file: p, line: 2, knownType: a.type });
});

test('wildcards match, and a negated pattern vetoes the line whatever its position', () => {
  const f = file([`*.lab.example,!bad.lab.example ${a.type} ${b64(a)}`, `!gpu?,gpu* ${b.type} ${b64(b)}`]);
  assert.equal(checkHostKey([f], 'n1.lab.example', 22, a.type, a.blob).status, 'match');
  assert.equal(checkHostKey([f], 'N1.LAB.example', 22, a.type, a.blob).status, 'match', 'names are case-insensitive');
  assert.equal(checkHostKey([f], 'bad.lab.example', 22, a.type, a.blob).status, 'unknown');
  assert.equal(checkHostKey([f], 'gpu12', 22, b.type, b.blob).status, 'match');
  assert.equal(checkHostKey([f], 'gpu1', 22, b.type, b.blob).status, 'unknown', '!gpu? excludes gpu1');
});

test('a different key of the same type is a mismatch naming the file and line', () => {
  const f1 = file([`other ${a.type} ${b64(a)}`], '/etc/ssh/ssh_known_hosts');
  const f2 = file(['# mine', `other2 ${a.type} ${b64(a)}`, `gpu1 ${a.type} ${b64(a)}`]);
  const r = checkHostKey([f1, f2], 'gpu1', 22, b.type, b.blob);
  assert.deepEqual(r, { status: 'mismatch', file: '/home/u/.ssh/known_hosts', line: 3, knownType: a.type });
});

test('a match anywhere wins over a stale entry of the same type elsewhere', () => {
  const f = file([`gpu1 ${a.type} ${b64(a)}`, `gpu1 ${b.type} ${b64(b)}`]);
  assert.deepEqual(checkHostKey([f], 'gpu1', 22, b.type, b.blob), { status: 'match', file: f.path, line: 2 });
});

test('known only with another key type is unknown for this type, and says which entries exist', () => {
  const f = file([`gpu1 ${rsa.type} ${b64(rsa)}`]);
  const r = checkHostKey([f], 'gpu1', 22, a.type, a.blob);
  assert.deepEqual(r, { status: 'unknown', otherTypes: [{ file: f.path, line: 1, keyType: 'ssh-rsa' }] });
  assert.deepEqual(knownKeyTypes([f], 'gpu1', 22), ['ssh-rsa']);
});

test('@revoked refuses the key even when a plain line trusts it; @cert-authority lines are ignored', () => {
  const f = file([
    `gpu1 ${a.type} ${b64(a)}`,
    `@cert-authority gpu1 ${b.type} ${b64(b)}`,
    `@revoked * ${a.type} ${b64(a)}`,
  ]);
  assert.deepEqual(checkHostKey([f], 'gpu1', 22, a.type, a.blob), { status: 'revoked', file: f.path, line: 3 });
  assert.equal(checkHostKey([f], 'gpu1', 22, b.type, b.blob).status, 'mismatch', 'the CA line is not a host key');
});

test('malformed lines are skipped, not fatal', () => {
  const f = file(['garbage', `gpu1 ${a.type} !!notbase64!!`, '@weird gpu1 x y', `gpu1 ${a.type} ${b64(a)}`]);
  assert.deepEqual(checkHostKey([f], 'gpu1', 22, a.type, a.blob), { status: 'match', file: f.path, line: 4 });
});

test('fingerprintSha256 equals ssh-keygen -lf, for ed25519 and rsa', () => {
  for (const k of [a, rsa]) {
    const out = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', k.pubPath], { encoding: 'utf8' });
    assert.equal(fingerprintSha256(k.blob), out.split(' ')[1]);
    assert.equal(keyTypeOfBlob(k.blob), k.type);
  }
});

test('knownHostsLine is found by ssh-keygen -F, with [host]:port off port 22', () => {
  const p = path.join(dir, 'kh_lines');
  writeFileSync(p, knownHostsLine('gpu1', 22, a.type, a.blob) + '\n' + knownHostsLine('gpu1', 2222, b.type, b.blob) + '\n');
  assert.match(readFileSync(p, 'utf8'), /^\[gpu1\]:2222 ssh-ed25519 /m);
  const found22 = execFileSync('ssh-keygen', ['-F', 'gpu1', '-f', p], { encoding: 'utf8' });
  assert.ok(found22.includes(b64(a)) && !found22.includes(b64(b)));
  const found2222 = execFileSync('ssh-keygen', ['-F', '[gpu1]:2222', '-f', p], { encoding: 'utf8' });
  assert.ok(found2222.includes(b64(b)) && !found2222.includes(b64(a)));
});

test('appendKnownHost creates a 0700 folder and a 0600 file, and fixes a missing final newline', async () => {
  const sshDir = path.join(dir, 'home', '.ssh');
  const p = path.join(sshDir, 'known_hosts');
  await appendKnownHost(p, knownHostsLine('gpu1', 22, a.type, a.blob));
  assert.equal(statSync(sshDir).mode & 0o777, 0o700);
  assert.equal(statSync(p).mode & 0o777, 0o600);
  writeFileSync(p, readFileSync(p, 'utf8').trimEnd());
  await appendKnownHost(p, knownHostsLine('gpu2', 22, b.type, b.blob));
  const files = await readKnownHostsFiles([p, path.join(dir, 'missing')]);
  assert.equal(files.length, 1);
  assert.equal(checkHostKey(files, 'gpu1', 22, a.type, a.blob).status, 'match');
  assert.deepEqual(checkHostKey(files, 'gpu2', 22, b.type, b.blob), { status: 'match', file: p, line: 2 });
});
