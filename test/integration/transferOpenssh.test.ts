/**
 * Downloads whose bytes move through the system's OpenSSH client (src/core/ssh/openssh/session.ts, opensshLane.ts), against real sshd
 * servers: it logs in with what the pool already unlocked (one passphrase prompt in all, the user's own ssh-agent
 * proxied, the password given to askpass), through a jump host, trusting only the host keys the pool trusted (a
 * changed key stops the download); without `ssh` it falls back to ssh2 and says why; a disk that fills up mid-stream
 * is `disk-full` with the .part kept and resumable; nothing of the session (agent socket, config, master) outlives it.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { ConnectionPool, type PoolHost } from '../../src/core/ssh/pool';
import type { ResolvedHop } from '../../src/core/ssh/types';
import { HostDirectory } from '../../src/core/hosts';
import type { Checkpoint, TargetRef } from '../../src/core/types';
import { download, planDownload, type SshTransferSource, type TransferSource } from '../../src/core/transfer';
import { startJumpPair, startSshd, type TestSshd } from '../harness/sshd';
import { startTestHost, ScriptedPrompter, type TestHost } from '../harness/testHost';
import { changeHostKey, installGate, smallDisk, strikeMidDownload, type CommandGate } from '../harness/faults';
import { eventually, rejectsWith } from '../harness/assertKind';
import { silentLogger } from '../builders/pool';

const MiB = 1 << 20;
const HOST: TargetRef = { kind: 'host', id: '' };
const PCT: TargetRef = { kind: 'pct', id: '200' };
const quiet = silentLogger;

let local: string;
let files: string;
const pools: ConnectionPool[] = [];

before(() => {
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-osdl-'));
  // Remote files for the standalone servers (they log in as the test user, on this machine).
  files = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-osdl-src-'));
  fs.chmodSync(files, 0o755);
});
after(() => {
  for (const p of pools) p.dispose();
  fs.rmSync(local, { recursive: true, force: true });
  fs.rmSync(files, { recursive: true, force: true });
});

function pool(prompter = new ScriptedPrompter(), knownHostsFile: string, agent: string | null = null): ConnectionPool {
  const p = new ConnectionPool({ prompter, logger: quiet, knownHostsFiles: [knownHostsFile], agent, backoffBaseMs: 50 });
  pools.push(p);
  return p;
}

function hop(s: TestSshd, alias: string, identityFiles: string[] = [s.clientKeyPath]): ResolvedHop {
  return { alias, hostname: s.host, port: s.port, user: s.user, identityFiles, identitiesOnly: identityFiles.length > 0 };
}

function knownHosts(...servers: TestSshd[]): string {
  const p = path.join(local, `known_hosts_${servers.map((s) => s.port).join('_')}`);
  fs.writeFileSync(p, servers.map((s) => `${s.knownHostsLine}\n`).join(''));
  return p;
}

/** A random file the test user can read, as a flat checkpoint of the bare host. */
function remoteFile(name: string, bytes: number): { ckpt: Checkpoint; data: Buffer } {
  const dir = path.join(files, name);
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const data = randomBytes(bytes);
  const file = path.join(dir, 'model_step_5.pt');
  fs.writeFileSync(file, data, { mode: 0o644 });
  return { data, ckpt: { name: 'model_step_5.pt', kind: 'step' as const, step: 5, layout: 'flat', path: file, isDir: false, bytes: 0, mtime: 0, files: [], newest: true } };
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** Session folders (agent socket, config, control socket) in `dir`. */
function sessionFolders(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.startsWith('rr-ssh-'));
}

/**
 * Run `f` with the temp folder (where sessions put their folder) a fresh one of its own, so what other processes
 * on this machine do in /tmp at the same time cannot count as ours.
 */
async function withOwnTmp<T>(f: (dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-own-tmp-'));
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = dir;
  try {
    return await f(dir);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}

/** OpenSSH masters of ours still running (their command line names our config), under `under` if given. */
function masters(under = ''): string[] {
  return fs
    .readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n))
    .flatMap((n) => {
      try {
        const cmd = fs.readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0');
        return cmd[0].endsWith('ssh') && cmd.some((a) => a.startsWith(under) && /rr-ssh-[^/]+\/config$/.test(a)) ? [n] : [];
      } catch {
        return [];
      }
    });
}

