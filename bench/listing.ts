/**
 * Listing benchmark: how fast and how frugal is one target listing (50 runs × 100 checkpoints) compared with
 * what a user would type, `ssh host find …`, measured against a real OpenSSH server on 127.0.0.1 in the same run.
 *
 * For the bare host and for a pct container (the shim adds `unshare` + bind mounts, as `pct exec` adds its own
 * cost on Proxmox) it prints:
 *  1. remote commands per listing: our `pool.exec` calls, and the sessions and logins sshd logged;
 *  2. warm listing time (shared, connected pool) vs a fresh `ssh` process running the same `find`, and vs `ssh`
 *     through a persistent ControlMaster;
 *  3. cold time (fresh pool: connect + auth + listing) vs the plain `ssh` figure;
 *  4. heap before/after parsing one listing's output.
 * Ratios are ours / baseline, all samples interleaved in one loop so drift hits every column alike.
 * The last stdout line is a one-line JSON summary. Exits 1 if a listing ever takes more than one remote command
 * or lists the wrong tree; timing is never judged.
 *
 * Run: `node --import tsx bench/listing.ts [--runs 50] [--ckpts 100] [--n 15] [--vmid 300]` (as root: the
 * harness creates the test user and starts sshd).
 */
import * as os from 'node:os';
import * as fs from 'node:fs';
import { buildSync } from 'esbuild';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import type { ConnectionPool } from '../src/core/ssh/pool';
import type { HostDirectory } from '../src/core/hosts';
import { runsOf, type RemoteRunsCore } from '../src/core/service';
import type * as ShippedModule from './shipped';
import { DEFAULT_MAX_DEPTH, listRunsCommand } from '../src/core/discovery/listScript';
import { wrapForTarget } from '../src/core/targets';
import type { ExecResult } from '../src/core/remote';
import type { HostConfig, TargetListing, TargetRef } from '../src/core/types';
import { startTestHost, ScriptedPrompter, type TestHost } from '../test/harness/testHost';
import { addPctContainer } from '../test/shims/shimState';
import { writeManyRuns } from '../test/fixtures/generate';
import {
  heapAfterGc,
  mib,
  ms,
  runSsh,
  sessionsInLog,
  settledLog,
  startControlMaster,
  stats,
  table,
  timed,
  type ControlMaster,
  type Stats,
} from './util';

const args = parseArgs({
  options: {
    runs: { type: 'string', default: '50' },
    ckpts: { type: 'string', default: '100' },
    n: { type: 'string', default: '15' },
    vmid: { type: 'string', default: '300' },
  },
}).values;
const RUNS = posInt(args.runs, 'runs');
const CKPTS = posInt(args.ckpts, 'ckpts');
const N = posInt(args.n, 'n');
const VMID = String(posInt(args.vmid, 'vmid'));
/** Entries one run writes: run/, checkpoints/, CKPTS × (step_N/ + checkpoint.pt), logs/, logs/train.jsonl. */
const ENTRIES = RUNS * (1 + 1 + 2 * CKPTS + 2);
/** Above the tree's size, so ours lists all of it as `find` does (the default cap is reported separately). */
const MAX_ENTRIES = ENTRIES + 1000;
const MAX_DEPTH = DEFAULT_MAX_DEPTH;

/** The same walk the list script does (GNU find: follow symlinks, same depth, same record format). */
function findArgv(root: string): string[] {
  return ['find', '-L', root, '-mindepth', '1', '-maxdepth', String(MAX_DEPTH), '-printf', 'E\\0%y\\0%s\\0%T@\\0%P\\0'];
}

interface PathSpec {
  label: string;
  hostName: string;
  target: TargetRef;
  root: string;
  /** The remote command line the `ssh` baseline runs (quoted once, as a user would type it). */
  sshCommand: string;
  /** Our own list script's command line, run by `ssh` through the master: its remote cost without our client. */
  scriptCommand: string;
}

interface CommandCounts {
  execs: number;
  sessions: number;
  logins: number;
}

