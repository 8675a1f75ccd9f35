/**
 * Metric curves on a long run: a 1,000,000-line JSONL log (~100 MB) on the test host (real sshd on
 * 127.0.0.1), read by the extension's own code path (RunFeed: the first read over the shared ssh2 pool, the rest of
 * a long backlog as one stream through the host's OpenSSH session (BulkLinks) → parser → presenter → the messages
 * the webview gets), against `ssh testbox cat FILE | wc -l` in the same run, interleaved.
 *
 * Prints:
 * - open → first chart: a fresh feed reading the whole log (8 MiB per remote read, two in flight), parsing it
 *   into typed arrays, smoothing and min-max decimating every metric for a 400 px chart, and serialising the
 *   snapshot; against the plain transfer (ratio; target ≤ 2×). Also when the first partial chart could be drawn
 *   (the first read parsed and a snapshot of it built: what a panel shows while the rest loads);
 * - 1,000 appended lines: one poll (the remote round trip), the extension's CPU time for it (parse + update
 *   message), and the bytes of the update message (targets: < 50 ms of extension time, < 100 kB);
 * - memory: the parsed run's series (bytes per point), heap after GC, RSS; and the RSS growth for three compared
 *   1M-line runs shown in two panels.
 * The last stdout line is one JSON object with the same figures. No timing is judged: ratios are what matter.
 *
 *   node --import tsx bench/metrics.ts [--lines 1000000] [--n 5] [--appends 10] [--compress BYTES] [--cpu-profile FILE] [--first-parts]
 *
 * --first-parts: only a session's first open, split into its parts (a fresh parse thread, the OpenSSH session
 * closed, both, the CLI's wait for the login, one prepared by core.prepareMetrics), 5 interleaved samples each.
 *
 * --cpu-profile: write a V8 CPU profile of this thread (the extension host's) during the warm open samples only, for
 * chrome://inspect or `node bench/profileTop.mjs FILE`.
 * --compress: gzip reads of at least BYTES (the product's default is 0, never; see DEFAULT_TAIL_COMPRESS_ABOVE).
 */
import { execFileSync, spawn } from 'node:child_process';
import { buildSync } from 'esbuild';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { ConnectionPool } from '../src/core/ssh/pool';
import { BulkLinks } from '../src/core/transfer/bulkLinks';
import { HostDirectory } from '../src/core/hosts';
import { RemoteRunsCore } from '../src/core/service';
import type { RunRefWire } from '../src/shared/metricsProtocol';
import type { TargetRef } from '../src/core/types';
import { DEFAULT_TAIL_COMPRESS_ABOVE } from '../src/core/metrics';
import { RunFeed } from '../src/core/metrics/follow/runFeed';
import { warmParseThread, busyParseWorkers, closeIdleParseWorkers, liveParseWorkers, noParseWorkers } from '../src/core/metrics/formats/parseOffload';
import { MetricsPresenter } from '../src/extension/metrics/presenter';
import { startTestHost, ScriptedPrompter } from '../test/harness/testHost';
import { heapAfterGc, mib, ms, stats, table } from './util';

function arg(name: string, fallback: number, min = 1): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v < min) throw new Error(`--${name} must be an integer ≥ ${min}`);
  return v;
}

const LINES = arg('lines', 1_000_000);
const N = arg('n', 5);
const APPENDS = arg('appends', 10);
const COMPRESS = arg('compress', DEFAULT_TAIL_COMPRESS_ABOVE, 0);
const WIDTH = 400;
/** Only the warm-up and the parts of a session's first open (which of its differences from a warm open costs what). */
const FIRST_PARTS = process.argv.includes('--first-parts');
const CPU_PROFILE = (() => {
  const i = process.argv.indexOf('--cpu-profile');
  if (i < 0) return undefined;
  const file = process.argv[i + 1];
  if (!file || file.startsWith('--')) throw new Error('--cpu-profile needs a file');
  return path.resolve(file);
})();
/** The panel's coalescing of updates (src/extension/metrics/metricsView.ts FLUSH_MS). */
const FLUSH_MS = 50;

