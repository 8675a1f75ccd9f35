/**
 * The set-up of the tests that stop a pull while `ssh` itself writes into a file's `.part` (one OpenSSH stream per
 * file): a 48 MiB one-file checkpoint on the test host, reached through a proxy at 12 MB/s so the stream is still
 * running a quarter of the way in, planned with the pool given, and the pull cancelled there. The test asserts what
 * its own pool did with the link; this gives it the plan, the log lines and the `.part`'s size at the stop.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { HostDirectory } from '../../src/core/hosts';
import type { ConnectionPool, PoolHost } from '../../src/core/ssh/pool';
import { download, planDownload, type DownloadOptions, type DownloadPlan } from '../../src/core/transfer';
import type { Checkpoint, TargetRef } from '../../src/core/types';
import type { TestHost } from '../harness/testHost';

export interface StoppedPull {
  /** The proxied host and the checkpoint, to plan the next pull with. */
  host: PoolHost;
  checkpoint: Checkpoint;
  dest: { root: string; run: string };
  data: Buffer;
  plan: DownloadPlan;
  /** Everything the stopped pull logged. */
  lines: string[];
  /** The first file's `.part` and its size when the pull had stopped. */
  part: string;
  size: number;
}

/**
 * Put the checkpoint in `host.dir/<folder>`, plan it with `makePool`'s pool through a 12 MB/s proxy (the proxied host
 * is named `direct`), start the pull with `options`, cancel it past a quarter and wait for it to reject as cancelled.
 */
export async function stopPullQuarterIn(
  host: TestHost,
  o: { folder: string; root: string; target: TargetRef; makePool: () => ConnectionPool; options?: Partial<DownloadOptions> },
): Promise<{ pool: ConnectionPool; stopped: StoppedPull }> {
  // 48 MiB at 12 MB/s: one stream for the file (under two pieces), written by ssh into the .part itself.
  const link = await host.throughProxy({ rateBytesPerSec: 12 * 1024 * 1024 });
  const pool = o.makePool();
  const data = randomBytes(48 * 1024 * 1024);
  const run = path.join(host.dir, o.folder, 'd');
  fs.mkdirSync(path.join(run, 'step_1'), { recursive: true });
  fs.writeFileSync(path.join(run, 'step_1', 'model.bin'), data);
  execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, o.folder)]);
  const config = link.hostConfig('direct');
  const h = new HostDirectory({ hosts: () => [config], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' }).resolve(config);
  const checkpoint: Checkpoint = { name: 'step_1', kind: 'step', step: 1, layout: 'step_N', path: path.join(run, 'step_1'), isDir: true, bytes: data.length, mtime: 0, files: [], newest: true };
  const dest = { root: o.root, run: 'direct' };
  const plan = await planDownload({ pool, host: h, target: o.target }, checkpoint, dest);
  const ac = new AbortController();
  const lines: string[] = [];
  await assert.rejects(
    download(plan, {
      ...o.options,
      signal: ac.signal,
      logger: { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) },
      onProgress: (pr) => {
        if (pr.bytesDone > data.length / 4) ac.abort();
      },
    }),
    /cancel/i,
  );
  const part = plan.files[0].paths.part;
  return { pool, stopped: { host: h, checkpoint, dest, data, plan, lines, part, size: fs.statSync(part).size } };
}

/** Nothing writes into the stopped pull's `.part` any more, and it had stopped mid-file. */
export async function assertPartStill(s: StoppedPull): Promise<void> {
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(fs.statSync(s.part).size, s.size, 'nothing writes into the .part after the pull stopped');
  assert.ok(s.size < s.data.length, `stopped mid-file (${s.size} of ${s.data.length})`);
}
