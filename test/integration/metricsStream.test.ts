/**
 * A long metrics backlog read as one OpenSSH stream (src/core/metrics/follow/tailStream.ts, src/core/metrics/follow/bulkLinks.ts),
 * over the real sshd and the real `ssh`: the first open reads over ssh2 while one OpenSSH login starts beside it;
 * the next opens stream on that session, with the same series as over ssh2, in a handful of ssh2 reads, and no new
 * login (a caller that opens one log, like the CLI, waits for the login instead); the OpenSSH master killed (SIGKILL)
 * mid-stream: the reads go on over ssh2 from where the stream stopped, every line exactly once, and a new session
 * starts; a feed disposed mid-stream kills its stream, and disposing the links leaves no ssh process; no `ssh` to
 * be had: said once in the log, read over ssh2. Reads are small (64 KiB) and streams start at 256 KiB, so a 5 MB
 * log is a long backlog.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { closeIdleParseWorkers, liveParseWorkers, noParseWorkers, parseWorkersStarted } from '../../src/core/metrics/formats/parseOffload';
import { BulkLinks } from '../../src/core/metrics/follow/bulkLinks';
import type { StreamRunner } from '../../src/core/metrics/follow/tailStream';
import type { Executor } from '../../src/core/remote';
import type { HostConfig, TargetRef } from '../../src/core/types';
import type { RunRefWire } from '../../src/shared/metricsProtocol';
import type { Series } from '../../src/core/metrics';
import { startTestHost, type TestHost } from '../harness/testHost';
import { alive } from '../harness/processes';
import { testPool } from '../builders/pool';

let host: TestHost;
let pool: ConnectionPool;
let dir: HostDirectory;
let hosts: HostConfig[];
let ref: RunRefWire;
let logSize = 0;
let lossPoints = 0;
const LINES = 80_000;
const READ = 64 * 1024;

before(async () => {
  host = await startTestHost();
  const runDir = path.join(host.dir, 'stream-runs', 'long');
  fs.mkdirSync(path.join(runDir, 'logs'), { recursive: true });
  const log = path.join(runDir, 'logs', 'train.jsonl');
  let text = '';
  for (let s = 0; s < LINES; s++) {
    if (s % 1999 === 7) {
      text += `not json at ${s}\n`;
      continue;
    }
    text += `{"step":${s},"loss":${(1 / (s + 1)).toFixed(6)},"lr":${(3e-4 * (1 - s / LINES)).toExponential(4)},"time":${1.7e9 + s}}\n`;
    lossPoints++;
  }
  fs.writeFileSync(log, text);
  logSize = Buffer.byteLength(text);
  execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, 'stream-runs')]);
  hosts = [host.hostConfig('testbox', { targets: ['host'], runRoots: [path.dirname(runDir)] })];
  pool = testPool(host, { connectTimeoutMs: 30_000 });
  dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  ref = { hostName: 'testbox', target: { kind: 'host', id: '' }, runPath: runDir, runName: 'long', metrics: [log], checkpoints: [] };
});

/** Every rig's links, disposed after the tests even where one failed before disposing its own (a session left up
 * keeps its lifeline, and with it this file's process, alive). */
const allLinks: BulkLinks[] = [];

after(async () => {
  await Promise.all(allLinks.map((l) => l.dispose()));
  closeIdleParseWorkers();
  pool?.dispose();
  await host?.stop();
});

interface Rig {
  core: RemoteRunsCore;
  links: BulkLinks;
  log: string[];
  /** Tail reads that went over ssh2. */
  reads(): number;
  feed(wrap?: (r: StreamRunner) => StreamRunner): RunFeed;
}

