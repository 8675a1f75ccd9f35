/**
 * Scale benchmark: a tree of H hosts × T targets × R runs × C checkpoints (default 20 × 5 × 50 × 100 = 500,000
 * checkpoints), expanded completely through RemoteRunsCore the way the sidebar tree does it (host → listTargets,
 * each target → listTarget; runs and checkpoints expand from the listing without remote commands). The tree
 * provider itself needs VS Code, so the core it calls is driven directly.
 *
 * The hosts are H host configs spread over S real sshd servers on 127.0.0.1 (each host its own pool connection,
 * as for separate machines); every host sees the same five targets through the test shims: the bare host and
 * pct 300, pct 301, docker sc-a, docker sc-b, each holding R runs of C step folders (sparse files, no disk cost).
 *
 * It prints: remote commands used (our executor calls, sessions and logins the servers logged, against what one
 * command per listing requires), time to expand everything cold (connect included) and warm (refresh over open
 * connections), against a baseline measured in the same run: one warm target listing alone, times the number of
 * targets (what expanding them one by one would cost); and memory (heap after GC with every listing held, as the
 * tree holds them, and RSS). Exits 1 if a listing is wrong (missing runs or checkpoints, truncated) or a listing
 * takes more than one command. Timing is reported, never judged.
 *
 * Run: `npm run bench:scale` or `node --import tsx bench/scale.ts [--hosts 20] [--servers 4] [--runs 50]
 * [--ckpts 100] [--n 3]` as root.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { ConnectionPool } from '../src/core/ssh/pool';
import { HostDirectory } from '../src/core/hosts';
import { RemoteRunsCore, runsOf } from '../src/core/service';
import type { Executor } from '../src/core/remote';
import type { HostConfig, TargetListing, TargetRef } from '../src/core/types';
import { startSshd, type TestSshd } from '../test/harness/sshd';
import { ScriptedPrompter } from '../test/harness/testHost';
import { addDockerContainer, addPctContainer, createShimRoot, installShims } from '../test/shims/shimState';
import { writeManyRuns } from '../test/fixtures/generate';
import { heapAfterGc, mib, ms, sessionsInLog, settledLog, stats, table, timed } from './util';

const args = parseArgs({
  options: {
    hosts: { type: 'string', default: '20' },
    servers: { type: 'string', default: '4' },
    runs: { type: 'string', default: '50' },
    ckpts: { type: 'string', default: '100' },
    n: { type: 'string', default: '3' },
  },
}).values;
const HOSTS = posInt(args.hosts, 'hosts');
const SERVERS = Math.min(HOSTS, posInt(args.servers, 'servers'));
const RUNS = posInt(args.runs, 'runs');
const CKPTS = posInt(args.ckpts, 'ckpts');
const N = posInt(args.n, 'n');
const TARGETS = 5;

function posInt(v: string | undefined, name: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a positive integer\n`);
    process.exit(2);
  }
  return n;
}

const load = (): string => os.loadavg().map((x) => x.toFixed(2)).join(' ');

interface Expansion {
  listings: TargetListing[];
  targetsPerHost: number[];
}

async function main(): Promise<void> {
  const cleanups: (() => Promise<void> | void)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const c of cleanups.reverse()) await c();
  };
  process.once('SIGINT', () => void cleanup().finally(() => process.exit(130)));
  try {
    console.log(`# scale: ${HOSTS} hosts × ${TARGETS} targets × ${RUNS} runs × ${CKPTS} checkpoints on ${SERVERS} sshd (loopback); load ${load()}`);
    if (!fs.existsSync('/workspace')) fs.mkdirSync('/workspace', { mode: 0o755 });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-scale-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.chmodSync(dir, 0o755);

    // One shim world (the five targets) shared by every server: the same tree behind every host name.
    const shimRoot = createShimRoot(path.join(dir, 'shim-state'));
    const bin = path.join(dir, 'bin');
    installShims(bin, shimRoot);
    // Outside /tmp (where the shim state lives), in a top-level folder each container replaces with its own.
    fs.mkdirSync('/srv', { recursive: true, mode: 0o755 });
    const bare = fs.mkdtempSync('/srv/rr-scale-runs-');
    cleanups.push(() => fs.rmSync(bare, { recursive: true, force: true }));
    const t0 = Date.now();
    writeManyRuns(bare, RUNS, CKPTS);
    const containers = [
      ...[300, 301].map((vmid) => addPctContainer(shimRoot, vmid, { name: `scale-${vmid}` })),
      ...['sc-a', 'sc-b'].map((name) => addDockerContainer(shimRoot, name, { state: 'running', image: 'scale' })),
    ];
    const topLevel = bare.split('/')[1];
    for (const c of containers) {
      writeManyRuns(c.workspace, RUNS, CKPTS);
      // A container has its own /srv (the shim binds rootfs folders over the host's): the bare host's runs are not in it.
      fs.mkdirSync(path.join(c.rootfs, topLevel), { mode: 0o755 });
    }
    execFileSync('chmod', ['-R', 'a+rX', dir, bare]);
    console.log(`# wrote ${TARGETS} × ${RUNS * CKPTS} checkpoint folders in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    const servers: TestSshd[] = [];
    for (let i = 0; i < SERVERS; i++) {
      // Every host connects at once: more unauthenticated connections than sshd's default MaxStartups (10) allows.
      const s = await startSshd({ extraPath: [bin], extraConfig: ['MaxStartups 200'] });
      servers.push(s);
      cleanups.push(() => s.stop());
    }
    const home = path.join(dir, 'client-home');
    fs.mkdirSync(path.join(home, '.ssh'), { recursive: true, mode: 0o700 });
    const knownHosts = path.join(home, '.ssh', 'known_hosts');
    fs.writeFileSync(knownHosts, servers.map((s) => `${s.knownHostsLine}\n`).join(''));

    const hosts: HostConfig[] = Array.from({ length: HOSTS }, (_, i) => {
      const s = servers[i % SERVERS];
      return { name: `host-${String(i + 1).padStart(2, '0')}`, host: '127.0.0.1', port: s.port, user: s.user, identityFile: s.clientKeyPath, runRoots: ['/workspace', bare] };
    });
    const directory = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home, localUser: 'nobody' });

    let execs = 0;
    /** The last raw result of each command line, to explain a listing that fails. */
    const lastResults = new Map<string, string>();
    const failures: string[] = [];
    const makeCore = (pool: ConnectionPool): RemoteRunsCore =>
      new RemoteRunsCore({
        hosts: () => hosts,
        executorFor: (h): Executor => {
          const inner = pool.executor(directory.resolve(h), { idempotent: true });
          return {
            exec: async (line, o) => {
              execs++;
              const r = await inner.exec(line, o);
              lastResults.set(`${h.name}|${line}`, `stdout ${r.stdout.length} bytes, exit ${r.code ?? r.signal}, truncated ${r.truncated}, stderr ${JSON.stringify(r.stderr.toString().slice(0, 300))}, ends ${JSON.stringify(r.stdout.subarray(-40).toString('latin1'))}`);
              return r;
            },
          };
        },
      });
    const newPool = (): ConnectionPool =>
      new ConnectionPool({ prompter: new ScriptedPrompter(), logger: { info() {}, warn() {}, error() {} }, knownHostsFiles: [knownHosts], agent: null });

    /** Expand every host, and every target of each (as a user expanding the whole tree; VS Code asks concurrently). */
    const expandAll = async (core: RemoteRunsCore): Promise<Expansion> => {
      const perHost = await Promise.all(
        hosts.map(async (h) => {
          const { targets } = await core.listTargets(h.name);
          const listed = await Promise.all(
            targets.map((t) =>
              core.listTarget(h.name, { kind: t.kind, id: t.id } as TargetRef).catch((e: unknown) => {
                // A failed listing is reported (with what the command returned), not allowed to end the bench.
                failures.push(`${h.name} ${t.kind}:${t.id}: ${e instanceof Error ? e.message : String(e)} [${[...lastResults].reverse().find(([k]) => k.startsWith(`${h.name}|`) && k.includes(t.id || 'sh -c'))?.[1] ?? ''}]`);
                return undefined;
              }),
            ),
          );
          return listed.filter((l): l is TargetListing => l !== undefined);
        }),
      );
      return { listings: perHost.flat(), targetsPerHost: perHost.map((l) => l.length) };
    };

    const problems: string[] = [];
    const check = (e: Expansion, what: string): void => {
      if (e.targetsPerHost.some((n) => n !== TARGETS)) problems.push(`${what}: targets per host ${e.targetsPerHost.join(',')}, expected ${TARGETS}`);
      for (const l of e.listings) {
        const runs = runsOf(l);
        const ckpts = runs.reduce((n, r) => n + r.checkpoints.length, 0);
        const truncated = l.roots.some((r) => r.truncated);
        if (runs.length !== RUNS || ckpts !== RUNS * CKPTS || truncated) {
          problems.push(`${what}: ${l.target.kind}:${l.target.id} listed ${runs.length} runs, ${ckpts} checkpoints${truncated ? ' (truncated)' : ''}`);
        }
      }
    };
    const serverCounts = async (): Promise<{ sessions: number; logins: number }> => {
      let sessions = 0;
      let logins = 0;
      for (const s of servers) {
        sessions += sessionsInLog(await settledLog(() => s.log()));
        logins += s.acceptedLogins();
      }
      return { sessions, logins };
    };

    const heap0 = heapAfterGc();
    const rss0 = process.memoryUsage().rss;
    const rows: string[][] = [];
    const cold: number[] = [];
    const warm: number[] = [];
    const single: number[] = [];
    let held: Expansion | undefined;
    let commands = { execs: 0, sessions: 0, logins: 0 };
    const expectedCommands = HOSTS * (1 + TARGETS);

    for (let i = 0; i < N; i++) {
      // Cold: a fresh pool (the window just opened), every host connects.
      const pool = newPool();
      const core = makeCore(pool);
      const before = { execs, ...(await serverCounts()) };
      const c = await timed(() => expandAll(core));
      const after = { execs, ...(await serverCounts()) };
      check(c.value, `cold ${i + 1}`);
      cold.push(c.ms);
      if (i === 0) commands = { execs: after.execs - before.execs, sessions: after.sessions - before.sessions, logins: after.logins - before.logins };
      // Warm: Refresh All over the open connections.
      const w = await timed(() => expandAll(core));
      check(w.value, `warm ${i + 1}`);
      warm.push(w.ms);
      // Baseline: one target listing alone, warm, as many times as there are targets would cost one by one.
      for (let k = 0; k < 3; k++) single.push((await timed(() => core.listTarget(hosts[0].name, { kind: 'pct', id: '300' }))).ms);
      held = w.value;
      if (i === N - 1) {
        const heap = heapAfterGc();
        const rss = process.memoryUsage().rss;
        rows.push(['heap after GC, every listing held', mib(heap - heap0), mib(heap)]);
        rows.push(['RSS', mib(rss - rss0), mib(rss)]);
      }
      pool.dispose();
    }

    const sc = stats(cold);
    const sw = stats(warm);
    const s1 = stats(single);
    const oneByOne = s1.median * HOSTS * TARGETS;
    console.log('\n## Remote commands for one cold expansion of everything');
    console.log(
      table(
        ['', 'ours', 'required'],
        [
          ['executor calls', String(commands.execs), `${expectedCommands} (${HOSTS} × (1 targets + ${TARGETS} listings))`],
          ['sessions sshd started', String(commands.sessions), String(expectedCommands)],
          ['logins sshd accepted', String(commands.logins), `${HOSTS} (one connection per host)`],
        ],
      ),
    );
    console.log('\n## Time to expand everything (ms, median [min-max])');
    console.log(
      table(
        ['', 'time', 'vs one-by-one'],
        [
          ['cold (connect + every listing)', `${ms(sc.median)} [${ms(sc.min)}-${ms(sc.max)}]`, (sc.median / oneByOne).toFixed(2)],
          ['warm (refresh all)', `${ms(sw.median)} [${ms(sw.min)}-${ms(sw.max)}]`, (sw.median / oneByOne).toFixed(2)],
          [`baseline: one warm target listing`, `${ms(s1.median)} [${ms(s1.min)}-${ms(s1.max)}]`, ''],
          [`baseline × ${HOSTS * TARGETS} (one by one)`, ms(oneByOne), '1.00'],
        ],
      ),
    );
    console.log('\n## Memory');
    console.log(table(['', 'growth', 'total'], rows));
    const listings = held?.listings.length ?? 0;
    console.log(`\n# ${listings} listings held, ${listings * RUNS} runs, ${listings * RUNS * CKPTS} checkpoints; load ${load()} (2 shared cores: absolute times move with load, ratios less)`);
    problems.push(...failures.map((f) => `listing failed: ${f}`));
    if (commands.execs !== expectedCommands) problems.push(`executor calls ${commands.execs}, expected ${expectedCommands}`);
    for (const p of problems.slice(0, 20)) console.log(`PROBLEM ${p}`);
    console.log(
      JSON.stringify({
        bench: 'scale',
        hosts: HOSTS,
        targets: TARGETS,
        runs: RUNS,
        ckpts: CKPTS,
        coldMs: sc.median,
        warmMs: sw.median,
        singleMs: s1.median,
        warmVsOneByOne: sw.median / oneByOne,
        commands,
        heapMiB: rows.length ? rows[0][1] : undefined,
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
