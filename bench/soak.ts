/**
 * Soak benchmark: the extension host's metrics side left running against a live run, to show it does not grow or
 * burn CPU over time. For `--minutes` (default 30) a writer appends `--rate` lines per second (default 20) to the
 * story run's logs/train.jsonl inside pct:200 of the test host, while what the extension runs for two open metrics
 * panels and the inline view does its work, without VS Code (those classes need none):
 *  - one FeedRegistry of RunFeeds (one per run, shared by the views, as in the extension) polling over the shared
 *    ConnectionPool every `--poll-seconds` (default 1; the extension's default is 5);
 *  - panel 1: a MetricsPresenter on the live run; panel 2: a presenter on the bare host's story run compared with
 *    the live run; the inline view: a presenter on the live run. Each turns feed changes into `update` messages
 *    after the same 50 ms batching as MetricsView, serialised as postMessage would (counted, then dropped).
 * Every `--sample-seconds` (default 60) it prints heap after a full GC, RSS, and CPU use of this process over the
 * interval. At the end: growth from the first sample (taken after a one-sample warm-up) to the last, with the
 * points held by the series (the data a user is shown grows by design). Exits 1 when the heap or RSS grows by
 * 20 MB or more, or when a written line was missed or counted twice. Timing is reported, never judged.
 *
 * Run: `npm run bench:soak` (30 minutes) or `node --import tsx bench/soak.ts --minutes 3` as root.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { ConnectionPool } from '../src/core/ssh/pool';
import { HostDirectory } from '../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../src/core/service';
import type { Executor } from '../src/core/remote';
import type { HostConfig, TargetRef } from '../src/core/types';
import { FeedRegistry, RunFeed } from '../src/core/metrics/follow/runFeed';
import { MetricsPresenter } from '../src/extension/metrics/presenter';
import { runKeyOf, toRunRef } from '../src/core/runRef';
import type { RunRefWire, RunRole, ViewMode } from '../src/shared/metricsProtocol';
import { startTestHost, ScriptedPrompter } from '../test/harness/testHost';
import { heapAfterGc, mib, table } from './util';

const args = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    rate: { type: 'string', default: '20' },
    'poll-seconds': { type: 'string', default: '1' },
    'sample-seconds': { type: 'string', default: '60' },
  },
}).values;
const MINUTES = posNum(args.minutes, 'minutes');
const RATE = posNum(args.rate, 'rate');
const POLL_MS = posNum(args['poll-seconds'], 'poll-seconds') * 1000;
const SAMPLE_MS = posNum(args['sample-seconds'], 'sample-seconds') * 1000;
const LIMIT_BYTES = 20 * 1024 * 1024;
/** MetricsView batches feed changes this long before posting an update. */
const FLUSH_MS = 50;

function posNum(v: string | undefined, name: string): number {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) {
    process.stderr.write(`--${name} must be a positive number\n`);
    process.exit(2);
  }
  return n;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const load = (): string => os.loadavg().map((x) => x.toFixed(2)).join(' ');

/** One open metrics view (panel or inline): a presenter over leased feeds, posting batched updates. */
class SoakView {
  readonly presenter = new MetricsPresenter({ plateau: () => ({ window: 50, fraction: 0.01 }), now: () => Date.now() });
  messages = 0;
  bytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly leases: { release(): void; sub: { dispose(): void } }[] = [];

  constructor(
    readonly name: string,
    private readonly mode: ViewMode,
    private readonly feeds: FeedRegistry,
  ) {
    this.presenter.setView(900, null, 0.6, []);
  }

  add(ref: RunRefWire, role: RunRole): void {
    const lease = this.feeds.acquire(runKeyOf(ref), ref);
    const sub = lease.feed.onDidChange(() => this.schedule());
    this.presenter.addRun(ref, role, lease.feed);
    this.leases.push({ release: lease.release, sub });
    this.post(this.presenter.snapshot(this.mode, this.name));
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.post(this.presenter.update());
    }, FLUSH_MS);
  }

  private post(msg: unknown): void {
    if (!msg) return;
    this.messages++;
    this.bytes += JSON.stringify(msg).length; // what postMessage would serialise
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const l of this.leases) {
      l.sub.dispose();
      l.release();
    }
  }
}

