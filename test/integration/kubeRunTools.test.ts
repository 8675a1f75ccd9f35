/**
 * What works on a run over SSH works on a run in a pod container, through the same core calls the extension makes
 * (service.ts targetExecutor / podExecutor: `kubectl exec` on this machine), the real kubectl on PATH and the test API
 * server (test/harness/kubeApi.ts), the run written in the container's sandbox `/workspace`:
 * - the metrics panel's live follow (RunFeed over the pod's executor; a cluster has no stream, so it polls): every
 *   line appended while it follows is seen once, in order, half-written lines held back;
 * - the language server's answers (latest metrics of a JSONL log, a checkpoint's one-line summary);
 * - inspect's ranged reads of a checkpoint (3000 tensors: a second command reads the ranges the first did not);
 * - an eval started on a pod's checkpoint, followed, its result read and recorded (eval/service.ts through the
 *   extension's wiring, eval/register.ts);
 * - Open Terminal Here's kubectl command line (core/terminal.ts terminalKubectlArgs) lands in the container, in the
 *   run's folder (a hostile name too); without a terminal here kubectl says so and goes on without a TTY.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { RemoteRunsCore, pickCheckpoint, runsOf } from '../../src/core/service';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { toRunRef } from '../../src/core/runRef';
import { InspectCache, inspectRemote, listedFilesOf } from '../../src/core/inspect/remoteRead';
import { totals } from '../../src/core/inspect';
import { EvalService } from '../../src/core/eval/service';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import type { EvalResult } from '../../src/core/eval/types';
import { podTarget } from '../../src/core/kube/names';
import { formatTarget, type ClusterConfig } from '../../src/core/types';
import type { Executor } from '../../src/core/remote';
import { RemoteAnswers } from '../../src/extension/lsp/answers';
import { terminalKubectlArgs } from '../../src/core/terminal';
import { startKubeApi, type KubeApi } from '../harness/kubeApi';
import { requireKubectl, runningPod } from '../builders/kubeCluster';
import { eventually } from '../harness/assertKind';
import { writtenAgo } from '../harness/mtimes';
import { processesMentioning } from '../harness/processes';

const NS = 'ml';
const POD = { namespace: NS, pod: 'gpt-master-0', container: 'pytorch' };
const TARGET = podTarget(POD);
const INSPECT = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
const expected = JSON.parse(fs.readFileSync(path.join(INSPECT, 'expected.json'), 'utf8')) as Record<string, { params: number; tensors: { name: string; dtype: string; shape: number[]; role: string }[] }>;

let api: KubeApi;
let core: RemoteRunsCore;
let workspace = '';
let cluster: ClusterConfig;
let execs = 0;


before(async () => {
  requireKubectl();
  api = await startKubeApi();
  api.setPods([runningPod(POD.pod, 'gpt', NS)]);
  const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'admin', namespace: NS }] });
  cluster = { kind: 'kubernetes', name: 'lab', context: 'admin', kubeconfig, namespace: NS, runRoots: ['/workspace'] };
  core = new RemoteRunsCore({
    hosts: () => [],
    executorFor: () => {
      throw new Error('a cluster is never reached over SSH');
    },
    clusters: () => [cluster],
  });
  workspace = api.container(NS, POD.pod, POD.container).workspace;
  // A run with a JSONL metrics log, and a checkpoint of 3000 tensors whose header lies past the first read.
  const run = path.join(workspace, 'gpt-run');
  fs.mkdirSync(path.join(run, 'logs'), { recursive: true });
  let lines = '';
  for (let i = 0; i < 50; i++) lines += `${JSON.stringify({ step: i, loss: 3 - i / 100 })}\n`;
  fs.writeFileSync(path.join(run, 'logs', 'train.jsonl'), lines);
  fs.mkdirSync(path.join(run, 'checkpoints', 'step_1200'), { recursive: true });
  fs.copyFileSync(path.join(INSPECT, 'many_tensors.pt'), path.join(run, 'checkpoints', 'step_1200', 'many_tensors.pt'));
  writtenAgo(path.join(run, 'checkpoints'), 3_600_000);
});

after(async () => {
  for (const pid of processesMentioning(api.dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await api?.stop();
});

async function theRun() {
  const listing = await core.listTarget('lab', TARGET);
  const run = runsOf(listing).find((r) => r.path === '/workspace/gpt-run');
  assert.ok(run, `the run is listed in the pod: ${JSON.stringify(listing.roots.map((r) => r.state))}`);
  return { listing, run };
}

test('live follow in a pod: every line appended while the feed polls through kubectl exec, once and in order', async () => {
  const { listing, run } = await theRun();
  assert.deepEqual(run.metrics, ['/workspace/gpt-run/logs/train.jsonl']);
  assert.equal(core.stream('lab', TARGET), undefined, 'a cluster has no stream: the feed polls');
  const counted: Executor = { exec: (line, opts) => (execs++, core.targetExecutor('lab', TARGET).exec(line, opts)) };
  const feed = new RunFeed(toRunRef('lab', listing.target, run), { executor: () => counted, stream: (t) => core.stream('lab', t), intervalMs: () => 50 });
  feed.start();
  try {
    await eventually(() => (feed.series().get('loss')?.length ?? 0) === 50, 'the existing 50 lines', 60_000);
    // The writer: 200 more lines in bursts, each burst cut at an arbitrary byte (half a line waits for its rest).
    const log = path.join(workspace, 'gpt-run', 'logs', 'train.jsonl');
    let text = '';
    for (let i = 50; i < 250; i++) text += `${JSON.stringify({ step: i, loss: 3 - i / 100 })}\n`;
    let at = 0;
    let seed = 11;
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    while (at < text.length) {
      const n = Math.min(text.length - at, 1 + Math.floor(rand() * 700));
      fs.appendFileSync(log, text.slice(at, at + n));
      at += n;
      await new Promise((r) => setTimeout(r, 20 + rand() * 60));
    }
    await eventually(() => (feed.series().get('loss')?.length ?? 0) === 250, 'all 250 lines', 60_000);
    const loss = feed.series().get('loss')!;
    assert.deepEqual([...loss.x], Array.from({ length: 250 }, (_, i) => i), 'each step once, in order');
    assert.deepEqual([...loss.y].map((y) => Math.round(y * 100) / 100), Array.from({ length: 250 }, (_, i) => Math.round((3 - i / 100) * 100) / 100));
    assert.equal(feed.badLines, 0, 'a half-written line is never counted as bad');
    assert.ok(execs > 1, 'the feed read through the pod executor');
  } finally {
    feed.dispose();
  }
  await eventually(() => api.running().length === 0, 'no exec left running in the pod after the feed stopped');
});

test('the language server\'s answers in a pod: the latest metrics of a JSONL log, a checkpoint\'s one-line summary', async () => {
  const { run } = await theRun();
  const answers = new RemoteAnswers({ core, hosts: () => [], isConnected: () => false, knownPlaces: () => [], mappings: () => [] });
  try {
    const place = { host: 'lab', target: formatTarget(TARGET) };
    // A run root of the pod, as the editor's completions ask it (the cluster's run roots, not an SSH host's).
    const listed = await answers.list({ place, path: '/workspace', depth: 2 });
    assert.ok(listed.ok, JSON.stringify(listed));
    assert.match(JSON.stringify(listed), /gpt-run/);
    fs.appendFileSync(path.join(workspace, 'gpt-run', 'logs', 'train.jsonl'), `${JSON.stringify({ step: 9999, loss: 0.125 })}\n`);
    const latest = await answers.latestMetrics({ place, path: '/workspace/gpt-run/logs/train.jsonl' });
    assert.deepEqual(latest, { ok: true, step: 9999, values: { loss: 0.125 } });
    const ck = pickCheckpoint(run, '1200');
    const summary = await answers.inspectSummary({ place, checkpoint: ck });
    assert.ok(summary.ok, JSON.stringify(summary));
    assert.match(summary.summary, / params · .* · 3000 tensors/, summary.summary);
  } finally {
    answers.dispose();
  }
});

test('inspect of a checkpoint in a pod: the writer\'s 3000 tensors, the header past the first read fetched by a second ranged read', async () => {
  const { run } = await theRun();
  const ck = pickCheckpoint(run, '1200');
  const cache = new InspectCache();
  const r = await inspectRemote(core.targetExecutor('lab', TARGET), TARGET, listedFilesOf(ck), { cache, host: 'lab' });
  const want = expected['many_tensors.pt'];
  assert.deepEqual(
    r.inspection.tensors.map((t) => ({ dtype: t.dtype, name: t.name, role: t.role, shape: t.shape })),
    want.tensors,
    'the tensors torch.save wrote, in its order',
  );
  assert.equal(totals(r.inspection).params, want.params);
  assert.equal(r.commands, 2, 'one command, then one more for the ranges past its first read');
  assert.ok(r.bytesRead < fs.statSync(path.join(INSPECT, 'many_tensors.pt')).size, `ranged: ${r.bytesRead} bytes read`);
  const again = await inspectRemote(core.targetExecutor('lab', TARGET), TARGET, listedFilesOf(ck), { cache, host: 'lab' });
  assert.equal(again.commands, 0, 'unchanged: from the cache');
});

test('an eval of a pod\'s checkpoint: started through kubectl exec, followed, its result read and recorded beside the run', async () => {
  const { run } = await theRun();
  // The extension's wiring (eval/register.ts): a cluster's pod through the core, never the SSH pool.
  const evals = new EvalService({
    executorFor: (name, _options, target) => core.podExecutor(name, target) ?? assert.fail('a pod is never reached over SSH'),
    localStateDir: fs.mkdtempSync(path.join(api.dir, 'local-evals-')),
  });
  const profile = parseEvalProfile({ name: 'acceptance', command: 'echo eval of step ${step} at ${checkpoint}; sleep 0.3; echo \'{"acceptance_length": 3.41, "tokens_per_s": 812}\'' });
  const ck = pickCheckpoint(run, '1200');
  const started = await evals.start(profile, { host: 'lab', target: TARGET, run: { name: run.name, path: run.path }, checkpoint: { path: ck.path, step: 1200 } });
  assert.ok(started.pgid && started.pgid > 1, 'the eval runs detached in its own group');
  const results: EvalResult[] = [];
  const out: Buffer[] = [];
  const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100, retryMs: 100, onData: (b) => out.push(b), onResult: (r) => results.push(r) });
  assert.equal(end.state, 'passed');
  assert.equal(end.exitCode, 0);
  assert.deepEqual(results, [{ acceptance_length: 3.41, tokens_per_s: 812 }]);
  assert.match(Buffer.concat(out).toString(), /^eval of step 1200 at \/workspace\/gpt-run\/checkpoints\/step_1200\n/);
  const dir = path.join(workspace, 'gpt-run', '.remote-runs', 'evals', started.id);
  assert.equal(fs.readFileSync(path.join(dir, 'results.jsonl'), 'utf8'), '{"acceptance_length":3.41,"tokens_per_s":812}\n', 'results written in the pod (sent over kubectl\'s stdin)');
  const record = (await evals.list(started.place)).find((e) => e.id === started.id);
  assert.equal(record?.state, 'passed');
  assert.deepEqual(record?.results, [{ acceptance_length: 3.41, tokens_per_s: 812 }]);
  // The launch's own exec ended (the eval lives on in its own session, not under the lifeline), and nothing is left.
  await eventually(() => api.running().length === 0, 'no exec left running in the pod');
});

/** Run the terminal's kubectl with `script` as its input (no TTY here: kubectl falls back to -i, as it says). */
function terminal(cwd: string, script: string): Promise<{ code: number | null; out: string; err: string }> {
  const { program, args } = terminalKubectlArgs(core.kubectlAccess(cluster), TARGET, cwd);
  const c = spawn(program, args, { env: { PATH: process.env.PATH, HOME: api.dir } });
  let out = '';
  let err = '';
  c.stdout.on('data', (b: Buffer) => (out += b.toString()));
  c.stderr.on('data', (b: Buffer) => (err += b.toString()));
  c.stdin.end(script);
  return new Promise((resolve) => c.on('close', (code) => resolve({ code, out, err })));
}