interface PathResult {
  label: string;
  sshCommand: string;
  warmCounts: CommandCounts;
  coldCounts: CommandCounts;
  sshCounts: CommandCounts;
  loop: { listings: number; execs: number; sessions: number; expectedSessions: number; logins: number; expectedLogins: number };
  warm: Stats;
  cold: Stats;
  ssh: Stats;
  sshMux: Stats;
  scriptMux: Stats;
  parse: Stats;
  /** The same parse from the esbuild bundle under plain node (what ships), median and min ms. */
  parseBundled: { median: number; min: number; tail: number | null };
  stdoutBytes: number;
  sshStdoutBytes: number;
  heap: { beforeParse: number; afterParse: number; retained: number };
  truncatedAtDefaultCap: boolean;
}

const failures: string[] = [];

/** Externals as esbuild.mjs has them: the bundle runs ssh2 without its native crypto binding, as the extension does. */
const BUNDLE_EXTERNAL = ['cpu-features', './crypto/build/Release/sshcrypto.node'];

/**
 * The pool, host directory and core the listings are timed with, as they ship: bench/shipped.ts bundled by esbuild
 * and loaded by node (tsx never transforms it), so `ours` runs the product's code, not tsx's wrapping of it.
 */
function loadShipped(): typeof ShippedModule {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-shipped-'));
  try {
    const out = path.join(dir, 'shipped.js');
    buildSync({ entryPoints: [path.join(__dirname, 'shipped.ts')], bundle: true, platform: 'node', format: 'cjs', target: 'node20', outfile: out, external: BUNDLE_EXTERNAL, logLevel: 'warning' });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(out) as typeof ShippedModule;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
const shipped = loadShipped();
const loadAtStart = os.loadavg()[0];
/**
 * Parse `stdout` with the parser as it ships: bench/parseProbe.ts bundled by esbuild into a temporary file, run by
 * plain node (median and min of n parses after a warm-up).
 */
function parseAsShipped(stdout: Buffer, root: string, n: number): { median: number; min: number; tail: number | null } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-parse-'));
  try {
    const probe = path.join(dir, 'probe.js');
    const out = path.join(dir, 'listing.bin');
    fs.writeFileSync(out, stdout);
    buildSync({ entryPoints: [path.join(__dirname, 'parseProbe.ts')], bundle: true, platform: 'node', target: 'node20', outfile: probe, logLevel: 'warning' });
    const r = spawnSync(process.execPath, [probe, out, root, String(MAX_ENTRIES), String(Math.max(n, 15))], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`parse probe failed: ${r.stderr}`);
    return JSON.parse(r.stdout) as { median: number; min: number; tail: number | null };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function check(ok: boolean, what: string): void {
  if (!ok) failures.push(what);
}

/** Pools and cores wired as the extension does (see test/integration/listing.test.ts), with exec counted. */
class Bench {
  execs = 0;
  lastResult: ExecResult | undefined;
  private readonly dir: HostDirectory;
  private readonly pools = new Set<ConnectionPool>();

  constructor(private readonly host: TestHost, private readonly hosts: HostConfig[]) {
    this.dir = new shipped.HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  }

  /** A fresh pool (no connection yet) and a core over it; `productCap` keeps the product's default entry cap. */
  make(opts: { productCap?: boolean } = {}): { core: RemoteRunsCore; pool: ConnectionPool } {
    const pool = new shipped.ConnectionPool({
      prompter: new ScriptedPrompter(),
      logger: { info() {}, warn() {}, error() {} },
      knownHostsFiles: [this.host.knownHostsFile],
      connectTimeoutMs: 5000,
      agent: null,
    });
    const realExec = pool.exec.bind(pool);
    pool.exec = (async (...a: Parameters<typeof realExec>) => {
      this.execs++;
      const r = await realExec(...a);
      this.lastResult = r;
      return r;
    }) as typeof pool.exec;
    this.pools.add(pool);
    const core = new shipped.RemoteRunsCore({
      hosts: () => this.hosts,
      executorFor: (h) => pool.executor(this.dir.resolve(h), { idempotent: true }),
      maxEntries: opts.productCap ? undefined : MAX_ENTRIES,
    });
    return { core, pool };
  }

  release(pool: ConnectionPool): void {
    pool.dispose();
    this.pools.delete(pool);
  }

  dispose(): void {
    for (const p of this.pools) p.dispose();
    this.pools.clear();
  }
}

/** What the server saw while `fn` ran: sessions (exec requests) and logins, plus our exec calls. */
async function counted(host: TestHost, bench: Bench, fn: () => Promise<unknown>): Promise<CommandCounts> {
  const log0 = await settledLog(host.sshd.log);
  const logins0 = host.sshd.acceptedLogins();
  const execs0 = bench.execs;
  await fn();
  const log1 = await settledLog(host.sshd.log);
  return { execs: bench.execs - execs0, sessions: sessionsInLog(log1.slice(log0.length)), logins: host.sshd.acceptedLogins() - logins0 };
}

/** The listing is the tree we wrote: one ok root, not truncated, every run with every checkpoint. */
function checkListing(label: string, listing: TargetListing): void {
  const root = listing.roots[0];
  check(listing.roots.length === 1 && root?.state === 'ok', `${label}: root state ${root?.state}`);
  if (root?.state !== 'ok') return;
  check(!root.truncated, `${label}: listing truncated`);
  const runs = runsOf(listing);
  check(runs.length === RUNS, `${label}: ${runs.length} runs listed, ${RUNS} written`);
  check(runs.every((r) => r.checkpoints.length === CKPTS), `${label}: a run lacks checkpoints`);
}

async function measurePath(host: TestHost, bench: Bench, spec: PathSpec, sshBase: string[], master: ControlMaster): Promise<PathResult> {
  const plainSsh = (): ReturnType<typeof runSsh> => runSsh([...sshBase, 'testbox', spec.sshCommand]);
  const muxSsh = (): ReturnType<typeof runSsh> => runSsh([...sshBase, ...master.clientArgs, 'testbox', spec.sshCommand]);
  const muxScript = (): ReturnType<typeof runSsh> => runSsh([...sshBase, ...master.clientArgs, 'testbox', spec.scriptCommand]);
  const shared = bench.make();
  const list = (core: RemoteRunsCore): Promise<TargetListing> => core.listTarget(spec.hostName, spec.target);

  // Warm-up: connects the shared pool, fills the server's dentry cache, and proves every contender works.
  const first = await list(shared.core);
  checkListing(spec.label, first);
  const sshFirst = await plainSsh();
  check(sshFirst.code === 0, `${spec.label}: ssh find exited ${sshFirst.code}: ${sshFirst.stderr.trim()}`);
  const muxFirst = await muxSsh();
  check(muxFirst.code === 0, `${spec.label}: ssh find (mux) exited ${muxFirst.code}: ${muxFirst.stderr.trim()}`);
  const scriptFirst = await muxScript();
  check(scriptFirst.code === 0, `${spec.label}: list script over ssh (mux) exited ${scriptFirst.code}: ${scriptFirst.stderr.trim()}`);

  // 1. Remote commands for one listing, counted on both ends.
  const warmCounts = await counted(host, bench, () => list(shared.core));
  const coldCounts = await counted(host, bench, async () => {
    const fresh = bench.make();
    await list(fresh.core);
    bench.release(fresh.pool);
  });
  const sshCounts = await counted(host, bench, plainSsh);
  check(warmCounts.execs === 1 && warmCounts.sessions === 1 && warmCounts.logins === 0, `${spec.label}: warm listing took ${JSON.stringify(warmCounts)}`);
  check(coldCounts.execs === 1 && coldCounts.sessions === 1 && coldCounts.logins === 1, `${spec.label}: cold listing took ${JSON.stringify(coldCounts)}`);

  // 2 + 3. Interleaved timing loop.
  const warm: number[] = [];
  const cold: number[] = [];
  const ssh: number[] = [];
  const sshMux: number[] = [];
  const scriptMux: number[] = [];
  const log0 = await settledLog(host.sshd.log);
  const logins0 = host.sshd.acceptedLogins();
  const execs0 = bench.execs;
  for (let i = 0; i < N; i++) {
    const w = await timed(() => list(shared.core));
    checkListing(`${spec.label} warm #${i}`, w.value);
    warm.push(w.ms);
    const s = await plainSsh();
    check(s.code === 0, `${spec.label}: ssh find exited ${s.code}`);
    ssh.push(s.ms);
    const m = await muxSsh();
    check(m.code === 0, `${spec.label}: ssh find (mux) exited ${m.code}`);
    sshMux.push(m.ms);
    const sc = await muxScript();
    check(sc.code === 0, `${spec.label}: list script over ssh (mux) exited ${sc.code}`);
    scriptMux.push(sc.ms);
    const fresh = bench.make();
    const c = await timed(() => list(fresh.core));
    bench.release(fresh.pool);
    checkListing(`${spec.label} cold #${i}`, c.value);
    cold.push(c.ms);
  }
  const log1 = await settledLog(host.sshd.log);
  const loop = {
    listings: 2 * N,
    execs: bench.execs - execs0,
    sessions: sessionsInLog(log1.slice(log0.length)),
    // Every contender opens exactly one session per sample.
    expectedSessions: 5 * N,
    logins: host.sshd.acceptedLogins() - logins0,
    // Plain ssh and our cold pool log in once per sample; the warm pool and the mux client never.
    expectedLogins: 2 * N,
  };
  check(loop.execs === loop.listings, `${spec.label}: ${loop.execs} execs for ${loop.listings} listings`);
  check(loop.sessions === loop.expectedSessions, `${spec.label}: sshd saw ${loop.sessions} sessions, expected ${loop.expectedSessions}`);

  // 4. Parsing alone, and the heap it takes, from one captured raw result.
  await list(shared.core);
  const raw = bench.lastResult!;
  const command = listRunsCommand([spec.root], { maxEntries: MAX_ENTRIES });
  const parse: number[] = [];
  for (let i = 0; i < N; i++) parse.push((await timed(async () => command.parse(raw))).ms);
  const bundled = parseAsShipped(raw.stdout, spec.root, N);
  const beforeParse = heapAfterGc();
  let parsed: unknown = command.parse(raw);
  const afterParse = process.memoryUsage().heapUsed;
  const retained = heapAfterGc();
  check(parsed !== undefined, 'parse returned nothing');
  parsed = undefined;

  // The product default cap (10,000 entries per root) against this tree.
  const capped = bench.make({ productCap: true });
  const cappedListing = await list(capped.core);
  bench.release(capped.pool);
  const truncatedAtDefaultCap = cappedListing.roots.some((r) => r.state === 'ok' && r.truncated);

  bench.release(shared.pool);
  return {
    label: spec.label,
    sshCommand: spec.sshCommand,
    warmCounts,
    coldCounts,
    sshCounts,
    loop,
    warm: stats(warm),
    cold: stats(cold),
    ssh: stats(ssh),
    sshMux: stats(sshMux),
    scriptMux: stats(scriptMux),
    parse: stats(parse),
    parseBundled: bundled,
    stdoutBytes: raw.stdout.length,
    sshStdoutBytes: sshFirst.stdoutBytes,
    heap: { beforeParse, afterParse, retained },
    truncatedAtDefaultCap,
  };
}

function report(results: PathResult[], sshVersion: string): void {
  const out: string[] = [];
  out.push(`Listing benchmark: ${RUNS} runs × ${CKPTS} checkpoints per target (${ENTRIES} entries), N=${N}, node ${process.version}, ${sshVersion}`);
  out.push('All against one sshd on 127.0.0.1; ratios are ours / baseline, medians from one interleaved loop.');
  out.push(`Load average (1 min) at start ${loadAtStart.toFixed(2)}, at end ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores: other work on the machine slows every column.`);
  out.push('');
  out.push('1. Remote commands for one listing (pool.exec calls | sessions sshd started | logins sshd accepted)');
  out.push(
    table(
      ['target', 'ours warm', 'ours cold', 'ssh find', `timed loop: execs/listings, sessions (expected), logins (expected)`],
      results.map((r) => [
        r.label,
        fmtCounts(r.warmCounts),
        fmtCounts(r.coldCounts),
        `- | ${r.sshCounts.sessions} | ${r.sshCounts.logins}`,
        `${r.loop.execs}/${r.loop.listings}, ${r.loop.sessions} (${r.loop.expectedSessions}), ${r.loop.logins} (${r.loop.expectedLogins})`,
      ]),
    ),
  );
  out.push('');
  out.push(`2-3. Time per listing, ms: median [min-max] of ${N}`);
  const cell = (s: Stats): string => `${ms(s.median)} [${ms(s.min)}-${ms(s.max)}]`;
  out.push(
    table(
      ['target', 'ours warm', 'ssh find', 'ssh find (mux)', 'ours cold', 'warm/ssh', 'warm/mux', 'cold/ssh', 'our script (mux)', 'warm/script'],
      results.map((r) => [
        r.label,
        cell(r.warm),
        cell(r.ssh),
        cell(r.sshMux),
        cell(r.cold),
        ratio(r.warm.median, r.ssh.median),
        ratio(r.warm.median, r.sshMux.median),
        ratio(r.cold.median, r.ssh.median),
        cell(r.scriptMux),
        ratio(r.warm.median, r.scriptMux.median),
      ]),
    ),
  );
  out.push('');
  out.push('4. Output and memory of one listing (heap: after a full GC before parsing, right after parsing, after GC holding the result)');
  out.push(
    table(
      ['target', 'our output', 'ssh find output', 'parse ms (median)', 'parse ms as shipped', 'per 10k entries', 'after the last 32 KiB', 'heap before', 'after parse', 'retained', 'default cap truncates'],
      results.map((r) => [
        r.label,
        mib(r.stdoutBytes),
        mib(r.sshStdoutBytes),
        ms(r.parse.median),
        `${ms(r.parseBundled.median)} [min ${ms(r.parseBundled.min)}]`,
        ms((r.parseBundled.median * 10_000) / ENTRIES),
        r.parseBundled.tail === null ? '-' : ms(r.parseBundled.tail),
        mib(r.heap.beforeParse),
        `${mib(r.heap.afterParse)} (+${mib(r.heap.afterParse - r.heap.beforeParse)})`,
        `${mib(r.heap.retained)} (+${mib(r.heap.retained - r.heap.beforeParse)})`,
        r.truncatedAtDefaultCap ? 'yes' : 'no',
      ]),
    ),
  );
  out.push('');
  out.push('Baselines (remote command line of `ssh testbox …`):');
  for (const r of results) out.push(`  ${r.label}: ${r.sshCommand}`);
  if (failures.length) {
    out.push('');
    out.push(`FAILED (${failures.length}):`);
    for (const f of failures.slice(0, 20)) out.push(`  ${f}`);
  }
  process.stdout.write(out.join('\n') + '\n');

  const summary = {
    bench: 'listing',
    ok: failures.length === 0,
    runs: RUNS,
    checkpoints: CKPTS,
    entries: ENTRIES,
    n: N,
    loadavg: { start: loadAtStart, end: os.loadavg()[0] },
    node: process.version,
    ssh: sshVersion,
    targets: Object.fromEntries(
      results.map((r) => [
        r.label,
        {
          commandsPerListing: { warm: r.warmCounts, cold: r.coldCounts },
          loop: r.loop,
          ms: {
            warm: r.warm.median,
            cold: r.cold.median,
            ssh: r.ssh.median,
            sshMux: r.sshMux.median,
            scriptMux: r.scriptMux.median,
            parse: r.parse.median,
            parseBundled: r.parseBundled.median,
            parseBundledTail: r.parseBundled.tail,
          },
          ratio: {
            warmVsSsh: r.warm.median / r.ssh.median,
            warmVsMux: r.warm.median / r.sshMux.median,
            coldVsSsh: r.cold.median / r.ssh.median,
            warmVsScriptMux: r.warm.median / r.scriptMux.median,
          },
          bytes: { ours: r.stdoutBytes, ssh: r.sshStdoutBytes },
          heap: r.heap,
          truncatedAtDefaultCap: r.truncatedAtDefaultCap,
        },
      ]),
    ),
    failures,
  };
  process.stdout.write(JSON.stringify(summary) + '\n');
}

function fmtCounts(c: CommandCounts): string {
  return `${c.execs} | ${c.sessions} | ${c.logins}`;
}

function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}x`;
}

function posInt(value: string | undefined, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${value}`);
  return n;
}