interface Sample {
  minute: number;
  heap: number;
  rss: number;
  cpuPercent: number;
  points: number;
  lines: number;
}

async function main(): Promise<void> {
  console.log(`# soak: ${MINUTES} min, ${RATE} lines/s, poll every ${POLL_MS / 1000} s, 2 panels + inline view; load ${load()}`);
  const host = await startTestHost();
  let stopping = false;
  const stopAll: (() => void | Promise<void>)[] = [() => host.stop()];
  const cleanup = async (): Promise<void> => {
    for (const c of stopAll.reverse()) await c();
  };
  process.once('SIGINT', () => {
    stopping = true;
    void cleanup().finally(() => process.exit(130));
  });
  try {
    const hosts: HostConfig[] = [host.hostConfig('testbox', { runRoots: ['/workspace', host.paths.runs] })];
    const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: { info() {}, warn() {}, error() {} }, knownHostsFiles: [host.knownHostsFile] });
    stopAll.push(() => pool.dispose());
    const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    let execs = 0;
    const core = new RemoteRunsCore({
      hosts: () => hosts,
      executorFor: (h): Executor => {
        const inner = pool.executor(dir.resolve(h), { idempotent: true });
        return { exec: (line, o) => (execs++, inner.exec(line, o)) };
      },
    });
    const feeds = new FeedRegistry((ref) => new RunFeed(ref, { executor: () => core.executor('testbox'), intervalMs: () => POLL_MS }));
    stopAll.push(() => feeds.dispose());

    const PCT: TargetRef = { kind: 'pct', id: '200' };
    const live = runsOf(await core.listTarget('testbox', PCT)).find((r) => r.path === '/workspace')!;
    const bareListing = await core.listTarget('testbox', { kind: 'host', id: '' });
    const other = runsOf(bareListing).find((r) => r.name === 'story')!;
    const liveRef = toRunRef('testbox', PCT, live);
    const otherRef = toRunRef('testbox', bareListing.target, other);

    const log = path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl');
    const initialLines = fs.readFileSync(log, 'utf8').trim().split('\n').length;
    const panel1 = new SoakView('panel 1', 'panel', feeds);
    panel1.add(liveRef, 'primary');
    const panel2 = new SoakView('panel 2', 'panel', feeds);
    panel2.add(otherRef, 'primary');
    panel2.add(liveRef, 'compare');
    const inline = new SoakView('inline', 'inline', feeds);
    inline.add(liveRef, 'primary');
    const views = [panel1, panel2, inline];
    stopAll.push(() => views.forEach((v) => v.dispose()));

    // The writer: RATE lines a second, in 4 bursts a second, each burst's last line cut so a half line waits.
    let written = 0;
    let step = 10_000_000;
    let carry = '';
    const burst = Math.max(1, Math.round(RATE / 4));
    const writer = setInterval(() => {
      let text = carry;
      for (let i = 0; i < burst; i++) {
        step += 10;
        text += `${JSON.stringify({ step, loss: 1 + Math.sin(step / 5000) / 3, acc: (step % 1000) / 1000, lr: 3e-4 * Math.exp(-step / 1e8), tokens_per_s: 800 + (step % 97) })}\n`;
        written++;
      }
      const cut = text.length - 17;
      fs.appendFileSync(log, text.slice(0, cut));
      carry = text.slice(cut);
    }, 250);
    stopAll.push(() => clearInterval(writer));

    const liveFeed = feeds.acquire(runKeyOf(liveRef), liveRef);
    stopAll.push(() => liveFeed.release());
    const points = (): number => {
      let n = 0;
      for (const f of [liveFeed.feed]) for (const s of f.series().values()) n += s.length;
      return n;
    };

    const samples: Sample[] = [];
    const t0 = Date.now();
    let cpu = process.cpuUsage();
    let cpuAt = Date.now();
    const sample = (): Sample => {
      const heap = heapAfterGc();
      const rss = process.memoryUsage().rss;
      const used = process.cpuUsage(cpu);
      const wall = Date.now() - cpuAt;
      cpu = process.cpuUsage();
      cpuAt = Date.now();
      const s: Sample = {
        minute: (Date.now() - t0) / 60_000,
        heap,
        rss,
        cpuPercent: wall > 0 ? ((used.user + used.system) / 1000 / wall) * 100 : 0,
        points: points(),
        lines: written,
      };
      console.log(
        `# t=${s.minute.toFixed(1)} min  heap ${mib(heap)}  rss ${mib(rss)}  cpu ${s.cpuPercent.toFixed(1)}%  points ${s.points}  lines written ${written}  remote commands ${execs}  load ${load()}`,
      );
      return s;
    };

    const end = t0 + MINUTES * 60_000;
    while (!stopping && Date.now() < end) {
      await sleep(Math.min(SAMPLE_MS, Math.max(0, end - Date.now())));
      samples.push(sample());
    }
    clearInterval(writer);
    fs.appendFileSync(log, carry);
    // Let the feeds catch up with the last lines, then check each arrived exactly once.
    const loss = (): number => liveFeed.feed.series().get('loss')?.length ?? 0;
    for (let i = 0; i < 60 && loss() < initialLines + written; i++) await sleep(500);
    const missed = initialLines + written - loss();

    const first = samples.length > 1 ? samples[1] : samples[0]; // the first interval includes start-up and the backlog
    const last = samples[samples.length - 1];
    const heapGrowth = last.heap - first.heap;
    const rssGrowth = last.rss - first.rss;
    console.log('\n## Start and end (first sample after one interval of warm-up)');
    console.log(
      table(
        ['', 'start', 'end', 'growth'],
        [
          ['minute', first.minute.toFixed(1), last.minute.toFixed(1), ''],
          ['heap after GC', mib(first.heap), mib(last.heap), mib(heapGrowth)],
          ['RSS', mib(first.rss), mib(last.rss), mib(rssGrowth)],
          ['CPU over the interval', `${first.cpuPercent.toFixed(1)}%`, `${last.cpuPercent.toFixed(1)}%`, ''],
          ['points held (live run)', String(first.points), String(last.points), String(last.points - first.points)],
        ],
      ),
    );
    const polls = execs;
    console.log(
      `\n# ${written} lines written, ${missed === 0 ? 'every one arrived once' : `${missed} missing (negative: counted twice)`}; ` +
        `${polls} remote commands in all; messages posted: ${views.map((v) => `${v.name} ${v.messages} (${mib(v.bytes)})`).join(', ')}; load ${load()}`,
    );
    const problems: string[] = [];
    if (heapGrowth >= LIMIT_BYTES) problems.push(`heap grew ${mib(heapGrowth)} (limit 20 MiB)`);
    if (rssGrowth >= LIMIT_BYTES) problems.push(`RSS grew ${mib(rssGrowth)} (limit 20 MiB)`);
    if (missed !== 0) problems.push(`${missed} lines missing or doubled`);
    for (const p of problems) console.log(`PROBLEM ${p}`);
    console.log(
      JSON.stringify({
        bench: 'soak',
        minutes: MINUTES,
        rate: RATE,
        pollSeconds: POLL_MS / 1000,
        heapStartMiB: +(first.heap / 2 ** 20).toFixed(1),
        heapEndMiB: +(last.heap / 2 ** 20).toFixed(1),
        rssStartMiB: +(first.rss / 2 ** 20).toFixed(1),
        rssEndMiB: +(last.rss / 2 ** 20).toFixed(1),
        cpuStartPercent: +first.cpuPercent.toFixed(1),
        cpuEndPercent: +last.cpuPercent.toFixed(1),
        lines: written,
        missed,
        problems: problems.length,
      }),
    );
    if (problems.length) process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