function rig(
  options: { client?: 'auto' | 'ssh2'; sshPath?: string; startInBackground?: boolean; loginWaitMs?: number; hostName?: string; streamMaxBytes?: number; run?: RunRefWire; read?: number; streamAbove?: number } = {},
): Rig {
  const name = options.hostName ?? 'testbox';
  const log: string[] = [];
  const logger = { info: (m: string) => log.push(m), warn: (m: string) => log.push(m), error: (m: string) => log.push(m) };
  const links = new BulkLinks(pool, { client: () => options.client ?? 'auto', sshPath: () => options.sshPath, logger, ...(options.startInBackground === false ? { startInBackground: false } : {}), ...(options.loginWaitMs !== undefined ? { loginWaitMs: options.loginWaitMs } : {}) });
  allLinks.push(links);
  let reads = 0;
  const core = new RemoteRunsCore({
    hosts: () => hosts,
    executorFor: (h): Executor => {
      const e = pool.executor(dir.resolve(h), { idempotent: true });
      return { exec: (line, opts) => ((reads += line.includes('@rr-tail@') ? 1 : 0), e.exec(line, opts)) };
    },
    streamFor: (h, target) => links.runner(dir.resolve(h), target),
  });
  return {
    core,
    links,
    log,
    reads: () => reads,
    feed: (wrap) =>
      new RunFeed({ ...(options.run ?? ref), hostName: name }, {
        executor: () => core.executor(name),
        stream: (target: TargetRef) => {
          const r = core.stream(name, target);
          return r && wrap ? wrap(r) : r;
        },
        streamAbove: options.streamAbove ?? 256 * 1024,
        ...(options.streamMaxBytes !== undefined ? { streamMaxBytes: options.streamMaxBytes } : {}),
        workerAbove: 4 * READ,
        maxBytesPerRead: options.read ?? READ,
        intervalMs: () => 1e9,
        log: (m) => log.push(m),
      }),
  };
}

function seen(feed: RunFeed): string {
  const dump = (s: Series) => ({ x: [...s.x], y: [...s.y], t: s.time ? [...s.time] : null, segments: s.segments });
  return JSON.stringify({ series: [...feed.series()].map(([k, s]) => [k, dump(s)]), bad: feed.badLines, skipped: feed.skipped ?? null });
}

/** Our `ssh` processes still running (children of this process: the masters, streams and mux clients). */
function sshChildren(): string[] {
  // Descendants of ours (the lifeline's sh is a child too), named ssh.
  return descendantRows().filter(([, , cmd]) => /(^|\/)ssh$/.test(cmd)).map((r) => r.join(' '));
}

/** The process starters of our sessions (util/spawner.ts): our children running its script, not their subshells. */
function starterProcesses(): string[] {
  return descendants().filter((row) => row.includes('umask 077') && row.split(' ')[1] === String(process.pid));
}

/** Our descendants as `pid ppid args…`. */
function descendants(): string[] {
  return descendantRows().map((r) => r.join(' '));
}

function descendantRows(): string[][] {
  const out = execFileSync('ps', ['-o', 'pid=,ppid=,args=', '-e'], { encoding: 'utf8' });
  const pids = new Set([String(process.pid)]);
  const rows = out.split('\n').map((l) => l.trim().split(/\s+/)).filter((r) => r.length >= 3);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [pid, ppid] of rows) if (pids.has(ppid) && !pids.has(pid)) (pids.add(pid), (grew = true));
  }
  return rows.filter(([pid]) => pids.has(pid) && pid !== String(process.pid));
}

async function eventually(ok: () => boolean, what: string): Promise<void> {
  for (const end = Date.now() + 60_000; Date.now() < end; ) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(what);
}

let reference = '';

/**
 * A rig for a host reached through a 2 MB/s link, its session up: a kill or a dispose lands while the server is still
 * sending (on loopback the whole log is in the spool within milliseconds).
 */
async function slowRig(name: string): Promise<Rig> {
  const slow = await host.throughProxy({ rateBytesPerSec: 2_000_000 });
  hosts = [...hosts.filter((h) => h.name !== name), slow.hostConfig(name, { targets: ['host'], runRoots: hosts[0].runRoots })];
  const r = rig({ hostName: name });
  await warm(r);
  return r;
}

/**
 * A feed whose stream calls `kill` once, after its first MiB, then pauses a moment, so the kill lands while the stream
 * still has most of the file to send.
 */
