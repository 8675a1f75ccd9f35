/**
 * Issue 16 item 1, the hosts ssh2 cannot reach: the system OpenSSH client as the host's transport
 * (src/core/ssh/openssh/connection.ts), against real sshd processes whose only way in is what ssh2 lacks.
 *
 * - A user CA (`TrustedUserCAKeys`) with `AuthorizedKeysFile none`: only a certificate signed by that CA logs in,
 *   given by `CertificateFile` or found as `KEY-cert.pub` beside the IdentityFile. ssh2 is refused (auth-failed).
 * - A host certificate (`HostCertificate`) trusted only by an `@cert-authority` line: ssh2 sees a host key it
 *   does not know (host-key-unknown).
 * Each config is first shown to work for the real `ssh -F`, and to fail for the built-in client, so the tests prove
 * the transport, not a config that would have worked anyway. FIDO `sk-` keys need an authenticator, which this
 * machine has none of (`ssh-keygen -t ed25519-sk` fails): that gap is covered by unit tests of chooseTransport only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { startTestHost, ScriptedPrompter, type TestHost } from '../harness/testHost';
import { CLI, ensureBuiltCli, runBuiltCli } from '../harness/builtCli';
import { startSshd, TEST_PASSPHRASE, TEST_USER, type TestSshd } from '../harness/sshd';
import { eventually, rejectsWith } from '../harness/assertKind';
import { HostDirectory } from '../../src/core/hosts';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { SshConnection } from '../../src/core/ssh/connection';
import { RemoteRunsCore } from '../../src/core/service';
import { RunsTreeModel } from '../../src/core/tree/model';
import { alive } from '../harness/processes';
import { silentLogger } from '../builders/pool';

let host: TestHost;
/** Only a user certificate logs in here. */
let userCa: TestSshd;
/** Presents a host certificate; the client trusts only its CA. */
let hostCa: TestSshd;
let certs: string;
const quiet = silentLogger;

function keygen(args: string[]): void {
  execFileSync('ssh-keygen', ['-q', ...args], { stdio: 'ignore' });
}

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
  certs = fs.mkdtempSync(path.join(host.dir, 'certs-'));
  fs.chmodSync(certs, 0o755);
  // The user CA and three user keys: explicit certificate (elsewhere), automatic KEY-cert.pub, encrypted + automatic.
  keygen(['-t', 'ed25519', '-N', '', '-C', 'user-ca', '-f', path.join(certs, 'user_ca')]);
  keygen(['-t', 'ed25519', '-N', '', '-C', 'explicit', '-f', path.join(certs, 'id_explicit')]);
  keygen(['-t', 'ed25519', '-N', '', '-C', 'auto', '-f', path.join(certs, 'id_auto')]);
  keygen(['-t', 'ed25519', '-N', TEST_PASSPHRASE, '-C', 'locked', '-f', path.join(certs, 'id_locked')]);
  for (const k of ['id_explicit', 'id_auto', 'id_locked']) {
    keygen(['-s', path.join(certs, 'user_ca'), '-I', `rr-${k}`, '-n', TEST_USER, '-V', '-5m:+2h', path.join(certs, `${k}.pub`)]);
  }
  // The explicit one's certificate is not beside its key: only CertificateFile can find it.
  fs.mkdirSync(path.join(certs, 'signed'));
  fs.renameSync(path.join(certs, 'id_explicit-cert.pub'), path.join(certs, 'signed', 'explicit.cert'));
  userCa = await startSshd({
    // A Match block overrides the harness's AuthorizedKeysFile (sshd takes the first value outside Match).
    extraConfig: [`TrustedUserCAKeys ${path.join(certs, 'user_ca.pub')}`, 'Match all', '  AuthorizedKeysFile none'],
  });

  keygen(['-t', 'ed25519', '-N', '', '-C', 'host-ca', '-f', path.join(certs, 'host_ca')]);
  keygen(['-t', 'ed25519', '-N', '', '-C', 'host', '-f', path.join(certs, 'ssh_host_ed25519_key')]);
  keygen(['-s', path.join(certs, 'host_ca'), '-h', '-I', 'rr-host', '-n', '127.0.0.1', '-V', '-5m:+2h', path.join(certs, 'ssh_host_ed25519_key.pub')]);
  fs.chmodSync(path.join(certs, 'ssh_host_ed25519_key'), 0o600);
  hostCa = await startSshd({
    hostKeyTypes: ['ecdsa'],
    extraConfig: [`HostKey ${path.join(certs, 'ssh_host_ed25519_key')}`, `HostCertificate ${path.join(certs, 'ssh_host_ed25519_key-cert.pub')}`],
  });

  // Evals write their records into the run's own folder, as the test user.
  const own = path.join(host.paths.runs, 'story', '.remote-runs');
  fs.mkdirSync(own, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, own]);
});
after(async () => {
  await Promise.all([userCa?.stop(), hostCa?.stop()]);
  await host?.stop();
});

