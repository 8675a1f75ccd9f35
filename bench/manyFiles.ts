/**
 * Many-small-files pull benchmark, in one run over the test sshd: a checkpoint of N small files (default 100,000 of
 * 10 bytes in folders of 1,000) pulled by the built CLI (`dist/cli.js pull`, what users run), against `scp -r` and
 * `ssh … tar c | tar x` of the same folder over the same sshd, as time ratios to scp; the CLI's peak RSS (VmHWM of
 * /proc/PID/status, sampled every 100 ms) beside the peak of the same CLI pulling a checkpoint of one file (the idle
 * CLI: code loaded, one connection); and whether its progress lines moved.
 *
 *   node --import tsx bench/manyFiles.ts [--files 100000] [--per-folder 1000] [--only cli,scp,tar]
 *
 * Build first (`node esbuild.mjs`): the CLI measured is the bundle. Nothing is asserted: a bench reports.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { startTestHost } from '../test/harness/testHost';
import { peakKb } from '../test/harness/processes';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

interface Run {
  seconds: number;
  peakMb?: number;
  stderr: string;
}

/** Run a command to its end without blocking this thread; the peak RSS of the process itself when `watch`. */
function run(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; watch?: boolean; shell?: boolean } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { env: opts.env ?? process.env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    let peak = 0;
    const poll = opts.watch ? setInterval(() => (peak = Math.max(peak, peakKb(child.pid!) ?? 0)), 100) : undefined;
    child.once('error', reject);
    child.once('close', (code) => {
      if (poll) clearInterval(poll);
      if (code !== 0) return reject(new Error(`${cmd} exited with ${code}: ${stderr.slice(-2000)}`));
      resolve({ seconds: (performance.now() - t0) / 1000, ...(opts.watch ? { peakMb: peak / 1024 } : {}), stderr });
    });
  });
}

