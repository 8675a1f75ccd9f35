/**
 * Kubernetes benchmark, in one run, against the test API server (test/harness/kubeApi.ts: the real kubectl on PATH,
 * exec over WebSocket v5, each container's commands run in a sandbox folder on this machine):
 * - a checkpoint of one file (default 1 GiB of random bytes) pulled from a pod container by this project's core
 *   (transfer/podSource.ts: kubectl exec streams, resumable, SHA-256 on both sides; and checked by size only), against `kubectl cp` (the anchor
 *   a user would reach for: a `tar` through one exec, nothing verified, nothing resumable) and a raw
 *   `kubectl exec … cat` into a file (the stream alone);
 * - a listing of a container holding ~10,000 entries (50 runs × 100 checkpoints, test/fixtures/generate.ts
 *   writeManyRuns), by the core's list script (core.listTarget, one kubectl exec) against `kubectl exec … find`.
 * Methods run interleaved, round after round, and the median is reported with its ratio to the anchor.
 *
 *   node --import tsx bench/kube.ts [--size-mb 1024] [--rounds 3] [--list-rounds 5] [--delay-ms 0]
 *
 * `--delay-ms N` puts the delaying proxy (bench/proxyProcess.ts, its own process) between kubectl and the API server,
 * N ms each way: an API server across a region or a continent, as a managed cluster's endpoint often is.
 *
 * The API server here is a Node process of its own on the same machine (bench/kubeApiProcess.ts), carrying every
 * byte twice (kubectl ↔ server, server ↔ the sandboxed command): the ratios compare methods through the same server,
 * not a cluster's absolute speed.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { execFileSync, spawn } from 'node:child_process';
import { stats, timed } from './util';
import { startKubeApiProcess } from './kubeApiProcess';
import { startProxyProcess } from './proxyProcess';
import { writeManyRuns } from '../test/fixtures/generate';
import { RemoteRunsCore } from '../src/core/service';
import { pullCheckpoint } from '../src/core/transfer';
import type { Checkpoint, ClusterConfig } from '../src/core/types';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
}

const MiB = 1 << 20;
const NS = 'ml-team';
const POD = 'bert-master-0';
const CONTAINER = 'pytorch';

/** Run a program to its end, stdout into `out` (a file) or discarded; rejects on a non-zero exit. */
function run(program: string, args: string[], out?: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const fd = out ? fs.openSync(out, 'w') : 'ignore';
    const child = spawn(program, args, { stdio: ['ignore', fd, 'pipe'] });
    if (typeof fd === 'number') fs.closeSync(fd);
    let err = '';
    child.stderr?.on('data', (b: Buffer) => (err += b));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve() : reject(new Error(`${program} ${args.slice(-4).join(' ')}: exit ${code}: ${err.trim()}`))));
  });
}

function sha(file: string): string {
  const h = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  const buf = Buffer.alloc(8 * MiB);
  for (let n; (n = fs.readSync(fd, buf, 0, buf.length, null)) > 0; ) h.update(buf.subarray(0, n));
  fs.closeSync(fd);
  return h.digest('hex');
}

