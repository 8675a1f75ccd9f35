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
import { spawnSync } from 'node:child_process';
import { startTestHost, ScriptedPrompter, type TestHost } from '../harness/testHost';
import { ensureBuiltCli, runBuiltCli } from '../harness/builtCli';
import { rejectsWith } from '../harness/assertKind';
import { HostDirectory } from '../../src/core/hosts';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { RemoteRunsError } from '../../src/core/types';

let host: TestHost;
const quiet = { info() {}, warn() {}, error() {} };

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
    assert.equal(host.sshd.log().includes('badport'), false);
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
