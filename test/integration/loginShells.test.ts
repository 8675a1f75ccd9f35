/**
 * The login shells and tools people really have, over the real sshd: users the harness creates whose login shell is
 * tcsh, csh, fish, zsh, bash with rc files that print on stdout and stderr, a user whose PATH holds
 * only BusyBox applets, and a `nologin` user. For each, the built CLI's `ls`, `metrics`, `inspect` and a verified
 * `pull` (through ssh2 and through OpenSSH) of a real Hugging Face Trainer run (test/fixtures/real/written/
 * hf_trainer) either work or fail with their named kind and the remote's own words.
 *
 * sshd runs every command as `$SHELL -c LINE` (OpenSSH session.c do_child) after the shell's rc files; the BusyBox
 * PATH comes from ~/.ssh/environment (PermitUserEnvironment), since this server sets no PATH of its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startSshd, TEST_USER, type TestSshd } from '../harness/sshd';
import { ensureBuiltCli, ROOT, runBuiltCli } from '../harness/builtCli';
import { terminalSshArgs } from '../../src/core/terminal';
import { parseSshConfig, resolveHost } from '../../src/core/ssh/sshConfig';
import { spawnSync } from 'node:child_process';

const BUSYBOX = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
const BANNER = 'Welcome to GPU node 7 (cuda/12.4 loaded)';

interface ShellUser {
  user: string;
  shell: string;
  /** Files under the user's home (rc files). */
  files: Record<string, string>;
}

const USERS: ShellUser[] = [
  { user: 'rrtcsh', shell: '/usr/bin/tcsh', files: { '.tcshrc': `echo "${BANNER}"\necho "module: cuda loaded" > /dev/stderr\n` } },
  { user: 'rrcsh', shell: '/bin/csh', files: { '.cshrc': `echo "${BANNER}"\n` } },
  { user: 'rrfish', shell: '/usr/bin/fish', files: { '.config/fish/config.fish': `echo "${BANNER}"\necho "conda: base activated" >&2\n` } },
  {
    user: 'rrchatty',
    shell: '/bin/bash',
    files: { '.bashrc': `echo "${BANNER}"\necho "module: cuda loaded" >&2\n`, '.profile': 'echo "profile: hello"\n. ~/.bashrc\n' },
  },
  { user: 'rrzsh', shell: '/usr/bin/zsh', files: { '.zshenv': `echo "${BANNER}"\n` } },
];
const BUSYBOX_USER = 'rrbusybox';
const NOLOGIN_USER = 'rrnologin';
/** A site's own refusing shell, as clusters set on compute nodes: its message on stdout, exit 1. */
const CLOSED_USER = 'rrclosed';
const CLOSED_SAYS = 'Compute nodes are reserved for jobs: log in through hpc-login1 (see https://hpc.example.org)';

let sshd: TestSshd;
let dir: string;
let home: string;
let config: string;
let knownHosts: string;
let runs: string;
const HF = path.join(ROOT, 'test', 'fixtures', 'real', 'written', 'hf_trainer');

