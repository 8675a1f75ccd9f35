/**
 * Inspecting big checkpoints over the test sshd (issue 18): a ~5.4 GB sharded safetensors checkpoint (6 shards and
 * the index, 291 tensors) and a ~3.1 GB torch archive (torch.save's own layout, 255 tensors), both SPARSE (real
 * headers, data as holes: bench/make_inspect_bench.py), on the bare host and inside the pct:200 shim container.
 *
 *   node --import tsx bench/inspect.ts [--n 7]
 *
 * For each checkpoint and target it reports
 *  1. remote commands per inspection (our pool.exec calls, and the sessions sshd logged) and the bytes the remote
 *     sent (target: 1 command, < 1 MB);
 *  2. time: ours warm (over the pooled connection) next to `ssh host python -c "…"` through a ControlMaster (the
 *     same warm connection for OpenSSH), and ours cold (a fresh pool: connect, log in, read) next to a fresh
 *     `ssh host python -c "…"`, samples interleaved; the Python reads the same headers with the safetensors package
 *     (safe_open(framework='np'): 'pt' would import torch, seconds more; every key and shape) and
 *     torch.load(mmap=True, weights_only=True) for the archive: the remote user's
 *     /usr/bin/python3 (3.11) with /tmp/venv's packages on PYTHONPATH (the system python has neither package);
 *  3. for scale, pulling the whole checkpoint once: `ssh host cat FILES` (holes read as zeros at full size).
 * Nothing here asserts timing; a check that fails is a wrong result (tensor count, commands, bytes).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { startTestHost, ScriptedPrompter, type TestHost } from '../test/harness/testHost';
import { ConnectionPool } from '../src/core/ssh/pool';
import { HostDirectory } from '../src/core/hosts';
import { RemoteRunsCore, pickCheckpoint } from '../src/core/service';
import { inspectRemote, listedFilesOf } from '../src/core/inspect/remoteRead';
import { summaryLine, totals } from '../src/core/inspect';
import { shellJoin } from '../src/core/shell/quote';
import type { Checkpoint, HostConfig, TargetRef } from '../src/core/types';
import { runSsh, sessionsInLog, settledLog, startControlMaster, stats, table, ms, type Stats } from './util';

const N = Number(process.argv[process.argv.indexOf('--n') + 1]) || 7;
const PYTHON = '/tmp/venv/bin/python';
/**
 * The baseline's interpreter as the remote user runs it: the system python3 (3.11, no safetensors or torch of its
 * own) with the venv's packages on PYTHONPATH (/tmp/venv's own interpreter is a link into /root, which the test
 * user cannot enter).
 */
const REMOTE_PYTHON = ['env', 'PYTHONPATH=/tmp/venv/lib/python3.11/site-packages', '/usr/bin/python3'];
const GEN = path.join(__dirname, 'make_inspect_bench.py');
const problems: string[] = [];
const check = (ok: boolean, what: string): void => {
  if (!ok) problems.push(what);
};

const PY_SAFETENSORS = `import sys,glob
from safetensors import safe_open
n=0
for f in sorted(glob.glob(sys.argv[1]+'/*.safetensors')):
    with safe_open(f,'np') as so:
        for k in so.keys():
            so.get_slice(k).get_shape(); n+=1
print(n)`;
const PY_TORCH = `import sys,torch
sd=torch.load(sys.argv[1],mmap=True,weights_only=True)
print(len(sd['model']))`;

interface Case {
  label: string;
  hostName: string;
  target: TargetRef;
  checkpoint: string;
  /** The remote command of the Python baseline (run inside the target). */
  python: string;
  /** Files a whole pull moves. */
  files: string[];
  tensors: number;
}

function generate(into: string): { sharded: { tensors: number; bytes: number }; torch: { tensors: number; bytes: number } } {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-inspect-bench-'));
  const facts = JSON.parse(execFileSync(PYTHON, [GEN, tmp], { encoding: 'utf8' }).trim().split('\n').pop()!);
  const ck = path.join(into, 'big-run', 'checkpoints');
  fs.mkdirSync(ck, { recursive: true });
  fs.renameSync(path.join(tmp, 'sharded'), path.join(ck, 'step_20000'));
  fs.renameSync(path.join(tmp, 'train.pt'), path.join(ck, 'model_step_10000.pt'));
  fs.rmSync(tmp, { recursive: true, force: true });
  return facts;
}

