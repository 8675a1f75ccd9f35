/**
 * Issue 36 item 5: a pull that finds no link to its host up logs in once, over OpenSSH only (ConnectionPool
 * `opensshFirst`, set by the CLI's pull): its listing, stat, plan and remote hash run through the one master that
 * carries its bytes. The real sshd's log (DEBUG1: it names each client's software) says how many logins, by client.
 * Where that login would have to ask something (an unknown host key) the built-in client connects as before, with its
 * own question and message; a host whose built-in link is up keeps it. The link is the pool's: a later user needing
 * the built-in client gets it, and the pool's idle rule, a stopped pull and close() end the master.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import type { PoolHost } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { download, planDownload, pullCheckpoint } from '../../src/core/transfer';
import type { Checkpoint, HostConfig, TargetRef } from '../../src/core/types';
import { startTestHost, type TestHost } from '../harness/testHost';
import { ensureBuiltCli, runBuiltCliAsync } from '../harness/builtCli';
import { testPool } from '../builders/pool';
import { eventually } from '../harness/assertKind';
import { opensshMasters } from '../harness/processes';
import { assertPartStill, stopPullQuarterIn } from '../builders/stoppedPull';

const TARGET: TargetRef = { kind: 'host', id: '' };
/** Big enough for a stream of its own (not a small-file batch), small enough to pull in a moment. */
const BYTES = 6 * 1024 * 1024;

let host: TestHost;
let config: string;
let root: string;
let local: string;
let data: Buffer;

before(async () => {
  ensureBuiltCli();
  host = await startTestHost({ logLevel: 'DEBUG1' });
  root = path.join(host.dir, 'cold-runs');
  data = randomBytes(BYTES);
  fs.mkdirSync(path.join(root, 'r', 'step_1'), { recursive: true });
  fs.writeFileSync(path.join(root, 'r', 'step_1', 'model.bin'), data);
  execFileSync('chmod', ['-R', 'a+rX', root]);
  config = path.join(host.dir, 'cold-config.json');
  fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('cold', { runRoots: [root], targets: ['host'] })] }));
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-cold-'));
});

after(async () => {
  await host?.stop();
  if (local) fs.rmSync(local, { recursive: true, force: true });
});

/** Logins since `before`, by client (`OpenSSH`, `ssh2js`), zero counts left out. */
function loginsSince(before: Record<string, number>): Record<string, number> {
  const now = host.sshd.acceptedLoginsByClient();
  return Object.fromEntries(Object.entries(now).map(([k, n]) => [k, n - (before[k] ?? 0)]).filter(([, n]) => (n as number) > 0));
}