/** One log line of about 100 bytes: step, four metrics, wall time. */
function line(step: number): string {
  const p = step / LINES;
  const loss = 0.9 + 2.6 * Math.exp(-4 * p) + Math.sin(step * 12.9898) * 0.05;
  return `{"step":${step},"loss":${loss.toFixed(6)},"acc":${(0.05 + 0.8 * (1 - Math.exp(-3 * p))).toFixed(6)},"lr":${(3e-4 * (1 - p)).toExponential(4)},"grad_norm":${(1 + loss / 3).toFixed(4)},"time":${(1.7e9 + step * 0.25).toFixed(2)}}\n`;
}

function writeLog(file: string, from: number, count: number): number {
  const fd = fs.openSync(file, 'a');
  let bytes = 0;
  try {
    let chunk = '';
    for (let s = from; s < from + count; s++) {
      chunk += line(s);
      if (chunk.length > 1 << 20) {
        bytes += fs.writeSync(fd, chunk);
        chunk = '';
      }
    }
    if (chunk) bytes += fs.writeSync(fd, chunk);
  } finally {
    fs.closeSync(fd);
  }
  return bytes;
}

/** `ssh testbox cat FILE | wc -l`, timed from spawn to the count. */
function sshCatWc(sshBase: string[], file: string): Promise<{ ms: number; lines: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const quoted = [...sshBase, 'testbox', 'cat', file].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('sh', ['-c', `ssh ${quoted} | wc -l`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.once('error', reject);
    child.once('close', () => resolve({ ms: performance.now() - t0, lines: Number(out.trim()) }));
  });
}

/** Clock ticks per second of /proc's thread times (getconf CLK_TCK; 100 on Linux unless it says otherwise). */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time of this (the main) thread alone, ms, from /proc/self/task/PID/stat (utime + stime; 10 ms resolution):
 * what the extension host's thread, which every extension shares, spends. NaN where there is no /proc.
 */