describe('logging in as the pool did', () => {
  let s: TestSshd;
  before(async () => {
    s = await startSshd({ passwordAuthentication: true });
  });
  after(() => s?.stop());

  test('an encrypted key: one passphrase prompt in all, OpenSSH logs in once with the unlocked key, and leaves nothing behind', async () => {
    const prompter = new ScriptedPrompter({ passphrase: s.passphrase });
    const p = pool(prompter, knownHosts(s));
    const host: PoolHost = { name: 'enc', jumps: [], target: hop(s, 'enc', [s.encryptedKeyPath]) };
    const { ckpt, data } = remoteFile('enc', 24 * MiB + 3);
    const plan = await planDownload({ pool: p, host, target: HOST }, ckpt, { root: local, run: 'enc' });
    const logins = s.acceptedLogins();
    await withOwnTmp(async (tmp) => {
      const said: string[] = [];
      const res = await download(plan, { client: 'openssh', logger: { info: (m) => said.push(m), warn: (m) => said.push(m), error: (m) => said.push(m) } });
      assert.equal(res.client, 'openssh');
      // How many streams and why, in the log: 24 MiB is under two pieces, so one stream without a round trip measured.
      assert.ok(said.some((m) => /^download of \S+: 1 OpenSSH stream per file \(25 MB to fetch, under two pieces of 67 MB; at most 8\)$/.test(m)), said.join('\n'));
      // The session is the pool's (shared with the host's charts), ended with the pool.
      await p.close();
      assert.deepEqual(sessionFolders(tmp), [], 'agent socket, config and control socket removed');
      await eventually(() => masters(tmp).length === 0, 'the OpenSSH master exited');
    });
    assert.deepEqual(prompter.asked, ['passphrase'], 'asked once, by the shared connection');
    assert.equal(s.acceptedLogins() - logins, 1, 'one OpenSSH login (its master) for the whole download');
    assert.match(s.log(), /Accepted publickey for \S+ .*ED25519/);
    assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
  });

  test("the user's own ssh-agent: its key is offered through the private agent, and signs there", async () => {
    const sock = path.join(local, 'user-agent.sock');
    const agent: ChildProcess = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    try {
      await eventually(() => fs.existsSync(sock), 'ssh-agent listening');
      execFileSync('ssh-add', [s.clientKeyPath], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
      const p = pool(new ScriptedPrompter(), knownHosts(s), sock);
      // No key file: the pool logs in with the agent, and so must OpenSSH.
      const host: PoolHost = { name: 'agent', jumps: [], target: hop(s, 'agent', []) };
      const { ckpt, data } = remoteFile('agent', 8 * MiB);
      const plan = await planDownload({ pool: p, host, target: HOST }, ckpt, { root: local, run: 'agent' });
      const res = await download(plan, { client: 'openssh' });
      assert.equal(res.client, 'openssh');
      assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
    } finally {
      agent.kill();
    }
  });

  test('a password login: one password prompt in all; OpenSSH gets the password the pool holds through askpass', async () => {
    const prompter = new ScriptedPrompter({ password: s.password });
    const p = pool(prompter, knownHosts(s));
    const host: PoolHost = { name: 'pw', jumps: [], target: hop(s, 'pw', []) };
    const { ckpt, data } = remoteFile('pw', 6 * MiB);
    const plan = await planDownload({ pool: p, host, target: HOST }, ckpt, { root: local, run: 'pw' });
    const accepted = (): number => (s.log().match(/Accepted password for /g) ?? []).length;
    const failed = (): number => (s.log().match(/Failed (password|publickey) for /g) ?? []).length;
    const [before, failedBefore] = [accepted(), failed()];
    const res = await withOwnTmp(async (tmp) => {
      const r = await download(plan, {});
      await p.close();
      await eventually(() => masters(tmp).length === 0, 'the OpenSSH master exited');
      return r;
    });
    assert.equal(res.client, 'openssh', res.clientNote);
    assert.deepEqual(prompter.asked, ['password'], 'asked once, by the shared connection');
    assert.equal(accepted() - before, 1, "OpenSSH's master logged in with the password");
    assert.equal(failed() - failedBefore, 0, 'no key was tried, nothing failed');
    assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
  });

  test('no ssh binary: auto uses ssh2 and says so; forcing OpenSSH fails naming the path', async () => {
    const p = pool(new ScriptedPrompter(), knownHosts(s));
    const host: PoolHost = { name: 'nossh', jumps: [], target: hop(s, 'nossh') };
    const { ckpt, data } = remoteFile('nossh', 2 * MiB);
    const plan = await planDownload({ pool: p, host, target: HOST }, ckpt, { root: local, run: 'nossh' });
    const res = await download(plan, { sshPath: '/nonexistent/bin/ssh' });
    assert.equal(res.client, 'ssh2');
    assert.match(res.clientNote ?? '', /no OpenSSH client at \/nonexistent\/bin\/ssh/);
    assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
    const other = remoteFile('nossh2', MiB);
    const plan2 = await planDownload({ pool: pool(new ScriptedPrompter(), knownHosts(s)), host, target: HOST }, other.ckpt, { root: local, run: 'nossh2' });
    const e = await rejectsWith(download(plan2, { client: 'openssh', sshPath: '/nonexistent/bin/ssh' }), 'bad-config');
    assert.match(e.message, /\/nonexistent\/bin\/ssh/);
  });
});

describe('host keys', () => {
  test('the host key changes after the pool connected: the download stops with host-key-mismatch, known_hosts untouched', async () => {
    const s = await startSshd();
    try {
      const kh = knownHosts(s);
      const p = pool(new ScriptedPrompter({ trustHostKey: true }), kh);
      const host: PoolHost = { name: 'rekey', jumps: [], target: hop(s, 'rekey') };
      const { ckpt } = remoteFile('rekey', 4 * MiB);
      // Planning connects the pool (with the key known_hosts vouches for); then the server's key changes.
      const plan = await planDownload({ pool: p, host, target: HOST }, ckpt, { root: local, run: 'rekey' });
      const before = fs.readFileSync(kh, 'utf8');
      await changeHostKey(s);
      const e = await rejectsWith(download(plan), 'host-key-mismatch');
      assert.match(e.message, /different host key/);
      assert.equal(fs.readFileSync(kh, 'utf8'), before);
      assert.equal(fs.existsSync(plan.files[0].localPath), false);
    } finally {
      await s.stop();
    }
  });

  test('through a jump host: each hop pinned to the key the pool trusted, the route goes through the jump host', async () => {
    const pair = await startJumpPair();
    try {
      const p = pool(new ScriptedPrompter(), knownHosts(pair.jump, pair.target));
      const host: PoolHost = { name: 'behind', jumps: [hop(pair.jump, 'bastion')], target: hop(pair.target, 'behind') };
      const { ckpt, data } = remoteFile('behind', 12 * MiB);
      const plan = await planDownload({ pool: p, host, target: HOST }, ckpt, { root: local, run: 'behind' });
      const forwards = (pair.jump.log().match(/direct-tcpip/g) ?? []).length;
      const res = await download(plan, { client: 'openssh' });
      assert.equal(res.client, 'openssh');
      assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
      assert.ok((pair.jump.log().match(/direct-tcpip/g) ?? []).length > forwards, 'OpenSSH went through the jump host');
    } finally {
      await pair.stop();
    }
  });
});

describe('faults on the OpenSSH stream', () => {
  let host: TestHost;
  let gate: CommandGate;
  let src: SshTransferSource;
  before(async () => {
    host = await startTestHost();
    gate = installGate(path.join(host.dir, 'bin'), 'pct');
    const p = pool(new ScriptedPrompter(), host.knownHostsFile);
    const dir = new HostDirectory({ hosts: () => [host.hostConfig()], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    src = { pool: p, host: dir.resolve(host.hostConfig()), target: PCT };
  });
  after(async () => {
    gate?.dispose();
    await host?.stop();
  });

  test('the disk fills up while ssh writes the .part: disk-full, what was written kept; with room again only the rest is fetched', async () => {
    const disk = smallDisk(24);
    try {
      const remote = '/workspace/os-filling/model_step_3.pt';
      const onDisk = path.join(host.containers.pct200.rootfs, remote);
      const data = randomBytes(12 * MiB);
      fs.mkdirSync(path.dirname(onDisk), { recursive: true });
      fs.writeFileSync(onDisk, data);
      execFileSync('chmod', ['-R', 'a+rX', path.dirname(onDisk)]);
      const ckpt: Checkpoint = { name: 'model_step_3.pt', kind: 'step' as const, step: 3, layout: 'flat', path: remote, isDir: false, bytes: 0, mtime: 0, files: [], newest: true };
      const plan = await planDownload(src, ckpt, { root: disk.dir, run: 'filling' });
      const neighbour = path.join(disk.dir, 'notes.txt');
      fs.writeFileSync(neighbour, 'mine');
      // The download passes its space check, then waits at the gate (its remote stat) while another program takes
      // all but 3 MiB of the disk.
      gate.arm();
      const pending = download(plan, { client: 'openssh' });
      await gate.waitEntered();
      const st = fs.statfsSync(disk.dir);
      fs.writeFileSync(path.join(disk.dir, 'filler'), Buffer.alloc(st.bavail * st.bsize - 3 * MiB));
      gate.open();
      const e = await rejectsWith(pending, 'disk-full');
      assert.match(e.message, /disk is full/);
      const kept = fs.statSync(plan.files[0].paths.part).blocks * 512; // bytes written: ranges make the size run ahead
      assert.ok(kept > 0 && kept < data.length, `what was written is kept (${kept} bytes)`);
      assert.equal(fs.existsSync(plan.files[0].localPath), false, 'no complete-looking file');
      assert.equal(fs.readFileSync(neighbour, 'utf8'), 'mine');

      fs.rmSync(path.join(disk.dir, 'filler'));
      const res = await download(await planDownload(src, ckpt, { root: disk.dir, run: 'filling' }), { client: 'openssh' });
      assert.equal(res.client, 'openssh');
      assert.ok(res.files[0].resumedBytes > 0, 'resumed from the .part');
      assert.equal(res.bytesFetched + res.files[0].resumedBytes, data.length, 'nothing fetched twice');
      assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
    } finally {
      gate.open();
      disk.dispose();
    }
  });

  test('cancel while ssh streams: the ssh process and its master end at once, the .part continues next time', async () => {
    const remote = '/workspace/os-cancel/model_step_4.pt';
    const onDisk = path.join(host.containers.pct200.rootfs, remote);
    const size = 256 * MiB + 11;
    fs.mkdirSync(path.dirname(onDisk), { recursive: true });
    fs.writeFileSync(onDisk, 'head');
    fs.truncateSync(onDisk, size);
    execFileSync('chmod', ['-R', 'a+rX', path.dirname(onDisk)]);
    const ckpt: Checkpoint = { name: 'model_step_4.pt', kind: 'step' as const, step: 4, layout: 'flat', path: remote, isDir: false, bytes: 0, mtime: 0, files: [], newest: true };
    // Through a 64 MiB/s link of the test's own: the cancel comes at the first progress report of the stream, with
    // most of the file provably still on the remote side (straight over loopback it raced ssh writing the .part).
    const link = await host.throughProxy({ rateBytesPerSec: 64 * MiB });
    const linked: TransferSource = { ...src, host: new HostDirectory({ hosts: () => [link.hostConfig()], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' }).resolve(link.hostConfig()) };
    const plan = await planDownload(linked, ckpt, { root: local, run: 'os-cancel' });
    const part = plan.files[0].paths.part;
    const ac = new AbortController();
    const strike = strikeMidDownload(link.proxy, 0, () => ac.abort());
    await withOwnTmp(async (tmp) => {
      await rejectsWith(download(plan, { client: 'openssh', signal: ac.signal, onProgress: strike.onProgress }), 'cancelled');
      assert.ok(strike.struck && strike.linkBytesAt < size, `cancelled mid-stream: ${strike.linkBytesAt} of ${size} bytes had crossed the link`);
      await eventually(() => masters(tmp).length === 0, 'the OpenSSH master exited');
      assert.deepEqual(sessionFolders(tmp), [], 'the session folder removed');
    });
    assert.equal(fs.existsSync(plan.files[0].localPath), false);
    // Bytes written (allocated blocks), not the size: ranges are written side by side, so the size runs ahead.
    const kept = fs.statSync(part).blocks * 512;
    assert.ok(kept > 0 && kept < size, `the .part is kept (${kept} bytes)`);
    const res = await download(await planDownload(src, ckpt, { root: local, run: 'os-cancel' }), { client: 'openssh' });
    assert.ok(res.files[0].resumedBytes > 0, 'resumed');
    assert.equal(res.bytesFetched + res.files[0].resumedBytes, size, 'nothing fetched twice');
    assert.equal(
      execFileSync('sha256sum', [plan.files[0].localPath], { encoding: 'utf8' }).slice(0, 64),
      execFileSync('sha256sum', [onDisk], { encoding: 'utf8' }).slice(0, 64),
    );
    fs.rmSync(plan.files[0].localPath);
  });
});