function feedThatKills(r: Rig, kill: () => void): { feed: RunFeed; streamed: () => number; killed: () => boolean } {
  let streamed = 0;
  let killed = false;
  const feed = r.feed((run) => (argv, sink, signal) =>
    run(
      argv,
      (c) => {
        streamed += c.length;
        const p = sink(c);
        if (killed || streamed < 1 << 20) return p;
        killed = true;
        kill();
        return Promise.all([p, new Promise((res) => setTimeout(res, 500))]).then(() => undefined);
      },
      signal,
    ),
  );
  return { feed, streamed: () => streamed, killed: () => killed };
}

/** An open that starts the rig's session (it streams once the session is up); resolves once the session is up. */
async function warm(r: Rig): Promise<void> {
  const feed = r.feed();
  await feed.pollNow();
  assert.equal(seen(feed), reference);
  feed.dispose();
  await eventually(() => r.links.ready === 1, `the session came up (${r.log.join(' | ')})`);
}

test('the first open begins an OpenSSH login at its first read and streams the rest on it once it is up; the next open uses it too: the same series, a few ssh2 reads, one login', async () => {
  const plain = rig({ client: 'ssh2' });
  const viaSsh2 = plain.feed();
  await viaSsh2.pollNow();
  assert.equal(viaSsh2.status, 'following');
  assert.equal(viaSsh2.series().get('loss')?.length, lossPoints);
  reference = seen(viaSsh2);
  assert.ok(plain.reads() >= logSize / READ, `${plain.reads()} reads of 64 KiB over ssh2`);
  viaSsh2.dispose();
  await plain.links.dispose();

  const r = rig();
  const logins = host.sshd.acceptedLogins();
  // The first open: no session yet; one logs in beside the first read, and the rest waits for it (LOGIN_WAIT_MS).
  let streamedFirst = 0;
  const first = r.feed((run) => Object.assign((argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => run(argv, (c) => ((streamedFirst += c.length), sink(c)), signal), { ready: run.ready, prepare: run.prepare }));
  await first.pollNow();
  assert.equal(seen(first), reference);
  assert.ok(r.reads() <= 3, `the first open read ${r.reads()} times over ssh2 (the first read, one after the stream)`);
  assert.ok(streamedFirst > logSize - 2 * READ, `the first open streamed ${streamedFirst} of ${logSize} bytes; log: ${r.log.join(' | ')}`);
  assert.equal(r.links.ready, 1, 'its session is up');
  first.dispose();
  const readsBefore = r.reads();
  let streamed = 0;
  const feed = r.feed((run) => (argv, sink, signal) => run(argv, (c) => ((streamed += c.length), sink(c)), signal));
  await feed.pollNow();
  assert.equal(feed.status, 'following');
  assert.equal(seen(feed), reference, 'every line exactly once, the same values');
  assert.ok(streamed > logSize - 2 * READ, `the stream brought ${streamed} of ${logSize} bytes; log: ${r.log.join(" | ")}`);
  assert.ok(r.reads() - readsBefore <= 3, `${r.reads() - readsBefore} reads over ssh2 (the first, for the first chart, and one after the stream)`);
  assert.equal(r.links.open, 1, 'the session is kept');
  assert.equal(host.sshd.acceptedLogins() - logins, 1, 'one OpenSSH login');
  assert.match(r.log.join('\n'), /metrics of testbox: long backlogs are read through OpenSSH/);
  feed.dispose();

  // The next open: the same session, no new login.
  const again = r.feed();
  await again.pollNow();
  assert.equal(seen(again), reference);
  assert.equal(host.sshd.acceptedLogins() - logins, 1, 'no second login for the second open');
  again.dispose();
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left after the links were disposed: ${sshChildren().join('; ')}`);
});

/** Files in this process's OpenSSH session folders (os.tmpdir()/rr-ssh-*, `owner` naming this pid). */
function sessionFiles(): string[] {
  const out: string[] = [];
  for (const name of fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('rr-ssh-'))) {
    const folder = path.join(os.tmpdir(), name);
    try {
      if (fs.readFileSync(path.join(folder, 'owner'), 'utf8') !== String(process.pid)) continue;
      out.push(...fs.readdirSync(folder).map((f) => path.join(name, f)));
    } catch {
      // gone meanwhile, or not a session folder
    }
  }
  return out;
}

test('a backlog longer than one stream comes as several, one after the other, every line once; each spools into a file with no name, and none is left', async () => {
  const r = rig({ streamMaxBytes: 1024 * 1024 });
  await warm(r);
  const readsBefore = r.reads();
  const streams: number[] = [];
  const stdouts: string[] = [];
  /** Where each stream's ssh (not a master) writes its stdout, while it runs. */
  const look = (): void => {
    for (const row of sshChildren().filter((x) => !/ControlMaster=yes/.test(x))) {
      try {
        stdouts.push(fs.readlinkSync(`/proc/${row.split(' ')[0]}/fd/1`));
      } catch {
        // exited meanwhile
      }
    }
  };
  // Looked at on a timer too, not only on each stream's first chunk: on a busy machine a stream's ssh may be gone by
  // the time its first bytes are read from the spool (they wait for the fence).
  const sampler = setInterval(look, 25);
  const feed = r.feed((run) =>
    Object.assign(
      (argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => {
        streams.push(0);
        return run(
          argv,
          (c) => {
            // While it runs: no spool file has a name in the session folder (where the stream's ssh writes: `look`).
            if (streams[streams.length - 1] === 0) {
              look();
              assert.deepEqual(sessionFiles().filter((f) => /spool/.test(f)), [], 'no spool file has a name');
            }
            streams[streams.length - 1] += c.length;
            return sink(c);
          },
          signal,
        );
      },
      { ready: () => true },
    ),
  );
  try {
    await feed.pollNow();
    clearInterval(sampler);
    assert.equal(feed.status, 'following');
    assert.equal(seen(feed), reference, 'every line exactly once across the streams');
    assert.ok(streams.length >= Math.floor((logSize - 2 * READ) / (1024 * 1024)), `${streams.length} streams of at most 1 MiB for ${logSize} bytes: ${streams.join(', ')}`);
    assert.ok(streams.every((n) => n <= 1024 * 1024 + 4096), `each stream at most 1 MiB (and its status line): ${streams.join(', ')}`);
    assert.ok(r.reads() - readsBefore <= 3, `${r.reads() - readsBefore} reads over ssh2 besides the streams`);
    // Every stream's ssh writes into a spool file (seen at least once); that the file has no name while the stream
    // runs is what the folder check at each first chunk holds. The timer may catch a stream's ssh only in the instant
    // between the file's creation and its unlink, right as it starts (seen on a loaded machine: every sample there),
    // so "(deleted)" is allowed, not required.
    assert.ok(stdouts.length > 0 && stdouts.every((l) => /\/spool-[0-9a-f]+( \(deleted\))?$/.test(l)), `the streams' stdout: ${stdouts.join('; ')}`);
    feed.dispose();
    assert.deepEqual(sessionFiles().filter((f) => /spool/.test(f)), []);
  } finally {
    // Also when an assertion failed: a master left running would fail the next tests' one-master checks.
    clearInterval(sampler);
    feed.dispose();
    await r.links.dispose();
  }
  assert.deepEqual(sessionFiles(), [], 'the session folder is gone');
});