function mainThreadCpuMs(): number {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/**
 * Busy CPU time of the whole machine so far, ms, from /proc/stat (user, nice, system, irq, softirq of every core;
 * steal and idle left out): with sshd, the remote shell and `cat` on the same machine, what one open costs all of
 * them together, and so the least wall time the machine's cores allow for it. NaN where there is no /proc.
 */
function machineBusyMs(): number {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    const [user, nice, system, , , irq, softirq] = line.trim().split(/\s+/).slice(1).map(Number);
    return ((user + nice + system + irq + softirq) * 1000) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/**
 * The parse worker as the extension ships it: a fresh esbuild bundle of its entry (esbuild.mjs's metricsWorker),
 * not the sources through tsx's hook, which a worker would load (and compile) anew at every open.
 */
function bundleParseWorker(dir: string): string {
  buildSync({ entryPoints: { metricsWorker: path.join(__dirname, '..', 'src', 'core', 'metrics', 'formats', 'parseWorker.ts') }, outdir: dir, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error' });
  return path.join(dir, 'metricsWorker.js');
}

async function main(): Promise<void> {
  const loadAtStart = os.loadavg()[0];
  const workerDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-bench-metrics-'));
  process.env.REMOTE_RUNS_METRICS_WORKER = bundleParseWorker(workerDir);
  const host = await startTestHost();
  const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: { info() {}, warn() {}, error() {} }, knownHostsFiles: [host.knownHostsFile] });
  // As the extension wires it (extension.ts): a long backlog comes as one OpenSSH stream, on a session kept per host.
  const benchLogger = { info() {}, warn: (m: string) => process.stderr.write(`${m}\n`), error: (m: string) => process.stderr.write(`${m}\n`) };
  const links = new BulkLinks(pool, { logger: benchLogger });
  // --first-parts: a session whose first stream waits for the OpenSSH login instead of reading over ssh2 meanwhile.
  const waitingLinks = new BulkLinks(pool, { logger: benchLogger, startInBackground: false });
  let streamLinks = links;
  /** When the open being measured started its first stream (--first-parts). */
  let streamAt: number | undefined;
  /** When its first stream's first bytes came. */
  let streamByteAt: number | undefined;
  const cleanup = async () => {
    fs.rmSync(workerDir, { recursive: true, force: true });
    await links.dispose();
    await waitingLinks.dispose();
    pool.dispose();
    await host.stop();
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    const runDir = path.join(host.dir, 'bench-metrics', 'big-run');
    fs.mkdirSync(path.join(runDir, 'logs'), { recursive: true });
    const log = path.join(runDir, 'logs', 'train.jsonl');
    process.stderr.write(`writing ${LINES.toLocaleString('en-US')} lines…\n`);
    const bytes = writeLog(log, 0, LINES);
    execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, 'bench-metrics')]);

    const hosts = [host.hostConfig('testbox', { targets: ['host'], runRoots: [path.dirname(runDir)] })];
    const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const core = new RemoteRunsCore({
      hosts: () => hosts,
      executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }),
      streamFor: (h, target) => {
        const run = streamLinks.runner(dir.resolve(h), target);
        return Object.assign(
          (argv: readonly string[], sink: (chunk: Buffer) => void | Promise<void>, signal: AbortSignal) => {
            streamAt ??= performance.now();
            return run(argv, (chunk) => ((streamByteAt ??= performance.now()), sink(chunk)), signal);
          },
          { ready: run.ready, prepare: run.prepare },
        );
      },
    });
    const ref: RunRefWire = { hostName: 'testbox', target: { kind: 'host', id: '' }, runPath: runDir, runName: 'big-run', metrics: [log], checkpoints: [] };
    const sshBase = ['-F', host.sshConfigFile, '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${host.knownHostsFile}`, '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'StrictHostKeyChecking=yes', '-o', 'LogLevel=ERROR'];
    // Warm the pool as the tree does before anyone opens a run's metrics.
    await core.listTargets('testbox');

    const newFeed = (workerAbove?: number, stream = true, streamMaxBytes?: number) =>
      new RunFeed(ref, {
        executor: () => core.executor('testbox'),
        ...(stream ? { stream: (target: TargetRef) => core.stream('testbox', target) } : {}),
        intervalMs: () => 1e9,
        compressAbove: COMPRESS,
        ...(workerAbove !== undefined ? { workerAbove } : {}),
        ...(streamMaxBytes !== undefined ? { streamMaxBytes } : {}),
      });
    const presenterFor = (feed: RunFeed) => {
      const p = new MetricsPresenter({ plateau: () => ({ window: 2000, fraction: 0.01 }), now: () => performance.now() });
      p.addRun(ref, 'primary', feed);
      p.setView(WIDTH, null, 0.6, []);
      return p;
    };

    /**
     * One open as a panel sees it (metricsView.ts): the snapshot at once (no data yet), an update at every change of
     * the feed coalesced over FLUSH_MS while the backlog loads (the first one built at once: the first partial chart),
     * and a last one when the feed's round ends (the product waits up to FLUSH_MS more to coalesce; not counted).
     * Timed until the first update holding the whole log is serialised: a coalesced one while the round's last read
     * (after a stream: a check that nothing more was written) is on its way, or that last one.
     */
    const openAndDraw = async (feed: RunFeed, t0: number) => {
      const cpu0 = process.cpuUsage();
      const main0 = mainThreadCpuMs();
      const presenter = presenterFor(feed);
      JSON.stringify(presenter.snapshot('panel', 'big-run'));
      let partialAt: number | undefined;
      let timer: ReturnType<typeof setTimeout> | undefined;
      // The first update that holds the whole log (the full chart), and when it was serialised: a flush while the
      // round's last read (a check that nothing more was written) is still on its way can be it.
      let full: { at: number; text: string } | undefined;
      const flush = () => {
        const u = presenter.update();
        const text = u ? JSON.stringify(u) : '';
        if (!full && u?.runs[0]?.series.find((x) => x.key === 'loss')?.total === LINES) full = { at: performance.now() - t0, text };
        return u;
      };
      const sub = feed.onDidChange(() => {
        if (partialAt === undefined) {
          flush();
          partialAt = performance.now() - t0;
          return;
        }
        timer ??= setTimeout(() => {
          timer = undefined;
          flush();
        }, FLUSH_MS);
      });
      await feed.pollNow();
      sub.dispose();
      if (timer) clearTimeout(timer);
      flush();
      const ms = full?.at ?? NaN;
      const text = full?.text ?? '';
      const cpu = process.cpuUsage(cpu0);
      // CPU of the whole process (every thread: a worker's too), and of this thread alone.
      const cpuMs = (cpu.user + cpu.system) / 1000;
      const busyMs = mainThreadCpuMs() - main0;
      const points = feed.series().get('loss')?.length;
      if (points !== LINES) throw new Error(`read ${points} points, expected ${LINES}; feed status: ${feed.status}`);
      if (!full) throw new Error(`no update showed all ${LINES} points of loss`);
      return { ms, partialMs: partialAt ?? NaN, bytes: text.length, cpuMs, busyMs };
    };

    // Before the samples, as in a session where a run was opened before: the OpenSSH session is up and has carried a
    // stream (a new connection is slow for its first ~10 MB), the parse thread warm. The first opens are measured after.
    const untimed = async () => {
      const feed = newFeed();
      await openAndDraw(feed, performance.now());
      feed.dispose();
    };
    const sessionUp = async () => {
      for (const end = Date.now() + 60_000; links.ready === 0; ) {
        if (Date.now() > end) throw new Error('the OpenSSH session did not come up in 60 s');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await untimed();
    await sessionUp();
    await untimed();
    if (FIRST_PARTS) return await firstParts();

    /**
     * --first-parts: a session's first open differs from a warm one in a fresh parse thread, the OpenSSH session not
     * up (reads over ssh2 while it logs in, then a stream on a new connection), and both. Each variant 5 times,
     * interleaved, with when its first stream started.
     */
    async function firstParts(): Promise<void> {
      const closeWorkers = async () => {
        closeIdleParseWorkers();
        await noParseWorkers();
      };
      const closeSession = async (l: BulkLinks) => {
        l.closeHost('testbox');
        await new Promise((r) => setTimeout(r, 1000));
      };
      const variants: { name: string; prepare: () => Promise<void>; links?: BulkLinks }[] = [
        { name: 'warm (session up, parse thread warm)', prepare: async () => {} },
        { name: 'fresh parse thread, session up', prepare: closeWorkers },
        { name: 'fresh parse thread started 1 s before (warmParseThread)', prepare: async () => (await closeWorkers(), warmParseThread(), await new Promise((r) => setTimeout(r, 1000))) },
        { name: 'session closed (the stream waits for a login begun at the first read), parse thread warm', prepare: async () => closeSession(links) },
        { name: 'session closed, startInBackground false (the CLI: a login begun at the stream), parse thread warm', prepare: async () => closeSession(waitingLinks), links: waitingLinks },
        { name: 'both closed (the first open of a session)', prepare: async () => (await closeWorkers(), await closeSession(links)) },
        {
          name: 'both closed, then the run\'s target expanded 1 s before (core.prepareMetrics)',
          prepare: async () => (await closeWorkers(), await closeSession(links), core.prepareMetrics('testbox', ref.target), await new Promise((r) => setTimeout(r, 1000))),
        },
      ];
      const times = variants.map(() => [] as number[]);
      const starts = variants.map(() => [] as number[]);
      const firstBytes = variants.map(() => [] as number[]);
      const cats: number[] = [];
      for (let i = 0; i < 5; i++) {
        process.stderr.write(`first-open parts ${i + 1}/5…\n`);
        for (const [k, v] of variants.entries()) {
          await v.prepare();
          streamLinks = v.links ?? links;
          streamAt = undefined;
          streamByteAt = undefined;
          const t0 = performance.now();
          const feed = newFeed();
          times[k].push((await openAndDraw(feed, t0)).ms);
          starts[k].push(streamAt === undefined ? NaN : streamAt - t0);
          firstBytes[k].push(streamByteAt === undefined ? NaN : streamByteAt - t0);
          feed.dispose();
          // Each variant after the warm one starts from a warm session again (the one it uses).
          if (v.links) {
            for (const end = Date.now() + 60_000; v.links.ready === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50));
          }
          await sessionUp();
        }
        const c = await sshCatWc(sshBase, log);
        if (c.lines !== LINES) throw new Error(`ssh cat | wc -l counted ${c.lines}`);
        cats.push(c.ms);
        streamLinks = links;
      }
      const c = stats(cats);
      const fmt = (s: ReturnType<typeof stats>) => `${ms(s.median)} [${ms(s.min)}-${ms(s.max)}]`;
      console.log(`First-open parts: ${LINES.toLocaleString('en-US')} JSONL lines, ${mib(bytes)}, 5 interleaved samples; load (1 min) at start ${loadAtStart.toFixed(2)}, at end ${os.loadavg()[0].toFixed(2)}.`);
      console.log(table(['', 'open ms median [min-max]', '/ cat', 'first stream asked for at, ms', 'its first bytes at, ms'], [
        ...variants.map((v, k) => [v.name, fmt(stats(times[k])), (stats(times[k]).median / c.median).toFixed(2), fmt(stats(starts[k])), fmt(stats(firstBytes[k]))]),
        ['ssh testbox cat FILE | wc -l', fmt(c), '1.00', ''],
      ]));
      console.log(JSON.stringify({ bench: 'metrics-first-parts', lines: LINES, catMs: c, variants: variants.map((v, k) => ({ name: v.name, openMs: stats(times[k]), streamAtMs: stats(starts[k]), streamBytesAtMs: stats(firstBytes[k]) })), loadavg: { start: loadAtStart, end: os.loadavg()[0] } }));
    }

    const open: number[] = [];
    const openSecond: number[] = [];
    const machineSecond: number[] = [];
    const openHere: number[] = [];
    const cpuOpen: number[] = [];
    const busyOpen: number[] = [];
    const cpuHere: number[] = [];
    const busyHere: number[] = [];
    const openSsh2: number[] = [];
    const machineSsh2: number[] = [];
    const openCold: number[] = [];
    const openPrepared: number[] = [];
    const openSmallStreams: number[] = [];
    const cpuSmallStreams: number[] = [];
    const machineCold: number[] = [];
    const firstPartial: number[] = [];
    const cat: number[] = [];
    const machineOpen: number[] = [];
    const machineCat: number[] = [];
    let snapshotBytes = 0;
    let lastFeed: RunFeed | undefined;
    const profiler = CPU_PROFILE ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
    }
    for (let i = 0; i < N; i++) {
      process.stderr.write(`open sample ${i + 1}/${N}…\n`);
      lastFeed?.dispose();
      {
        const m0 = machineBusyMs();
        const t0 = performance.now();
        await profiler?.post('Profiler.start');
        const feed = newFeed();
        const r = await openAndDraw(feed, t0);
        if (profiler) {
          const { profile } = await profiler.post('Profiler.stop');
          fs.writeFileSync(N > 1 ? CPU_PROFILE!.replace(/(\.cpuprofile)?$/, `.${i + 1}.cpuprofile`) : CPU_PROFILE!, JSON.stringify(profile));
        }
        machineOpen.push(machineBusyMs() - m0);
        open.push(r.ms);
        cpuOpen.push(r.cpuMs);
        busyOpen.push(r.busyMs);
        firstPartial.push(r.partialMs);
        snapshotBytes = r.bytes;
        lastFeed = feed;
        // The open's worker is idle once the backlog is read (kept warm for the next: parseOffload.ts).
        if (busyParseWorkers() !== 0) throw new Error(`${busyParseWorkers()} parse workers still busy after the open`);
      }
      const m0 = machineBusyMs();
      const c = await sshCatWc(sshBase, log);
      machineCat.push(machineBusyMs() - m0);
      if (c.lines !== LINES) throw new Error(`ssh cat | wc -l counted ${c.lines}`);
      cat.push(c.ms);
      {
        const t0 = performance.now();
        const feed = newFeed(Infinity);
        const r = await openAndDraw(feed, t0);
        openHere.push(r.ms);
        cpuHere.push(r.cpuMs);
        busyHere.push(r.busyMs);
        feed.dispose();
      }
      {
        // Streams of at most 64 MiB (STREAM_MAX_BYTES was that once): two streams for this log, not one (each `ssh`
        // started by the session's process starter, util/spawner.ts).
        const t0 = performance.now();
        const feed = newFeed(undefined, true, 64 * 1024 * 1024);
        const r = await openAndDraw(feed, t0);
        openSmallStreams.push(r.ms);
        cpuSmallStreams.push(r.cpuMs);
        feed.dispose();
      }
      {
        // Every read over the ssh2 pool (the product's path before the stream, and where OpenSSH cannot be used).
        const m0 = machineBusyMs();
        const t0 = performance.now();
        const feed = newFeed(undefined, false);
        openSsh2.push((await openAndDraw(feed, t0)).ms);
        machineSsh2.push(machineBusyMs() - m0);
        feed.dispose();
      }
    }

    // The first opens of a session, three times: the session and the parse thread closed first. The first open starts
    // the OpenSSH login at its first read (over ssh2) and its stream waits for it, on a fresh parse thread; the second
    // is the first stream on the new connection; a third first open follows an expansion of its target 1 s before.
    for (let i = 0; i < 3; i++) {
      process.stderr.write(`first opens ${i + 1}/3…\n`);
      closeIdleParseWorkers();
      links.closeHost('testbox');
      const gone = await Promise.race([noParseWorkers().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
      if (!gone) throw new Error(`${liveParseWorkers()} parse workers still running 10 s after they were closed`);
      await new Promise((r) => setTimeout(r, 1000)); // the closed session's ssh processes gone
      for (const [times, machine] of [[openCold, machineCold], [openSecond, machineSecond]] as const) {
        const m0 = machineBusyMs();
        const t0 = performance.now();
        const feed = newFeed();
        const r = await openAndDraw(feed, t0);
        machine.push(machineBusyMs() - m0);
        times.push(r.ms);
        feed.dispose();
        await sessionUp();
      }
      // The same first open, the run's target expanded in the tree a second before (what the tree does then).
      closeIdleParseWorkers();
      links.closeHost('testbox');
      await noParseWorkers();
      await new Promise((r) => setTimeout(r, 1000));
      core.prepareMetrics('testbox', ref.target);
      await new Promise((r) => setTimeout(r, 1000));
      const t0 = performance.now();
      const feed = newFeed();
      openPrepared.push((await openAndDraw(feed, t0)).ms);
      feed.dispose();
    }
    closeIdleParseWorkers();

    // Memory of one opened run (the last sample's feed; the others are garbage now).
    const feed = lastFeed!;
    const heap = heapAfterGc();
    const mem = process.memoryUsage();
    const arrays = feed.byteLength;
    const points = [...feed.series().values()].reduce((sum, s) => sum + s.length, 0);

    // Appends: 1,000 lines at a time, the way a run writes them between polls.
    const presenter = presenterFor(feed);
    presenter.snapshot('panel', 'big-run');
    const pollMs: number[] = [];
    const cpuMs: number[] = [];
    const updateMs: number[] = [];
    const updateBytes: number[] = [];
    let next = LINES;
    for (let i = 0; i < APPENDS; i++) {
      writeLog(log, next, 1000);
      next += 1000;
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await feed.pollNow();
      const t1 = performance.now();
      const msg = presenter.update();
      const text = JSON.stringify(msg);
      const t2 = performance.now();
      const cpu = process.cpuUsage(cpu0);
      pollMs.push(t1 - t0);
      updateMs.push(t2 - t1);
      cpuMs.push((cpu.user + cpu.system) / 1000);
      updateBytes.push(text.length);
      if (feed.series().get('loss')!.length !== next) throw new Error('an append was not applied');
    }
    feed.dispose();

    // Three compared 1M-line runs in two panels (each panel shows all three, one primary): what the extension host
    // holds for them beyond what it held before, both panels' snapshots built. Feeds are one per run, as the
    // extension shares them between panels.
    process.stderr.write('three compared runs in two panels…\n');
    const logs = [log, ...[1, 2].map((k) => {
      const other = path.join(host.dir, 'bench-metrics', `run-${k}`, 'logs', 'train.jsonl');
      fs.mkdirSync(path.dirname(other), { recursive: true });
      fs.copyFileSync(log, other);
      return other;
    })];
    execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, 'bench-metrics')]);
    const rssBefore = (heapAfterGc(), process.memoryUsage().rss);
    const refs = logs.map((l, k): RunRefWire => ({ ...ref, runPath: path.dirname(path.dirname(l)), runName: `run-${k}`, metrics: [l] }));
    const feeds = refs.map((r) => new RunFeed(r, { executor: () => core.executor('testbox'), stream: (target: TargetRef) => core.stream('testbox', target), intervalMs: () => 1e9, compressAbove: COMPRESS }));
    await Promise.all(feeds.map((f) => f.pollNow()));
    const panels = [0, 1].map((k) => {
      const p = new MetricsPresenter({ plateau: () => ({ window: 2000, fraction: 0.01 }), now: () => performance.now() });
      refs.forEach((r, j) => p.addRun(r, j === k ? 'primary' : 'compare', feeds[j]));
      p.setView(WIDTH, null, 0.6, []);
      p.snapshot('panel', `panel-${k}`);
      return p;
    });
    heapAfterGc();
    const rssCompare = process.memoryUsage().rss - rssBefore;
    const compareArrays = feeds.reduce((sum, f) => sum + f.byteLength, 0);
    const comparePoints = feeds.reduce((sum, f) => sum + [...f.series().values()].reduce((n, s) => n + s.length, 0), 0);
    const wantPoints = 3 * (points / LINES) * next; // every run holds the appended lines too
    if (panels.length !== 2 || comparePoints !== wantPoints) throw new Error(`the compared runs hold ${comparePoints} points, expected ${wantPoints}`);
    for (const f of feeds) f.dispose();

    const o = stats(open);
    const c = stats(cat);
    const fmt = (s: ReturnType<typeof stats>) => `${ms(s.median)} [${ms(s.min)}-${ms(s.max)}]`;
    const out: string[] = [];
    out.push(`Metrics bench: ${LINES.toLocaleString('en-US')} JSONL lines, ${mib(bytes)} on the test host (127.0.0.1), chart width ${WIDTH} px, ${N} interleaved samples, reads ${COMPRESS > 0 ? `of ≥ ${COMPRESS} bytes gzip-compressed` : 'uncompressed'}.`);
    out.push(`Load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores.`);
    out.push('');
    out.push(table(['', 'ms median [min-max]'], [
      ['open → first full chart (feed + parse + decimate + update)', fmt(o)],
      ['ssh testbox cat FILE | wc -l', fmt(c)],
      ['ratio open / cat (target ≤ 1.3)', (o.median / c.median).toFixed(2)],
      ['the first open of a session (a fresh parse thread, the OpenSSH login begun at the first read), 3 samples', fmt(stats(openCold))],
      ['ratio first open / cat', (stats(openCold).median / c.median).toFixed(2)],
      ['the first open of a session, its target expanded in the tree 1 s before (core.prepareMetrics), 3 samples', fmt(stats(openPrepared))],
      ['ratio first open after the expansion / cat', (stats(openPrepared).median / c.median).toFixed(2)],
      ['the second open (the first stream on the new OpenSSH connection), 3 samples', fmt(stats(openSecond))],
      ['ratio second open / cat', (stats(openSecond).median / c.median).toFixed(2)],
      ['open with every read parsed on this thread (no parse worker)', fmt(stats(openHere))],
      ['ratio open without the worker / cat', (stats(openHere).median / c.median).toFixed(2)],
      ['open with streams of at most 64 MiB (two streams, not one): wall / CPU of the process', `${fmt(stats(openSmallStreams))} / ${fmt(stats(cpuSmallStreams))}`],
      ['ratio open with 64 MiB streams / cat', (stats(openSmallStreams).median / c.median).toFixed(2)],
      ['open with every read over the ssh2 pool (no stream)', fmt(stats(openSsh2))],
      ['ratio open over ssh2 only / cat', (stats(openSsh2).median / c.median).toFixed(2)],
      ['open → first partial chart (first read parsed, its snapshot)', fmt(stats(firstPartial))],
      ['open: CPU of the process (all threads) / of this thread, with the worker', `${fmt(stats(cpuOpen))} / ${fmt(stats(busyOpen))}`],
      ['open: CPU of the process / of this thread, without the worker', `${fmt(stats(cpuHere))} / ${fmt(stats(busyHere))}`],
      ['CPU of the whole machine (sshd, the remote shell and cat included): open with the worker / cat', `${fmt(stats(machineOpen))} / ${fmt(stats(machineCat))}`],
      ['CPU of the whole machine: the first / second open of a session / open over ssh2 only', `${fmt(stats(machineCold))} / ${fmt(stats(machineSecond))} / ${fmt(stats(machineSsh2))}`],
      [`the least wall time ${os.cpus().length} cores allow for that CPU: open / cat, and their ratio`, `${ms(stats(machineOpen).median / os.cpus().length)} / ${ms(stats(machineCat).median / os.cpus().length)}, ${(stats(machineOpen).median / c.median / os.cpus().length).toFixed(2)}× cat's wall time`],
    ]));
    out.push(`last update message (the whole log): ${snapshotBytes.toLocaleString('en-US')} bytes (4 metrics)`);
    out.push('');
    out.push(table(['1,000 appended lines', 'median [min-max]'], [
      ['one poll, wall (remote round trip included)', `${fmt(stats(pollMs))} ms`],
      ['extension CPU for poll + update (target < 50 ms)', `${fmt(stats(cpuMs))} ms`],
      ['building + serialising the update message', `${fmt(stats(updateMs))} ms`],
      ['update message bytes (target < 100 kB)', `${stats(updateBytes).median} [${stats(updateBytes).min}-${stats(updateBytes).max}]`],
    ]));
    out.push('');
    out.push(`memory: the run's series ${mib(arrays)} for ${points.toLocaleString('en-US')} points (${(arrays / points).toFixed(2)} bytes per point, target ≤ 8), heap after GC ${mib(heap)}, array buffers ${mib(mem.arrayBuffers)}, RSS ${mib(mem.rss)}`);
    out.push(`three compared runs in two panels: RSS growth ${mib(rssCompare)} (target ≤ 300 MiB), series ${mib(compareArrays)}`);
    console.log(out.join('\n'));
    console.log(JSON.stringify({
      bench: 'metrics', lines: LINES, bytes, compressAbove: COMPRESS, openMs: o, catMs: c, ratio: o.median / c.median, machineCpuOpenMs: stats(machineOpen), machineCpuCatMs: stats(machineCat), cpuOpenMs: stats(cpuOpen), mainThreadCpuOpenMs: stats(busyOpen), cpuHereMs: stats(cpuHere), mainThreadCpuHereMs: stats(busyHere), openHereMs: stats(openHere), openColdMs: stats(openCold), ratioCold: stats(openCold).median / c.median, machineCpuColdMs: stats(machineCold), openPreparedMs: stats(openPrepared), openSmallStreamsMs: stats(openSmallStreams), cpuSmallStreamsMs: stats(cpuSmallStreams), ratioPrepared: stats(openPrepared).median / c.median, openSecondMs: stats(openSecond), ratioSecond: stats(openSecond).median / c.median, machineCpuSecondMs: stats(machineSecond), ratioHere: stats(openHere).median / c.median, openSsh2Ms: stats(openSsh2), ratioSsh2: stats(openSsh2).median / c.median, machineCpuSsh2Ms: stats(machineSsh2), firstPartialMs: stats(firstPartial), snapshotBytes,
      appendPollMs: stats(pollMs), appendCpuMs: stats(cpuMs), updateBuildMs: stats(updateMs), updateBytes: stats(updateBytes),
      memory: { arrays, points, bytesPerPoint: arrays / points, heapAfterGc: heap, arrayBuffers: mem.arrayBuffers, rss: mem.rss, compare: { rssGrowth: rssCompare, arrays: compareArrays, points: comparePoints } },
      loadavg: { start: loadAtStart, end: os.loadavg()[0] },
    }));
  } finally {
    await cleanup();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
