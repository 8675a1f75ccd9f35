/**
 * The OpenSSH client's pieces that need no server: the ssh_config written for a transfer (hops, pinned keys, nothing
 * the user's values could inject), what ssh's exit status 255 means, and the private agent, driven by OpenSSH's own
 * tools (`ssh-add -L`, `ssh-keygen -Y sign/verify`) for each key type, refusing what it must not do.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { utils, type ParsedKey } from 'ssh2';
import { buildConfig, classifySshFailure, configPath, OpenSshUnsupported } from '../../src/core/ssh/openssh/session';
import { removeOrphanedSessions } from '../../src/core/ssh/openssh/sessionFolder';
import { startPrivateAgent } from '../../src/core/ssh/openssh/agentServer';
import { passwordPrompt, startAskpass } from '../../src/core/ssh/openssh/askpass';
import type { ResolvedHop } from '../../src/core/ssh/types';

const files = { knownHosts: '/tmp/s/known_hosts', agent: '/tmp/s/a/agent.sock', identities: ['/tmp/s/id_0.pub'], control: '/tmp/s/cm' };

function hop(alias: string, over: Partial<ResolvedHop> = {}): ResolvedHop {
  return { alias, hostname: `${alias}.example`, port: 22, user: 'me', identityFiles: [], identitiesOnly: false, ...over };
}

/** The value of `key` in the Host block `host` of an ssh_config text. */
function option(config: string, host: string, key: string): string | undefined {
  const blocks = config.split(/^Host /m).slice(1);
  const block = blocks.find((b) => b.split('\n')[0] === host);
  const line = block?.split('\n').find((l) => l.trim().startsWith(`${key} `));
  return line?.trim().slice(key.length + 1);
}

test('config: one block per hop, each pinned to its own known key under an alias, ProxyJump to the hop before', () => {
  const cfg = buildConfig([hop('bastion', { port: 2222, user: 'jump' }), hop('gpu1')], ['ssh-ed25519', 'ssh-rsa'], files);
  assert.equal(option(cfg, 'rr-hop0', 'HostName'), 'bastion.example');
  assert.equal(option(cfg, 'rr-hop0', 'Port'), '2222');
  assert.equal(option(cfg, 'rr-hop0', 'User'), 'jump');
  assert.equal(option(cfg, 'rr-hop0', 'HostKeyAlias'), 'rr-hop0');
  assert.equal(option(cfg, 'rr-hop0', 'ProxyJump'), undefined);
  assert.equal(option(cfg, 'rr-hop1', 'ProxyJump'), 'rr-hop0');
  assert.equal(option(cfg, 'rr-hop1', 'HostKeyAlgorithms'), 'rsa-sha2-512,rsa-sha2-256,ssh-rsa');
  // Only the target shares its connection: a jump hop's ssh must never attach to the target's master.
  assert.equal(option(cfg, 'rr-hop0', 'ControlPath'), 'none');
  assert.equal(option(cfg, 'rr-hop1', 'ControlPath'), '/tmp/s/cm');
  for (const [k, v] of [
    ['StrictHostKeyChecking', 'yes'],
    ['BatchMode', 'yes'],
    ['GlobalKnownHostsFile', '/dev/null'],
    ['UserKnownHostsFile', '/tmp/s/known_hosts'],
    ['IdentitiesOnly', 'yes'],
    ['PasswordAuthentication', 'no'],
    ['ForwardAgent', 'no'],
    ['PermitLocalCommand', 'no'],
    ['UpdateHostKeys', 'no'],
  ]) {
    assert.equal(option(cfg, '*', k), v, k);
  }
});

