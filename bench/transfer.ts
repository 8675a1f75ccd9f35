/**
 * Checkpoint download benchmark, in one run: the time to pull a file (default 1 GiB of random bytes) with OpenSSH
 * (`scp` and a plain `ssh … cat`, both aes128-gcm, the cipher ssh2 negotiates), with this extension's core from
 * the bare host and from inside a `pct` container, by its default client (the system's OpenSSH `ssh`, logged in
 * through the private agent) and by the built-in ssh2 client (one lane, several lanes, worker threads), as
 * throughput ratios to scp; the CPU each side spent per GiB; then the bytes fetched again after the connection is
 * killed at 50%.
 *
 *   node --import tsx bench/transfer.ts [--size-mb 1024] [--rounds 3] [--lanes 4] [--rtt-ms 0] [--native] [--only a,b,…]
 *     [--local-dir DIR]
 *
 * With `--rtt-ms N` every connection (scp's, ssh's and ours) goes through a user-space TCP proxy that delays both
 * directions by N/2 ms, with a bounded buffer (test/harness/tcpProxy.ts, run in a process of its own by
 * bench/proxyProcess.ts, whose CPU counts in no column): a link across buildings or continents, where one SSH
 * channel's window, not the bandwidth, sets the speed. The kernel here has no netem.
 *
 * By default ssh2's native crypto binding is disabled, because the bundled extension ships without it
 * (esbuild.mjs marks it external); `--native` measures with it. The worker threads run a fresh esbuild bundle of
 * src/core/transfer/transferWorker.ts (as the extension does), not tsx-compiled sources. Methods run interleaved,
 * round after round, and the median is reported, so a busy machine skews every method alike rather than one.
 */
import * as Module from 'node:module';

if (!process.argv.includes('--native')) {
  // Before ssh2 loads: make its optional native binding fail to load, as in the bundle.
  (Module as unknown as { _extensions: Record<string, unknown> })._extensions['.node'] = () => {
    throw new Error('native add-ons disabled for this benchmark');
  };
}

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { stats } from './util';
import { shellQuote } from '../src/core/shell/quote';
import { startProxyProcess } from './proxyProcess';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const MiB = 1 << 20;
const GiB = 1 << 30;
/** Clock ticks per second of /proc/PID/stat (USER_HZ; 100 on Linux). */
const HZ = 100;

/** utime+stime of a process (own, and of its reaped children), in seconds. */
function procCpu(pid: number | 'self'): { own: number; reaped: number } {
  const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { own: (Number(f[11]) + Number(f[12])) / HZ, reaped: (Number(f[13]) + Number(f[14])) / HZ };
}

/**
 * CPU seconds of the OpenSSH masters of this process's downloads (found by their session folder's config path and
 * `owner` file, openssh/sessionFolder.ts), sampled every 100 ms from when they are first seen: what each spent in the
 * sample, except a master that is this process's own child and has exited, whose whole time is in the reaped figure
 * once `settle` has waited for it. A master started by the spawner (util/spawner.ts: its child, reaped there) counts
 * up to its last sample, at most 100 ms short.
 */
class MasterCpu {
  private readonly base = new Map<number, number>();
  private readonly last = new Map<number, number>();
  /** The masters that are this process's own children (their time is reaped into ours when they exit). */
  private readonly ours = new Set<number>();
  private readonly timer: NodeJS.Timeout;

  constructor() {
    this.sample(true);
    this.timer = setInterval(() => this.sample(false), 100);
  }