test('Open Terminal Here on a pod container: the user\'s kubectl lands in the container, in the run\'s folder', async () => {
  const r = await terminal('/workspace/gpt-run', 'pwd; ls; echo "shell: $0"; exit 3\n');
  assert.equal(r.code, 3, r.err);
  const lines = r.out.trim().split('\n');
  assert.equal(lines[0], '/workspace/gpt-run');
  assert.ok(lines.includes('checkpoints') && lines.includes('logs'), 'the container\'s own /workspace: ' + r.out);
  assert.match(r.out, /shell: -?bash/, 'bash, as a login shell, where the image has it');
  assert.match(r.err, /Unable to use a TTY - input is not a terminal/, 'kubectl\'s own words for a terminal-less start');
  const hostile = "it's $(touch rr-pwned) `touch rr-pwned`";
  fs.mkdirSync(path.join(workspace, hostile));
  const h = await terminal(`/workspace/${hostile}`, 'pwd; exit 0\n');
  assert.equal(h.code, 0, h.err);
  assert.equal(h.out.trim(), `/workspace/${hostile}`);
  assert.ok(!fs.existsSync(path.join(workspace, 'rr-pwned')) && !fs.existsSync(path.join(workspace, hostile, 'rr-pwned')), 'the folder name was never run');
  const missing = await terminal('/workspace/not-there', 'pwd; exit 0\n');
  assert.equal(missing.out.trim(), '/', 'a folder that is gone: the shell starts where the container starts');
  await eventually(() => api.running().length === 0, 'no exec left running in the pod');
});