/** Create (or re-point) a local account with this login shell, unlocked (sshd without PAM needs a password set). */
function ensureUser(user: string, shell: string, files: Record<string, string>): string {
  try {
    execFileSync('id', ['-u', user], { stdio: 'ignore' });
    execFileSync('usermod', ['-s', shell, user], { stdio: 'pipe' });
  } catch {
    execFileSync('useradd', ['-m', '-s', shell, user], { stdio: 'pipe' });
  }
  execFileSync('chpasswd', { input: `${user}:rr-shells-${user}\n`, stdio: ['pipe', 'ignore', 'pipe'] });
  const userHome = execFileSync('getent', ['passwd', user], { encoding: 'utf8' }).split(':')[5];
  for (const [rel, text] of Object.entries(files)) {
    const file = path.join(userHome, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
  execFileSync('chown', ['-R', `${user}:`, userHome]);
  return userHome;
}

function cli(args: string[]): { code: number; stdout: string; stderr: string; json: any } {
  const r = runBuiltCli([...args, '--config', config, '--known-hosts', knownHosts], home, 90_000);
  let json: unknown;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = undefined;
  }
  return { ...r, json };
}

const sha256 = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

before(async () => {
  ensureBuiltCli();
  for (const tool of ['/usr/bin/tcsh', '/bin/csh', '/usr/bin/fish', '/usr/bin/zsh']) assert.ok(fs.existsSync(tool), `${tool} is missing: npm run setup installs tcsh, fish and zsh`);
  assert.ok(BUSYBOX, 'busybox is missing: npm run setup installs it');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-shells-'));
  fs.chmodSync(dir, 0o755);
  runs = path.join(dir, 'runs');
  fs.cpSync(HF, path.join(runs, 'hf'), { recursive: true });
  // Only BusyBox's applets on PATH (as on Alpine): no GNU find, stat, sha256sum, head, dd.
  const bb = path.join(dir, 'busybox-bin');
  fs.mkdirSync(bb);
  execFileSync(BUSYBOX!, ['--install', '-s', bb]);
  execFileSync('chmod', ['-R', 'a+rX', dir]);
  // Saved an hour ago: a checkpoint written seconds before a listing is taken for one still being written.
  execFileSync('touch', ['-h', '-d', '1 hour ago', ...execFileSync('find', [runs], { encoding: 'utf8' }).trim().split('\n')]);

  for (const u of USERS) ensureUser(u.user, u.shell, u.files);
  ensureUser(BUSYBOX_USER, '/bin/sh', { '.ssh/environment': `PATH=${bb}\n` });
  ensureUser(NOLOGIN_USER, '/usr/sbin/nologin', {});
  const closedShell = path.join(dir, 'use-login-nodes');
  fs.writeFileSync(closedShell, `#!/bin/sh\necho '${CLOSED_SAYS}'\nexit 1\n`, { mode: 0o755 });
  ensureUser(CLOSED_USER, closedShell, {});
  const users = [...USERS.map((u) => u.user), BUSYBOX_USER, NOLOGIN_USER, CLOSED_USER];
  sshd = await startSshd({ extraConfig: [`AllowUsers ${users.join(' ')}`, 'PermitUserEnvironment yes'] });

  home = path.join(dir, 'client-home');
  fs.mkdirSync(path.join(home, '.ssh'), { recursive: true, mode: 0o700 });
  knownHosts = path.join(home, '.ssh', 'known_hosts');
  fs.writeFileSync(knownHosts, `${sshd.knownHostsLine}\n`);
  config = path.join(dir, 'config.json');
  const host = (user: string) => ({ name: user, host: '127.0.0.1', port: sshd.port, user, identityFile: sshd.clientKeyPath, runRoots: [runs], targets: ['host'] });
  fs.writeFileSync(config, JSON.stringify({ hosts: [...users, TEST_USER].map(host) }));
});

after(async () => {
  await sshd?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

for (const u of [...USERS.map((x) => ({ user: x.user, what: `login shell ${path.basename(x.shell)}${x.user === 'rrchatty' ? ' with chatty rc files' : ' whose rc file prints'}` })), { user: BUSYBOX_USER, what: 'only BusyBox applets on PATH' }]) {
  describe(`a user with ${u.what}`, () => {
    test('ls lists the run and its checkpoints', () => {
      const r = cli(['ls', `${u.user}/host/hf`, '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(r.json.run.checkpoints.map((c: { name: string }) => c.name).sort(), ['checkpoint-20', 'checkpoint-30', 'final']);
    });

    test('metrics reads the trainer state', () => {
      const r = cli(['metrics', `${u.user}/host/hf`, '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(Object.keys(r.json.series ?? r.json).length > 0, r.stdout.slice(0, 300));
      assert.doesNotMatch(r.stdout + r.stderr, /Welcome to GPU node/);
    });

    test('inspect summarises the safetensors', () => {
      const r = cli(['inspect', `${u.user}/host/hf/checkpoint-30`, '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /model\.safetensors/);
      assert.doesNotMatch(r.stdout + r.stderr, /Welcome to GPU node/);
    });

    for (const client of ['ssh2', 'openssh']) {
      test(`pull --client ${client} brings every file, verified by SHA-256`, () => {
        const to = fs.mkdtempSync(path.join(dir, `pull-${u.user}-${client}-`));
        const r = cli(['pull', `${u.user}/host/hf/checkpoint-30`, '--to', to, '--client', client]);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, /verified by SHA-256 on both sides/);
        const local = path.join(to, 'hf', 'checkpoint-30');
        const remote = path.join(runs, 'hf', 'checkpoint-30');
        assert.deepEqual(fs.readdirSync(local).sort(), fs.readdirSync(remote).sort());
        for (const f of fs.readdirSync(remote)) assert.equal(sha256(path.join(local, f)), sha256(path.join(remote, f)), f);
      });
    }
  });
}

describe('a nologin user', () => {
  test("ls fails with command-failed and shows nologin's own reason", () => {
    const r = cli(['ls', `${NOLOGIN_USER}/host/hf`, '--json']);
    assert.notEqual(r.code, 0);
    const said = JSON.stringify(r.json ?? r.stderr);
    assert.match(said, /command-failed/);
    assert.match(said, /This account is currently not available/);
  });

  test("pull fails with command-failed and shows nologin's own reason", () => {
    const to = fs.mkdtempSync(path.join(dir, 'pull-nologin-'));
    const r = cli(['pull', `${NOLOGIN_USER}/host/hf/checkpoint-30`, '--to', to]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /This account is currently not available/);
  });
});

describe("a user whose login shell is a site's refusal script", () => {
  for (const verb of ['ls', 'metrics', 'inspect', 'pull']) {
    test(`${verb} fails with command-failed and shows the script's own message`, () => {
      const addr = verb === 'ls' || verb === 'metrics' ? `${CLOSED_USER}/host/hf` : `${CLOSED_USER}/host/hf/checkpoint-30`;
      const r = cli([verb, addr, '--json', ...(verb === 'pull' ? ['--to', fs.mkdtempSync(path.join(dir, 'pull-closed-'))] : [])]);
      assert.notEqual(r.code, 0);
      assert.match(r.stdout + r.stderr, /command-failed/);
      assert.ok((r.stdout + r.stderr).includes(CLOSED_SAYS), r.stdout + r.stderr);
    });
  }
});

describe('Open Terminal Here', () => {
  for (const u of USERS) {
    test(`starts in a run folder named with ! and a newline, for a ${path.basename(u.shell)} login`, () => {
      const cwd = path.join(dir, 'odd !name\nline');
      fs.mkdirSync(cwd, { recursive: true });
      fs.chmodSync(cwd, 0o755);
      const config = { name: u.user, host: '127.0.0.1', port: sshd.port, user: u.user, identityFile: sshd.clientKeyPath };
      const resolved = resolveHost(config, parseSshConfig('', { home }), { home, localUser: 'nobody' });
      const args = terminalSshArgs(resolved.jumps, resolved.target, { kind: 'host', id: '' }, cwd, { knownHostsFiles: [knownHosts] });
      // No terminal here: ssh runs without a pty and the shell it starts reads this script from stdin.
      const r = spawnSync('ssh', ['-o', 'BatchMode=yes', '-F', '/dev/null', ...args], { input: 'printf "<%s>" "$PWD"; exit 0\n', encoding: 'utf8', timeout: 60_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.ok(r.stdout.includes(`<${cwd}>`), JSON.stringify(r.stdout));
    });
  }
});
