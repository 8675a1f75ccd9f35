/**
 * Checkpoint downloads against a real OpenSSH server, from the bare host and from inside the pct/docker shim
 * containers: bytes equal (SHA-256), resume after a killed connection and after a cancel without refetching,
 * a remote file that changed is fetched again from zero, hostile names, consent before replacing a local file,
 * a checksum mismatch keeps the .part, and a full disk is refused before starting.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsError, type Checkpoint, type ErrorKind, type TargetRef } from '../../src/core/types';
import { download, filePaths, planDownload, type DownloadOptions, type SshTransferSource, type TransferSource } from '../../src/core/transfer';
import { startTestHost, ScriptedPrompter, type ProxiedHost, type TestHost } from '../harness/testHost';
import { strikeMidDownload } from '../harness/faults';
import { eventually, rejectsWith } from '../harness/assertKind';
import { silentLogger } from '../builders/pool';

const MiB = 1 << 20;
let host: TestHost;
let local: string;
const pools: ConnectionPool[] = [];

const HOST: TargetRef = { kind: 'host', id: '' };
const PCT: TargetRef = { kind: 'pct', id: '200' };
const DOCKER: TargetRef = { kind: 'docker', id: 'trainer' };

/** A fresh pool's source for `target`, to the test sshd or (with `link`) through a link of the test's own. */
function source(target: TargetRef, link?: ProxiedHost): SshTransferSource {
  const pool = new ConnectionPool({
    prompter: new ScriptedPrompter(),
    logger: silentLogger,
    knownHostsFiles: [host.knownHostsFile],
    connectTimeoutMs: 5000,
    backoffBaseMs: 50,
  });
  pools.push(pool);
  const config = link ? link.hostConfig() : host.hostConfig();
  const dir = new HostDirectory({ hosts: () => [config], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  return { pool, host: dir.resolve(config), target };
}

/** Where a remote path inside a target lives on this machine. */
function onDisk(target: TargetRef, remotePath: string): string {
  if (target.kind === 'host') return remotePath;
  const c = target.kind === 'pct' ? host.containers.pct200 : host.containers.trainer;
  return path.join(c.rootfs, remotePath);
}

/** The remote directory (as the target sees it) that tests write checkpoints into. */
function remoteBase(target: TargetRef): string {
  return target.kind === 'host' ? path.join(host.dir, 'dl') : '/workspace/dl';
}

function writeRemote(target: TargetRef, remotePath: string, data: Buffer | { sparse: number }): void {
  const p = onDisk(target, remotePath);
  fs.mkdirSync(path.dirname(p), { recursive: true });
  if (Buffer.isBuffer(data)) fs.writeFileSync(p, data);
  else {
    fs.writeFileSync(p, 'head');
    fs.truncateSync(p, data.sparse);
  }
  execFileSync('chmod', ['-R', 'a+rX', path.dirname(p)]);
}

function checkpoint(target: TargetRef, remotePath: string, isDir: boolean): Checkpoint {
  const name = path.posix.basename(remotePath);
  return { name, kind: 'step' as const, step: 1, layout: isDir ? 'step_N' : 'flat', path: remotePath, isDir, bytes: 0, mtime: 0, files: [], newest: true };
}

function sha(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** Hash big files without holding them in memory. */
function shaStream(file: string): string {
  return execFileSync('sha256sum', [file], { encoding: 'utf8' }).slice(0, 64);
}


before(async () => {
  host = await startTestHost();
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-dl-'));
});
after(async () => {
  for (const p of pools) p.dispose();
  await host?.stop();
  fs.rmSync(local, { recursive: true, force: true });
});

describe('byte-exact downloads from every kind of target', () => {
  for (const client of ['openssh', 'ssh2'] as const)
  for (const target of [HOST, PCT, DOCKER]) {
    test(`${target.kind}, ${client}: a folder checkpoint lands byte-identical under <root>/<run>/<checkpoint>/, largest first, sha256-verified`, async () => {
      const base = path.posix.join(remoteBase(target), `folder-${target.kind}-${client}`);
      const ck = path.posix.join(base, 'step_200');
      const files: Record<string, Buffer> = {
        'model.safetensors': randomBytes(12 * MiB + 123),
        'optimizer.pt': randomBytes(5 * MiB),
        'config.json': Buffer.from('{"lr": 0.1}\n'),
        'empty.txt': Buffer.alloc(0),
        'sub/rng_state.pth': randomBytes(77_777),
      };
      for (const [rel, data] of Object.entries(files)) writeRemote(target, path.posix.join(ck, rel), data);
      const src = source(target);
      const run = `run-${target.kind}-${client}`;
      const plan = await planDownload(src, checkpoint(target, ck, true), { root: local, run });
      assert.equal(plan.localRoot, path.join(local, run, 'step_200'));
      assert.deepEqual(plan.files.map((f) => f.relative), ['model.safetensors', 'optimizer.pt', 'sub/rng_state.pth', 'config.json', 'empty.txt']);
      assert.ok(plan.files.every((f) => f.state.kind === 'absent'));
      const seen: number[] = [];
      const res = await download(plan, { client, verify: 'sha256', onProgress: (p) => seen.push(p.bytesDone) });
      for (const [rel, data] of Object.entries(files)) {
        const p = path.join(plan.localRoot, rel);
        assert.equal(sha(p), createHash('sha256').update(data).digest('hex'), rel);
        const state = filePaths(local, p);
        assert.ok(!fs.existsSync(state.part) && !fs.existsSync(state.partRecord), `no leftovers for ${rel}`);
      }
      assert.equal(res.client, client);
      assert.equal(res.transport, target.kind === 'host' && client === 'ssh2' ? 'sftp' : 'exec');
      assert.ok(res.files.every((f) => f.outcome === 'downloaded' && f.verified === 'sha256'));
      // The whole file's SHA-256 is known where one stream carried it (several ranges prove it range by range).
      for (const f of res.files) if (f.sha256) assert.equal(f.sha256, sha(f.localPath), f.relative);
      assert.ok(res.files.some((f) => f.sha256), 'small files come in one stream, with their whole SHA-256');
      assert.equal(res.bytesFetched, plan.bytes);
      assert.ok(seen.length > 0 && seen[seen.length - 1] <= plan.bytes);

      // The second download says it is already there, and fetches nothing.
      const again = await planDownload(src, checkpoint(target, ck, true), { root: local, run });
      assert.ok(again.files.every((f) => f.state.kind === 'complete-verified' && f.state.verified === 'sha256'));
      const res2 = await download(again, { client, verify: 'sha256' });
      assert.equal(res2.bytesFetched, 0);
      assert.ok(res2.files.every((f) => f.outcome === 'already-complete'));
    });
  }

  for (const [target, client] of [[HOST, 'auto'], [PCT, 'auto'], [DOCKER, 'auto'], [HOST, 'ssh2']] as const) {
    test(`${target.kind}, ${client}: a 2 GiB sparse flat checkpoint lands at <root>/<run>/<file> with equal bytes`, async () => {
      const file = path.posix.join(remoteBase(target), `sparse-${target.kind}`, 'model_step_9000.pt');
      const size = 2 * 1024 * MiB + 4097;
      writeRemote(target, file, { sparse: size });
      const run = `sparse-${target.kind}-${client}`;
      const plan = await planDownload(source(target), checkpoint(target, file, false), { root: local, run });
      assert.equal(plan.files[0].localPath, path.join(local, run, 'model_step_9000.pt'));
      const res = await download(plan, { client });
      assert.equal(res.bytesFetched, size);
      // auto: OpenSSH (the harness logs in with a key), one stream that ssh writes into the .part itself;
      // ssh2: byte ranges over several connections.
      if (client === 'auto') assert.equal(res.client, 'openssh', res.clientNote);
      else assert.ok(res.lanes > 1, `several lanes (got ${res.lanes})`);
      assert.equal(fs.statSync(plan.files[0].localPath).size, size);
      assert.equal(shaStream(plan.files[0].localPath), shaStream(onDisk(target, file)));
      fs.rmSync(plan.files[0].localPath);
    });
  }
});

describe('worker-thread lanes', () => {
  test('they log in with what the shared connection unlocked: one passphrase prompt for a 3-lane download, equal bytes', async () => {
    const file = path.posix.join(remoteBase(HOST), 'encrypted-key', 'model_step_8.pt');
    const data = randomBytes(40 * MiB + 5);
    writeRemote(HOST, file, data);
    const prompter = new ScriptedPrompter({ passphrase: host.sshd.passphrase });
    // Default connect timeout: decrypting the key (bcrypt, in JS) on a loaded machine can take seconds.
    const pool = new ConnectionPool({ prompter, logger: silentLogger, knownHostsFiles: [host.knownHostsFile] });
    pools.push(pool);
    const cfg = host.hostConfig('enc', { identityFile: host.sshd.encryptedKeyPath });
    const dir = new HostDirectory({ hosts: () => [cfg], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const src: TransferSource = { pool, host: dir.resolve(cfg), target: HOST };
    const plan = await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'enc' });
    const logins = host.sshd.acceptedLogins();
    const res = await download(plan, { client: 'ssh2', concurrency: 3, threads: true });
    assert.deepEqual(prompter.asked, ['passphrase'], 'asked once, by the shared connection');
    assert.equal(res.lanes, 3, 'both worker lanes logged in with the unlocked key');
    assert.equal(host.sshd.acceptedLogins() - logins, 2, 'one login per worker lane (the shared one was already open)');
    assert.equal(sha(plan.files[0].localPath), createHash('sha256').update(data).digest('hex'));
  });
});

describe('resume', () => {
  // Every interruption here (a killed connection, a cancel) must come while the download is in flight. Over a link
  // of the test's own at 64 MiB/s the rest of the file takes a second or more after the trigger, and the trigger
  // holds the link's gate while it strikes; straight over loopback it raced the copy (OpenSSH wrote 160 MiB before a
  // busy test looked, ssh2 could finish before its first throttled progress report).
  let link: ProxiedHost;
  before(async () => {
    link = await host.throughProxy({ rateBytesPerSec: 64 * MiB });
  });

  /**
   * Start a download through the link and call `interrupt` once `fraction` of it is done (test/harness/faults.ts's
   * strikeMidDownload); asserts that it struck while most of the file had not crossed the link yet.
   */
  async function downloadUntil(plan: Awaited<ReturnType<typeof planDownload>>, fraction: number, interrupt: () => void, opts: DownloadOptions = {}) {
    const total = plan.files.reduce((n, f) => n + f.bytes, 0);
    const strike = strikeMidDownload(link.proxy, fraction, interrupt);
    try {
      return await download(plan, { ...opts, onProgress: strike.onProgress });
    } finally {
      await strike.done.catch(() => undefined);
      assert.ok(strike.struck, 'the interruption came');
      assert.ok(strike.linkBytesAt < total, `it came mid-transfer: ${strike.linkBytesAt} of ${total} bytes had crossed the link`);
    }
  }

  for (const client of ['openssh', 'ssh2'] as const)
  for (const target of [HOST, DOCKER]) {
    test(`${target.kind}, ${client}: a connection killed mid-transfer (sshd child by pid) is retried and nothing it had is fetched again`, async () => {
      const file = path.posix.join(remoteBase(target), `kill-${target.kind}-${client}`, 'model_step_1.pt');
      // Two seconds over the link: the kill lands with most of it still to come (downloadUntil checks that).
      const data = randomBytes(128 * MiB);
      writeRemote(target, file, data);
      const src = source(target, link);
      const plan = await planDownload(src, checkpoint(target, file, false), { root: local, run: `kill-${target.kind}-${client}` });
      let killed = 0;
      let onDiskAtKill = 0;
      const res = await downloadUntil(plan, 0.1, () => {
        onDiskAtKill = fs.statSync(plan.files[0].paths.part).blocks * 512; // bytes written: ranges make the size run ahead
        killed = host.sshd.killConnections();
      }, { client, segmentBytes: 16 * MiB, streamsPerFile: 2 }); // two streams at once: the kill lands mid-stream
      assert.equal(res.client, client);
      assert.ok(killed > 0, 'connections were killed');
      if (client === 'openssh') assert.ok(onDiskAtKill < data.length, `the kill came mid-stream (${onDiskAtKill} of ${data.length} bytes on disk)`);
      assert.ok(res.retries >= 1, `the download retried (${JSON.stringify({ killed, onDiskAtKill, retries: res.retries, fetched: res.bytesFetched })})`);
      assert.equal(res.bytesFetched, data.length, 'every byte crossed the network exactly once');
      assert.equal(sha(plan.files[0].localPath), createHash('sha256').update(data).digest('hex'));
    });
  }

  test('cancel leaves a .part the next download continues; a corrupted byte in the resumed part is found by the hashes and that range fetched again', async () => {
    const file = path.posix.join(remoteBase(PCT), 'cancel', 'step_7', 'weights.bin');
    const data = randomBytes(96 * MiB);
    writeRemote(PCT, file, data);
    const src = source(PCT, link);
    const ck = checkpoint(PCT, path.posix.dirname(file), true);
    const plan = await planDownload(src, ck, { root: local, run: 'cancel' });
    const ac = new AbortController();
    await rejectsWith(downloadUntil(plan, 0.25, () => ac.abort(), { signal: ac.signal }), 'cancelled');
    const localFile = plan.files[0].localPath;
    const state = plan.files[0].paths;
    assert.ok(!fs.existsSync(localFile), 'no file that looks complete');
    assert.ok(fs.existsSync(state.part) && fs.existsSync(state.partRecord));
    assert.deepEqual(fs.readdirSync(path.dirname(localFile)), [], 'nothing of the download inside the checkpoint folder');
    // Cancelling closed every channel: the pool's connection ends up with none open (each close is
    // acknowledged by the server asynchronously, so wait for the count rather than read it once).
    const lease = await src.pool.acquire(src.host);
    await eventually(() => lease.connection.openChannels === 0, 'every channel of the cancelled download closed');
    lease.dispose();

    const replan = await planDownload(src, ck, { root: local, run: 'cancel' });
    assert.equal(replan.files[0].state.kind, 'partial');
    const have = replan.files[0].state.kind === 'partial' ? replan.files[0].state.bytes : 0;
    assert.ok(have > 0 && have < data.length, `partial bytes ${have}`);

    // Corrupt one byte inside a range the record says is done: sizes still agree, the hashes must not.
    const rec = JSON.parse(fs.readFileSync(state.partRecord, 'utf8')) as { done: [number, number][] };
    const fd = fs.openSync(state.part, 'r+');
    fs.writeSync(fd, Buffer.from([data[rec.done[0][0]] ^ 0xff]), 0, 1, rec.done[0][0]);
    fs.closeSync(fd);
    const p1 = await planDownload(src, ck, { root: local, run: 'cancel' });
    assert.equal(p1.files[0].state.kind, 'partial');
    const fixed = await download(p1);
    assert.equal(fixed.files[0].hashMismatches, 1, 'one range disagreed');
    assert.ok(fixed.files[0].refetchedBytes > 0 && fixed.files[0].refetchedBytes <= have, `only the bad range was fetched again (${fixed.files[0].refetchedBytes})`);
    assert.equal(sha(localFile), createHash('sha256').update(data).digest('hex'));
    assert.ok(!fs.existsSync(state.part) && !fs.existsSync(state.partRecord), 'no .part left once complete');
  });

  test('a resumed download fetches only the missing bytes', async () => {
    const file = path.posix.join(remoteBase(HOST), 'resume', 'ckpt_3.pt');
    const data = randomBytes(80 * MiB);
    writeRemote(HOST, file, data);
    const src = source(HOST, link);
    const plan = await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'resume' });
    const ac = new AbortController();
    await rejectsWith(downloadUntil(plan, 0.4, () => ac.abort(), { signal: ac.signal }), 'cancelled');
    const replan = await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'resume' });
    assert.equal(replan.files[0].state.kind, 'partial');
    const have = replan.files[0].state.kind === 'partial' ? replan.files[0].state.bytes : 0;
    const res = await download(replan, { verify: 'sha256' });
    assert.equal(res.files[0].outcome, 'resumed');
    assert.equal(res.files[0].resumedBytes, have);
    assert.equal(res.bytesFetched, data.length - have);
    assert.equal(sha(replan.files[0].localPath), createHash('sha256').update(data).digest('hex'));
  });

  test('bytes that keep differing on this disk: fetched again once, then verify-failed naming both hashes; nothing renamed', async () => {
    // SFTP ranges are proven at the end, by hashing the .part on disk and the same range on the remote side. A byte
    // flipped in the .part each time the check is about to run stands for a disk (or something else) that changes
    // what was written: the first mismatch fetches that range again, the second one fails.
    const file = path.posix.join(remoteBase(HOST), 'rot', 'model.pt');
    const data = randomBytes(6 * MiB);
    writeRemote(HOST, file, data);
    const src = source(HOST);
    const plan = await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'rot' });
    let flips = 0;
    const err = await rejectsWith(
      download(plan, {
        client: 'ssh2',
        transport: 'sftp',
        onProgress: (p) => {
          // The verify phase's first report (nothing hashed yet) is where a check starts.
          if (p.phase !== 'verify' || p.verifyDone !== 0) return;
          const fd = fs.openSync(plan.files[0].paths.part, 'r+');
          fs.writeSync(fd, Buffer.from([data[3 * MiB] ^ 0x10]), 0, 1, 3 * MiB);
          fs.closeSync(fd);
          flips++;
        },
      }),
      'verify-failed',
    );
    assert.equal(flips, 2, 'checked twice: once, and after fetching again');
    const remote = createHash('sha256').update(data).digest('hex');
    assert.match(err.message, new RegExp(`remote ${remote}, local [0-9a-f]{64}`));
    assert.ok(!fs.existsSync(plan.files[0].localPath), 'nothing that looks complete');
    assert.ok(fs.existsSync(plan.files[0].paths.part), 'the .part is kept');
  });

  test('a remote file that changed between attempts is detected and fetched again from zero', async () => {
    const file = path.posix.join(remoteBase(DOCKER), 'changes', 'model_step_5.pt');
    writeRemote(DOCKER, file, randomBytes(48 * MiB));
    const src = source(DOCKER, link);
    const ck = checkpoint(DOCKER, file, false);
    const plan = await planDownload(src, ck, { root: local, run: 'changes' });
    const ac = new AbortController();
    await rejectsWith(downloadUntil(plan, 0.3, () => ac.abort(), { signal: ac.signal }), 'cancelled');
    const newer = randomBytes(48 * MiB); // same size: only the mtime tells
    writeRemote(DOCKER, file, newer);
    fs.utimesSync(onDisk(DOCKER, file), new Date(), new Date(Date.now() + 5000));
    const replan = await planDownload(src, ck, { root: local, run: 'changes' });
    assert.equal(replan.files[0].state.kind, 'stale-partial');
    const res = await download(replan, { verify: 'sha256' });
    assert.equal(res.bytesFetched, newer.length);
    assert.ok(res.files[0].refetchedBytes > 0);
    assert.equal(sha(replan.files[0].localPath), createHash('sha256').update(newer).digest('hex'));
  });
});