function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function poolHost(name: string, extra: Partial<HostConfig> = {}): PoolHost {
  const c = host.hostConfig(name, { runRoots: [root], targets: ['host'], ...extra });
  return new HostDirectory({ hosts: () => [c], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' }).resolve(c);
}

const CHECKPOINT = (): Checkpoint => ({ name: 'step_1', kind: 'step', step: 1, layout: 'step_N', path: path.join(root, 'r', 'step_1'), isDir: true, bytes: BYTES, mtime: 0, files: [], newest: true });

test('a cold CLI pull logs in once, over OpenSSH, and its bytes are equal (verified and size-only)', async () => {
  for (const how of [[], ['--size-only']]) {
    const to = fs.mkdtempSync(path.join(local, 'cli-'));
    const before = host.sshd.acceptedLoginsByClient();
    const r = await runBuiltCliAsync(['pull', 'cold/host/r/step_1', '--to', to, ...how, '--config', config, '--known-hosts', host.knownHostsFile], host.clientHome, { REMOTE_RUNS_DEBUG: '1' });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(loginsSince(before), { OpenSSH: 1 }, `one login, OpenSSH's, for the listing, the plan, the hashes and the bytes (${how.join(' ') || 'verified'}): ${r.stderr}`);
    assert.match(r.stderr, /Transport for cold: OpenSSH first/, 'the log says which client and why');
    const file = path.join(to, 'r', 'step_1', 'model.bin');
    assert.equal(sha256(file), createHash('sha256').update(data).digest('hex'), 'the bytes are the remote file\'s');
    assert.match(r.stderr, how.length ? /checked by size/ : /verified by SHA-256 on both sides/);
  }
});

test('an unknown host key: the built-in client connects as before (its refusal without a terminal, word for word), no OpenSSH login', async () => {
  const empty = path.join(host.dir, 'kh-cold-empty');
  fs.writeFileSync(empty, '');
  const args = (client: string[]) => ['pull', 'cold/host/r/step_1', '--to', fs.mkdtempSync(path.join(local, 'unknown-')), '--json', ...client, '--config', config, '--known-hosts', empty];
  const before = host.sshd.acceptedLoginsByClient();
  const r = await runBuiltCliAsync(args([]), host.clientHome, { REMOTE_RUNS_DEBUG: '1' });
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.json?.error?.kind, 'host-key-unknown', r.stdout);
  assert.match(r.stderr, /Transport for cold: built-in client \(ssh2\), not OpenSSH first: no host key of 127\.0\.0\.1 is known yet/);
  // The built-in client's path, as a pull that never tries OpenSSH first takes it: the same message.
  const ssh2 = await runBuiltCliAsync(args(['--client', 'ssh2']), host.clientHome);
  assert.equal(ssh2.code, 2, ssh2.stderr);
  assert.deepEqual(r.json, ssh2.json, 'the same refusal as the built-in client gives');
  assert.deepEqual(loginsSince(before), {}, 'nobody logged in');
  assert.equal(fs.readFileSync(empty, 'utf8'), '', 'nothing was added to known_hosts without a terminal');
});

test('a changed host key: refused as the built-in client refuses it (word for word), OpenSSH first never carrying on; no login', async () => {
  // known_hosts holds another key of the server's own type for its name: a changed key.
  const type = host.sshd.hostKeyType;
  const k = path.join(host.dir, 'cold-other-key');
  execFileSync('ssh-keygen', ['-q', '-t', type === 'ssh-ed25519' ? 'ed25519' : type.startsWith('ecdsa') ? 'ecdsa' : 'rsa', '-N', '', '-f', k]);
  const other = fs.readFileSync(`${k}.pub`, 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
  const changed = path.join(host.dir, 'kh-cold-changed');
  fs.writeFileSync(changed, `[127.0.0.1]:${host.sshd.port} ${other}\n`);
  const args = (client: string[]) => ['pull', 'cold/host/r/step_1', '--to', fs.mkdtempSync(path.join(local, 'changed-')), '--json', ...client, '--config', config, '--known-hosts', changed];
  const before = host.sshd.acceptedLoginsByClient();
  const r = await runBuiltCliAsync(args([]), host.clientHome, { REMOTE_RUNS_DEBUG: '1' });
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.json?.error?.kind, 'host-key-mismatch', r.stdout);
  // OpenSSH was shown the changed key and refused it; the built-in client then refused it with today's message.
  assert.match(r.stderr, /OpenSSH first failed \(host-key-mismatch: /);
  const ssh2 = await runBuiltCliAsync(args(['--client', 'ssh2']), host.clientHome);
  assert.equal(ssh2.code, 2, ssh2.stderr);
  assert.deepEqual(r.json, ssh2.json, 'the same refusal as the built-in client gives');
  assert.deepEqual(loginsSince(before), {}, 'nobody logged in');
  assert.equal(fs.readFileSync(changed, 'utf8'), `[127.0.0.1]:${host.sshd.port} ${other}\n`, 'known_hosts untouched');
});

test('a host whose built-in link is up keeps it: the pull streams through the OpenSSH session beside it, no OpenSSH transport', async () => {
  const p = testPool(host, { connectTimeoutMs: 30_000, opensshFirst: true });
  try {
    const h = poolHost('warm');
    const before = host.sshd.acceptedLoginsByClient();
    // A user that needs the built-in client first (an eval server's forwarded channels): the host's link is ssh2's.
    const lease = await p.acquire(h, undefined, { builtIn: true });
    assert.equal(lease.connection.kind, 'ssh2');
    const pulled = await pullCheckpoint({ pool: p, host: h, target: TARGET }, CHECKPOINT(), { root: fs.mkdtempSync(path.join(local, 'warm-')), run: 'r' }, {});
    lease.dispose();
    assert.equal(pulled.result.client, 'openssh', pulled.summary);
    assert.equal(p.openSshState('warm')?.up, true, "the bytes came through the host's session beside the ssh2 link");
    assert.deepEqual(loginsSince(before), { ssh2js: 1, OpenSSH: 1 }, 'the ssh2 link and its session: no OpenSSH transport besides');
    assert.deepEqual(fs.readFileSync(pulled.result.files[0].localPath), data);
  } finally {
    await p.close();
  }
});

test("a pull of a one-file checkpoint runs two remote commands, the plan's walk and the stream (which looks at the file after its last byte itself), cold or warm, verified or size-only", async () => {
  const p = testPool(host, { connectTimeoutMs: 30_000, opensshFirst: true });
  // sshd (VERBOSE and up) logs each session's start: one per remote command.
  const sessions = (): number => (host.sshd.log().match(/^Starting session: command for /gm) ?? []).length;
  try {
    const h = poolHost('commands');
    for (const verify of ['size', 'sha256', 'size'] as const) {
      const before = sessions();
      const pulled = await pullCheckpoint({ pool: p, host: h, target: TARGET }, CHECKPOINT(), { root: fs.mkdtempSync(path.join(local, 'commands-')), run: 'r' }, { verify });
      assert.deepEqual(fs.readFileSync(pulled.result.files[0].localPath), data);
      assert.equal(pulled.result.client, 'openssh', pulled.summary);
      assert.equal(sessions() - before, 2, `${verify}: the walk and the stream, no probe of the login shell and no stat after the stream:\n${host.sshd.log().split('\n').filter((l) => /Starting session/.test(l)).slice(-5).join('\n')}`);
    }
  } finally {
    await p.close();
  }
});

test('a pulled file goes to disk as it lands, whichever client carries it: flushes beside the stream, not all of it after the last byte', async () => {
  // 80 MiB: five flushes' worth (download.ts FLUSH_EVERY_BYTES); one runs at a time, and a direct stream is counted
  // every 50 ms, so a fast link over a slow disk gets fewer, but never none.
  const big = randomBytes(80 << 20);
  fs.mkdirSync(path.join(root, 'big', 'step_1'), { recursive: true });
  fs.writeFileSync(path.join(root, 'big', 'step_1', 'model.bin'), big);
  execFileSync('chmod', ['-R', 'a+rX', path.join(root, 'big')]);
  const checkpoint: Checkpoint = { ...CHECKPOINT(), path: path.join(root, 'big', 'step_1'), bytes: big.length };
  // Every fdatasync of this process (only a download's flush calls it; its final fsync is sync()).
  const probe = await fs.promises.open(path.join(root, 'big', 'step_1', 'model.bin'), 'r');
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
  await probe.close();
  const datasync = proto.datasync;
  let flushes = 0;
  proto.datasync = function (this: unknown) {
    flushes++;
    return datasync.call(this);
  };
  try {
    // ssh writing into the .part itself (the CLI's pool: OpenSSH first), and the built-in client's lanes writing it here.
    for (const client of ['openssh', 'ssh2'] as const) {
      const p = testPool(host, { connectTimeoutMs: 30_000, opensshFirst: client === 'openssh' });
      try {
        flushes = 0;
        const pulled = await pullCheckpoint({ pool: p, host: poolHost(`flush-${client}`), target: TARGET }, checkpoint, { root: fs.mkdtempSync(path.join(local, 'flush-')), run: 'big' }, { verify: 'size', client });
        assert.equal(pulled.result.client, client, pulled.summary);
        assert.ok(fs.readFileSync(pulled.result.files[0].localPath).equals(big), `${client}: the bytes are the remote file's`);
        assert.ok(flushes >= 1, `${client}: ${flushes} flushes while 80 MiB landed`);
      } finally {
        await p.close();
      }
    }
  } finally {
    proto.datasync = datasync;
  }
});

test("the OpenSSH-first link is the pool's: a later user needing the built-in client gets it and the master goes; the idle rule and close() end it", async () => {
  const before = opensshMasters();
  const lines: string[] = [];
  const logger = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
  const p = testPool(host, { connectTimeoutMs: 30_000, opensshFirst: true, logger });
  try {
    const h = poolHost('later');
    const logins = host.sshd.acceptedLoginsByClient();
    assert.equal((await p.exec(h, 'echo hi')).stdout.toString(), 'hi\n');
    assert.equal(opensshMasters(), before + 1, 'its master runs');
    const lease = await p.acquire(h, undefined, { builtIn: true });
    assert.equal(lease.connection.kind, 'ssh2', 'the built-in client for the user that needs it');
    assert.equal((await p.exec(h, 'echo again')).stdout.toString(), 'again\n', 'commands go on, over the new link');
    lease.dispose();
    await eventually(() => opensshMasters() === before, 'the OpenSSH link let go is closed, nothing running on it');
    assert.deepEqual(loginsSince(logins), { OpenSSH: 1, ssh2js: 1 });
    assert.match(lines.join('\n'), /its OpenSSH link is let go \(a user of the host needs the built-in client\)/);
  } finally {
    await p.close();
  }

  const idle = testPool(host, { connectTimeoutMs: 30_000, opensshFirst: true, idleTimeoutMs: 300 });
  try {
    const states: string[] = [];
    idle.onDidChangeState((s) => states.push(s.state.kind));
    await idle.exec(poolHost('idle'), 'true');
    assert.equal(opensshMasters(), before + 1);
    await eventually(() => states.at(-1) === 'idle', 'the host idled out');
    await eventually(() => opensshMasters() === before, 'its master ended with it');
    await idle.exec(poolHost('idle'), 'true');
    assert.equal(opensshMasters(), before + 1, 'the next command logs in again');
  } finally {
    await idle.close();
  }
  assert.equal(opensshMasters(), before, 'close() leaves no master');
});

test('OpenSSH first that fails to log in (no such ssh) falls back to the built-in client, said in the log', async () => {
  const lines: string[] = [];
  const logger = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m), error: (m: string) => lines.push(m) };
  const p = testPool(host, { connectTimeoutMs: 30_000, opensshFirst: true, logger, sshPath: path.join(host.dir, 'no-such-ssh') });
  try {
    const before = host.sshd.acceptedLoginsByClient();
    const h = poolHost('fallback');
    assert.equal((await p.exec(h, 'echo hi')).stdout.toString(), 'hi\n');
    const lease = await p.acquire(h);
    assert.equal(lease.connection.kind, 'ssh2');
    lease.dispose();
    assert.match(lines.join('\n'), /OpenSSH first failed \(bad-config: .*no-such-ssh.*\); connecting with the built-in client/);
    assert.deepEqual(loginsSince(before), { ssh2js: 1 });
  } finally {
    await p.close();
  }
});

