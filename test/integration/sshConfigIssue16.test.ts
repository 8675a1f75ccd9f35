/**
 * Issue 16's rows against a real sshd, each for the built CLI (dist/cli.js) and for the core (HostDirectory + the
 * pool, what the tree uses). Every config here is first checked with the real `ssh -G`, so the test proves the
 * same file behaves here as it does for ssh.
 *
 * Item 2, "nothing in a config is ignored in silence": an option we do not follow is a line of `ls` (stderr, and
 * `sshConfigProblems` in --json) naming file and line, and the listing still works; a value ssh rejects
 * (`Port abc`) and a missing `--ssh-config` file are `bad-config` naming file and line, before any connection.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { startTestHost, ScriptedPrompter, type TestHost } from '../harness/testHost';
import { CLI, ensureBuiltCli, runBuiltCli } from '../harness/builtCli';
import { startSshd, type TestSshd } from '../harness/sshd';
import { SshConnection } from '../../src/core/ssh/connection';
import { parseConfigFile } from '../../src/core/config';
import { eventually, rejectsWith } from '../harness/assertKind';
import { HostDirectory } from '../../src/core/hosts';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { RemoteRunsError } from '../../src/core/types';
import { RemoteRunsCore } from '../../src/core/service';
import { RunsTreeModel } from '../../src/core/tree/model';
import { silentLogger } from '../builders/pool';
import { pidRunning } from '../../src/core/util/pids';

let host: TestHost;
const quiet = silentLogger;

before(async () => {
  ensureBuiltCli();
  host = await startTestHost();
});
after(async () => {
  await host?.stop();
});

/** Write an ssh config into the client home and return its path. */
function sshConfig(name: string, lines: string[]): string {
  const p = path.join(host.clientHome, '.ssh', name);
  fs.writeFileSync(p, lines.join('\n') + '\n');
  return p;
}

function testboxLines(extra: string[] = []): string[] {
  return ['Host testbox', '  HostName 127.0.0.1', `  Port ${host.sshd.port}`, `  User ${host.sshd.user}`, `  IdentityFile ${host.sshd.clientKeyPath}`, '  IdentitiesOnly yes', ...extra];
}

/** What the real OpenSSH client makes of the file (`ssh -G`): exit status and first line of stderr. */
function opensshG(file: string, alias: string): { code: number; stderr: string; stdout: string } {
  const r = spawnSync('ssh', ['-F', file, '-G', alias], { encoding: 'utf8', input: '' });
  return { code: r.status ?? -1, stderr: r.stderr, stdout: r.stdout };
}