test('a TensorBoard event file written by torch comes through streams cut mid-record as over ssh2: the same series', async () => {
  // The real file (test/fixtures/real, torch.utils.tensorboard) is small, so the reads and streams are made smaller
  // still: a first read of 512 bytes, then streams of at most 700 bytes, each ending inside a record.
  const src = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'metrics', 'torch_tb', 'resumed', 'events.out.tfevents.1796148097.vm.9285.0');
  const runDir = path.join(host.dir, 'stream-runs', 'tb');
  fs.mkdirSync(runDir, { recursive: true });
  const file = path.join(runDir, path.basename(src));
  fs.copyFileSync(src, file);
  execFileSync('chmod', ['-R', 'a+rX', runDir]);
  const run: RunRefWire = { ...ref, runPath: runDir, runName: 'tb', metrics: [file] };
  const plain = rig({ client: 'ssh2', run, read: 512 });
  const viaSsh2 = plain.feed();
  await viaSsh2.pollNow();
  assert.equal(viaSsh2.status, 'following');
  const want = seen(viaSsh2);
  assert.ok((viaSsh2.series().size ?? 0) > 0 && [...viaSsh2.series().values()].some((s) => s.length > 3), `series read over ssh2: ${want.slice(0, 200)}`);
  viaSsh2.dispose();
  await plain.links.dispose();

  const r = rig({ run, read: 512, streamAbove: 256, streamMaxBytes: 700, startInBackground: false });
  const streams: number[] = [];
  const feed = r.feed((runner) =>
    Object.assign(
      (argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => {
        streams.push(0);
        return runner(argv, (c) => ((streams[streams.length - 1] += c.length), sink(c)), signal);
      },
      { ready: () => true },
    ),
  );
  await feed.pollNow();
  assert.equal(feed.status, 'following', r.log.join(' | '));
  assert.equal(seen(feed), want, 'the same series through the streams');
  assert.ok(streams.length >= 2, `the backlog came as ${streams.length} streams (${streams.join(', ')} bytes with their status lines): ${r.log.join(' | ')}`);
  feed.dispose();
  await r.links.dispose();
});