  /** Pids of this process's masters running now. */
  static pids(): number[] {
    const out: number[] = [];
    for (const name of fs.readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8');
        const folder = /(?:^|\0)(?:-F\0)?([^\0]*rr-ssh-[^/\0]+)\/config\0/.exec(cmd)?.[1];
        if (!folder || !cmd.includes('ControlMaster=yes')) continue;
        // Only this process's masters: on a shared machine other programs' downloads run masters of the same shape.
        if (fs.readFileSync(path.join(folder, 'owner'), 'utf8').trim() !== String(process.pid)) continue;
        out.push(Number(name));
      } catch {
        // exited while we looked
      }
    }
    return out;
  }

  private sample(first: boolean): void {
    for (const pid of MasterCpu.pids()) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) this.ours.add(pid);
        const t = procCpu(pid).own;
        if (first) this.base.set(pid, t);
        this.last.set(pid, t);
      } catch {
        // exited while we looked
      }
    }
  }

  stop(): number {
    clearInterval(this.timer);
    const alive = new Set(MasterCpu.pids());
    this.sample(false);
    let total = 0;
    for (const [pid, t] of this.last) if (alive.has(pid) || !this.ours.has(pid)) total += t - (this.base.get(pid) ?? 0);
    return total;
  }

  /**
   * Wait (up to 3 s) until every master of this process's own that was seen and is not in `keep` is gone from /proc
   * (not only exited: a zombie has no command line but is not yet reaped), so its time is in the reaped figure.
   */
  async settle(keep: ReadonlySet<number>): Promise<void> {
    this.sample(false);
    const until = Date.now() + 3000;
    const waiting = (): boolean => [...this.ours].some((p) => !keep.has(p) && fs.existsSync(`/proc/${p}`));
    while (waiting() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  }
}