function cli(args: string[]) {
  const r = runBuiltCli(args, host.clientHome, 60_000);
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

describe('item 2: nothing in a config is ignored in silence', () => {
  test('an option we do not follow is a line of ls naming file and line; the listing still works (CLI)', () => {
    const file = sshConfig('unhonoured.conf', testboxLines(['  ForwardAgent yes', '  ServerAliveInterval 7']));
    assert.equal(opensshG(file, 'testbox').code, 0, 'ssh takes this file');
    const r = cli(['ls', 'testbox', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^host\s+host\s+running/m);
    assert.match(r.stderr, new RegExp(`ssh config: ${file.replace(/[.]/g, '\\.')}:7: ForwardAgent is not honoured by Remote Runs; ignored for testbox`));
    assert.match(r.stderr, /unhonoured\.conf:8: ServerAliveInterval is not honoured/);
    const j = cli(['ls', 'testbox', '--json', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(j.code, 0, j.stderr);
    assert.deepEqual(j.json.sshConfigProblems, [
      `${file}:7: ForwardAgent is not honoured by Remote Runs; ignored for testbox`,
      `${file}:8: ServerAliveInterval is not honoured by Remote Runs; ignored for testbox`,
    ]);
  });

  test('an option we do not follow is in the resolved host, and the connection still works (core)', async () => {
    const file = sshConfig('unhonoured-core.conf', testboxLines(['  ForwardAgent yes']));
    const hosts = directory(file);
    const resolved = hosts.resolve({ name: 'testbox', host: 'testbox' });
    assert.deepEqual(resolved.configProblems, [`${file}:7: ForwardAgent is not honoured by Remote Runs; ignored for testbox`]);
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null });
    try {
      assert.equal((await pool.executor(resolved).exec('echo ok')).stdout.toString(), 'ok\n');
    } finally {
      pool.dispose();
    }
  });

  test('a Match criterion we cannot evaluate is said for every host (CLI)', () => {
    const file = sshConfig('match-canonical.conf', ['Match canonical', '  User nobody-at-all', ...testboxLines()]);
    assert.equal(opensshG(file, 'testbox').code, 0);
    const r = cli(['ls', 'testbox', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /match-canonical\.conf:1: Match canonical: criterion "canonical" is not supported by Remote Runs; block skipped/);
  });

  test('Port abc: ssh refuses the file, and so do we, with bad-config naming file and line (CLI and core)', async () => {
    const file = sshConfig('badport.conf', [...testboxLines(), 'Host other', '  Port abc']);
    const ssh = opensshG(file, 'testbox');
    assert.notEqual(ssh.code, 0);
    assert.match(ssh.stderr, /line 8: Bad port 'abc'/);
    const r = cli(['ls', 'testbox', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`bad-config: .*${file.replace(/[.]/g, '\\.')}:8: Bad port 'abc'`));
    assert.throws(() => directory(file).resolve({ name: 'testbox', host: 'testbox' }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /badport\.conf:8: Bad port 'abc'/.test(e.message));
  });

  test('an unknown keyword: ssh refuses the file, and so do we (CLI)', () => {
    const file = sshConfig('unknown.conf', testboxLines(['  Frobnicate yes']));
    assert.match(opensshG(file, 'testbox').stderr, /Bad configuration option: frobnicate/);
    const r = cli(['ls', 'testbox', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /bad-config: .*unknown\.conf:7: Bad configuration option: Frobnicate/);
  });

  test('--ssh-config naming a missing file is bad-config naming it, not a DNS error for the alias (CLI and core)', async () => {
    const missing = path.join(host.clientHome, '.ssh', 'no-such.conf');
    assert.match(opensshG(missing, 'testbox').stderr, /Can't open user config file/);
    const r = cli(['ls', 'testbox', '--json', '--ssh-config', missing, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    assert.equal(r.json.error.kind, 'bad-config');
    assert.match(r.json.error.message, /no-such\.conf: cannot open the ssh config file/);
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null });
    try {
      await rejectsWith((async () => pool.executor(directory(missing).resolve({ name: 'testbox', host: 'testbox' })).exec('true'))(), 'bad-config');
    } finally {
      pool.dispose();
    }
  });
});

/** An ssh-agent of the test's own on a socket of its own (never the user's), with `keys` added. */
async function startAgent(keys: string[]): Promise<{ sock: string; stop(): void }> {
  const dir = fs.mkdtempSync(path.join(host.dir, 'agent-'));
  const sock = path.join(dir, 'agent.sock');
  const child = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
  while (!fs.existsSync(sock)) await new Promise((r) => setTimeout(r, 20));
  for (const k of keys) execFileSync('ssh-add', ['-q', k], { env: { PATH: process.env.PATH, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
  return { sock, stop: () => child.kill() };
}

function newKeys(n: number): string[] {
  const dir = fs.mkdtempSync(path.join(host.dir, 'keys-'));
  return Array.from({ length: n }, (_, i) => {
    const k = path.join(dir, `k${i}`);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', k]);
    return k;
  });
}

/** The built CLI with an agent socket in its environment (runBuiltCli passes only PATH and HOME). */
function cliWithAgent(args: string[], sock: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: host.clientHome, SSH_AUTH_SOCK: sock }, input: '', timeout: 60_000 });
  let json: any;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr, json };
}

function jsonError(r: { json: any; stderr: string }): { kind: string; message: string } {
  assert.ok(r.json?.error, `expected a JSON error, stderr: ${r.stderr}`);
  return r.json.error;
}

const noPrompts = new ScriptedPrompter();
const resolvedFor = (file: string, alias = 'testbox') => directory(file).resolve({ name: alias, host: alias });

describe('item 3: errors say what to do', () => {
  test('7 agent keys against MaxAuthTries 6: auth-failed with the IdentitiesOnly hint, not unreachable (CLI and core)', async () => {
    const agent = await startAgent(newKeys(7));
    try {
      // The key that would work is in the config, but without IdentitiesOnly the agent's seven are offered first.
      const file = sshConfig('maxauth.conf', ['Host testbox', '  HostName 127.0.0.1', `  Port ${host.sshd.port}`, `  User ${host.sshd.user}`, `  IdentityFile ${host.sshd.clientKeyPath}`]);
      const ssh = spawnSync('ssh', ['-F', file, '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${host.knownHostsFile}`, 'testbox', 'true'], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: host.clientHome, SSH_AUTH_SOCK: agent.sock },
      });
      assert.match(ssh.stderr, /Too many authentication failures/, 'OpenSSH fails the same way');
      const r = cliWithAgent(['ls', 'testbox', '--json', '--ssh-config', file, '--known-hosts', host.knownHostsFile], agent.sock);
      assert.equal(r.code, 2);
      const err = jsonError(r);
      assert.equal(err.kind, 'auth-failed');
      assert.match(err.message, /too many authentication failures \(its MaxAuthTries\)/);
      assert.match(err.message, /"IdentitiesOnly yes" and "IdentityFile KEY"/);

      const e = await rejectsWith(SshConnection.connect(resolvedFor(file), { prompter: noPrompts, logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: agent.sock }), 'auth-failed');
      assert.match(e.message, /IdentitiesOnly/);

      // Following the hint works.
      const fixed = sshConfig('maxauth-fixed.conf', testboxLines());
      const ok = cliWithAgent(['ls', 'testbox', '--ssh-config', fixed, '--known-hosts', host.knownHostsFile], agent.sock);
      assert.equal(ok.code, 0, ok.stderr);
    } finally {
      agent.stop();
    }
  });

  test('an encrypted key and no terminal: auth-failed naming the key and how to unlock it (CLI and core)', async () => {
    const file = sshConfig('locked.conf', testboxLines().map((l) => l.replace(host.sshd.clientKeyPath, host.sshd.encryptedKeyPath)));
    const r = cli(['ls', 'testbox', '--json', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    const err = jsonError(r);
    assert.equal(err.kind, 'auth-failed');
    assert.ok(err.message.includes(`The key ${host.sshd.encryptedKeyPath} is encrypted and no passphrase was given`), err.message);
    assert.ok(err.message.includes(`"ssh-add ${host.sshd.encryptedKeyPath}"`), err.message);
    assert.match(err.message, /or run in a terminal/);
    assert.ok(!err.message.includes(host.sshd.passphrase));

    const e = await rejectsWith(SshConnection.connect(resolvedFor(file), { prompter: noPrompts, logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null }), 'auth-failed');
    assert.deepEqual(e.detail?.locked, [host.sshd.encryptedKeyPath]);
    // A wrong passphrase (three times) is said as such, not as "none given".
    const wrong = await rejectsWith(
      SshConnection.connect(resolvedFor(file), { prompter: new ScriptedPrompter({ passphrase: 'not it' }), logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null }),
      'auth-failed',
    );
    assert.match(wrong.message, /passphrase given for .* was wrong 3 times/);

    // Following the hint: `ssh-add KEY` (here fed by an askpass that reads the passphrase from its environment),
    // then the same config logs in through the agent, the KEY.pub beside the key naming which agent key to use.
    const agent = await startAgent([]);
    try {
      const askpass = path.join(host.dir, 'askpass.sh');
      fs.writeFileSync(askpass, '#!/bin/sh\nprintf "%s\\n" "$RR_TEST_PASSPHRASE"\n', { mode: 0o700 });
      execFileSync('ssh-add', ['-q', host.sshd.encryptedKeyPath], {
        env: { PATH: process.env.PATH, SSH_AUTH_SOCK: agent.sock, SSH_ASKPASS: askpass, SSH_ASKPASS_REQUIRE: 'force', DISPLAY: ':0', RR_TEST_PASSPHRASE: host.sshd.passphrase },
        stdio: 'ignore',
      });
      const ok = cliWithAgent(['ls', 'testbox', '--ssh-config', file, '--known-hosts', host.knownHostsFile], agent.sock);
      assert.equal(ok.code, 0, ok.stderr);
    } finally {
      agent.stop();
    }
  });

  test('host-key-unknown names every known_hosts file checked, and which do not exist (CLI and core)', async () => {
    const empty = path.join(host.clientHome, '.ssh', 'known_hosts_empty');
    fs.writeFileSync(empty, '');
    const missing = path.join(host.clientHome, '.ssh', 'known_hosts_missing');
    const file = sshConfig('hk.conf', testboxLines());
    const r = cli(['ls', 'testbox', '--json', '--ssh-config', file, '--known-hosts', empty, '--known-hosts', missing]);
    assert.equal(r.code, 2);
    const err = jsonError(r);
    assert.equal(err.kind, 'host-key-unknown');
    assert.ok(err.message.includes(`[127.0.0.1]:${host.sshd.port} in ${empty}, ${missing} (does not exist)`), err.message);

    const e = await rejectsWith(SshConnection.connect(resolvedFor(file), { prompter: noPrompts, logger: quiet, knownHostsFiles: [empty, missing], agent: null }), 'host-key-unknown');
    assert.deepEqual(e.detail?.checked, [empty, missing]);
  });

  test('a name neither configured nor resolvable: not-found with the closest configured name (CLI and core)', async () => {
    const file = sshConfig('typo.conf', testboxLines());
    const r = cli(['ls', 'tesbox', '--json', '--ssh-config', file, '--known-hosts', host.knownHostsFile]);
    assert.equal(r.code, 2);
    const err = jsonError(r);
    assert.equal(err.kind, 'not-found');
    assert.match(err.message, /tesbox is neither a configured host .* nor a name DNS knows\. Did you mean testbox\?/);

    const e = await rejectsWith(SshConnection.connect(resolvedFor(file, 'tesbox'), { prompter: noPrompts, logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null }), 'not-found');
    assert.equal(e.detail?.closest, 'testbox');
    // A configured name whose HostName does not resolve stays `unreachable` (DNS), naming the address.
    const dead = sshConfig('dead.conf', ['Host deadbox', '  HostName no-such-host.invalid']);
    const d = cli(['ls', 'deadbox', '--json', '--ssh-config', dead, '--known-hosts', host.knownHostsFile]);
    assert.equal(jsonError(d).kind, 'unreachable');
    assert.match(jsonError(d).message, /no-such-host\.invalid.*host name not found \(DNS\)/);
  });
});

describe('item 3: "[::1]" and "host:port" spellings of a host', () => {
  let v6: TestSshd;
  before(async () => {
    v6 = await startSshd({ extraConfig: ['ListenAddress [::1]'] });
  });
  after(() => v6?.stop());

  test('"host": "[::1]" connects to ::1; "127.0.0.1:2400" is bad-config saying to use "port" (CLI and core)', async () => {
    const kh = path.join(host.clientHome, '.ssh', 'known_hosts_v6');
    fs.writeFileSync(kh, `[::1]:${v6.port} ${v6.hostKeyPublic}\n`);
    const cfgFile = path.join(host.dir, 'v6.json');
    const entry = { host: '[::1]', port: v6.port, user: v6.user, identityFile: v6.clientKeyPath, targets: ['host'], runRoots: [host.paths.runs] };
    fs.writeFileSync(cfgFile, JSON.stringify({ hosts: [{ name: 'v6', ...entry }] }));
    // The v6 server runs on this same machine, so the test host's run root is there too.
    const r = cli(['ls', 'v6/host', '--json', '--config', cfgFile, '--known-hosts', kh]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.json.runs.map((x: { name: string }) => x.name).sort(), ['flat', 'story']);
    // (spawnSync held the event loop: sshd's log arrives after it.)
    await eventually(() => /Accepted publickey for rrtest from ::1 /.test(v6.log()), 'sshd logs a login from ::1');

    const [parsed] = parseConfigFile(JSON.stringify({ hosts: [{ name: 'v6', ...entry }] }), 'v6.json');
    assert.equal(parsed.host, '::1');
    const c = await SshConnection.connect(directory(path.join(host.clientHome, '.ssh', 'config')).resolve(parsed), { prompter: noPrompts, logger: quiet, knownHostsFiles: [kh], agent: null });
    try {
      assert.equal((await c.exec('echo v6')).stdout.toString(), 'v6\n');
    } finally {
      c.close();
    }

    fs.writeFileSync(cfgFile, JSON.stringify({ hosts: [{ name: 'hp', host: `127.0.0.1:${host.sshd.port}`, user: host.sshd.user }] }));
    const bad = cli(['ls', 'hp', '--json', '--config', cfgFile, '--known-hosts', host.knownHostsFile]);
    assert.equal(bad.code, 2);
    assert.equal(jsonError(bad).kind, 'bad-config');
    assert.ok(jsonError(bad).message.includes(`holds a port: write {"host": "127.0.0.1", "port": ${host.sshd.port}}`), jsonError(bad).message);
  });
});

/** Real ssh with this config and environment, non-interactively: its exit status and stderr. */
function opensshRun(file: string, alias: string, env: Record<string, string> = {}): { code: number; stderr: string } {
  const r = spawnSync('ssh', ['-F', file, '-o', 'BatchMode=yes', alias, 'true'], { encoding: 'utf8', env: { PATH: process.env.PATH!, HOME: host.clientHome, ...env }, input: '' });
  return { code: r.status ?? -1, stderr: r.stderr };
}

describe('item 1: host key options of the ssh config', () => {
  const kh = (name: string, lines: string[] = []): string => {
    const p = path.join(host.clientHome, '.ssh', name);
    fs.writeFileSync(p, lines.map((l) => `${l}\n`).join(''));
    return p;
  };

  test('StrictHostKeyChecking accept-new writes the key to the first UserKnownHostsFile, the same line ssh writes (CLI)', () => {
    const ours = kh('kh-accept-ours');
    const theirs = kh('kh-accept-theirs');
    fs.rmSync(ours);
    // ssh takes `~` from the passwd entry, not $HOME: give it the absolute path; ours is written with `~` (our HOME).
    const conf = (f: string, shown: string) => sshConfig(`accept-${path.basename(f)}.conf`, testboxLines(['  StrictHostKeyChecking accept-new', `  UserKnownHostsFile ${shown} ~/.ssh/unused`]));
    assert.equal(opensshRun(conf(theirs, theirs), 'testbox').code, 0);
    const r = cli(['ls', 'testbox', '--ssh-config', conf(ours, `~/.ssh/${path.basename(ours)}`)]);
    assert.equal(r.code, 0, r.stderr);
    const written = fs.readFileSync(ours, 'utf8');
    assert.equal(written, `${host.sshd.knownHostsLine}\n`);
    assert.equal(written.split(' ').slice(0, 3).join(' ').trim(), fs.readFileSync(theirs, 'utf8').trim().split(' ').slice(0, 3).join(' '));
    // The second run finds it there.
    assert.equal(cli(['ls', 'testbox', '--ssh-config', conf(ours, `~/.ssh/${path.basename(ours)}`)]).code, 0);
    assert.equal(fs.readFileSync(ours, 'utf8'), written);
  });

  test('StrictHostKeyChecking no is accept-new: a changed key is still refused (core)', async () => {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path.join(host.dir, 'otherhostkey')]);
    const other = fs.readFileSync(path.join(host.dir, 'otherhostkey.pub'), 'utf8').split(' ').slice(0, 2).join(' ');
    const file = kh('kh-changed', [`[127.0.0.1]:${host.sshd.port} ${other}`]);
    const conf = sshConfig('strict-no.conf', testboxLines(['  StrictHostKeyChecking no', `  UserKnownHostsFile ${file}`]));
    const prompter = new ScriptedPrompter({ trustHostKey: true });
    const e = await rejectsWith(SshConnection.connect(resolvedFor(conf), { prompter, logger: quiet, agent: null }), 'host-key-mismatch');
    assert.match(e.message, /kh-changed line 1/);
    assert.deepEqual(prompter.asked, []);
    assert.equal(fs.readFileSync(file, 'utf8'), `[127.0.0.1]:${host.sshd.port} ${other}\n`);
    // And a new key under `no` is added without asking.
    const fresh = kh('kh-no-fresh');
    const conf2 = sshConfig('strict-no2.conf', testboxLines(['  StrictHostKeyChecking no', `  UserKnownHostsFile ${fresh}`]));
    const c = await SshConnection.connect(resolvedFor(conf2), { prompter, logger: quiet, agent: null });
    c.close();
    assert.deepEqual(prompter.asked, []);
    assert.equal(fs.readFileSync(fresh, 'utf8'), `${host.sshd.knownHostsLine}\n`);
  });

  test('StrictHostKeyChecking yes refuses an unknown key without asking (core)', async () => {
    const conf = sshConfig('strict-yes.conf', testboxLines(['  StrictHostKeyChecking yes', `  UserKnownHostsFile ${kh('kh-yes')}`]));
    const prompter = new ScriptedPrompter({ trustHostKey: true });
    const e = await rejectsWith(SshConnection.connect(resolvedFor(conf), { prompter, logger: quiet, agent: null }), 'host-key-unknown');
    assert.match(e.message, /StrictHostKeyChecking yes forbids adding it/);
    assert.deepEqual(prompter.asked, []);
  });

  test('HostKeyAlias: the key is looked up and written under the alias, without a port, as ssh does (CLI and core)', async () => {
    const aliasLine = `gpu-cluster-key ${host.sshd.hostKeyPublic}`;
    const file = kh('kh-alias', [aliasLine]);
    const conf = sshConfig('alias.conf', testboxLines(['  HostKeyAlias gpu-cluster-key', `  UserKnownHostsFile ${file}`]));
    assert.equal(opensshRun(conf, 'testbox').code, 0, 'ssh accepts the alias entry');
    const r = cli(['ls', 'testbox', '--ssh-config', conf]);
    assert.equal(r.code, 0, r.stderr);
    const c = await SshConnection.connect(resolvedFor(conf), { prompter: noPrompts, logger: quiet, agent: null });
    c.close();

    // accept-new with an alias: compare what each client writes.
    const ours = kh('kh-alias-ours');
    const theirs = kh('kh-alias-theirs');
    const confFor = (f: string) => sshConfig(`alias-new-${path.basename(f)}.conf`, testboxLines(['  HostKeyAlias gpu-cluster-key', '  StrictHostKeyChecking accept-new', `  UserKnownHostsFile ${f}`]));
    assert.equal(opensshRun(confFor(theirs), 'testbox').code, 0);
    assert.equal(cli(['ls', 'testbox', '--ssh-config', confFor(ours)]).code, 0);
    assert.equal(fs.readFileSync(ours, 'utf8').trim(), aliasLine);
    assert.equal(fs.readFileSync(theirs, 'utf8').trim().split(' ').slice(0, 3).join(' '), aliasLine);
  });

  test('known_hosts named only in the ssh config (GlobalKnownHostsFile), and --known-hosts on the command line wins (CLI)', () => {
    const global = kh('kh-global', [host.sshd.knownHostsLine]);
    const conf = sshConfig('global.conf', testboxLines([`  GlobalKnownHostsFile ${global}`, `  UserKnownHostsFile ${kh('kh-user-empty')}`]));
    assert.equal(opensshRun(conf, 'testbox').code, 0);
    assert.equal(cli(['ls', 'testbox', '--ssh-config', conf]).code, 0);
    const pinned = cli(['ls', 'testbox', '--json', '--ssh-config', conf, '--known-hosts', kh('kh-pinned-empty')]);
    assert.equal(jsonError(pinned).kind, 'host-key-unknown');
    assert.match(jsonError(pinned).message, /kh-pinned-empty/);
  });

  test('@revoked: a revoked host key is refused naming the line, even beside a plain entry for it (CLI and core)', async () => {
    const file = kh('kh-revoked', [host.sshd.knownHostsLine, `@revoked * ${host.sshd.hostKeyPublic}`]);
    const conf = sshConfig('revoked.conf', testboxLines([`  UserKnownHostsFile ${file}`]));
    assert.match(opensshRun(conf, 'testbox').stderr, /REVOKED/);
    const r = cli(['ls', 'testbox', '--json', '--ssh-config', conf]);
    assert.equal(jsonError(r).kind, 'host-key-mismatch');
    assert.match(jsonError(r).message, /marked @revoked in .*kh-revoked line 2/);
    await rejectsWith(SshConnection.connect(resolvedFor(conf), { prompter: new ScriptedPrompter({ trustHostKey: true }), logger: quiet, agent: null }), 'host-key-mismatch');
  });
});

describe('item 1: agents named in the ssh config', () => {
  const lines = (extra: string[]): string[] => ['Host testbox', '  HostName 127.0.0.1', `  Port ${host.sshd.port}`, `  User ${host.sshd.user}`, `  UserKnownHostsFile ${host.knownHostsFile}`, ...extra];

  test('IdentityAgent /path/agent.sock: the agent on that socket logs in, without SSH_AUTH_SOCK (CLI and core)', async () => {
    const agent = await startAgent([host.sshd.clientKeyPath]);
    try {
      // No key file anywhere this login looks (the client home has no id_*): only the agent can log in.
      const conf = sshConfig('agent-path.conf', lines([`  IdentityAgent ${agent.sock}`]));
      assert.equal(opensshRun(conf, 'testbox').code, 0, 'ssh logs in through it');
      const r = cli(['ls', 'testbox', '--ssh-config', conf]);
      assert.equal(r.code, 0, r.stderr);
      const c = await SshConnection.connect(resolvedFor(conf), { prompter: noPrompts, logger: quiet, agent: null });
      c.close();
      // Without the line, the same login fails: the line is what made it work.
      const without = cli(['ls', 'testbox', '--json', '--ssh-config', sshConfig('agent-none-given.conf', lines([]))]);
      assert.equal(jsonError(without).kind, 'auth-failed');
    } finally {
      agent.stop();
    }
  });

  test('IdentityAgent SSH_AUTH_SOCK uses the environment\'s agent; IdentityAgent none uses no agent at all (CLI)', async () => {
    const agent = await startAgent([host.sshd.clientKeyPath]);
    try {
      const env = cliWithAgent(['ls', 'testbox', '--ssh-config', sshConfig('agent-env.conf', lines(['  IdentityAgent SSH_AUTH_SOCK']))], agent.sock);
      assert.equal(env.code, 0, env.stderr);
      const noneConf = sshConfig('agent-off.conf', lines(['  IdentityAgent none']));
      assert.notEqual(opensshRun(noneConf, 'testbox', { SSH_AUTH_SOCK: agent.sock }).code, 0, 'ssh uses no agent either');
      const none = cliWithAgent(['ls', 'testbox', '--json', '--ssh-config', noneConf], agent.sock);
      assert.equal(jsonError(none).kind, 'auth-failed');
      assert.doesNotMatch(jsonError(none).message, /Tried: agent/);
    } finally {
      agent.stop();
    }
  });

  test('IdentityFile key.pub + IdentitiesOnly yes: the agent\'s matching key logs in, and only it is offered (CLI and core)', async () => {
    // Seven other keys in the agent first: offering all would hit MaxAuthTries 6.
    const agent = await startAgent([...newKeys(7), host.sshd.clientKeyPath]);
    const logFrom = host.sshd.log().length;
    try {
      const pubOnly = path.join(host.dir, 'pub-only');
      fs.mkdirSync(pubOnly, { recursive: true });
      const pub = path.join(pubOnly, 'id_vault.pub');
      fs.copyFileSync(`${host.sshd.clientKeyPath}.pub`, pub);
      const conf = sshConfig('agent-pub.conf', lines([`  IdentityFile ${pub}`, '  IdentitiesOnly yes', `  IdentityAgent ${agent.sock}`]));
      assert.equal(opensshRun(conf, 'testbox').code, 0, 'ssh logs in with the agent key the .pub names');
      const r = cli(['ls', 'testbox', '--ssh-config', conf]);
      assert.equal(r.code, 0, r.stderr);
      const c = await SshConnection.connect(resolvedFor(conf), { prompter: noPrompts, logger: quiet, agent: null });
      c.close();
      // The three logins (ssh, CLI, core) each offered the one key: sshd refused none.
      await eventually(() => (host.sshd.log().slice(logFrom).match(/Accepted publickey/g) ?? []).length >= 3, 'logins logged');
      assert.doesNotMatch(host.sshd.log().slice(logFrom), /Too many authentication failures|Failed publickey/);
    } finally {
      agent.stop();
    }
  });
});

describe('item 1: Match exec', () => {
  test('Match exec runs locally with ssh\'s tokens; exit 0 applies the block, non-zero skips it, as ssh -G shows (CLI and core)', async () => {
    const markers = fs.mkdtempSync(path.join(host.dir, 'markers-'));
    const marker = path.join(markers, `on-vpn-testbox-${host.sshd.user}`);
    const conf = sshConfig('match-exec.conf', [
      'Host testbox',
      '  HostName 127.0.0.1',
      `  User ${host.sshd.user}`,
      `  IdentityFile ${host.sshd.clientKeyPath}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${host.knownHostsFile}`,
      `Match exec "test -e ${markers}/on-vpn-%n-%r"`,
      `  Port ${host.sshd.port}`,
      'Host *',
      '  Port 1',
    ]);
    const sshPort = () => /^port (\d+)$/m.exec(opensshG(conf, 'testbox').stdout)?.[1];

    assert.equal(sshPort(), '1', 'ssh: no marker, no match');
    const off = cli(['ls', 'testbox', '--json', '--ssh-config', conf]);
    assert.equal(jsonError(off).kind, 'unreachable');
    assert.match(jsonError(off).message, /127\.0\.0\.1:1\b/);
    assert.equal(resolvedFor(conf).target.port, 1);

    fs.writeFileSync(marker, '');
    assert.equal(sshPort(), String(host.sshd.port), 'ssh: the marker makes it match');
    const on = cli(['ls', 'testbox', '--ssh-config', conf]);
    assert.equal(on.code, 0, on.stderr);
    assert.doesNotMatch(on.stderr, /Match exec/, 'no problem reported for a command that ran');
    const resolved = resolvedFor(conf);
    assert.equal(resolved.target.port, host.sshd.port);
    const c = await SshConnection.connect(resolved, { prompter: noPrompts, logger: quiet, agent: null });
    c.close();
  });
});

describe('item 1: ProxyCommand', () => {
  /**
   * A proxy that is not `ssh -W`: a Node script that records its argv and pid, connects to host:port and relays.
   * It ignores the end of its stdin on purpose, so only being killed ends it: proof that we end it ourselves.
   */
  function writeProxy(): { script: string; record: string } {
    const dir = fs.mkdtempSync(path.join(host.dir, 'proxy-'));
    const script = path.join(dir, 'relay.js');
    const record = path.join(dir, 'record.jsonl');
    fs.writeFileSync(
      script,
      `const fs = require('fs'); const net = require('net');
fs.appendFileSync(${JSON.stringify(record)}, JSON.stringify({ pid: process.pid, argv: process.argv.slice(2) }) + '\\n');
const s = net.connect(Number(process.argv[3]), process.argv[2]);
process.stdin.pipe(s, { end: false });
s.pipe(process.stdout);
process.stdin.on('end', () => {});
setInterval(() => {}, 1000);
`,
    );
    return { script, record };
  }
  const records = (record: string): { pid: number; argv: string[] }[] =>
    fs.readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const alive = pidRunning;

  test('a ProxyCommand runs with %h %p %r, SSH goes over its stdin/stdout, and it is killed when the connection closes (CLI and core)', async () => {
    const { script, record } = writeProxy();
    const conf = sshConfig('proxycmd.conf', [
      'Host testbox',
      '  HostName 127.0.0.1',
      `  Port ${host.sshd.port}`,
      `  User ${host.sshd.user}`,
      `  IdentityFile ${host.sshd.clientKeyPath}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${host.knownHostsFile}`,
      `  ProxyCommand ${process.execPath} ${script} %h %p %r`,
    ]);
    const r = cli(['ls', 'testbox', '--ssh-config', conf]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^host\s+host\s+running/m);
    const [viaCli] = records(record);
    assert.deepEqual(viaCli.argv, ['127.0.0.1', String(host.sshd.port), host.sshd.user]);
    await eventually(() => !alive(viaCli.pid), 'the CLI\'s proxy is gone once the CLI is done');

    const c = await SshConnection.connect(resolvedFor(conf), { prompter: noPrompts, logger: quiet, agent: null });
    const viaCore = records(record)[1];
    try {
      assert.equal((await c.exec('echo through-proxy')).stdout.toString(), 'through-proxy\n');
      assert.ok(alive(viaCore.pid));
    } finally {
      c.close();
    }
    await eventually(() => !alive(viaCore.pid), 'the proxy is killed when the connection closes');
    // The same config works for ssh (what the test claims to be faithful to).
    assert.equal(opensshRun(conf, 'testbox').code, 0);
  });

  test('a CLI killed with SIGKILL while connected through a ProxyCommand leaves no proxy behind', { timeout: 120_000 }, async () => {
    const { script, record } = writeProxy();
    const conf = sshConfig('proxykill.conf', [
      'Host testbox',
      '  HostName 127.0.0.1',
      `  Port ${host.sshd.port}`,
      `  User ${host.sshd.user}`,
      `  IdentityFile ${host.sshd.clientKeyPath}`,
      '  IdentitiesOnly yes',
      `  UserKnownHostsFile ${host.knownHostsFile}`,
      `  ProxyCommand ${process.execPath} ${script} %h %p %r`,
    ]);
    const runDir = fs.mkdtempSync(path.join(host.dir, 'proxykill-runs-'));
    fs.mkdirSync(path.join(runDir, 'r1'));
    fs.writeFileSync(path.join(runDir, 'r1', 'metrics.jsonl'), '{"step": 1, "loss": 0.5}\n');
    execFileSync('chmod', ['-R', 'a+rwX', runDir]);
    const config = path.join(host.dir, 'proxykill.json');
    fs.writeFileSync(config, JSON.stringify({ hosts: [{ name: 'px', host: 'testbox', runRoots: [runDir], targets: ['host'] }] }));
    // `metrics --follow` keeps its connection (and so the proxy) open until it is stopped.
    const child = spawn(process.execPath, [CLI, 'metrics', 'px/host/r1', '--follow', '--csv', '--config', config, '--ssh-config', conf], {
      env: { PATH: process.env.PATH, HOME: host.clientHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    await eventually(() => /^loss,1,0\.5,$/m.test(out), `the follow prints the first point (stderr: ${err})`);
    const [proxy] = records(record);
    assert.ok(alive(proxy.pid), 'the proxy carries the open connection');
    // Only the CLI is killed, not its process group: nothing of ours gets to run, so only a lifeline can end the proxy.
    child.kill('SIGKILL');
    await exited;
    await eventually(() => !alive(proxy.pid), 'the proxy is gone after its owner was SIGKILLed');
  });

  test('a ProxyCommand that fails is unreachable with its exit status and what it said (CLI)', () => {
    const conf = sshConfig('proxyfail.conf', [...testboxLines(), `  ProxyCommand sh -c 'echo "vpn is down for %h" >&2; exit 3'`]);
    const r = cli(['ls', 'testbox', '--json', '--ssh-config', conf]);
    const err = jsonError(r);
    assert.equal(err.kind, 'unreachable');
    assert.match(err.message, /ProxyCommand \(.*proxyfail\.conf:7\) exited with status 3: vpn is down for 127\.0\.0\.1/);
  });

  test('pull through a ProxyCommand: the built-in client carries it (OpenSSH would redo the tokens), bytes verified (CLI)', () => {
    const { script, record } = writeProxy();
    const conf = sshConfig('proxypull.conf', [...testboxLines([`  UserKnownHostsFile ${host.knownHostsFile}`]), `  ProxyCommand ${process.execPath} ${script} %h %p %r`]);
    const cfgFile = path.join(host.dir, 'proxypull.json');
    fs.writeFileSync(cfgFile, JSON.stringify({ hosts: [{ name: 'px', host: 'testbox', runRoots: [host.paths.runs], targets: ['host'] }] }));
    const to = fs.mkdtempSync(path.join(host.dir, 'pull-proxy-'));
    const r = cli(['pull', 'px/host/story/latest', '--to', to, '--config', cfgFile, '--ssh-config', conf]);
    assert.equal(r.code, 0, r.stderr);
    const local = r.stdout.trim();
    const last = host.storySteps[host.storySteps.length - 1];
    assert.ok(local.startsWith(path.join(to, 'story')), local);
    const remoteDir = path.join(host.paths.runs, 'story', 'checkpoints', `step_${last}`);
    const names = fs.readdirSync(remoteDir);
    assert.deepEqual(fs.readdirSync(local).filter((n) => !n.startsWith('.')).sort(), names.sort());
    for (const f of names) assert.ok(fs.readFileSync(path.join(local, f)).equals(fs.readFileSync(path.join(remoteDir, f))), f);
    assert.ok(records(record).length >= 1, 'the connection went through the proxy');
  });
});

describe('the tree shows what the config holds that is not followed', () => {
  test('a row under the host names file and line, beside the targets listed over the real connection', async () => {
    const file = sshConfig('tree.conf', testboxLines(['  ForwardAgent yes']));
    const hosts = directory(file);
    const pool = new ConnectionPool({ prompter: noPrompts, logger: quiet, knownHostsFiles: [host.knownHostsFile], agent: null });
    const core = new RemoteRunsCore({ hosts: () => hosts.configs(), executorFor: (h) => pool.executor(hosts.resolve(h), { idempotent: true }) });
    // The same wiring as src/extension/extension.ts.
    const model = new RunsTreeModel({
      hosts: () => hosts.all().map((h) => ({ name: h.config.name, source: h.source })),
      listTargets: (h) => core.listTargets(h),
      listTarget: (h, t) => core.listTarget(h, t),
      sshConfigProblems: (name) => hosts.resolve(core.host(name)).configProblems ?? [],
    });
    try {
      const [hostNode] = await model.childrenOf();
      const rows = await model.childrenOf(hostNode);
      assert.ok(rows.some((r) => r.type === 'target' && r.target.kind === 'host'), 'targets listed over the connection');
      const cfgRows = rows.filter((r) => r.type === 'state' && r.kind === 'bad-config').map((r) => (r.type === 'state' ? r.label : ''));
      assert.deepEqual(cfgRows, [`ssh config: ${file}:7: ForwardAgent is not honoured by Remote Runs; ignored for testbox`]);
    } finally {
      pool.dispose();
    }
  });
});