async function main(): Promise<void> {
  const sizeMb = arg('--size-mb', 1024);
  const rounds = arg('--rounds', 3);
  const listRounds = arg('--list-rounds', 5);
  const kubectlVersion = JSON.parse(execFileSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' })).clientVersion.gitVersion;
  // In a process of its own (bench/kubeApiProcess.ts), so that our pull's work on this thread does not hold it up.
  const api = await startKubeApiProcess(NS, POD, CONTAINER);
  const local = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-bench-kube-'));
  try {
    const { workspace } = api;
    let kubeconfig = api.kubeconfig;
    const delayMs = arg('--delay-ms', 0);
    // The kubeconfig is JSON (test/harness/kubeApi.ts writeKubeconfig): its server URL pointed at the proxy instead.
    const proxy = delayMs > 0 ? await startProxyProcess(Number(/"server": "https:\/\/127\.0\.0\.1:(\d+)"/.exec(fs.readFileSync(kubeconfig, 'utf8'))![1]), delayMs, 64 * MiB) : undefined;
    if (proxy) {
      kubeconfig = path.join(local, 'kubeconfig-delayed');
      fs.writeFileSync(kubeconfig, fs.readFileSync(api.kubeconfig, 'utf8').replace(/("server": "https:\/\/127\.0\.0\.1:)\d+/g, `$1${proxy.port}`));
    }
    const cluster: ClusterConfig = { kind: 'kubernetes', name: 'prod', context: 'admin', kubeconfig, runRoots: ['/workspace/many'] };
    const core = new RemoteRunsCore({ hosts: () => [], executorFor: () => { throw new Error('no SSH here'); }, clusters: () => [cluster] });
    const target = { kind: 'pod' as const, id: `${NS}/${POD}:${CONTAINER}` };
    const kube = ['--kubeconfig', kubeconfig, '--context', 'admin', '-n', NS];

    // The checkpoint: one file of random bytes, saved a minute ago.
    const ckDir = path.join(workspace, 'big', 'checkpoints', 'step_1');
    fs.mkdirSync(ckDir, { recursive: true });
    execFileSync('sh', ['-c', `head -c ${sizeMb * MiB} /dev/urandom > "$1"`, 'sh', path.join(ckDir, 'model.bin')]);
    const old = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(ckDir, 'model.bin'), old, old);
    fs.utimesSync(ckDir, old, old);
    const want = sha(path.join(ckDir, 'model.bin'));
    const checkpoint: Checkpoint = { name: 'step_1', kind: 'step', step: 1, layout: 'step_N', path: '/workspace/big/checkpoints/step_1', isDir: true, bytes: 0, mtime: 0, files: [], newest: true };

    const methods: Record<string, (dir: string) => Promise<string>> = {
      'kubectl cp': async (dir) => {
        await run('kubectl', [...kube, 'cp', '-c', CONTAINER, `${NS}/${POD}:/workspace/big/checkpoints/step_1`, path.join(dir, 'step_1')]);
        return path.join(dir, 'step_1', 'model.bin');
      },
      'kubectl exec cat': async (dir) => {
        const out = path.join(dir, 'model.bin');
        await run('kubectl', [...kube, 'exec', '-i', POD, '-c', CONTAINER, '--', 'cat', '/workspace/big/checkpoints/step_1/model.bin'], out);
        return out;
      },
      'remote-runs pull': async (dir) => {
        const src = core.podTransferSource('prod', target)!;
        const out = await pullCheckpoint(src, checkpoint, { root: dir, run: 'big' });
        return path.join(out.plan.localRoot, 'model.bin');
      },
      // Four streams per file instead of the pod default of one (POD_STREAMS_PER_FILE in transfer/download.ts): what
      // side-by-side kubectl execs buy or cost here, where every stream's bytes cross the same two cores twice.
      'remote-runs pull, 4 streams': async (dir) => {
        const src = core.podTransferSource('prod', target)!;
        const out = await pullCheckpoint(src, checkpoint, { root: dir, run: 'big' }, { streamsPerFile: 4 });
        return path.join(out.plan.localRoot, 'model.bin');
      },
      // The same pull checked by size only: what the SHA-256 on both sides costs (both sides are this machine here).
      'remote-runs pull --size-only': async (dir) => {
        const src = core.podTransferSource('prod', target)!;
        const out = await pullCheckpoint(src, checkpoint, { root: dir, run: 'big' }, { verify: 'size' });
        return path.join(out.plan.localRoot, 'model.bin');
      },
    };
    const times: Record<string, number[]> = Object.fromEntries(Object.keys(methods).map((m) => [m, []]));
    for (let r = 0; r < rounds; r++) {
      for (const [name, fn] of Object.entries(methods)) {
        const dir = fs.mkdtempSync(path.join(local, 'dl-'));
        const { ms, value: file } = await timed(() => fn(dir));
        if (sha(file) !== want) throw new Error(`${name}: the bytes differ`);
        times[name].push(ms);
        fs.rmSync(dir, { recursive: true, force: true });
        process.stderr.write(`round ${r + 1}: ${name} ${(ms / 1000).toFixed(2)} s\n`);
      }
    }

    // The listing: ~10,000 entries under /workspace/many.
    writeManyRuns(path.join(workspace, 'many'), 50, 100);
    const entries = Number(execFileSync('sh', ['-c', `find "$1" | wc -l`, 'sh', path.join(workspace, 'many')], { encoding: 'utf8' }).trim());
    const listTimes: Record<string, number[]> = { 'kubectl exec find': [], 'remote-runs listing': [] };
    let runsFound = 0;
    for (let r = 0; r < listRounds; r++) {
      listTimes['kubectl exec find'].push((await timed(() => run('kubectl', [...kube, 'exec', '-i', POD, '-c', CONTAINER, '--', 'find', '/workspace/many'], path.join(local, 'find.txt')))).ms);
      const listed = await timed(() => core.listTarget('prod', target));
      runsFound = listed.value.roots.reduce((n, root) => n + (root.state === 'ok' ? root.runs.length : 0), 0);
      listTimes['remote-runs listing'].push(listed.ms);
    }

    const size = sizeMb * MiB;
    const anchor = stats(times['kubectl cp']).median;
    console.log(`kubectl ${kubectlVersion}, test API server on 127.0.0.1${proxy ? `, ${delayMs} ms each way through the delaying proxy` : ''}, ${os.availableParallelism()} cores, load ${os.loadavg()[0].toFixed(1)}`);
    await proxy?.stop();
    console.log(`\ndownload of ${sizeMb} MiB from a pod container (median of ${rounds}, bytes checked after each):`);
    for (const [name, t] of Object.entries(times)) {
      const s = stats(t);
      console.log(`  ${name.padEnd(30)} ${(s.median / 1000).toFixed(2)} s  ${((size / MiB) / (s.median / 1000)).toFixed(0).padStart(5)} MiB/s  throughput ${(anchor / s.median).toFixed(2)}x kubectl cp  (min ${(s.min / 1000).toFixed(2)}, max ${(s.max / 1000).toFixed(2)})`);
    }
    const findMs = stats(listTimes['kubectl exec find']).median;
    console.log(`\nlisting of ${entries} entries (${runsFound} runs found; median of ${listRounds}):`);
    for (const [name, t] of Object.entries(listTimes)) {
      const s = stats(t);
      console.log(`  ${name.padEnd(30)} ${s.median.toFixed(0)} ms  time ${(s.median / findMs).toFixed(2)}x kubectl exec find  (min ${s.min.toFixed(0)}, max ${s.max.toFixed(0)})`);
    }
  } finally {
    await api.stop();
    fs.rmSync(local, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