test("a pull stopped while ssh writes into its .part over the OpenSSH-first link ends that link (only the master's exit stops its writes); the next pull logs in again and completes", async () => {
  const before = host.sshd.acceptedLoginsByClient();
  const { pool: p, stopped: s } = await stopPullQuarterIn(host, {
    folder: 'cold-direct',
    root: fs.mkdtempSync(path.join(local, 'direct-')),
    target: TARGET,
    makePool: () => testPool(host, { connectTimeoutMs: 30_000, opensshFirst: true }),
  });
  try {
    assert.deepEqual(loginsSince(before), { OpenSSH: 1 }, 'control: the plan and the stream on the one OpenSSH-first link');
    assert.match(s.lines.join('\n'), /1 OpenSSH stream per file/, 'control: one stream for the file, written by ssh into the .part');
    assert.equal(p.getState('direct').kind, 'idle', "the host's link was ended with the stopped pull");
    await assertPartStill(s);

    const logins = host.sshd.acceptedLoginsByClient();
    const again = await download(await planDownload({ pool: p, host: s.host, target: TARGET }, s.checkpoint, s.dest), {});
    assert.equal(again.client, 'openssh');
    assert.deepEqual(loginsSince(logins), { OpenSSH: 1 }, 'a new OpenSSH login for the next pull');
    assert.deepEqual(fs.readFileSync(s.plan.files[0].localPath), s.data);
  } finally {
    await p.close();
  }
});
