/**
 * The measurement that led to the product's stream (issue 19): a 1M-line JSONL backlog read as one OpenSSH
 * stream (`ssh testbox tail -c +1 FILE`: a fresh login like the baseline's, or a mux client of a ControlMaster
 * started before), its pipe fed to the real parse worker (ParseOffload) in 1 MiB pieces and the batches applied on
 * this thread into the real store; against RunFeed with every read over the ssh2 pool (parse worker on; the product's
 * open before this stream) and
 * `ssh testbox cat FILE | wc -l`, interleaved. Each is timed until every line is in the store; no presenter (the
 * last update costs the same on every path). Also the whole machine's busy CPU (/proc/stat) per open.
 *
 *   node --import tsx bench/metricsStream.ts [N]      # N interleaved rounds, default 5
 */
import { execFileSync, spawn } from 'node:child_process';
import { buildSync } from 'esbuild';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ConnectionPool } from '../src/core/ssh/pool';
import { HostDirectory } from '../src/core/hosts';
import { RemoteRunsCore } from '../src/core/service';
import { RunFeed } from '../src/core/metrics/follow/runFeed';
import { RunMetrics } from '../src/core/metrics/series/series';
import { JsonlParser } from '../src/core/metrics/formats/jsonl';
import { ParseOffload, closeIdleParseWorkers } from '../src/core/metrics/formats/parseOffload';
import { startTestHost, ScriptedPrompter } from '../test/harness/testHost';

const LINES = 1_000_000;
const N = Number(process.argv[2] ?? 5);
function line(step: number): string {
  const p = step / LINES;
  const loss = 0.9 + 2.6 * Math.exp(-4 * p) + Math.sin(step * 12.9898) * 0.05;
  return `{"step":${step},"loss":${loss.toFixed(6)},"acc":${(0.05 + 0.8 * (1 - Math.exp(-3 * p))).toFixed(6)},"lr":${(3e-4 * (1 - p)).toExponential(4)},"grad_norm":${(1 + loss / 3).toFixed(4)},"time":${(1.7e9 + step * 0.25).toFixed(2)}}\n`;
}
function machineBusyMs(): number {
  const l = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
  const [user, nice, system, , , irq, softirq] = l.trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq) * 10;
}
const q = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
function catWc(sshBase: string[], file: string): Promise<number> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn('sh', ['-c', `ssh ${[...sshBase, 'testbox', 'cat', file].map(q).join(' ')} | wc -l`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.once('close', () => {
      if (Number(out.trim()) !== LINES) throw new Error(`ssh cat | wc -l counted ${out.trim()}`);
      resolve(performance.now() - t0);
    });
  });
}
const med = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

