/**
 * When a host with no link up may get OpenSSH as its first link (ssh/opensshFirst.ts): only where that login asks
 * nothing. Keys written by OpenSSH's ssh-keygen, known_hosts lines as ssh writes them (plain, hashed, HostKeyAlias).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { whyNotOpenSshFirst } from '../../src/core/ssh/opensshFirst';
import type { ResolvedHop, ResolvedHost } from '../../src/core/ssh/types';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-first-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function keygen(name: string, passphrase: string): string {
  const file = path.join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-a', '4', '-N', passphrase, '-C', 'me@box', '-f', file]);
  return file;
}

const plainKey = keygen('plain', '');
const lockedKey = keygen('locked', 'secret');
const hostKey = fs.readFileSync(`${keygen('hostkey', '')}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');

function knownHosts(name: string, lines: string[]): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, lines.map((l) => `${l}\n`).join(''));
  return file;
}

function hop(extra: Partial<ResolvedHop> = {}): ResolvedHop {
  return { alias: 'gpu', hostname: '10.0.0.5', port: 2222, user: 'me', identityFiles: [plainKey], identitiesOnly: true, ...extra };
}

function host(target: ResolvedHop, jumps: ResolvedHop[] = []): ResolvedHost {
  return { jumps, target };
}

const known = knownHosts('known', [`[10.0.0.5]:2222 ${hostKey}`, `bastion ${hostKey}`]);
const ctx = { knownHostsFiles: [known], knownHostsPinned: false, agent: null };

test('a known host key and a key file without a passphrase: OpenSSH first', async () => {
  assert.equal(await whyNotOpenSshFirst(host(hop()), ctx), undefined);
});

test('a host key not in known_hosts (or known only under another port) keeps the built-in client, naming the files', async () => {
  const why = await whyNotOpenSshFirst(host(hop({ port: 22 })), ctx);
  assert.match(why ?? '', /^no host key of gpu is known yet \(10\.0\.0\.5 in .*known\): the built-in client checks it and asks$/);
  // The hop's own known_hosts files (ssh config UserKnownHostsFile) are the ones looked in, unless the run pinned its own.
  const elsewhere = knownHosts('empty', []);
  assert.match((await whyNotOpenSshFirst(host(hop({ knownHosts: { files: [elsewhere] } })), ctx)) ?? '', /no host key of gpu is known yet/);
  assert.equal(await whyNotOpenSshFirst(host(hop({ knownHosts: { files: [elsewhere] } })), { ...ctx, knownHostsPinned: true }), undefined);
});

test('hashed known_hosts names and HostKeyAlias are looked up as ssh looks them up', async () => {
  const hashed = knownHosts('hashed', [`[10.0.0.5]:2222 ${hostKey}`]);
  execFileSync('ssh-keygen', ['-q', '-H', '-f', hashed]);
  assert.doesNotMatch(fs.readFileSync(hashed, 'utf8'), /10\.0\.0\.5/, 'control: the name is hashed');
  assert.equal(await whyNotOpenSshFirst(host(hop()), { ...ctx, knownHostsFiles: [hashed] }), undefined);
  const aliased = knownHosts('aliased', [`gpu-key ${hostKey}`]);
  assert.equal(await whyNotOpenSshFirst(host(hop({ hostKeyAlias: 'gpu-key' })), { ...ctx, knownHostsFiles: [aliased] }), undefined);
  assert.match((await whyNotOpenSshFirst(host(hop()), { ...ctx, knownHostsFiles: [aliased] })) ?? '', /no host key of gpu/);
});

test('only an encrypted key (or none at all) keeps the built-in client, which asks for the passphrase', async () => {
  assert.match((await whyNotOpenSshFirst(host(hop({ identityFiles: [lockedKey] })), ctx)) ?? '', /^gpu has neither an agent nor an identity file without a passphrase/);
  assert.match((await whyNotOpenSshFirst(host(hop({ identityFiles: [path.join(dir, 'missing')] })), ctx)) ?? '', /neither an agent/);
  // Any key of the list that logs in without a prompt will do (ssh tries them in order).
  assert.equal(await whyNotOpenSshFirst(host(hop({ identityFiles: [lockedKey, plainKey] })), ctx), undefined);
});

test('an agent socket logs in without a prompt; `IdentityAgent none` and the pool without an agent do not count', async () => {
  const sock = path.join(dir, 'agent.sock');
  const server = net.createServer().listen(sock);
  await new Promise((r) => server.once('listening', r));
  try {
    const locked = hop({ identityFiles: [lockedKey] });
    assert.equal(await whyNotOpenSshFirst(host(locked), { ...ctx, agent: sock }), undefined);
    assert.equal(await whyNotOpenSshFirst(host({ ...locked, identityAgent: sock }), ctx), undefined);
    assert.match((await whyNotOpenSshFirst(host({ ...locked, identityAgent: null }), { ...ctx, agent: sock })) ?? '', /neither an agent/);
    assert.match((await whyNotOpenSshFirst(host(locked), { ...ctx, agent: path.join(dir, 'no-agent.sock') })) ?? '', /neither an agent/, 'a socket path with nothing there');
  } finally {
    server.close();
  }
});

test('every hop counts: a jump host whose key is unknown keeps the built-in client', async () => {
  const bastion = hop({ alias: 'bastion', hostname: 'bastion', port: 22 });
  assert.equal(await whyNotOpenSshFirst(host(hop(), [bastion]), ctx), undefined);
  assert.match((await whyNotOpenSshFirst(host(hop(), [{ ...bastion, hostname: 'bastion2' }]), ctx)) ?? '', /^no host key of bastion is known yet/);
});

test('a ProxyCommand on the way keeps the built-in client, which runs it and ends it with its link', async () => {
  const proxied = hop({ proxyCommand: { command: 'nc 10.0.0.5 2222', where: '/home/me/.ssh/config:4' } });
  assert.equal(await whyNotOpenSshFirst(host(proxied), ctx), 'gpu is reached through a ProxyCommand (/home/me/.ssh/config:4), which the built-in client runs and ends with its link');
});