test('a stream that can start only part-way through a backlog: the reads in flight come in, then the rest streams, every line once', async () => {
  const r = rig();
  await warm(r);
  const readsBefore = r.reads();
  let asked = 0;
  let streamed = 0;
  const feed = r.feed((run) =>
    Object.assign((argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => run(argv, (c) => ((streamed += c.length), sink(c)), signal), {
      // Not ready for the first five reads (a login starting), then ready.
      ready: () => ++asked > 5,
    }),
  );
  await feed.pollNow();
  assert.equal(seen(feed), reference);
  const reads = r.reads() - readsBefore;
  // Five reads while not ready, the two in flight when it was, one after the stream.
  assert.ok(reads >= 6 && reads <= 9, `${reads} reads over ssh2`);
  assert.ok(streamed > logSize - 12 * READ, `the rest streamed (${streamed} of ${logSize} bytes)`);
  feed.dispose();
  await r.links.dispose();
});

test('the OpenSSH master killed mid-stream: the reads go on over ssh2 from where it stopped, every line once; the next open logs in again', async () => {
  // Through a link of 2 MB/s, so the kill lands while the server is still sending (on loopback the whole log is in the
  // stream's spool file within milliseconds, and a kill after that would find nothing left to interrupt).
  const r = await slowRig('slowbox');
  const readsBefore = r.reads();
  const { feed, streamed, killed } = feedThatKills(r, () => {
    const masters = sshChildren().filter((row) => /ControlMaster=yes/.test(row));
    assert.equal(masters.length, 1, `one master: ${sshChildren().join('; ')}`);
    process.kill(Number(masters[0].split(' ')[0]), 'SIGKILL');
  });
  await feed.pollNow();
  assert.ok(killed(), 'the master was killed');
  assert.ok(streamed() < logSize - READ, `the stream stopped early (${streamed()} of ${logSize} bytes)`);
  assert.match(r.log.join('\n'), /the stream ended after \d+ of \d+ bytes \((killed or dropped|exit 255)/);
  assert.equal(feed.status, 'following');
  assert.equal(seen(feed), reference, 'every line exactly once after the fall back to ssh2');
  assert.ok(r.reads() - readsBefore > 3, 'the rest came over ssh2');
  assert.equal(r.links.open, 0, 'the dead session was let go');
  feed.dispose();

  const logins = host.sshd.acceptedLogins();
  await warm(r);
  assert.equal(host.sshd.acceptedLogins() - logins, 1, 'a new session for the next opens');
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left: ${sshChildren().join('; ')}`);
});

test("the session's process starter killed mid-stream: its stream's ssh is killed too, the reads go on over ssh2 from where it stopped, every line once", async () => {
  const r = await slowRig('slowbox2');
  const readsBefore = r.reads();
  let streamSsh: number[] = [];
  const { feed, streamed } = feedThatKills(r, () => {
    const starters = starterProcesses();
    assert.equal(starters.length, 1, `one process starter: ${descendants().join('; ')}`);
    streamSsh = sshChildren().filter((row) => !/ControlMaster=yes/.test(row)).map((row) => Number(row.split(' ')[0]));
    assert.ok(streamSsh.length > 0, 'the stream has its ssh');
    process.kill(Number(starters[0].split(' ')[0]), 'SIGKILL');
  });
  await feed.pollNow();
  assert.ok(streamSsh.length > 0, `the starter was killed mid-stream (streamed ${streamed()}; log: ${r.log.join(' | ')})`);
  assert.ok(streamed() < logSize - READ, `the stream stopped early (${streamed()} of ${logSize} bytes)`);
  assert.match(r.log.join('\n'), /the stream ended after \d+ of \d+ bytes \(killed or dropped/);
  assert.equal(seen(feed), reference, 'every line exactly once after the fall back to ssh2');
  assert.ok(r.reads() - readsBefore > 3, 'the rest came over ssh2');
  await eventually(() => streamSsh.every((pid) => !alive(pid)), `the stream's ssh outlived the starter: ${streamSsh.join(' ')}`);
  feed.dispose();
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left: ${sshChildren().join('; ')}`);
});

test('a feed disposed mid-stream kills its stream at once; disposing the links leaves no ssh process', async () => {
  // Over the 2 MB/s link, so the server is still sending when the feed goes (on loopback the whole log can be in the
  // spool, and read back in one 4 MiB piece, before the first piece is looked at).
  const r = await slowRig('slowbox');
  let feed: RunFeed | undefined;
  let streamed = 0;
  let streams = 0;
  feed = r.feed((run) => (argv, sink, signal) => {
    streams++;
    return run(
      argv,
      (c) => {
        streamed += c.length;
        if (streamed >= 1 << 20 && feed) {
          feed.dispose();
          feed = undefined;
          return new Promise((res) => setTimeout(res, 200));
        }
        return sink(c);
      },
      signal,
    );
  });
  const polled = feed.pollNow();
  await eventually(() => feed === undefined, 'the feed was disposed mid-stream');
  await polled.catch(() => undefined);
  assert.equal(streams, 1);
  // The stream's mux client is gone; the master stays for the next open until the links are disposed.
  await eventually(() => sshChildren().every((row) => /ControlMaster=yes/.test(row)), `a stream outlived its feed: ${sshChildren().join('; ')}`);
  // Killed at 1 MiB of its 5 MB: what was already in its spool may still be read, never the rest.
  assert.ok(streamed < 3 << 20, `the stream was stopped (${streamed} of ${logSize} bytes)`);
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left: ${sshChildren().join('; ')}`);
});

test('a login slower than the wait (loginWaitMs 0): the first open reads over ssh2 while it logs in, and the next streams on it, every line once', async () => {
  const r = rig({ loginWaitMs: 0 });
  const logins = host.sshd.acceptedLogins();
  const first = r.feed();
  await first.pollNow();
  assert.equal(seen(first), reference);
  assert.ok(r.reads() > 3, `the first open waited for the login (${r.reads()} reads over ssh2)`);
  first.dispose();
  await eventually(() => r.links.ready === 1, `the session came up (${r.log.join(' | ')})`);
  const readsBefore = r.reads();
  const again = r.feed();
  await again.pollNow();
  assert.equal(seen(again), reference);
  assert.ok(r.reads() - readsBefore <= 3, `${r.reads() - readsBefore} reads over ssh2 once the session was up`);
  assert.equal(host.sshd.acceptedLogins() - logins, 1, 'one OpenSSH login');
  again.dispose();
  await r.links.dispose();
});

test('a caller that opens one log (startInBackground false) waits for the login and streams its first open', async () => {
  const r = rig({ startInBackground: false });
  const logins = host.sshd.acceptedLogins();
  const feed = r.feed();
  await feed.pollNow();
  assert.equal(seen(feed), reference);
  assert.ok(r.reads() <= 3, `${r.reads()} reads over ssh2`);
  assert.equal(host.sshd.acceptedLogins() - logins, 1);
  feed.dispose();
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left: ${sshChildren().join('; ')}`);
});

test('a target expanded in the tree (core.prepareMetrics): its login and a parse thread start with nothing read, and the open that follows uses both', async () => {
  closeIdleParseWorkers();
  await noParseWorkers();
  const r = rig();
  const logins = host.sshd.acceptedLogins();
  const threads = parseWorkersStarted();
  r.core.prepareMetrics('testbox', ref.target);
  await eventually(() => r.links.ready === 1, `the session came up (${r.log.join(' | ')})`);
  assert.equal(liveParseWorkers(), 1, 'one parse thread waits');
  assert.equal(parseWorkersStarted() - threads, 1);
  assert.equal(r.reads(), 0, 'nothing was read');
  // Asked again (another expansion): nothing more starts.
  r.core.prepareMetrics('testbox', ref.target);
  assert.equal(parseWorkersStarted() - threads, 1, 'no second thread while one waits');
  let streamed = 0;
  const feed = r.feed((run) => Object.assign((argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => run(argv, (c) => ((streamed += c.length), sink(c)), signal), { ready: run.ready, prepare: run.prepare }));
  await feed.pollNow();
  assert.equal(seen(feed), reference);
  assert.ok(streamed > logSize - 2 * READ, `the open streamed ${streamed} of ${logSize} bytes`);
  assert.ok(r.reads() <= 2, `${r.reads()} reads over ssh2 (the first, one after the stream)`);
  assert.equal(host.sshd.acceptedLogins() - logins, 1, 'the login it began, no other');
  assert.equal(parseWorkersStarted() - threads, 1, 'the backlog was parsed on the thread started beforehand');
  feed.dispose();
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left: ${sshChildren().join('; ')}`);
});