describe('names, consent and disk space', () => {
  test('hostile file and checkpoint names arrive intact, from the bare host and a container', async () => {
    for (const target of [HOST, PCT]) {
      const ck = path.posix.join(remoteBase(target), 'hostile', `step_1 $(touch CANARY) 'q"`);
      const names = host.hostileNames;
      const contents = new Map(names.map((n) => [n, randomBytes(1000 + n.length)]));
      for (const [n, d] of contents) writeRemote(target, path.posix.join(ck, n), d);
      const plan = await planDownload(source(target), checkpoint(target, ck, true), { root: local, run: `hostile ${target.kind}` });
      const res = await download(plan, { verify: 'sha256', concurrency: 2 });
      assert.equal(res.files.length, names.length);
      for (const [n, d] of contents) assert.ok(fs.readFileSync(path.join(plan.localRoot, n)).equals(d), JSON.stringify(n));
      assert.ok(!fs.existsSync(path.join(host.dir, 'CANARY')) && !fs.existsSync(onDisk(target, '/CANARY')));
    }
  });

  test('a destination that holds a different file is only replaced after asking', async () => {
    const file = path.posix.join(remoteBase(HOST), 'consent', 'model_step_2.pt');
    const data = randomBytes(3 * MiB);
    writeRemote(HOST, file, data);
    const src = source(HOST);
    const localFile = path.join(local, 'consent', 'model_step_2.pt');
    fs.mkdirSync(path.dirname(localFile), { recursive: true });
    fs.writeFileSync(localFile, 'my own notes, not a checkpoint');
    const plan = await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'consent' });
    assert.deepEqual(plan.files[0].state, { kind: 'differs', reason: 'no-record', localBytes: 30 });
    const asked: string[] = [];
    const declined = await download(plan, { overwrite: async (f) => (asked.push(f.relative), false) });
    assert.deepEqual(asked, ['model_step_2.pt']);
    assert.equal(declined.files[0].outcome, 'declined');
    assert.equal(fs.readFileSync(localFile, 'utf8'), 'my own notes, not a checkpoint');
    const accepted = await download(plan, { overwrite: async () => true });
    assert.equal(accepted.files[0].outcome, 'downloaded');
    assert.ok(fs.readFileSync(localFile).equals(data));
    // Asking for a checksum later hashes both sides instead of fetching again.
    const hashed = await download(await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'consent' }), { verify: 'sha256' });
    assert.equal(hashed.bytesFetched, 0);
    assert.equal(hashed.files[0].outcome, 'already-complete');
    assert.equal(hashed.files[0].sha256, createHash('sha256').update(data).digest('hex'));
    // A file we downloaded and the user then edited is theirs again: asked first.
    fs.appendFileSync(localFile, 'edit');
    const edited = await planDownload(src, checkpoint(HOST, file, false), { root: local, run: 'consent' });
    assert.equal(edited.files[0].state.kind, 'differs');
  });

  for (const concurrency of [1, 2]) {
    test(`ssh2: a disk that fills up during the download stops it with disk-full, keeps the .part, and touches nothing else (${concurrency === 1 ? 'one lane' : 'two lanes, one writing from a worker thread'})`, async () => {
      const mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-filling-'));
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=24m', 'rr-filling', mnt]);
      try {
        const file = path.posix.join(remoteBase(HOST), 'filling', 'model_step_4.pt');
        writeRemote(HOST, file, randomBytes(16 * MiB));
        const neighbour = path.join(mnt, 'neighbour.txt');
        fs.writeFileSync(neighbour, 'keep me');
        const plan = await planDownload(source(HOST), checkpoint(HOST, file, false), { root: mnt, run: 'filling' });
        let filled = false;
        const err = await rejectsWith(
          download(plan, {
            client: 'ssh2',
            concurrency,
            threads: concurrency > 1,
            onProgress: (p) => {
              // Another program takes the rest of the disk once the download is under way.
              if (!filled && p.bytesDone > 0) {
                filled = true;
                try {
                  fs.writeFileSync(path.join(mnt, 'filler'), Buffer.alloc(24 * MiB));
                } catch {
                  // ENOSPC for the filler itself: the disk is full, which is the point.
                }
              }
            },
          }),
          'disk-full',
        );
        assert.ok(filled, 'the disk was filled mid-download');
        assert.match(err.message, /space|full/i);
        assert.ok(fs.existsSync(plan.files[0].paths.part), 'what was written is kept');
        assert.ok(!fs.existsSync(plan.files[0].localPath), 'no file that looks complete');
        assert.equal(fs.readFileSync(neighbour, 'utf8'), 'keep me');
      } finally {
        execFileSync('umount', [mnt]);
        fs.rmSync(mnt, { recursive: true, force: true });
      }
    });
  }

  test('a destination without room is refused before anything is fetched', async () => {
    const mnt = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-small-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'rr-small', mnt]);
    try {
      const file = path.posix.join(remoteBase(HOST), 'full', 'model_step_3.pt');
      writeRemote(HOST, file, randomBytes(4 * MiB));
      const plan = await planDownload(source(HOST), checkpoint(HOST, file, false), { root: mnt, run: 'full' });
      const err = await rejectsWith(download(plan), 'disk-full');
      assert.match(err.message, /Not enough space/);
      assert.ok(!fs.existsSync(plan.files[0].paths.part));
    } finally {
      execFileSync('umount', [mnt]);
      fs.rmSync(mnt, { recursive: true, force: true });
    }
  });
});