/** known_hosts trusting the user-CA server's plain host key. */
function userCaKnownHosts(): string {
  const f = path.join(host.dir, 'kh-userca');
  fs.writeFileSync(f, `${userCa.knownHostsLine}\n`);
  return f;
}

function sshConfig(name: string, lines: string[]): string {
  const p = path.join(host.clientHome, '.ssh', name);
  fs.writeFileSync(p, lines.join('\n') + '\n');
  return p;
}

function certLines(alias: string, identity: string, extra: string[] = []): string[] {
  return [`Host ${alias}`, '  HostName 127.0.0.1', `  Port ${userCa.port}`, `  User ${TEST_USER}`, `  IdentityFile ${identity}`, '  IdentitiesOnly yes', `  UserKnownHostsFile ${userCaKnownHosts()}`, ...extra];
}

const explicitConf = (): string => sshConfig('cert-explicit.conf', certLines('certbox', path.join(certs, 'id_explicit'), [`  CertificateFile ${path.join(certs, 'signed', 'explicit.cert')}`]));
const autoConf = (): string => sshConfig('cert-auto.conf', certLines('certbox', path.join(certs, 'id_auto')));

function hostCertConf(): string {
  const kh = path.join(host.dir, 'kh-hostca');
  const ca = fs.readFileSync(path.join(certs, 'host_ca.pub'), 'utf8').trim();
  // Only the CA is trusted: no plain key of this server anywhere.
  fs.writeFileSync(kh, `@cert-authority [127.0.0.1]:${hostCa.port} ${ca}\n`);
  return sshConfig('hostcert.conf', [
    'Host cabox',
    '  HostName 127.0.0.1',
    `  Port ${hostCa.port}`,
    `  User ${TEST_USER}`,
    `  IdentityFile ${hostCa.clientKeyPath}`,
    '  IdentitiesOnly yes',
    `  UserKnownHostsFile ${kh}`,
  ]);
}

/** The real ssh with the same file: what the test claims to be faithful to. */
function opensshRun(conf: string, alias: string): { code: number; stderr: string } {
  const r = spawnSync('ssh', ['-F', conf, '-o', 'BatchMode=yes', alias, 'true'], { encoding: 'utf8', input: '' });
  return { code: r.status ?? -1, stderr: r.stderr };
}

function cli(args: string[]) {
  const r = runBuiltCli(args, host.clientHome, 90_000);
  let json: any;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { ...r, json };
}

function directory(file: string): HostDirectory {
  return new HostDirectory({ hosts: () => [], includeSshConfigHosts: () => true, sshConfigPath: () => file, home: host.clientHome, localUser: 'nobody' });
}

function configJson(name: string, alias: string, extra: Record<string, unknown> = {}): string {
  const f = path.join(host.dir, `${name}.json`);
  fs.writeFileSync(f, JSON.stringify({ hosts: [{ name, host: alias, runRoots: [host.paths.runs], targets: ['host'] }], ...extra }));
  return f;
}