async function main(): Promise<number> {
  // OpenSSH prints its version on stderr.
  const sshVersion = spawnSync('ssh', ['-V'], { encoding: 'utf8' }).stderr.trim().split(',')[0];
  const host = await startTestHost();
  let bench: Bench | undefined;
  let master: ControlMaster | undefined;
  // One cleanup, shared: a signal and main's own `finally` may both ask, and neither may exit before it is done.
  let cleaning: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaning ??= (async () => {
      bench?.dispose();
      await master?.stop().catch(() => undefined);
      await host.stop();
    })());
  let interrupted: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals): void => {
    interrupted = sig;
    process.stderr.write(`${sig}: stopping sshd and removing temp folders…\n`);
    void cleanup().finally(() => process.exit(sig === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const runsDir = path.join(host.dir, 'bench-runs');
    writeManyRuns(runsDir, RUNS, CKPTS);
    const ct = addPctContainer(host.shimRoot, VMID, { name: 'bench-ct' });
    writeManyRuns(ct.workspace, RUNS, CKPTS);
    // The test user must read both trees (the generator writes as root).
    execFileSync('chmod', ['-R', 'a+rX', runsDir, ct.dir]);

    const hosts = [host.hostConfig('bench-host', { runRoots: [runsDir] }), host.hostConfig('bench-pct', { runRoots: ['/workspace'] })];
    bench = new Bench(host, hosts);
    // `testbox` in the harness's ssh config: 127.0.0.1, the test port, user and key (IdentitiesOnly).
    const sshBase = [
      '-F', host.sshConfigFile,
      '-o', 'BatchMode=yes',
      '-o', `UserKnownHostsFile=${host.knownHostsFile}`,
      '-o', 'GlobalKnownHostsFile=/dev/null',
      '-o', 'StrictHostKeyChecking=yes',
      '-o', 'LogLevel=ERROR',
    ];
    master = await startControlMaster(sshBase, 'testbox', path.join(host.dir, 'cm.sock'));

    const spec = (label: string, hostName: string, target: TargetRef, root: string): PathSpec => ({
      label,
      hostName,
      target,
      root,
      sshCommand: wrapForTarget(target, findArgv(root)),
      scriptCommand: wrapForTarget(target, listRunsCommand([root], { maxEntries: MAX_ENTRIES }).argv),
    });
    const specs = [
      spec('host', 'bench-host', { kind: 'host', id: '' }, runsDir),
      spec(`pct:${VMID}`, 'bench-pct', { kind: 'pct', id: VMID }, '/workspace'),
    ];
    const results: PathResult[] = [];
    for (const spec of specs) {
      process.stderr.write(`measuring ${spec.label}…\n`);
      results.push(await measurePath(host, bench, spec, sshBase, master));
    }
    report(results, sshVersion);
    return failures.length ? 1 : 0;
  } catch (e) {
    // After a signal, what fails is the work the cleanup pulled from under us: not worth a stack trace.
    if (interrupted) await new Promise(() => undefined);
    throw e;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`listing bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