async function main(): Promise<void> {
  const files = arg('--files', 100_000);
  const perFolder = arg('--per-folder', 1000);
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt > 0 ? new Set(process.argv[onlyAt + 1].split(',')) : undefined;
  const cli = path.join(__dirname, '..', 'dist', 'cli.js');
  if (!fs.existsSync(cli)) throw new Error(`${cli} is missing: run node esbuild.mjs first`);
  const loadStart = os.loadavg();
  const host = await startTestHost();
  const local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-bench-many-'));
  try {
    const root = path.join(host.dir, 'many');
    const ck = path.join(root, 'wide', 'checkpoints', 'step_1');
    for (let i = 0; i < files; i++) {
      const dir = path.join(ck, `part_${String(Math.floor(i / perFolder)).padStart(3, '0')}`);
      if (i % perFolder === 0) fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, `t_${String(i).padStart(6, '0')}.bin`), `${String(i).padStart(9, '0')}\n`);
    }
    // The idle CLI's checkpoint: one file, under a root of its own (listing the runs of `root` lists the wide one).
    const oneRoot = path.join(host.dir, 'one-root');
    fs.mkdirSync(path.join(oneRoot, 'one', 'checkpoints', 'step_1'), { recursive: true });
    fs.writeFileSync(path.join(oneRoot, 'one', 'checkpoints', 'step_1', 'model.bin'), 'one file\n');
    execFileSync('chmod', ['-R', 'a+rX', root, oneRoot]);
    const config = path.join(local, 'config.json');
    fs.writeFileSync(config, JSON.stringify({ hosts: [host.hostConfig('m', { runRoots: [root], targets: ['host'] }), host.hostConfig('o', { runRoots: [oneRoot], targets: ['host'] })] }));
    const env = { PATH: process.env.PATH, HOME: host.clientHome };
    const pull = (address: string, to: string): Promise<Run> =>
      run(process.execPath, [cli, 'pull', address, '--to', to, '--config', config, '--known-hosts', host.knownHostsFile], { env, watch: true });
    const sshOpts = ['-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${host.knownHostsFile}`, '-i', host.sshd.clientKeyPath];
    const login = `${host.sshd.user}@127.0.0.1`;
    const count = (dir: string): number => Number(execFileSync('sh', ['-c', 'find "$1" -type f -name "t_*" | wc -l', 'sh', dir], { encoding: 'utf8' }).trim());

    const rows: { key: string; name: string; r: Run }[] = [];
    const idle = await pull('o/host/one/step_1', path.join(local, 'idle'));
    if (!only || only.has('scp')) {
      const to = path.join(local, 'scp');
      rows.push({ key: 'scp', name: 'scp -r', r: await run('scp', ['-q', '-r', ...sshOpts, '-P', String(host.sshd.port), `${login}:${ck}`, to]) });
      if (count(to) !== files) throw new Error(`scp -r brought ${count(to)} files`);
    }
    if (!only || only.has('tar')) {
      const to = path.join(local, 'tar');
      fs.mkdirSync(to);
      const line = `ssh ${sshOpts.map((a) => `'${a}'`).join(' ')} -p ${host.sshd.port} ${login} "tar cf - -C '${ck}' ." | tar xf - -C '${to}'`;
      rows.push({ key: 'tar', name: 'ssh … tar c | tar x', r: await run('sh', ['-c', line]) });
      if (count(to) !== files) throw new Error(`tar brought ${count(to)} files`);
    }
    if (!only || only.has('cli')) {
      const to = path.join(local, 'cli');
      const r = await pull('m/host/wide/step_1', to);
      rows.push({ key: 'cli', name: 'remote-runs pull (built CLI)', r });
      if (count(path.join(to, 'wide', 'step_1')) !== files) throw new Error('the CLI did not bring every file');
    }
    const scp = rows.find((x) => x.key === 'scp')?.r.seconds;
    console.log(`${files} files of 10 bytes in folders of ${perFolder}, over the test sshd on 127.0.0.1; ${os.cpus().length} cores, load ${loadStart.map((l) => l.toFixed(2)).join(' ')}`);
    console.log(`${'method'.padEnd(32)} ${'time'.padStart(8)} ${'vs scp'.padStart(7)} ${'peak RSS'.padStart(9)}`);
    for (const { name, r } of rows) {
      console.log(`${name.padEnd(32)} ${`${r.seconds.toFixed(1)} s`.padStart(8)} ${scp ? `${(r.seconds / scp).toFixed(2)}x`.padStart(7) : ''.padStart(7)} ${r.peakMb !== undefined ? `${r.peakMb.toFixed(0)} MB`.padStart(9) : ''}`);
    }
    console.log(`${'idle CLI (pull of one file)'.padEnd(32)} ${`${idle.seconds.toFixed(1)} s`.padStart(8)} ${''.padStart(7)} ${`${idle.peakMb!.toFixed(0)} MB`.padStart(9)}`);
    const cliRun = rows.find((x) => x.key === 'cli')?.r;
    // Progress lines (every 2 s without a terminal): the counts of files in place (or file numbers) they named.
    const progress = cliRun ? [...cliRun.stderr.matchAll(/(?:file (\d+) of \d+|([\d,]+) of [\d,]+ files in place)/g)].map((m) => Number((m[1] ?? m[2]).replace(/,/g, ''))) : [];
    if (cliRun) console.log(`progress lines: ${progress.length}, distinct counts ${new Set(progress).size}; peak above the idle CLI: ${(cliRun.peakMb! - idle.peakMb!).toFixed(0)} MB`);
    console.log(
      JSON.stringify({
        bench: 'manyFiles',
        files,
        perFolder,
        cpus: os.cpus().length,
        loadStart,
        loadEnd: os.loadavg(),
        idle: { seconds: idle.seconds, peakMb: idle.peakMb },
        methods: rows.map(({ key, r }) => ({ key, seconds: r.seconds, ...(r.peakMb !== undefined ? { peakMb: r.peakMb } : {}), ...(scp ? { vsScp: r.seconds / scp } : {}) })),
      }),
    );
  } finally {
    await host.stop();
    fs.rmSync(local, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