/** ssh processes started by `pid` (the master and its mux clients), from /proc. */
function sshChildrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (ppid === pid && comm === 'ssh') out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

describe('user certificates: only OpenSSH can log in, and the host uses it', () => {
  test('the configs work for ssh and fail for the built-in client (the gap is real)', async () => {
    for (const conf of [explicitConf(), autoConf()]) {
      assert.equal(opensshRun(conf, 'certbox').code, 0, `ssh logs in with ${conf}`);
      const resolved = directory(conf).resolve({ name: 'certbox', host: 'certbox' });
      await rejectsWith(SshConnection.connect(resolved, { prompter: new ScriptedPrompter(), logger: quiet, agent: null }), 'auth-failed');
    }
    // Without the certificate the key alone is refused by this server (AuthorizedKeysFile none).
    const bare = sshConfig('cert-none.conf', certLines('certbox', path.join(certs, 'id_explicit')));
    assert.notEqual(opensshRun(bare, 'certbox').code, 0);
  });

  test('ls with an explicit CertificateFile: listed over OpenSSH, in one login, and --json says which transport and why (CLI)', () => {
    const conf = explicitConf();
    const cfg = configJson('cb', 'certbox');
    const before = userCa.acceptedLogins();
    const r = cli(['ls', 'cb/host', '--config', cfg, '--ssh-config', conf]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /story/);
    assert.match(r.stderr, /cb uses OpenSSH \(CertificateFile .*explicit\.cert \(.*cert-explicit\.conf:8\): ssh2 cannot use user certificates\)/);
    assert.equal(userCa.acceptedLogins() - before, 1, 'one login (the master) for every command of the run');
    const j = cli(['ls', 'certbox', '--json', '--ssh-config', conf]);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.json.transport.kind, 'openssh');
    assert.match(j.json.transport.reasons[0], /^CertificateFile .*explicit\.cert .*: ssh2 cannot use user certificates$/);
    assert.ok(j.json.targets.some((t: { kind: string; state: string }) => t.kind === 'host' && t.state === 'running'));
  });

  test('ls with the automatic KEY-cert.pub beside the IdentityFile (CLI)', () => {
    const j = cli(['ls', 'certbox', '--json', '--ssh-config', autoConf()]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(j.json.transport, {
      kind: 'openssh',
      reasons: [`${path.join(certs, 'id_auto-cert.pub')} beside IdentityFile ${path.join(certs, 'id_auto')}: ssh2 cannot use user certificates`],
    });
  });

  test('a plain host stays on the built-in client and --json says so (CLI)', () => {
    const j = cli(['ls', 'testbox', '--json', '--known-hosts', host.knownHostsFile]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(j.json.transport, { kind: 'ssh2', reasons: [] });
  });

  test("a config written for interactive use (RemoteCommand, RequestTTY force, its own ControlMaster, a LocalForward, LogLevel QUIET) does not disturb the transport (CLI)", () => {
    const cm = path.join(host.dir, 'user-cm-%C');
    const conf = sshConfig('cert-interactive.conf', [
      ...certLines('certbox', path.join(certs, 'id_auto'), [
        '  RemoteCommand tmux new -A -s main',
        '  RequestTTY force',
        '  ControlMaster auto',
        `  ControlPath ${cm}`,
        '  ControlPersist 10m',
        '  LocalForward 127.0.0.1:1 127.0.0.1:22',
        '  LogLevel QUIET',
      ]),
    ]);
    const j = cli(['ls', 'certbox', '--json', '--ssh-config', conf]);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.json.transport.kind, 'openssh');
    assert.ok(j.json.targets.some((t: { kind: string }) => t.kind === 'host'));
    assert.deepEqual(fs.readdirSync(host.dir).filter((n) => n.startsWith('user-cm-')), [], "the user's ControlPath was not used (no master of theirs left running)");
  });

  test('pull through the OpenSSH transport: byte-identical files (CLI)', () => {
    const cfg = configJson('cbpull', 'certbox');
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-cert-'));
    const r = cli(['pull', 'cbpull/host/story/latest', '--to', to, '--config', cfg, '--ssh-config', explicitConf()]);
    assert.equal(r.code, 0, r.stderr);
    const local = r.stdout.trim();
    const last = host.storySteps[host.storySteps.length - 1];
    const remoteDir = path.join(host.paths.runs, 'story', 'checkpoints', `step_${last}`);
    const names = fs.readdirSync(remoteDir);
    assert.deepEqual(fs.readdirSync(local).filter((n) => !n.startsWith('.')).sort(), names.sort());
    for (const f of names) assert.ok(fs.readFileSync(path.join(local, f)).equals(fs.readFileSync(path.join(remoteDir, f))), f);
  });

  test('eval starts and follows through the OpenSSH transport (CLI)', () => {
    const cfg = configJson('cbeval', 'certbox', {
      evalProfiles: [{ name: 'hello', where: 'target', command: 'echo eval of step ${step} over the certificate; echo \'{"score": 1.5}\'' }],
    });
    const last = host.storySteps[host.storySteps.length - 1];
    const r = cli(['eval', 'hello', 'cbeval/host/story/latest', '--follow', '--config', cfg, '--ssh-config', autoConf()]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^eval of step ${last} over the certificate\n`));
    assert.match(r.stderr, /passed \(exit 0\): score=1.5/);
  });

  test('an encrypted certificate key: the passphrase is asked once, for many commands and a reconnect (core)', async () => {
    const conf = sshConfig('cert-locked.conf', certLines('certbox', path.join(certs, 'id_locked')));
    const resolved = directory(conf).resolve({ name: 'certbox', host: 'certbox' });
    const prompter = new ScriptedPrompter({ passphrase: TEST_PASSPHRASE });
    const pool = new ConnectionPool({ prompter, logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null });
    try {
      assert.equal(pool.transportFor(resolved).kind, 'openssh');
      const outs = await Promise.all([1, 2, 3].map((i) => pool.exec(resolved, `echo cmd${i}`)));
      assert.deepEqual(outs.map((o) => o.stdout.toString()), ['cmd1\n', 'cmd2\n', 'cmd3\n']);
      assert.equal((await pool.exec(resolved, 'exit 3')).code, 3, "the remote command's own status");
      pool.disconnect('certbox');
      assert.equal((await pool.exec(resolved, 'echo again')).stdout.toString(), 'again\n');
      assert.deepEqual(prompter.asked, ['passphrase'], 'asked once, through askpass, not again after the reconnect');
    } finally {
      pool.dispose();
    }
  });

  test('the tree lists the host over OpenSSH (core, wired as the extension is)', async () => {
    const hosts = directory(explicitConf());
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null });
    const core = new RemoteRunsCore({ hosts: () => hosts.configs(), executorFor: (h) => pool.executor(hosts.resolve(h), { idempotent: true }) });
    const model = new RunsTreeModel({
      hosts: () => hosts.all().map((h) => ({ name: h.config.name, source: h.source })),
      listTargets: (h) => core.listTargets(h),
      listTarget: (h, t) => core.listTarget(h, t),
    });
    try {
      const [hostNode] = await model.childrenOf();
      const rows = await model.childrenOf(hostNode);
      assert.ok(rows.some((r) => r.type === 'target' && r.target.kind === 'host'), JSON.stringify(rows));
    } finally {
      pool.dispose();
    }
  });

  test('a changed host key is refused, even with StrictHostKeyChecking no in the config (CLI)', () => {
    const kh = path.join(host.dir, 'kh-wrong');
    // The server's address with another key of the same type: what a machine in between would look like.
    const otherKey = fs.readFileSync(path.join(certs, 'ssh_host_ed25519_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ');
    fs.writeFileSync(kh, `${userCa.knownHostsLine.split(' ')[0]} ${otherKey}\n`);
    const conf = sshConfig('cert-changed.conf', [...certLines('certbox', path.join(certs, 'id_auto')).filter((l) => !/UserKnownHostsFile/.test(l)), `  UserKnownHostsFile ${kh}`, '  StrictHostKeyChecking no']);
    const before = fs.readFileSync(kh, 'utf8');
    const r = cli(['ls', 'certbox', '--json', '--ssh-config', conf]);
    assert.equal(r.code, 2, r.stdout);
    assert.equal(r.json.error.kind, 'host-key-mismatch', r.json.error.message);
    assert.match(r.json.error.message, /kh-wrong:1/);
    assert.equal(fs.readFileSync(kh, 'utf8'), before, 'known_hosts untouched');
  });

  test("an unknown host key is asked through the user's Prompter (askpass), written by ssh on yes, host-key-unknown naming the files on no (core)", async () => {
    const kh = path.join(host.dir, 'kh-ask');
    fs.writeFileSync(kh, '');
    const conf = sshConfig('cert-ask.conf', [...certLines('certbox', path.join(certs, 'id_auto')).filter((l) => !/UserKnownHostsFile/.test(l)), `  UserKnownHostsFile ${kh}`]);
    const resolved = directory(conf).resolve({ name: 'certbox', host: 'certbox' });
    const no = new ScriptedPrompter({ trustHostKey: false });
    const refusing = new ConnectionPool({ prompter: no, logger: quiet, agent: null });
    try {
      const e = await rejectsWith(refusing.exec(resolved, 'true'), 'host-key-unknown');
      assert.match(e.message, new RegExp(`checked: ${kh.replace(/[.]/g, '\\.')}`));
      assert.deepEqual(no.asked, ['hostKey']);
      assert.equal(fs.readFileSync(kh, 'utf8'), '', 'nothing trusted on no');
    } finally {
      refusing.dispose();
    }
    const yes = new ScriptedPrompter({ trustHostKey: true });
    const trusting = new ConnectionPool({ prompter: yes, logger: quiet, agent: null });
    try {
      assert.equal((await trusting.exec(resolved, 'echo trusted')).stdout.toString(), 'trusted\n');
      assert.deepEqual(yes.asked, ['hostKey']);
      assert.ok(fs.readFileSync(kh, 'utf8').includes(userCa.hostKeyPublic.split(' ')[1]), 'the key ssh was shown is now in the file');
    } finally {
      trusting.dispose();
    }
  });

  test('a CLI killed with SIGKILL while following metrics over OpenSSH leaves no ssh process and no connection behind', { timeout: 120_000 }, async () => {
    const runDir = fs.mkdtempSync(path.join(host.dir, 'certkill-runs-'));
    fs.mkdirSync(path.join(runDir, 'r1'));
    fs.writeFileSync(path.join(runDir, 'r1', 'metrics.jsonl'), '{"step": 1, "loss": 0.5}\n');
    execFileSync('chmod', ['-R', 'a+rwX', runDir]);
    const config = path.join(host.dir, 'certkill.json');
    fs.writeFileSync(config, JSON.stringify({ hosts: [{ name: 'ck', host: 'certbox', runRoots: [runDir], targets: ['host'] }] }));
    const child = spawn(process.execPath, [CLI, 'metrics', 'ck/host/r1', '--follow', '--csv', '--config', config, '--ssh-config', autoConf()], {
      env: { PATH: process.env.PATH, HOME: host.clientHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await eventually(() => /^loss,1,0\.5,$/m.test(out), `the follow prints the first point (stderr: ${err})`);
    const ssh = sshChildrenOf(child.pid!);
    assert.ok(ssh.length >= 1, 'the master runs as the CLI\'s child');
    assert.ok(userCa.connectionPids().length >= 1, 'the server holds the connection');
    // Only the CLI is killed, not its process group: nothing of ours runs any more, so only the lifeline can end them.
    child.kill('SIGKILL');
    await exited;
    await eventually(() => ssh.every((p) => !alive(p)), 'the master and its mux clients are gone after their owner was SIGKILLed');
    await eventually(() => userCa.connectionPids().length === 0, 'the server side of the connection is gone');
  });
});

describe('through a jump host', () => {
  let jump: TestSshd;
  before(async () => {
    // DEBUG1: the jump logs each direct-tcpip request, so the route is proven to go through it.
    jump = await startSshd({ allowTcpForwarding: true, logLevel: 'DEBUG1' });
  });
  after(async () => {
    await jump?.stop();
  });

  test("a certificate host behind a ProxyJump: ssh reaches it through the jump with the config's own host-key rules for both (CLI)", () => {
    const khJump = path.join(host.dir, 'kh-jump');
    fs.writeFileSync(khJump, `${jump.knownHostsLine}\n`);
    const conf = sshConfig('cert-jump.conf', [
      'Host certjump',
      '  HostName 127.0.0.1',
      `  Port ${jump.port}`,
      `  User ${TEST_USER}`,
      `  IdentityFile ${jump.clientKeyPath}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${khJump}`,
      ...certLines('certvia', path.join(certs, 'id_auto'), ['  ProxyJump certjump']),
    ]);
    assert.equal(opensshRun(conf, 'certvia').code, 0, 'ssh reaches it');
    const logins = jump.acceptedLogins();
    const j = cli(['ls', 'certvia', '--json', '--ssh-config', conf]);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.json.transport.kind, 'openssh');
    assert.equal(jump.acceptedLogins() - logins, 1, 'one login on the jump host');
    assert.match(jump.log(), new RegExp(`server_request_direct_tcpip: .*target 127\\.0\\.0\\.1 port ${userCa.port}\\b`), 'forwarded to the certificate host');
    // The jump's key changes: refused, as for the target.
    fs.writeFileSync(khJump, `${jump.knownHostsLine.split(' ')[0]} ${fs.readFileSync(path.join(certs, 'ssh_host_ed25519_key.pub'), 'utf8').trim().split(' ').slice(0, 2).join(' ')}\n`);
    const bad = cli(['ls', 'certvia', '--json', '--ssh-config', conf]);
    assert.equal(bad.code, 2);
    assert.equal(bad.json.error.kind, 'host-key-mismatch', bad.json.error.message);
    assert.match(bad.json.error.message, /kh-jump:1/);
  });
});

describe('host certificates: trusted by an @cert-authority line', () => {
  test('ssh trusts the host by its CA, the built-in client cannot; ls works over OpenSSH (CLI) and through the pool (core)', async () => {
    const conf = hostCertConf();
    assert.equal(opensshRun(conf, 'cabox').code, 0, 'ssh trusts the host certificate');
    const resolved = directory(conf).resolve({ name: 'cabox', host: 'cabox' });
    await rejectsWith(SshConnection.connect(resolved, { prompter: new ScriptedPrompter(), logger: quiet, agent: null }), 'host-key-unknown');
    const j = cli(['ls', 'cabox', '--json', '--ssh-config', conf]);
    assert.equal(j.code, 0, j.stderr);
    assert.equal(j.json.transport.kind, 'openssh');
    assert.match(j.json.transport.reasons[0], /^@cert-authority for \[127\.0\.0\.1\]:\d+ at .*kh-hostca:1: ssh2 cannot verify host certificates$/);
    const prompter = new ScriptedPrompter();
    const pool = new ConnectionPool({ prompter, logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null });
    try {
      assert.equal((await pool.exec(resolved, 'echo certified')).stdout.toString(), 'certified\n');
      assert.deepEqual(prompter.asked, [], 'nothing asked: the CA vouches for the host');
    } finally {
      pool.dispose();
    }
  });
});