test('small files rewritten between the listing and their batch (same size, new bytes and mtime) arrive as the new version, and the next pull finds every file already there', async () => {
  const ck = path.posix.join(remoteBase(HOST), 'rewritten', 'step_1');
  const names = Array.from({ length: 100 }, (_, i) => `f${String(i).padStart(3, '0')}.bin`);
  for (const n of names) writeRemote(HOST, path.posix.join(ck, n), Buffer.from(`old ${n}\n`));
  const src = source(HOST);
  const plan = await planDownload(src, checkpoint(HOST, ck, true), { root: local, run: 'rewritten' });
  // Rewritten after the plan listed them: the batch brings the new bytes with matching hashes, its stat a new mtime.
  const changed = names.slice(0, 5);
  const later = new Date(Date.now() + 10_000);
  for (const n of changed) {
    fs.writeFileSync(path.join(ck, n), `new ${n}\n`);
    fs.utimesSync(path.join(ck, n), later, later);
  }
  const res = await download(plan, { verify: 'sha256' });
  for (const n of names) assert.equal(fs.readFileSync(path.join(plan.localRoot, n), 'utf8'), `${changed.includes(n) ? 'new' : 'old'} ${n}\n`, n);
  assert.equal(res.files.length, names.length);
  // Each record names the version it holds: nothing is taken for a local change to ask about.
  const again = await planDownload(src, checkpoint(HOST, ck, true), { root: local, run: 'rewritten' });
  assert.deepEqual(again.files.filter((f) => f.state.kind !== 'complete-verified').map((f) => `${f.relative}: ${f.state.kind}`), []);
  const res2 = await download(again, { verify: 'sha256' });
  assert.equal(res2.bytesFetched, 0);
  assert.ok(res2.files.every((f) => f.outcome === 'already-complete'));
});