async function streamOpen(sshBase: string[], file: string, mux: boolean, ctl: string): Promise<number> {
  const t0 = performance.now();
  const metrics = new RunMetrics('line');
  const parser = new JsonlParser(metrics);
  const off = new ParseOffload(parser, 0, () => undefined);
  const args = [...sshBase, ...(mux ? ['-o', `ControlPath=${ctl}`] : []), 'testbox', 'tail', '-c', '+1', file];
  const child = spawn('ssh', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const PIECE = 1 << 20;
  let buf = new Uint8Array(PIECE);
  let fill = 0;
  let offset = 0;
  child.stdout.on('data', (d: Buffer) => {
    let at = 0;
    while (at < d.length) {
      const n = Math.min(PIECE - fill, d.length - at);
      buf.set(d.subarray(at, at + n), fill);
      fill += n;
      at += n;
      if (fill === PIECE) {
        offset += fill;
        off.push(buf, offset);
        buf = new Uint8Array(PIECE);
        fill = 0;
      }
    }
  });
  await new Promise((r) => child.once('close', r));
  if (fill > 0) {
    offset += fill;
    off.push(buf.slice(0, fill), offset);
  }
  await off.drained();
  off.close();
  const n = metrics.series.get('loss')?.length;
  if (n !== LINES) throw new Error(`stream read ${n}`);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const wd = fs.mkdtempSync(path.join(os.tmpdir(), 'proto-'));
  buildSync({ entryPoints: { metricsWorker: path.join(__dirname, '..', 'src', 'core', 'metrics', 'formats', 'parseWorker.ts') }, outdir: wd, bundle: true, platform: 'node', format: 'cjs', target: 'node20', logLevel: 'error' });
  process.env.REMOTE_RUNS_METRICS_WORKER = path.join(wd, 'metricsWorker.js');
  const host = await startTestHost();
  const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: { info() {}, warn() {}, error() {} }, knownHostsFiles: [host.knownHostsFile] });
  try {
    const runDir = path.join(host.dir, 'bm', 'big-run');
    fs.mkdirSync(path.join(runDir, 'logs'), { recursive: true });
    const log = path.join(runDir, 'logs', 'train.jsonl');
    let text = '';
    for (let s = 0; s < LINES; s++) text += line(s);
    fs.writeFileSync(log, text);
    text = '';
    execFileSync('chmod', ['-R', 'a+rX', path.join(host.dir, 'bm')]);
    const hosts = [host.hostConfig('testbox', { targets: ['host'], runRoots: [path.dirname(runDir)] })];
    const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => pool.executor(dir.resolve(h), { idempotent: true }) });
    await core.listTargets('testbox');
    const sshBase = ['-F', host.sshConfigFile, '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${host.knownHostsFile}`, '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'StrictHostKeyChecking=yes', '-o', 'LogLevel=ERROR'];
    const ctl = path.join(wd, 'ctl');
    const master = spawn('ssh', [...sshBase, '-M', '-N', '-o', `ControlPath=${ctl}`, 'testbox'], { stdio: 'ignore' });
    for (let i = 0; i < 200 && !fs.existsSync(ctl); i++) await new Promise((r) => setTimeout(r, 25));
    const ref = { hostName: 'testbox', target: { kind: 'host' as const, id: '' }, runPath: runDir, runName: 'big-run', metrics: [log], checkpoints: [] };
    const r: Record<string, number[]> = { product: [], stream: [], streamMux: [], cat: [], mProduct: [], mStream: [], mMux: [], mCat: [] };
    for (let i = 0; i < N; i++) {
      let m = machineBusyMs();
      let t0 = performance.now();
      const feed = new RunFeed(ref, { executor: () => core.executor('testbox'), intervalMs: () => 1e9 });
      await feed.pollNow();
      if (feed.series().get('loss')?.length !== LINES) throw new Error('product read short');
      r.product.push(performance.now() - t0);
      r.mProduct.push(machineBusyMs() - m);
      feed.dispose();
      m = machineBusyMs();
      r.cat.push(await catWc(sshBase, log));
      r.mCat.push(machineBusyMs() - m);
      m = machineBusyMs();
      r.stream.push(await streamOpen(sshBase, log, false, ctl));
      r.mStream.push(machineBusyMs() - m);
      m = machineBusyMs();
      r.streamMux.push(await streamOpen(sshBase, log, true, ctl));
      r.mMux.push(machineBusyMs() - m);
      process.stderr.write(`round ${i + 1}\n`);
    }
    master.kill();
    const c = med(r.cat);
    console.log(`load ${os.loadavg()[0].toFixed(2)}`);
    for (const k of ['product', 'stream', 'streamMux', 'cat']) console.log(k, med(r[k]).toFixed(0), 'ms', (med(r[k]) / c).toFixed(2), 'x cat', JSON.stringify(r[k].map(Math.round)));
    for (const k of ['mProduct', 'mStream', 'mMux', 'mCat']) console.log(k, 'machine CPU', med(r[k]));
  } finally {
    closeIdleParseWorkers();
    pool.dispose();
    await host.stop();
    fs.rmSync(wd, { recursive: true, force: true });
  }
}
void main().catch((e) => { console.error(e); process.exit(1); });