function childrenOf(pid: number): number[] {
  try {
    return fs
      .readdirSync(`/proc/${pid}/task`)
      .flatMap((t) => fs.readFileSync(`/proc/${pid}/task/${t}/children`, 'utf8').trim().split(/\s+/))
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/**
 * CPU seconds spent by every process under `root` (sshd's per-connection processes, internal-sftp, the commands
 * a session runs), sampled every 100 ms from /proc since they exit before anyone could ask. Processes that live
 * under 100 ms are missed: a few ms per connection.
 */
class TreeCpu {
  private readonly last = new Map<number, number>();
  private readonly base = new Map<number, number>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly root: number) {
    this.sample(true);
    this.timer = setInterval(() => this.sample(false), 100);
  }

  private sample(first: boolean): void {
    const queue = childrenOf(this.root);
    while (queue.length > 0) {
      const pid = queue.pop()!;
      try {
        const t = procCpu(pid).own;
        if (first) this.base.set(pid, t);
        this.last.set(pid, t);
      } catch {
        continue;
      }
      queue.push(...childrenOf(pid));
    }
  }

  stop(): number {
    clearInterval(this.timer);
    this.sample(false);
    let total = 0;
    for (const [pid, t] of this.last) total += t - (this.base.get(pid) ?? 0);
    return total;
  }
}

async function main(): Promise<void> {
  // Required after the hook above so ssh2 sees it (a static import would load ssh2 first).
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { startTestHost, ScriptedPrompter } = require('../test/harness/testHost') as typeof import('../test/harness/testHost');
  const { ConnectionPool } = require('../src/core/ssh/pool') as typeof import('../src/core/ssh/pool');
  const { HostDirectory } = require('../src/core/hosts') as typeof import('../src/core/hosts');
  const { downloadCheckpoint } = require('../src/core/transfer') as typeof import('../src/core/transfer');
  const esbuild = require('esbuild') as typeof import('esbuild');
  const binding = (require('ssh2/lib/protocol/crypto.js') as { bindingAvailable?: boolean }).bindingAvailable === true;

  const size = arg('--size-mb', 1024) * MiB;
  const rounds = arg('--rounds', 3);
  const lanes = arg('--lanes', 4);
  const rttMs = arg('--rtt-ms', 0);
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt > 0 ? new Set(process.argv[onlyAt + 1].split(',')) : undefined;
  const loadStart = os.loadavg();
  const host = await startTestHost();
  // 64 MiB in flight each way: far more than any window here, so the delay, not the proxy, bounds a channel.
  // In a process of its own (bench/proxyProcess.ts), so that our pull's work on this thread does not hold it up.
  const link = rttMs > 0 ? await startProxyProcess(host.sshd.port, rttMs / 2, 64 * MiB) : undefined;
  if (link) fs.appendFileSync(host.knownHostsFile, `${host.sshd.knownHostsLine.replace(/^\[127\.0\.0\.1\]:\d+ /, `[127.0.0.1]:${link.port} `)}\n`);
  const port = link ? link.port : host.sshd.port;
  // `--local-dir /dev/shm`: every method writes to memory, so no row pays for the disk (a pull's fsync before its
  // rename, the journal commits it waits for): the transfer alone, the disk's part measured by the `sshcatsync` row.
  const localAt = process.argv.indexOf('--local-dir');
  const local = fs.mkdtempSync(path.join(localAt > 0 ? process.argv[localAt + 1] : os.tmpdir(), 'rr-bench-dl-'));
  /** The warm rows' pool (warmPool below) and its hold on the host's OpenSSH session. */
  let windowPool: InstanceType<typeof ConnectionPool> | undefined;
  let windowHold: { dispose(): void } | undefined;
  try {
    // The worker threads run what the extension ships: a bundle, with ssh2's native binding external.
    await esbuild.build({
      entryPoints: { transferWorker: path.join(__dirname, '..', 'src', 'core', 'transfer', 'transferWorker.ts') },
      outdir: local,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      logLevel: 'error',
      external: ['cpu-features', ...(process.argv.includes('--native') ? [] : ['./crypto/build/Release/sshcrypto.node'])],
    });
    process.env.REMOTE_RUNS_TRANSFER_WORKER = path.join(local, 'transferWorker.js');

    // One random file (incompressible, and hashing it proves nothing was skipped), visible on the bare host and,
    // through a hard link, inside pct:200 as /workspace/bench/big.bin.
    const bareDir = path.join(host.dir, 'bench');
    fs.mkdirSync(bareDir);
    const bare = path.join(bareDir, 'big.bin');
    execFileSync('sh', ['-c', `head -c ${size} /dev/urandom > "$1"`, 'sh', bare]);
    fs.chmodSync(bare, 0o644);
    fs.chmodSync(bareDir, 0o755);
    const ctDir = path.join(host.containers.pct200.workspace, 'bench');
    fs.mkdirSync(ctDir);
    fs.linkSync(bare, path.join(ctDir, 'big.bin'));
    fs.chmodSync(ctDir, 0o755);
    execFileSync('cat', [bare], { stdio: ['ignore', 'ignore', 'inherit'] }); // into the page cache

    const hostConfig = host.hostConfig(undefined, { port });
    const dir = new HostDirectory({ hosts: () => [hostConfig], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const resolved = dir.resolve(hostConfig);
    const out = path.join(local, 'out.bin');
    const gcm = 'aes128-gcm@openssh.com';
    const sshOpts = ['-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${host.knownHostsFile}`, '-i', host.sshd.clientKeyPath, '-c', gcm];

    /** Run an OpenSSH client without blocking this thread (the server's CPU sampler must keep running). */
    const run = (cmd: string, args: string[], stdout: 'ignore' | number): Promise<void> =>
      new Promise((resolve, reject) => {
        const child = spawn(cmd, args, { stdio: ['ignore', stdout, 'inherit'] });
        child.once('error', reject);
        child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited with ${code}`))));
      });
    /** A command's stdout, without blocking this thread. */
    const capture = (cmd: string, args: string[]): Promise<string> =>
      new Promise((resolve, reject) => {
        const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
        let text = '';
        child.stdout.setEncoding('utf8').on('data', (d: string) => (text += d));
        child.once('error', reject);
        child.once('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`${cmd} ${args.join(' ')} exited with ${code}`))));
      });
    const scp = (): Promise<void> => run('scp', ['-q', ...sshOpts, '-P', String(port), `${host.sshd.user}@127.0.0.1:${bare}`, out], 'ignore');
    /** OpenSSH's plainest stream: one channel, `cat` on the far side, the bytes to a file. */
    const sshCat = (remote: string[], durable = false) => async (): Promise<void> => {
      const fd = fs.openSync(out, 'w');
      try {
        await run('ssh', [...sshOpts, '-p', String(port), `${host.sshd.user}@127.0.0.1`, ...remote], fd);
        // The raw stream made as durable as a pull's file before its rename: its bytes on disk (`sync FILE`).
        if (durable) await new Promise<void>((resolve, reject) => fs.fsync(fd, (e) => (e ? reject(e) : resolve())));
      } finally {
        fs.closeSync(fd);
      }
    };

    /** A fresh pool; `opensshFirst`: the CLI's pull's (its first link to a host the OpenSSH transport: one login). */
    const newPool = (opensshFirst = false): InstanceType<typeof ConnectionPool> =>
      new ConnectionPool({
        prompter: new ScriptedPrompter(),
        logger: { info() {}, warn() {}, error() {} },
        knownHostsFiles: [host.knownHostsFile],
        backoffBaseMs: 50,
        opensshFirst,
      });
    /** One download through the core; returns the bytes that crossed the network and the lanes used. */
    const core = async (
      target: { kind: 'host' | 'pct'; id: string },
      transport: 'sftp' | 'exec',
      concurrency: number,
      threads: boolean,
      interruptAt?: number,
      client: 'openssh' | 'ssh2' = 'ssh2',
      verify: 'sha256' | 'size' = 'sha256',
      streamsPerFile?: number,
      shared?: InstanceType<typeof ConnectionPool>,
    ): Promise<{ fetched: number; lanes: number; client: string }> => {
      // A cold pull with the default streams is the CLI's: its pool logs in once, through OpenSSH (ConnectionPool
      // opensshFirst). Rows that force a stream count keep the built-in client's link and the session beside it.
      const pool = shared ?? newPool(client === 'openssh' && streamsPerFile === undefined);
      try {
        const remote = target.kind === 'host' ? bare : '/workspace/bench/big.bin';
        const ck = { name: 'big.bin', kind: 'step' as const, step: 1, layout: 'flat' as const, path: remote, isDir: false, bytes: size, mtime: 0, files: [], newest: true };
        let fired = false;
        // The product's path (pullCheckpoint's): lock, then plan while the OpenSSH session logs in, then download.
        const { result: res } = await downloadCheckpoint({ pool, host: resolved, target }, ck, { root: local, run: 'bench' }, {
          client,
          verify,
          // The line that says how many OpenSSH streams each file got and why (the measured round trip).
          logger: { info: (m) => /^download of .*OpenSSH streams? per file/.test(m) && chosen.push(`${m.replace(/^download of \S+: /, '')}`), warn() {}, error() {} },
          transport,
          concurrency,
          threads,
          ...(streamsPerFile ? { streamsPerFile } : {}),
          onProgress: (p) => {
            if (interruptAt !== undefined && !fired && p.bytesDone >= p.bytesTotal * interruptAt) {
              fired = true;
              host.sshd.killConnections();
            }
          },
        });
        fs.renameSync(res.files[0].localPath, out);
        fs.rmSync(path.join(local, 'bench'), { recursive: true, force: true });
        fs.rmSync(path.join(local, '.remote-runs'), { recursive: true, force: true });
        if (res.client !== client) throw new Error(`asked for ${client}, the download used ${res.client}: ${res.clientNote ?? ''}`);
        return { fetched: res.bytesFetched, lanes: res.lanes, client: res.client };
      } finally {
        // The host's OpenSSH session is the pool's now (it outlives the download): ended here, inside the timed pull,
        // as the download's own session was ended inside download() before. A shared pool is the window's: it stays.
        if (!shared) await pool.close();
      }
    };
    /**
     * The window's pool for the warm rows: its ssh2 connection and OpenSSH session are up before the first timed
     * pull and stay up (held as an open metrics stream holds them), so a warm pull measures no login.
     */
    const warmPool = async (): Promise<InstanceType<typeof ConnectionPool>> => {
      if (!windowPool) {
        windowPool = newPool();
        const lease = await windowPool.acquire(resolved);
        windowHold = await windowPool.openSsh(resolved);
        lease.dispose();
      }
      return windowPool;
    };
    /**
     * The same guarantee by hand, as a careful user would type it: the remote file's SHA-256 (`openssl sha256` over
     * its own login) beside one `ssh … cat` whose bytes go to the file and through `openssl sha256` here; the two
     * digests compared. Two logins, both timed.
     */
    const byHand = async (): Promise<void> => {
      const login = ['ssh', ...sshOpts, '-p', String(port), `${host.sshd.user}@127.0.0.1`].map(shellQuote).join(' ');
      const [remote, local] = await Promise.all([
        capture('sh', ['-c', `${login} openssl sha256 ${shellQuote(bare)}`]),
        capture('sh', ['-c', `${login} cat ${shellQuote(bare)} | tee ${shellQuote(out)} | openssl sha256`]),
      ]);
      const hex = (s: string): string => /([0-9a-f]{64})\s*$/.exec(s.trim())?.[1] ?? `unreadable: ${s}`;
      if (hex(remote) !== hex(local)) throw new Error(`by hand: the digests differ (${hex(remote)} against ${hex(local)})`);
    };
    /** What each OpenSSH download chose, in order ("1 OpenSSH stream per file (round trip 0.3 ms; at most 8)"). */
    const chosen: string[] = [];
    /** What the default (`os`) chose in each round: the same every time on the same link. */
    const defaultChose: string[] = [];
    const HOST = { kind: 'host' as const, id: '' };
    const PCT = { kind: 'pct' as const, id: '200' };

    const all: { key: string; name: string; run: () => Promise<unknown> }[] = [
      { key: 'scp', name: `scp -c ${gcm}`, run: scp },
      { key: 'sshcat', name: 'ssh -c aes128-gcm … cat', run: sshCat(['cat', bare]) },
      { key: 'sshcatsync', name: 'ssh … cat, then fsync (durable)', run: sshCat(['cat', bare], true) },
      {
        key: 'os',
        name: 'core host, OpenSSH, SHA-256 (default)',
        run: async () => {
          await core(HOST, 'exec', lanes, false, undefined, 'openssh');
          defaultChose.push(chosen[chosen.length - 1] ?? 'no line');
        },
      },
      { key: 'hand', name: 'by hand: ssh cat | tee | openssl + remote', run: byHand },
      { key: 'oswarm', name: 'core host, default, link already up', run: async () => core(HOST, 'exec', lanes, false, undefined, 'openssh', 'sha256', undefined, await warmPool()) },
      { key: 'os1', name: 'core host, OpenSSH, 1 stream', run: () => core(HOST, 'exec', lanes, false, undefined, 'openssh', 'sha256', 1) },
      { key: 'os8', name: 'core host, OpenSSH, 2 x lanes ranges', run: () => core(HOST, 'exec', lanes, false, undefined, 'openssh', 'sha256', 2 * lanes) },
      { key: 'ossize', name: 'core host, OpenSSH, size only', run: () => core(HOST, 'exec', lanes, false, undefined, 'openssh', 'size') },
      { key: 'ossizewarm', name: 'core host, size only, link already up', run: async () => core(HOST, 'exec', lanes, false, undefined, 'openssh', 'size', undefined, await warmPool()) },
      { key: 'sftp1', name: 'core host, sftp x1 (shared conn)', run: () => core(HOST, 'sftp', 1, true) },
      { key: 'sftpN', name: `core host, sftp x${lanes} threads`, run: () => core(HOST, 'sftp', lanes, true) },
      { key: 'sftpNmain', name: `core host, sftp x${lanes} one thread`, run: () => core(HOST, 'sftp', lanes, false) },
      { key: 'execN', name: `core host, exec x${lanes} threads`, run: () => core(HOST, 'exec', lanes, true) },
      { key: 'pctcat', name: 'ssh … pct exec 200 -- cat', run: sshCat(['pct', 'exec', '200', '--', 'cat', '/workspace/bench/big.bin']) },
      { key: 'ospct', name: 'core pct:200, OpenSSH, SHA-256 (default)', run: () => core(PCT, 'exec', lanes, false, undefined, 'openssh') },
      { key: 'pct1', name: 'core pct:200, exec x1 (shared conn)', run: () => core(PCT, 'exec', 1, true) },
      { key: 'pctN', name: `core pct:200, exec x${lanes} threads`, run: () => core(PCT, 'exec', lanes, true) },
    ];
    const methods = all.filter((m) => !only || only.has(m.key) || m.key === 'scp');
    interface Sample {
      s: number;
      ours: number;
      server: number;
      openssh: number;
      /** The delaying proxy process (--rtt-ms), in no other column. */
      proxy: number;
    }
    const samples = new Map<string, Sample[]>(methods.map((m) => [m.key, []]));
    const expected = execFileSync('sha256sum', [bare], { encoding: 'utf8' }).slice(0, 64);
    // The warm rows' link is up before the first round, as a window's is when its user pulls.
    if (methods.some((m) => m.key.endsWith('warm'))) await warmPool();
    for (let r = 0; r < rounds; r++) {
      for (const m of methods) {
        fs.rmSync(out, { force: true });
        // Outside the timing, every method starts on a quiet disk: the last one's file removed and everything written
        // back (`sync`), so no row pays for another's writes. Without it, a row that fsyncs (a pull, before its
        // rename) waited in its first journal commit for the removal of the file before it, and a row that never
        // syncs (the raw stream) left its 512 MiB to be written back during the next.
        execFileSync('sync');
        const server = new TreeCpu(host.sshd.pid);
        const masters = new MasterCpu();
        const ours0 = process.cpuUsage();
        const reaped0 = procCpu('self').reaped;
        const proxy0 = link ? procCpu(link.pid).own : 0;
        const t0 = process.hrtime.bigint();
        const before = new Set(MasterCpu.pids());
        await m.run();
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        // The run's own masters have exited (cold rows close their pool): reaped, so their time is counted.
        await masters.settle(before);
        const ours = process.cpuUsage(ours0);
        const sample: Sample = {
          s,
          ours: (ours.user + ours.system) / 1e6,
          server: server.stop(),
          openssh: procCpu('self').reaped - reaped0 + masters.stop(),
          proxy: link ? procCpu(link.pid).own - proxy0 : 0,
        };
        if (fs.statSync(out).size !== size) throw new Error(`${m.name}: wrong size`);
        if (r === 0 && execFileSync('sha256sum', [out], { encoding: 'utf8' }).slice(0, 64) !== expected) throw new Error(`${m.name}: wrong bytes`);
        samples.get(m.key)!.push(sample);
        process.stderr.write(`round ${r + 1}: ${m.name} ${s.toFixed(2)} s (load ${os.loadavg()[0].toFixed(1)})\n`);
      }
    }

    const med = (key: string, f: (x: Sample) => number): number => stats(samples.get(key)!.map(f)).median;
    const base = med('scp', (x) => x.s);
    const gib = size / GiB;
    console.log(
      `\nPull of ${size / MiB} MiB${rttMs > 0 ? ` through a ${rttMs} ms round-trip link` : ' over loopback'}, median of ${rounds} interleaved rounds; ssh2 native crypto binding: ${binding ? 'on' : 'off'}; ` +
        `${os.cpus().length} CPUs; load average ${loadStart.map((l) => l.toFixed(1)).join(' ')} at start, ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} at end`,
    );
    console.log('CPU s/GiB: "ours" is this process with its worker threads, "server" sshd and what it ran, "openssh" the local scp/ssh processes.');
    console.log(
      `${'method'.padEnd(38)} ${'time'.padStart(8)} ${'MB/s'.padStart(6)} ${'vs scp'.padStart(7)} ${'ours'.padStart(6)} ${'server'.padStart(7)} ${'openssh'.padStart(8)} ${'total'.padStart(6)}`,
    );
    const json: Record<string, unknown> = {};
    for (const m of methods) {
      const t = med(m.key, (x) => x.s);
      const cpu = { ours: med(m.key, (x) => x.ours) / gib, server: med(m.key, (x) => x.server) / gib, openssh: med(m.key, (x) => x.openssh) / gib };
      const total = cpu.ours + cpu.server + cpu.openssh;
      console.log(
        `${m.name.padEnd(38)} ${t.toFixed(2).padStart(7)}s ${(size / t / 1e6).toFixed(0).padStart(6)} ${(base / t).toFixed(2).padStart(6)}x ` +
          `${cpu.ours.toFixed(2).padStart(6)} ${cpu.server.toFixed(2).padStart(7)} ${cpu.openssh.toFixed(2).padStart(8)} ${total.toFixed(2).padStart(6)}`,
      );
      json[m.key] = { name: m.name, seconds: t, vsScp: base / t, cpuPerGiB: { ...cpu, ...(link ? { proxy: med(m.key, (x) => x.proxy) / gib } : {}) }, samples: samples.get(m.key)!.map((x) => x.s) };
    }
    if (link) {
      console.log(`The delaying proxy's own CPU s/GiB (a separate process, in no column above): ${methods.map((m) => `${m.key} ${(med(m.key, (x) => x.proxy) / gib).toFixed(2)}`).join(', ')}`);
    }

    // Both paths on this link, side by side: the single stream (ssh writes the file, this process reads it back to
    // hash it) and 2 x lanes ranges, each written by ssh at its place (opensshLane.ts placed); and what the default chose from the round trip.
    let paths: Record<string, unknown> | undefined;
    if (samples.has('os1') && samples.has('os8')) {
      const one = med('os1', (x) => x.s);
      const ranged = med('os8', (x) => x.s);
      /** "1 stream in 3 of 3 rounds (round trips 0.2, 0.3, 0.2 ms)": how many streams, how often, and on what figure. */
      const choices = (): string => {
        const counts = new Map<string, number>();
        for (const c of defaultChose) {
          const n = /^(\d+) OpenSSH stream/.exec(c)?.[1] ?? '?';
          counts.set(n, (counts.get(n) ?? 0) + 1);
        }
        const rtts = defaultChose.map((c) => /round trip (\S+) ms/.exec(c)?.[1] ?? '?');
        return `${[...counts].map(([n, k]) => `${n} stream${n === '1' ? '' : 's'} in ${k} of ${defaultChose.length} rounds`).join(', ')} (round trips ${rtts.join(', ')} ms)`;
      };
      const cpu = (key: string): string => `ours ${(med(key, (x) => x.ours) / gib).toFixed(2)}, server ${(med(key, (x) => x.server) / gib).toFixed(2)}, openssh ${(med(key, (x) => x.openssh) / gib).toFixed(2)}`;
      console.log(
        `Paths on this link: one stream ${one.toFixed(2)} s (${cpu('os1')} CPU s/GiB), ${2 * lanes} ranges ${ranged.toFixed(2)} s (${cpu('os8')}): ` +
          `ranges take ${(ranged / one).toFixed(2)}x the single stream's time` +
          (defaultChose.length ? `; the default (os) chose ${choices()}` : ''),
      );
      paths = { oneStreamSeconds: one, rangedSeconds: ranged, rangedOverOne: ranged / one, defaultChose };
    }

    const refetch: Record<string, number> = {};
    for (const [key, target, transport, client] of [
      ['host', HOST, 'exec', 'openssh'],
      ['pct', PCT, 'exec', 'openssh'],
      ['host-ssh2', HOST, 'sftp', 'ssh2'],
      ['pct-ssh2', PCT, 'exec', 'ssh2'],
    ] as const) {
      if (only && !only.has(`kill-${key}`) && !only.has('kill')) continue;
      const { fetched, lanes: used } = await core(target, transport, lanes, true, 0.5, client);
      refetch[key] = fetched - size;
      console.log(
        `Connection killed at 50% (${key}, ${client === 'openssh' ? 'OpenSSH' : `${transport} x${used}`}): ${fetched} bytes written for a ${size}-byte file; ` +
          `refetched ${fetched - size} bytes (${(((fetched - size) / size) * 100).toFixed(3)}%)`,
      );
    }
    // A hard kill: the built CLI pulls, is killed with SIGKILL at 50%, and pulls again. What was on disk but not yet in
    // the record is fetched twice: the figure the record's cadence (every second and 64 MiB) bounds.
    let hardKill: { onDisk: number; recorded: number; refetched: number } | undefined;
    if (!only || only.has('hardkill')) {
      const cli = path.join(__dirname, '..', 'dist', 'cli.js');
      if (!fs.existsSync(cli)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: path.join(__dirname, '..'), stdio: 'ignore' });
      const runDir = path.join(host.dir, 'benchruns', 'benchrun', 'checkpoints', 'step_1');
      fs.mkdirSync(runDir, { recursive: true });
      fs.linkSync(bare, path.join(runDir, 'big.bin'));
      execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, 'benchruns')]);
      const cfg = path.join(local, 'cli-config.json');
      fs.writeFileSync(cfg, JSON.stringify({ hosts: [{ ...hostConfig, name: 'bench', runRoots: [path.join(host.dir, 'benchruns')], targets: ['host'] }] }));
      const to = path.join(local, 'hardkill');
      const args = [cli, 'pull', 'bench/host/benchrun/latest', '--to', to, '--client', 'openssh', '--config', cfg, '--known-hosts', host.knownHostsFile];
      const env = { PATH: process.env.PATH, HOME: host.clientHome };
      const part = path.join(to, '.remote-runs', 'partial', 'benchrun', 'step_1', 'big.bin.part');
      const child = spawn(process.execPath, args, { env, stdio: 'ignore' });
      const exited = new Promise((r) => child.once('exit', r));
      // Bytes written, not the file's size: ranges are written side by side, so the size jumps ahead.
      const sizeOf = (): number => (fs.existsSync(part) ? fs.statSync(part).blocks * 512 : 0);
      while (sizeOf() < size / 2 && child.exitCode === null) await new Promise((r) => setTimeout(r, 5));
      const onDisk = sizeOf();
      child.kill('SIGKILL');
      await exited;
      const rec = JSON.parse(fs.readFileSync(`${part}.json`, 'utf8')) as { done: [number, number][] };
      const recorded = rec.done.reduce((n, [a, b]) => n + (b - a), 0);
      // Not execFileSync: the delaying proxy runs in this process and must keep running.
      const again = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'inherit'] });
      const code = await new Promise((r) => again.once('exit', r));
      if (code !== 0) throw new Error(`hard kill: the pull after the kill exited with ${String(code)}`);
      if (execFileSync('sha256sum', [path.join(to, 'benchrun', 'step_1', 'big.bin')], { encoding: 'utf8' }).slice(0, 64) !== expected) throw new Error('hard kill: wrong bytes');
      hardKill = { onDisk, recorded, refetched: Math.max(0, onDisk - recorded) };
      console.log(
        `Pull killed with SIGKILL at 50% (CLI, OpenSSH): ${onDisk} bytes on disk, ${recorded} recorded; the next pull fetched ${((onDisk - recorded) / MiB).toFixed(1)} MiB again and ended byte-equal`,
      );
    }
    console.log(JSON.stringify({ bench: 'transfer', sizeBytes: size, rounds, lanes, rttMs, binding, cpus: os.cpus().length, loadStart, loadEnd: os.loadavg(), methods: json, paths, refetch, hardKill }));
  } finally {
    windowHold?.dispose();
    await windowPool?.close();
    await link?.stop();
    delete process.env.REMOTE_RUNS_TRANSFER_WORKER;
    await host.stop();
    fs.rmSync(local, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
