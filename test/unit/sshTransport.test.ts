/**
 * Which client a host gets (src/core/ssh/transport.ts, chooseTransport): the config facts that only OpenSSH can
 * follow, each found from a config resolved as ssh resolves it and from files as they would lie on disk (a probe over
 * an in-memory file system, so the rules are tested without one).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseSshConfig, resolveHost } from '../../src/core/ssh/sshConfig';
import { chooseTransport, describeTransport, problemsFor, type TransportProbe } from '../../src/core/ssh/transport';
import type { HostConfig } from '../../src/core/types';
import { mapOpenSshError } from '../../src/core/ssh/clientErrors';
import { buildTransportConfig, masterArgs, readPrompt } from '../../src/core/ssh/openssh/connection';
import { classifySshFailure } from '../../src/core/ssh/openssh/session';

const HOME = '/home/me';
const ENV = { home: HOME, localUser: 'me', localHost: 'laptop', vars: {}, uid: 1000 };
const KH = ['/home/me/.ssh/known_hosts'];

function resolved(text: string, alias = 'gpu', extra: Partial<HostConfig> = {}) {
  return resolveHost({ name: alias, host: alias, ...extra }, parseSshConfig(text, { home: HOME, path: '/home/me/.ssh/config' }), ENV);
}

function files(map: Record<string, string>): TransportProbe {
  return { readFile: (p) => map[p] };
}

const ED = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ5r8dI2A1vYfM1v1Kq3l0m5k1rWQ3xq2n8x7fE9aB1c me@laptop';

describe('chooseTransport', () => {
  test('a plain config stays on the built-in client', () => {
    const c = chooseTransport(resolved('Host gpu\n  HostName 10.0.0.5\n  IdentityFile ~/.ssh/id_gpu\n'), KH, files({ '/home/me/.ssh/id_gpu.pub': ED }));
    assert.deepEqual(c, { kind: 'ssh2', reasons: [] });
    assert.equal(describeTransport(c), 'built-in client (ssh2)');
  });

  test('CertificateFile forces OpenSSH, naming file and line', () => {
    const c = chooseTransport(resolved('Host gpu\n  HostName 10.0.0.5\n  CertificateFile ~/.ssh/id_gpu-cert.pub\n'), KH, files({}));
    assert.equal(c.kind, 'openssh');
    assert.deepEqual(c.reasons, ['CertificateFile /home/me/.ssh/id_gpu-cert.pub (/home/me/.ssh/config:3): ssh2 cannot use user certificates']);
    assert.match(describeTransport(c), /^OpenSSH \(CertificateFile .*ssh2 cannot use user certificates\)$/);
  });

  test('a KEY-cert.pub beside an identity in use forces OpenSSH (the automatic certificate); without one it does not', () => {
    const text = 'Host gpu\n  IdentityFile ~/.ssh/id_gpu\n';
    const withCert = chooseTransport(resolved(text), KH, files({ '/home/me/.ssh/id_gpu-cert.pub': 'ssh-ed25519-cert-v01@openssh.com AAAA' }));
    assert.deepEqual(withCert.reasons, ['/home/me/.ssh/id_gpu-cert.pub beside IdentityFile /home/me/.ssh/id_gpu: ssh2 cannot use user certificates']);
    // The defaults (no IdentityFile at all) count too: OpenSSH loads id_ed25519-cert.pub beside id_ed25519.
    const dflt = chooseTransport(resolved(''), KH, files({ '/home/me/.ssh/id_ed25519-cert.pub': 'x' }));
    assert.equal(dflt.kind, 'openssh');
    // A public IdentityFile (key.pub, the private key in an agent): its certificate is key-cert.pub.
    const pub = chooseTransport(resolved('Host gpu\n  IdentityFile ~/.ssh/id_gpu.pub\n'), KH, files({ '/home/me/.ssh/id_gpu-cert.pub': 'x' }));
    assert.equal(pub.kind, 'openssh');
    assert.equal(chooseTransport(resolved(text), KH, files({ '/home/me/.ssh/id_other-cert.pub': 'x' })).kind, 'ssh2');
  });

  test('a @cert-authority line for the host in a known_hosts file in use forces OpenSSH; one for another host, or in a file not in use, does not', () => {
    const text = 'Host gpu\n  HostName 10.0.0.5\n  Port 2222\n';
    const ca = `@cert-authority *.corp,[10.0.0.*]:2222 ${ED}\n`;
    const c = chooseTransport(resolved(text), KH, files({ '/home/me/.ssh/known_hosts': `# ours\n${ca}` }));
    assert.deepEqual(c.reasons, ['@cert-authority for [10.0.0.5]:2222 at /home/me/.ssh/known_hosts:2: ssh2 cannot verify host certificates']);
    assert.equal(chooseTransport(resolved(text), KH, files({ '/home/me/.ssh/known_hosts': `@cert-authority *.corp ${ED}\n` })).kind, 'ssh2');
    assert.equal(chooseTransport(resolved(text), KH, files({ '/elsewhere': ca })).kind, 'ssh2');
    // The config's UserKnownHostsFile is the file in use (unless the run pinned its own).
    const own = resolved(`${text}  UserKnownHostsFile /etc/corp_known_hosts\n`);
    assert.equal(chooseTransport(own, KH, files({ '/etc/corp_known_hosts': ca })).kind, 'openssh');
    assert.equal(chooseTransport(own, KH, files({ '/etc/corp_known_hosts': ca }), true).kind, 'ssh2');
    // HostKeyAlias is the name looked up.
    const alias = resolved(`${text}  HostKeyAlias gpu.corp\n`);
    assert.equal(chooseTransport(alias, KH, files({ '/home/me/.ssh/known_hosts': `@cert-authority *.corp ${ED}\n` })).kind, 'openssh');
    // A plain (or revoked) line is the built-in client's business.
    assert.equal(chooseTransport(resolved(text), KH, files({ '/home/me/.ssh/known_hosts': `[10.0.0.5]:2222 ${ED}\n@revoked * ${ED}\n` })).kind, 'ssh2');
  });

  test('a FIDO sk- key and GSSAPIAuthentication yes force OpenSSH; GSSAPIAuthentication no does not', () => {
    const sk = chooseTransport(resolved('Host gpu\n  IdentityFile ~/.ssh/id_sk\n'), KH, files({ '/home/me/.ssh/id_sk.pub': 'sk-ssh-ed25519@openssh.com AAAAGnNr me' }));
    assert.deepEqual(sk.reasons, ['IdentityFile /home/me/.ssh/id_sk is a FIDO security key (sk-ssh-ed25519@openssh.com): ssh2 cannot use security keys']);
    const g = chooseTransport(resolved('Host gpu\n  GSSAPIAuthentication yes\n'), KH, files({}));
    assert.deepEqual(g.reasons, ['GSSAPIAuthentication yes (/home/me/.ssh/config:2): ssh2 has no GSSAPI']);
    assert.equal(chooseTransport(resolved('Host gpu\n  GSSAPIAuthentication no\n'), KH, files({})).kind, 'ssh2');
  });

  test('a jump host that needs OpenSSH takes the whole host to OpenSSH, and the reason names the hop', () => {
    const text = 'Host gpu\n  ProxyJump bastion\nHost bastion\n  CertificateFile ~/.ssh/b-cert.pub\n';
    const c = chooseTransport(resolved(text), KH, files({}));
    assert.equal(c.kind, 'openssh');
    assert.match(c.reasons[0], /\(hop bastion\): ssh2 cannot use user certificates$/);
  });

  test('resolution records what OpenSSH is to be run with: the config file and the settings that override it', () => {
    const r = resolved('Host gpu\n  User a\n', 'gpu', { user: 'b', port: 2200, identityFile: '~/k', proxyJump: 'j' });
    assert.deepEqual(r.openssh, { configFile: '/home/me/.ssh/config', overrides: { user: 'b', port: 2200, identityFiles: ['~/k'], proxyJump: 'j' } });
  });

  test('on OpenSSH the "not honoured" lines go (ssh follows those options); other problems stay', () => {
    const problems = ['/c:3: ForwardAgent is not honoured by Remote Runs; ignored for gpu', '/c:1: Match canonical: criterion "canonical" is not supported by Remote Runs; block skipped'];
    assert.deepEqual(problemsFor(problems, { kind: 'openssh', reasons: ['x'] }), [problems[1]]);
    assert.deepEqual(problemsFor(problems, { kind: 'ssh2', reasons: [] }), problems);
  });

  test('CertificateFile and GSSAPIAuthentication are no longer reported as not honoured', () => {
    const r = resolved('Host gpu\n  CertificateFile ~/c\n  GSSAPIAuthentication yes\n');
    assert.equal(r.configProblems, undefined);
  });
});

// What OpenSSH 9.2p1 (Debian 12) printed, recorded against the test sshd (test/harness/sshd.ts) and on loopback.
const RECORDED = {
  refused: 'ssh: connect to host 127.0.0.1 port 1: Connection refused\n',
  dns: 'ssh: Could not resolve hostname no-such-host.invalid: Name or service not known\n',
  unknown: 'No ED25519 host key is known for [127.0.0.1]:34485 and you have requested strict checking.\nHost key verification failed.\n',
  changed: [
    '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@',
    '@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @',
    '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@',
    'IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!',
    'The fingerprint for the ED25519 key sent by the remote host is',
    'SHA256:4STb79N/EwnLvZDBb3WWNDSbnXwSAShm2jRdGQKcIJo.',
    'Add correct host key in /tmp/kh to get rid of this message.',
    'Offending ED25519 key in /tmp/kh:1',
    '  remove with:',
    '  ssh-keygen -f "/tmp/kh" -R "[127.0.0.1]:34485"',
    'Host key for [127.0.0.1]:34485 has changed and you have requested strict checking.',
    'Host key verification failed.',
    '',
  ].join('\n'),
  denied: 'Load key "/dev/null": bad permissions\nrrtest@127.0.0.1: Permission denied (publickey).\n',
  tooMany: 'Received disconnect from 127.0.0.1 port 2222:2: Too many authentication failures\nDisconnected from 127.0.0.1 port 2222\n',
  hostKeyPrompt:
    "The authenticity of host '[127.0.0.1]:36757 ([127.0.0.1]:36757)' can't be established.\nED25519 key fingerprint is SHA256:rVlb1M0lqFDrKzL7Z7H/WIMKst09fpSL+xx3wXLmV1A.\nThis key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? ",
  passphrasePrompt: "Enter passphrase for key '/tmp/rr-sshd-fJRZzX/id_ed25519_enc': ",
};

describe("OpenSSH's failures in our kinds (mapOpenSshError)", () => {
  const hop = resolved('Host gpu\n  HostName 127.0.0.1\n  User rrtest\n').target;
  const map = (s: string) => mapOpenSshError(s, hop, 'gpu', ['/home/me/.ssh/known_hosts', '/etc/ssh/ssh_known_hosts']);
  test('refused, DNS: unreachable with the socket reason and ssh\'s own words', () => {
    const r = map(RECORDED.refused);
    assert.equal(r.kind, 'unreachable');
    assert.equal(r.detail.code, 'ECONNREFUSED');
    assert.match(r.message, /^Connection to gpu failed: connection refused \(OpenSSH: ssh: connect to host 127\.0\.0\.1 port 1: Connection refused\)$/);
    assert.equal(map(RECORDED.dns).detail.code, 'ENOTFOUND');
    // A name that is no configured host either: not-found with the closest configured name, as for ssh2.
    const typo = mapOpenSshError(RECORDED.dns, { ...hop, alias: 'gpu-1', unconfigured: { closest: 'gpu1' } }, 'gpu-1', []);
    assert.equal(typo.kind, 'not-found');
    assert.match(typo.message, /Did you mean gpu1\?/);
  });
  test('an unknown key is host-key-unknown naming every file checked; a changed one host-key-mismatch naming its line', () => {
    const u = map(RECORDED.unknown);
    assert.equal(u.kind, 'host-key-unknown');
    assert.match(u.message, /checked: \/home\/me\/\.ssh\/known_hosts, \/etc\/ssh\/ssh_known_hosts/);
    const c = map(RECORDED.changed);
    assert.equal(c.kind, 'host-key-mismatch');
    assert.match(c.message, /\(\/tmp\/kh:1\)/);
    assert.deepEqual([c.detail.file, c.detail.line], ['/tmp/kh', 1]);
  });
  test('denied is auth-failed with the methods the server accepts; too many failures carries the IdentitiesOnly hint', () => {
    const d = map(RECORDED.denied);
    assert.equal(d.kind, 'auth-failed');
    assert.deepEqual(d.detail.serverMethods, ['publickey']);
    assert.match(d.message, /Authentication as rrtest on gpu failed\. The server accepts: publickey\. \(OpenSSH: rrtest@127\.0\.0\.1: Permission denied \(publickey\)\.\)/);
    const t = map(RECORDED.tooMany);
    assert.equal(t.kind, 'auth-failed');
    assert.match(t.message, /IdentitiesOnly yes/);
  });
  test('anything else is unreachable, never empty', () => {
    assert.equal(map('').kind, 'unreachable');
    assert.match(map('').message, /ssh exited without saying why/);
  });
});

describe("OpenSSH's prompts (readPrompt), as askpass receives them", () => {
  test('host key, passphrase, password and anything else', () => {
    assert.deepEqual(readPrompt(RECORDED.hostKeyPrompt), { kind: 'host-key', hostPattern: '[127.0.0.1]:36757', keyType: 'ED25519', fingerprint: 'SHA256:rVlb1M0lqFDrKzL7Z7H/WIMKst09fpSL+xx3wXLmV1A' });
    assert.deepEqual(readPrompt(RECORDED.passphrasePrompt), { kind: 'passphrase', key: '/tmp/rr-sshd-fJRZzX/id_ed25519_enc' });
    assert.deepEqual(readPrompt("trainer@10.1.2.6's password: "), { kind: 'password', user: 'trainer', host: '10.1.2.6' });
    assert.deepEqual(readPrompt('Verification code: '), { kind: 'other', text: 'Verification code: ' });
  });
});

describe('the wrapper config and the master command line', () => {
  test("the transport's own options come first, host keys are strict per hop (never no), the user's file is included, settings are ssh flags", () => {
    const r = resolved('Host gpu\n  HostName 10.0.0.5\n  StrictHostKeyChecking no\n  ProxyJump bastion\n', 'gpu', { user: 'u', port: 2200, identityFile: '/k/id' });
    const text = buildTransportConfig({ ...r, openssh: { ...r.openssh!, configFile: '/etc/hostname' } }, { knownHostsFiles: ['/kh one'], knownHostsPinned: false, connectTimeoutS: 15, keepaliveIntervalS: 15, keepaliveCountMax: 3 });
    const lines = text.split('\n');
    assert.ok(lines.indexOf('  ControlPath none') < lines.indexOf('  Include /etc/hostname'), 'ours before theirs (first value wins)');
    assert.ok(!/StrictHostKeyChecking no/.test(text));
    assert.match(text, /Host gpu\n  StrictHostKeyChecking accept-new\n  UserKnownHostsFile "\/kh one"\n  GlobalKnownHostsFile none\n/);
    assert.match(text, /Host bastion\n  StrictHostKeyChecking ask\n/);
    assert.deepEqual(masterArgs(r, '/w/config', '/w/cm').slice(-9), ['-N', '-l', 'u', '-p', '2200', '-i', '/k/id', '--', 'gpu']);
  });
});

test('one reading of ssh\'s stderr: the transport (mapOpenSshError) and a transfer\'s session (classifySshFailure) agree on every recorded failure', () => {
  const hop = resolved('Host gpu\n  HostName 127.0.0.1\n  User rrtest\n').target;
  // The session trusts only the keys the pool verified: an unknown key is, for it, a key other than the trusted one.
  const sessionKind = { 'auth-failed': 'auth-failed', 'host-key-mismatch': 'host-key-mismatch', 'host-key-unknown': 'host-key-mismatch', unreachable: 'unreachable', 'not-found': 'unreachable' } as const;
  const recorded = [RECORDED.refused, RECORDED.dns, RECORDED.unknown, RECORDED.changed, RECORDED.denied, RECORDED.tooMany];
  const seen = new Set<string>();
  for (const stderr of recorded) {
    const transport = mapOpenSshError(stderr, hop, 'gpu', []).kind as keyof typeof sessionKind;
    seen.add(transport);
    assert.equal(classifySshFailure(stderr, 255)?.kind, sessionKind[transport], stderr);
  }
  assert.deepEqual([...seen].sort(), ['auth-failed', 'host-key-mismatch', 'host-key-unknown', 'unreachable'], 'every kind is among the recordings');
});
