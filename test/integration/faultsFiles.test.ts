/**
 * Files that vanish or change under a running operation, against the real test host: a checkpoint deleted while it
 * downloads (bare host over SFTP, and inside a pct container over exec), a metrics log rotated, truncated or
 * truncated-and-regrown while it is tailed, a container stopped while its run is open, and the local disk filling
 * up during a download (a tmpfs of its own). Each ends in a clear error kind or in the right data, never a hang,
 * and what was already downloaded is kept.
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
import { RemoteRunsCore, runsOf } from '../../src/core/service';
import type { Executor } from '../../src/core/remote';
import type { Checkpoint, HostConfig, TargetRef } from '../../src/core/types';
import { download, planDownload } from '../../src/core/transfer';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { toRunRef } from '../../src/core/runRef';
import { setContainerState } from '../shims/shimState';
import { startTestHost, ScriptedPrompter, type ProxiedHost, type TestHost } from '../harness/testHost';
import { rejectsWith } from '../harness/assertKind';
import { smallDisk, strikeMidDownload } from '../harness/faults';
import { silentLogger } from '../builders/pool';

const HOST: TargetRef = { kind: 'host', id: '' };
const PCT: TargetRef = { kind: 'pct', id: '200' };
const MiB = 1 << 20;

let host: TestHost;
let pool: ConnectionPool;
let core: RemoteRunsCore;
let resolved: ReturnType<HostDirectory['resolve']>;
let local: string;

before(async () => {
  host = await startTestHost();
  pool = new ConnectionPool({
    prompter: new ScriptedPrompter(),
    logger: silentLogger,
    knownHostsFiles: [host.knownHostsFile],
    connectTimeoutMs: 5000,
    backoffBaseMs: 50,
  });
  const hosts: HostConfig[] = [host.hostConfig('testbox')];
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  resolved = dir.resolve(hosts[0]);
  core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h): Executor => pool.executor(dir.resolve(h), { idempotent: true }) });
  local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-faults-files-'));
});
after(async () => {
  pool?.dispose();
  await host?.stop();
  fs.rmSync(local, { recursive: true, force: true });
});

/** The host directory for a link's host config (the pool resolves hosts through it). */
function dirOf(link: ProxiedHost): HostDirectory {
  return new HostDirectory({ hosts: () => [link.hostConfig('testbox')], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
}

/** Where a remote path of a target is on this machine (the test host is local). */
function onDisk(target: TargetRef, remotePath: string): string {
  return target.kind === 'host' ? remotePath : path.join(host.containers.pct200.rootfs, remotePath);
}

function remoteDir(target: TargetRef, name: string): string {
  return target.kind === 'host' ? path.join(host.dir, 'faults', name) : `/workspace/faults/${name}`;
}

/** Write remote files (random bytes, MiB each) into a folder checkpoint; returns the checkpoint. */
function writeCheckpoint(target: TargetRef, name: string, files: Record<string, number>): { ckpt: Checkpoint; data: Map<string, Buffer> } {
  const folder = remoteDir(target, name);
  const data = new Map<string, Buffer>();
  for (const [rel, mib] of Object.entries(files)) {
    const buf = randomBytes(mib * MiB);
    data.set(rel, buf);
    fs.mkdirSync(path.dirname(onDisk(target, `${folder}/${rel}`)), { recursive: true });
    fs.writeFileSync(onDisk(target, `${folder}/${rel}`), buf);
  }
  execFileSync('chmod', ['-R', 'a+rX', onDisk(target, folder)]);
  const ckpt: Checkpoint = { name, kind: 'step' as const, step: 1, layout: 'step_N', path: folder, isDir: true, bytes: 0, mtime: 0, files: [], newest: true };
  return { ckpt, data };
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('a checkpoint deleted while it downloads', () => {
  // Through a link of the test's own at 16 MiB/s, so 32 MiB take two seconds: the deletion comes at the first progress
  // report past 4 MiB, with the link's gate closed, while most of the file provably has not left the server yet.
  // (Straight over loopback, ssh2 fetched all 32 MiB before its first throttled progress report: the deletion then
  // came after the download's last check, and the download rightly succeeded. A race in the test, not the product.)
  let link: ProxiedHost;
  before(async () => {
    link = await host.throughProxy({ rateBytesPerSec: 16 * MiB });
  });

  for (const client of ['openssh', 'ssh2'] as const)
  for (const target of [HOST, PCT]) {
    test(`${target.kind}, ${client}: path-missing, saying it disappeared; the .part is kept and no complete-looking file appears`, async () => {
      const { ckpt } = writeCheckpoint(target, `vanish-${target.kind}-${client}`, { 'model.pt': 32 });
      const source = { pool, host: dirOf(link).resolve(link.hostConfig('testbox')), target };
      const plan = await planDownload(source, ckpt, { root: local, run: `vanish-${target.kind}-${client}` });
      const strike = strikeMidDownload(link.proxy, 4 / 32, () => fs.rmSync(onDisk(target, ckpt.path), { recursive: true }));
      const e = await rejectsWith(download(plan, { client, concurrency: 1, segmentBytes: 2 * MiB, onProgress: strike.onProgress }), 'path-missing');
      await strike.done;
      assert.ok(strike.struck, 'the checkpoint was deleted mid-download');
      assert.ok(strike.linkBytesAt < 32 * MiB, `the download was in flight: ${strike.linkBytesAt} bytes had crossed the link`);
      assert.match(e.message, /(model\.pt disappeared while it was downloaded|vanish-[\w-]+ no longer exists on the remote side)/);
      const file = plan.files[0].localPath;
      assert.ok(fs.statSync(plan.files[0].paths.part).size > 0, 'what arrived is kept in the .part');
      assert.equal(fs.existsSync(file), false, 'no file that looks complete');
    });
  }
});

describe('a metrics log changing under the tail', () => {
  const log = (): string => path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl');
  const lines = (from: number, n: number, loss: number): string =>
    Array.from({ length: n }, (_, i) => `${JSON.stringify({ step: from + i, loss: loss + i / 1000 })}\n`).join('');

  async function openFeed(): Promise<RunFeed> {
    const listing = await core.listTarget('testbox', PCT);
    const run = runsOf(listing).find((r) => r.path === '/workspace')!;
    const feed = new RunFeed(toRunRef('testbox', listing.target, run), { executor: () => core.executor('testbox'), intervalMs: () => 60_000 });
    await feed.pollNow();
    assert.equal(feed.status, 'following');
    return feed;
  }

  test('rotated (renamed away, a new file started): the new file is read from its start', async () => {
    const feed = await openFeed();
    try {
      fs.renameSync(log(), `${log()}.1`);
      fs.writeFileSync(log(), lines(1, 5, 7), { mode: 0o644 });
      await feed.pollNow();
      assert.deepEqual([...feed.series().get('loss')!.x], [1, 2, 3, 4, 5]);
      fs.appendFileSync(log(), lines(6, 2, 7));
      await feed.pollNow();
      assert.deepEqual([...feed.series().get('loss')!.x], [1, 2, 3, 4, 5, 6, 7], 'and followed on from there');
      assert.equal(feed.status, 'following');
    } finally {
      feed.dispose();
    }
  });

  test('truncated in place (copytruncate), then written again: read again from the start', async () => {
    fs.writeFileSync(log(), lines(100, 50, 1));
    const feed = await openFeed();
    try {
      assert.equal(feed.series().get('loss')!.length, 50);
      fs.truncateSync(log(), 0); // same inode, shorter
      await feed.pollNow();
      fs.appendFileSync(log(), lines(1, 3, 2));
      await feed.pollNow();
      assert.deepEqual([...feed.series().get('loss')!.x], [1, 2, 3]);
    } finally {
      feed.dispose();
    }
  });

  test('truncated and regrown past the old size between two polls: noticed by its head, read again', async () => {
    fs.writeFileSync(log(), lines(100, 10, 1));
    const feed = await openFeed();
    try {
      const size = fs.statSync(log()).size;
      // Same inode, bigger than before, different bytes at the start: only the head tells it is another text.
      fs.writeFileSync(log(), lines(500_000, 40, 3));
      assert.ok(fs.statSync(log()).size > size);
      await feed.pollNow();
      assert.deepEqual([...feed.series().get('loss')!.x], Array.from({ length: 40 }, (_, i) => 500_000 + i));
      assert.equal(feed.badLines, 0, 'no line read from the middle of the new text');
    } finally {
      feed.dispose();
    }
  });
});

describe('a container stopped while its run is open', () => {
  test('the feed says the container is stopped and keeps its curve; the listing says stopped, not empty; a restart resumes', async () => {
    const log = path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl');
    fs.writeFileSync(log, `${JSON.stringify({ step: 1, loss: 1 })}\n`);
    const listing = await core.listTarget('testbox', PCT);
    const run = runsOf(listing).find((r) => r.path === '/workspace')!;
    const feed = new RunFeed(toRunRef('testbox', listing.target, run), { executor: () => core.executor('testbox'), intervalMs: () => 60_000 });
    try {
      await feed.pollNow();
      assert.equal(feed.series().get('loss')!.length, 1);
      setContainerState(host.containers.pct200, 'stopped');
      assert.equal(await feed.pollNow(), false);
      assert.match(feed.status, /^container-stopped: Container 200 is stopped/);
      assert.equal(feed.series().get('loss')!.length, 1, 'what was shown stays');
      await rejectsWith(core.listTarget('testbox', PCT), 'container-stopped');

      fs.appendFileSync(log, `${JSON.stringify({ step: 2, loss: 0.5 })}\n`);
      setContainerState(host.containers.pct200, 'running');
      assert.equal(await feed.pollNow(), true);
      assert.equal(feed.status, 'following');
      assert.deepEqual([...feed.series().get('loss')!.x], [1, 2]);
    } finally {
      setContainerState(host.containers.pct200, 'running');
      feed.dispose();
    }
  });
});

describe('the local disk fills up during a download', () => {
  test('disk-full, the .part kept, nothing else touched; with room again the download resumes from the .part', async () => {
    const disk = smallDisk(24);
    try {
      // Something already there: an earlier checkpoint of the same run and a file of the user's.
      const earlier = writeCheckpoint(PCT, 'step_100', { 'model.pt': 2 });
      const earlierPlan = await planDownload({ pool, host: resolved, target: PCT }, earlier.ckpt, { root: disk.dir, run: 'filling' });
      await download(earlierPlan);
      const neighbour = path.join(disk.dir, 'notes.txt');
      fs.writeFileSync(neighbour, 'mine');
      const before = new Map(listFiles(disk.dir).map((f) => [f, fs.readFileSync(f)]));

      const { ckpt, data } = writeCheckpoint(PCT, 'step_200', { 'model.pt': 12, 'optimizer.pt': 6 });
      // Through a 16 MiB/s link of the test's own: the disk is filled at the first progress report of the transfer,
      // with the link's gate closed, while most of the 18 MiB are provably still on the remote side.
      const link = await host.throughProxy({ rateBytesPerSec: 16 * MiB });
      const plan = await planDownload({ pool, host: dirOf(link).resolve(link.hostConfig('testbox')), target: PCT }, ckpt, { root: disk.dir, run: 'filling' });
      const filler = path.join(disk.dir, 'filler');
      // Another program takes the rest of the disk once the download is under way.
      const strike = strikeMidDownload(link.proxy, 0, () => {
        try {
          fs.writeFileSync(filler, Buffer.alloc(24 * MiB));
        } catch {
          // ENOSPC for the filler too: the disk is full, which is the point
        }
      });
      const e = await rejectsWith(
        // Ranges over ssh2, the disk filled after the first: OpenSSH's stream is covered in transferOpenssh.
        download(plan, { client: 'ssh2', concurrency: 1, segmentBytes: 2 * MiB, onProgress: strike.onProgress }),
        'disk-full',
      );
      await strike.done;
      assert.ok(strike.struck, 'the disk filled mid-download');
      assert.ok(strike.linkBytesAt < 18 * MiB, `the download was in flight: ${strike.linkBytesAt} bytes had crossed the link`);
      assert.match(e.message, /space|full/i);
      const parts = plan.files.filter((f) => fs.existsSync(f.paths.part));
      assert.ok(parts.length >= 1 && fs.statSync(parts[0].paths.part).size > 0, 'what was written is kept');
      for (const f of plan.files) assert.equal(fs.existsSync(f.localPath), false, `${f.relative}: no complete-looking file`);
      for (const [f, bytes] of before) assert.deepEqual(fs.readFileSync(f), bytes, `${f} untouched`);
      assert.deepEqual(listFiles(disk.dir).filter((f) => f.endsWith('.tmp')), [], 'no half-written temp files left behind');

      // Room again: nothing already on disk is fetched a second time.
      fs.rmSync(filler);
      const again = await planDownload({ pool, host: resolved, target: PCT }, ckpt, { root: disk.dir, run: 'filling' });
      const res = await download(again);
      assert.ok(res.files.some((f) => f.resumedBytes > 0), 'resumed from the .part');
      for (const f of again.files) assert.equal(sha(fs.readFileSync(f.localPath)), sha(data.get(f.relative)!), f.relative);
    } finally {
      disk.dispose();
    }
  });
});

function listFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? listFiles(path.join(dir, d.name)) : [path.join(dir, d.name)]));
}