test("the session's process starter killed: the next stream's ssh is started from here instead, every line once", async () => {
  const r = rig();
  await warm(r);
  const starters = starterProcesses();
  assert.equal(starters.length, 1, `one process starter: ${descendants().join('; ')}`);
  process.kill(Number(starters[0].split(' ')[0]), 'SIGKILL');
  let streamed = 0;
  const feed = r.feed((run) => Object.assign((argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => run(argv, (c) => ((streamed += c.length), sink(c)), signal), { ready: run.ready }));
  // The helper's death may be seen only once a stream asks it; then the next poll's stream is forked from here.
  await feed.pollNow();
  assert.equal(seen(feed), reference);
  const again = r.feed((run) => Object.assign((argv: readonly string[], sink: (c: Buffer) => void | Promise<void>, signal: AbortSignal) => run(argv, (c) => ((streamed += c.length), sink(c)), signal), { ready: run.ready }));
  streamed = 0;
  await again.pollNow();
  assert.equal(seen(again), reference);
  assert.ok(streamed > logSize - 2 * READ, `streamed ${streamed} of ${logSize} bytes without the starter; log: ${r.log.join(' | ')}`);
  feed.dispose();
  again.dispose();
  await r.links.dispose();
  await eventually(() => sshChildren().length === 0, `ssh processes left: ${sshChildren().join('; ')}`);
});

test('no ssh to be had: the log says so once, and the backlog is read over ssh2 all the same', async () => {
  const r = rig({ sshPath: path.join(host.dir, 'no-such-ssh') });
  for (let i = 0; i < 2; i++) {
    const feed = r.feed();
    await feed.pollNow();
    assert.equal(seen(feed), reference);
    feed.dispose();
  }
  const said = r.log.filter((m) => /long backlogs are read over ssh2, not OpenSSH: no OpenSSH client at /.test(m));
  assert.equal(said.length, 1, r.log.join('\n'));
  assert.equal(r.links.open, 0);
  await r.links.dispose();
});

test("a host's pool connection closed: its stream session ends with it, with no wiring but BulkLinks' own (the CLI's as the extension's)", async () => {
  const r = rig();
  await warm(r);
  assert.equal(r.links.open, 1, 'control: the session is up');
  assert.equal(sshChildren().filter((row) => /ControlMaster=yes/.test(row)).length, 1, 'control: its master runs');
  pool.disconnect('testbox');
  await eventually(() => r.links.open === 0, 'the session was ended with the connection');
  await eventually(() => sshChildren().filter((row) => /ControlMaster=yes/.test(row)).length === 0, `no master left: ${sshChildren().join('; ')}`);
  // The next open logs in again, and reads every line once.
  const feed = r.feed();
  await feed.pollNow();
  assert.equal(seen(feed), reference);
  feed.dispose();
  await r.links.dispose();
});
