/**
 * Several OpenSSH streams of one file, each written by ssh at its place in the `.part` (transfer/opensshLane.ts
 * placed): against a real sshd, the streams' stdout is the `.part` itself (no byte piped through this process), the
 * file comes out byte-equal, and a pull cancelled while the ranges are in flight resumes with nothing fetched twice.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ConnectionPool, PoolHost } from '../../src/core/ssh/pool';
import type { Checkpoint, TargetRef } from '../../src/core/types';
import { download, planDownload } from '../../src/core/transfer';
import { startSshd, type TestSshd } from '../harness/sshd';
import { startTcpProxy, type TcpProxy } from '../harness/tcpProxy';
import { strikeMidDownload } from '../harness/faults';
import { rejectsWith } from '../harness/assertKind';
import { flatCheckpoint, knownHostsWithProxies, testPool } from '../builders/pool';

const MiB = 1 << 20;
const HOST: TargetRef = { kind: 'host', id: '' };
/** Three ranges at four streams a file: pieces are at least 64 MiB (download.ts OPENSSH_MIN_PIECE). */
const SIZE = 160 * MiB + 13;

let s: TestSshd;
let dir: string;
let knownHosts: string;
let proxy: TcpProxy;
let data: Buffer;
let ckpt: Checkpoint;
const pools: ConnectionPool[] = [];

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-placed-'));
  fs.chmodSync(dir, 0o755);
  s = await startSshd();
  // Rate-limited, so a cancel lands while every range is still in flight.
  proxy = await startTcpProxy(s.port, { rateBytesPerSec: 64 * MiB });
  knownHosts = knownHostsWithProxies(s, dir, proxy.port);
  // Random bytes: a range written at the wrong place cannot come out equal.
  data = randomBytes(SIZE);
  const file = path.join(dir, 'model_step_9.pt');
  fs.writeFileSync(file, data, { mode: 0o644 });
  ckpt = flatCheckpoint(file, 9);
});
after(async () => {
  for (const p of pools) p.dispose();
  await proxy?.close();
  await s?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

function pool(): ConnectionPool {
  const p = testPool({ knownHostsFile: knownHosts }, { agent: null, backoffBaseMs: 50 });
  pools.push(p);
  return p;
}

function host(port: number): PoolHost {
  return { name: 'placed', jumps: [], target: { alias: 'placed', hostname: s.host, port, user: s.user, identityFiles: [s.clientKeyPath], identitiesOnly: true } };
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** What the stdout of each running `ssh` stream of ours is (a mux client of a transfer session: `-F …/rr-ssh-…/config -T`). */
function streamOutputs(): Map<number, string> {
  const out = new Map<number, string>();
  for (const n of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${n}/cmdline`, 'utf8').split('\0');
      if (!cmd[0].endsWith('ssh') || !cmd.includes('-T') || !cmd.some((a) => /\/rr-ssh-[^/]+\/config$/.test(a))) continue;
      const stat = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== process.pid) continue;
      out.set(Number(n), fs.readlinkSync(`/proc/${n}/fd/1`));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

describe('ranges written by ssh at their place', { skip: process.platform !== 'linux' && 'offsets are read from /proc' }, () => {
  test('four streams a file: every stream writes the .part itself, and the file comes out byte-equal', { timeout: 300_000 }, async () => {
    const plan = await planDownload({ pool: pool(), host: host(s.port), target: HOST }, ckpt, { root: path.join(dir, 'pulled'), run: 'placed' });
    const part = plan.files[0].paths.part;
    const seen = new Map<number, string>();
    const res = await download(plan, {
      client: 'openssh',
      streamsPerFile: 4,
      onProgress: (p) => {
        if (p.phase === 'transfer') for (const [pid, out] of streamOutputs()) seen.set(pid, out);
      },
    });
    assert.equal(res.client, 'openssh');
    assert.ok(seen.size >= 2, `several streams seen at once (${seen.size})`);
    for (const [pid, out] of seen) assert.equal(out, part, `ssh ${pid} writes ${out}`);
    assert.equal(res.bytesFetched, SIZE);
    assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
    fs.rmSync(path.join(dir, 'pulled'), { recursive: true, force: true });
  });

  test('cancelled while three ranges are in flight: the next pull fetches only what was not recorded, byte-equal', { timeout: 300_000 }, async () => {
    const root = path.join(dir, 'resumed');
    const plan = await planDownload({ pool: pool(), host: host(proxy.port), target: HOST }, ckpt, { root, run: 'placed' });
    const ac = new AbortController();
    const strike = strikeMidDownload(proxy, 0.3, () => ac.abort());
    await rejectsWith(download(plan, { client: 'openssh', streamsPerFile: 4, signal: ac.signal, onProgress: strike.onProgress }), 'cancelled');
    assert.ok(strike.struck && strike.linkBytesAt < SIZE, `cancelled mid-transfer: ${strike.linkBytesAt} of ${SIZE} bytes had crossed the link`);
    const part = plan.files[0].paths.part;
    const kept = fs.statSync(part).blocks * 512; // bytes written: the ranges make the size run ahead
    assert.ok(kept > 0 && kept < SIZE, `the .part is kept (${kept} bytes)`);
    const res = await download(await planDownload({ pool: pool(), host: host(s.port), target: HOST }, ckpt, { root, run: 'placed' }), { client: 'openssh', streamsPerFile: 4 });
    assert.ok(res.files[0].resumedBytes > 0, 'resumed');
    assert.equal(res.bytesFetched + res.files[0].resumedBytes, SIZE, 'nothing fetched twice');
    assert.equal(sha(fs.readFileSync(plan.files[0].localPath)), sha(data));
  });
});