test('config: the real ssh accepts it (ssh -G) and resolves the target through the jump', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-cfg-'));
  try {
    const f = path.join(dir, 'config');
    fs.writeFileSync(f, buildConfig([hop('bastion'), hop('gpu 1'.replace(' ', '-'))], ['ssh-ed25519', 'ecdsa-sha2-nistp256'], { ...files, control: path.join(dir, 'c m%x') }));
    const out = execFileSync('ssh', ['-G', '-F', f, 'rr-hop1'], { encoding: 'utf8' });
    assert.match(out, /^hostname gpu-1\.example$/m);
    assert.match(out, /^proxyjump rr-hop0$/m);
    assert.match(out, /^stricthostkeychecking true$/m);
    assert.match(out, /^batchmode yes$/m);
    assert.match(out, /^hostkeyalgorithms ecdsa-sha2-nistp256$/m);
    // A path with a space and a % survives as itself (quoted, % doubled against token expansion).
    assert.ok(out.includes(`controlpath ${path.join(dir, 'c m%x')}`), out.split('\n').find((l) => l.startsWith('controlpath')));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('config: a hop reached through a ProxyCommand is left to the built-in client (its command is expanded for it)', () => {
  assert.throws(
    () => buildConfig([hop('x', { proxyCommand: { command: 'relay 10.0.0.1 22', where: '/c:3' } })], ['ssh-ed25519'], files),
    (e: unknown) => e instanceof OpenSshUnsupported && /x is reached through a ProxyCommand \(\/c:3\)/.test(e.message),
  );
});

test('config: a host name or user that could carry options or tokens is refused, not written', () => {
  for (const bad of [hop('x', { hostname: 'a b' }), hop('x', { hostname: 'h\n  ProxyCommand sh' }), hop('x', { user: 'me%h' }), hop('x', { user: '"me"' }), hop('x', { hostname: 'h#c' })]) {
    assert.throws(() => buildConfig([bad], ['ssh-ed25519'], files), OpenSshUnsupported);
  }
  assert.throws(() => configPath('/tmp/a"b'), OpenSshUnsupported);
  assert.throws(() => configPath('/tmp/a\nb'), OpenSshUnsupported);
  assert.equal(configPath('/tmp/50%'), '/tmp/50%%');
});

test("ssh's exit 255: refused login, another host key, or a lost connection; other statuses are the command's own", () => {
  assert.equal(classifySshFailure('me@h: Permission denied (publickey).\n', 255)?.kind, 'auth-failed');
  assert.equal(classifySshFailure('Host key verification failed.\n', 255)?.kind, 'host-key-mismatch');
  assert.equal(classifySshFailure('@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\n', 255)?.kind, 'host-key-mismatch');
  const lost = classifySshFailure('Connection to 10.0.0.1 closed by remote host.\n', 255);
  assert.equal(lost?.kind, 'unreachable');
  assert.equal(lost?.detail.dropped, 'after-open');
  assert.equal(classifySshFailure('', 255)?.kind, 'unreachable');
  assert.equal(classifySshFailure('dd: error reading', 1), undefined);
  assert.equal(classifySshFailure('', 0), undefined);
});

/**
 * Run an OpenSSH tool without blocking: the agent it talks to answers from this same event loop (a sync call here
 * would wait forever for an answer that cannot come).
 */
function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; input?: Buffer } = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    c.on('error', reject);
    c.on('close', (status) => resolve({ status, stdout, stderr }));
    c.stdin.end(opts.input ?? Buffer.alloc(0));
  });
}

function keygen(dir: string, type: string, bits?: number): { key: ParsedKey; pub: string; file: string } {
  const file = path.join(dir, `id_${type}`);
  execFileSync('ssh-keygen', ['-q', '-t', type, ...(bits ? ['-b', String(bits)] : []), '-N', '', '-C', `${type}@test`, '-f', file]);
  const parsed = utils.parseKey(fs.readFileSync(file));
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (key instanceof Error) throw key;
  return { key, pub: fs.readFileSync(`${file}.pub`, 'utf8').trim(), file };
}