function makePool(host: TestHost, counter: { execs: number }): ConnectionPool {
  const pool = new ConnectionPool({ prompter: new ScriptedPrompter(), logger: { info() {}, warn() {}, error() {} }, knownHostsFiles: [host.knownHostsFile], connectTimeoutMs: 10_000, agent: null });
  const real = pool.exec.bind(pool);
  pool.exec = (async (...a: Parameters<typeof real>) => {
    counter.execs++;
    return real(...a);
  }) as typeof pool.exec;
  return pool;
}

const fmt = (s: Stats): string => `${ms(s.median)} [${ms(s.min)}-${ms(s.max)}]`;

async function main(): Promise<void> {
  const load0 = os.loadavg()[0];
  const host = await startTestHost();
  const stopAll: (() => Promise<void>)[] = [() => host.stop()];
  process.once('SIGINT', () => void Promise.all(stopAll.map((s) => s())).then(() => process.exit(130)));
  try {
    const root = path.join(host.dir, 'inspect-bench');
    const facts = generate(root);
    generate(path.join(host.containers.pct200.workspace, 'ibench'));
    execFileSync('chmod', ['-R', 'a+rX', root, host.containers.pct200.workspace]);
    const hosts: HostConfig[] = [host.hostConfig('h', { runRoots: [root], targets: ['host'] }), host.hostConfig('c', { runRoots: ['/workspace/ibench'], targets: ['pct:200'] })];
    const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
    const counter = { execs: 0 };
    const shared = makePool(host, counter);
    stopAll.push(async () => shared.dispose());
    const core = new RemoteRunsCore({ hosts: () => hosts, executorFor: (h) => shared.executor(dir.resolve(h), { idempotent: true }) });
    const sshBase = ['-F', host.sshConfigFile, '-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${host.knownHostsFile}`, '-o', 'GlobalKnownHostsFile=/dev/null', '-o', 'StrictHostKeyChecking=yes', '-o', 'LogLevel=ERROR'];
    const master = await startControlMaster(sshBase, 'testbox', path.join(host.dir, 'cm.sock'));
    stopAll.push(() => master.stop());

    const cases: Case[] = [];
    for (const [label, hostName, target, base] of [
      ['bare host', 'h', { kind: 'host', id: '' }, root],
      ['pct:200', 'c', { kind: 'pct', id: '200' }, '/workspace/ibench'],
    ] as const) {
      const prefix = target.kind === 'pct' ? ['pct', 'exec', target.id, '--'] : [];
      const ck = `${base}/big-run/checkpoints`;
      const shardNames = fs.readdirSync(path.join(root, 'big-run', 'checkpoints', 'step_20000')).sort();
      cases.push({ label: `${label}: sharded safetensors`, hostName, target, checkpoint: 'step_20000', python: shellJoin([...prefix, ...REMOTE_PYTHON, '-c', PY_SAFETENSORS, `${ck}/step_20000`]), files: shardNames.map((f) => `${ck}/step_20000/${f}`), tensors: facts.sharded.tensors });
      cases.push({ label: `${label}: torch archive`, hostName, target, checkpoint: 'model_step_10000.pt', python: shellJoin([...prefix, ...REMOTE_PYTHON, '-c', PY_TORCH, `${ck}/model_step_10000.pt`]), files: [`${ck}/model_step_10000.pt`], tensors: facts.torch.tensors });
    }

    const rows1: string[][] = [];
    const rows2: string[][] = [];
    const rows3: string[][] = [];
    for (const c of cases) {
      const { run } = await core.resolveRun(c.hostName, c.target, ['big-run'], 'none');
      const ckpt: Checkpoint = pickCheckpoint(run, c.checkpoint);
      const files = listedFilesOf(ckpt);
      const inspectOnce = (pool: ConnectionPool): ReturnType<typeof inspectRemote> => inspectRemote(pool.executor(dir.resolve(hosts.find((h) => h.name === c.hostName)!), { idempotent: true }), c.target, files);

      // 1. Commands and bytes, counted on both ends.
      const log0 = await settledLog(host.sshd.log);
      const execs0 = counter.execs;
      const first = await inspectOnce(shared);
      const log1 = await settledLog(host.sshd.log);
      const sessions = sessionsInLog(log1.slice(log0.length));
      const execs = counter.execs - execs0;
      const t = totals(first.inspection);
      check(t.tensors === c.tensors, `${c.label}: ${t.tensors} tensors, ${c.tensors} written`);
      check(execs === 1 && sessions === 1, `${c.label}: ${execs} execs, ${sessions} sessions`);
      check(first.bytesRead < 1024 * 1024, `${c.label}: ${first.bytesRead} bytes read`);
      check(first.inspection.incomplete.length === 0, `${c.label}: incomplete ${first.inspection.incomplete.join('; ')}`);
      const py = await runSsh([...sshBase, ...master.clientArgs, 'testbox', c.python]);
      check(py.code === 0, `${c.label}: python baseline exited ${py.code}: ${py.stderr.trim().slice(0, 300)}`);
      rows1.push([c.label, summaryLine(first.inspection), `${execs} | ${sessions}`, `${(first.bytesRead / 1024).toFixed(1)} KiB`, `${(ckpt.bytes / 1e9).toFixed(2)} GB`]);

      // 2. Time, interleaved: warm (pooled / ControlMaster) and cold (fresh pool / fresh ssh).
      const warm: number[] = [];
      const pyWarm: number[] = [];
      const cold: number[] = [];
      const pyCold: number[] = [];
      for (let i = 0; i < N; i++) {
        let t0 = performance.now();
        await inspectOnce(shared);
        warm.push(performance.now() - t0);
        pyWarm.push((await runSsh([...sshBase, ...master.clientArgs, 'testbox', c.python])).ms);
        const fresh = makePool(host, { execs: 0 });
        t0 = performance.now();
        await inspectOnce(fresh);
        cold.push(performance.now() - t0);
        fresh.dispose();
        pyCold.push((await runSsh([...sshBase, 'testbox', c.python])).ms);
      }
      const sw = stats(warm);
      const sp = stats(pyWarm);
      const sc = stats(cold);
      const spc = stats(pyCold);
      rows2.push([c.label, fmt(sw), fmt(sp), (sw.median / sp.median).toFixed(3), fmt(sc), fmt(spc), (sc.median / spc.median).toFixed(3)]);

      // 3. For scale: the whole checkpoint through ssh, once (bare host only: the container's files are the same).
      if (c.target.kind === 'host') {
        const pull = await runSsh([...sshBase, ...master.clientArgs, 'testbox', shellJoin(['cat', ...c.files])]);
        check(pull.code === 0 && pull.stdoutBytes === ckpt.bytes, `${c.label}: cat moved ${pull.stdoutBytes} of ${ckpt.bytes}`);
        rows3.push([c.label, `${(pull.stdoutBytes / 1e9).toFixed(2)} GB`, `${(pull.ms / 1000).toFixed(1)} s`, `${(pull.stdoutBytes / 1e6 / (pull.ms / 1000)).toFixed(0)} MB/s`, `${(pull.ms / sw.median).toFixed(0)}× ours warm`]);
      }
    }
    const out: string[] = [];
    out.push(`inspect bench: n=${N}, load ${load0.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}, ${os.cpus().length} cores, baseline python: ${REMOTE_PYTHON.join(' ')} (${execFileSync(PYTHON, ['-c', 'import torch,safetensors;print("torch",torch.__version__,"safetensors",safetensors.__version__)'], { encoding: 'utf8' }).trim()})`);
    out.push('', '1. What one inspection costs (pool.exec calls | sessions sshd started; bytes the remote sent)');
    out.push(table(['checkpoint', 'summary', 'commands', 'read', 'size'], rows1));
    out.push('', '2. Time, ms: median [min-max]; ratio ours / python');
    out.push(table(['checkpoint', 'ours warm', 'ssh+mux python', 'ratio', 'ours cold', 'ssh python', 'ratio'], rows2));
    out.push('', '3. For scale: the whole checkpoint through ssh (cat over the ControlMaster)');
    out.push(table(['checkpoint', 'bytes', 'time', 'rate', 'vs inspect'], rows3));
    out.push('', problems.length ? `PROBLEMS:\n${problems.join('\n')}` : 'all checks passed');
    console.log(out.join('\n'));
    process.exitCode = problems.length ? 1 : 0;
  } finally {
    for (const s of stopAll.reverse()) await s().catch(() => undefined);
  }
}

void main();