for (const [type, bits] of [
  ['ed25519', undefined],
  ['ecdsa', 256],
  ['ecdsa', 384],
  ['rsa', 2048],
] as const) {
  test(`agent, ${type}${bits ? ` ${bits}` : ''}: ssh-add lists the key, and a signature made through it verifies with OpenSSH`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-agent-test-'));
    const { key, pub, file } = keygen(dir, type, bits);
    const agent = await startPrivateAgent({ keys: [key], dir });
    try {
      const env = { ...process.env, SSH_AUTH_SOCK: agent.socketPath };
      const listed = (await run('ssh-add', ['-L'], { env })).stdout.trim();
      assert.equal(listed.split(' ').slice(0, 2).join(' '), pub.split(' ').slice(0, 2).join(' '));
      assert.equal(agent.publicKeys[0].split(' ').slice(0, 2).join(' '), pub.split(' ').slice(0, 2).join(' '));
      const msg = path.join(dir, 'msg');
      fs.writeFileSync(msg, 'checkpoint step_20000\n');
      // -Y sign with the .pub: the private half is only in the agent (the key file is removed first).
      fs.rmSync(file);
      const signed = await run('ssh-keygen', ['-Y', 'sign', '-f', `${file}.pub`, '-n', 'file', msg], { env });
      assert.equal(signed.status, 0, signed.stderr);
      fs.writeFileSync(path.join(dir, 'allowed'), `me ${pub}\n`);
      const verified = await run('ssh-keygen', ['-Y', 'verify', '-f', path.join(dir, 'allowed'), '-I', 'me', '-n', 'file', '-s', `${msg}.sig`], { input: fs.readFileSync(msg) });
      assert.equal(verified.status, 0, verified.stderr + verified.stdout);
      assert.match(verified.stdout, /Good "file" signature for me/);
    } finally {
      agent.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('agent: refuses to add, remove or sign with keys it does not hold; its folder is private and gone after dispose', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-agent-test-'));
  const held = keygen(dir, 'ed25519');
  fs.renameSync(held.file, `${held.file}.held`);
  fs.renameSync(`${held.file}.pub`, `${held.file}.held.pub`);
  const other = keygen(dir, 'ed25519');
  const agent = await startPrivateAgent({ keys: [held.key], dir });
  try {
    assert.equal(fs.statSync(path.dirname(agent.socketPath)).mode & 0o777, 0o700);
    const env = { ...process.env, SSH_AUTH_SOCK: agent.socketPath };
    assert.notEqual((await run('ssh-add', [other.file], { env })).status, 0, 'adding a key is refused');
    assert.notEqual((await run('ssh-add', ['-D'], { env })).status, 0, 'removing keys is refused');
    assert.equal((await run('ssh-add', ['-L'], { env })).stdout.trim().split('\n').length, 1, 'still exactly its one key');
    const msg = path.join(dir, 'msg');
    fs.writeFileSync(msg, 'x');
    fs.rmSync(other.file);
    const r = await run('ssh-keygen', ['-Y', 'sign', '-f', `${other.file}.pub`, '-n', 'file', msg], { env });
    assert.notEqual(r.status, 0, 'no signature with a key it does not hold');
  } finally {
    agent.dispose();
  }
  assert.equal(fs.existsSync(path.dirname(agent.socketPath)), false);
  fs.rmSync(dir, { recursive: true, force: true });
});

test("askpass: answers a login's own password prompt once, nothing else; the program runs as OpenSSH runs it", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-askpass-test-'));
  fs.chmodSync(dir, 0o700);
  const secret = "pa ss'wo\"rd $(x)";
  const askpass = await startAskpass(dir, [{ user: 'trainer', hostname: '10.1.2.6', password: secret }]);
  try {
    const env = { ...process.env, ...askpass.env };
    // Not the prompt of a login we hold: a key passphrase, another user, a one-time code.
    for (const prompt of ["Enter passphrase for key '/root/.ssh/id_ed25519': ", "root@10.1.2.6's password: ", 'Verification code: ']) {
      const r = await run(askpass.program, [prompt], { env });
      assert.notEqual(r.status, 0, prompt);
      assert.equal(r.stdout, '', prompt);
    }
    const ok = await run(askpass.program, [passwordPrompt('trainer', '10.1.2.6')], { env });
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(ok.stdout, `${secret}\n`);
    // Asked again: the password was refused; answering again would only lock the account.
    const again = await run(askpass.program, [passwordPrompt('trainer', '10.1.2.6')], { env });
    assert.notEqual(again.status, 0);
    assert.equal(again.stdout, '');
    assert.equal(askpass.answered.get('trainer@10.1.2.6'), 1);
    const regular = fs.readdirSync(dir).filter((f) => fs.statSync(path.join(dir, f)).isFile());
    assert.ok(regular.length >= 2 && !regular.some((f) => fs.readFileSync(path.join(dir, f), 'utf8').includes(secret)), 'the password is in no file');
  } finally {
    askpass.dispose();
  }
  assert.deepEqual(fs.readdirSync(dir), []);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('config: a password hop tries no key (no default key file, no passphrase to ask) and may ask, once', () => {
  const cfg = buildConfig([hop('bastion'), hop('gpu1')], ['ssh-ed25519', 'ssh-ed25519'], { ...files, agent: files.agent }, [
    { key: true, password: false },
    { key: false, password: true },
  ]);
  assert.equal(option(cfg, 'rr-hop1', 'PubkeyAuthentication'), 'no');
  assert.equal(option(cfg, 'rr-hop1', 'PreferredAuthentications'), 'password');
  assert.equal(option(cfg, 'rr-hop0', 'PreferredAuthentications'), undefined);
  assert.equal(option(cfg, '*', 'PreferredAuthentications'), 'publickey');
  assert.equal(option(cfg, '*', 'BatchMode'), 'no');
  assert.equal(option(cfg, '*', 'NumberOfPasswordPrompts'), '1');
  const keysOnly = buildConfig([hop('gpu1')], ['ssh-ed25519'], { ...files, agent: undefined });
  assert.equal(option(keysOnly, '*', 'BatchMode'), 'yes');
  assert.equal(option(keysOnly, '*', 'IdentityAgent'), 'none');
});

test("orphaned session folders (their process gone) are removed; a live process's, or one without an owner, are kept", async () => {
  const parent = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-orphans-'));
  try {
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((r) => dead.on('exit', r));
    const make = (name: string, owner?: number): string => {
      const d = path.join(parent, name);
      fs.mkdirSync(d);
      fs.writeFileSync(path.join(d, 'config'), 'Host rr-hop0\n');
      if (owner !== undefined) fs.writeFileSync(path.join(d, 'owner'), String(owner));
      return d;
    };
    make('rr-ssh-orphan', dead.pid);
    make('rr-ssh-live', process.pid);
    make('rr-ssh-unknown');
    make('other-folder', dead.pid);
    assert.equal(removeOrphanedSessions(parent), 1);
    assert.deepEqual(fs.readdirSync(parent).sort(), ['other-folder', 'rr-ssh-live', 'rr-ssh-unknown']);
  } finally {
    fs.rmSync(parent, { recursive: true, force: true });
  }
});
