/**
 * Every remote command in a pod container ends when its output is no longer read (kube/lifeline.ts), through the
 * core's PodExecutor, the real kubectl on PATH and the test API server (test/harness/kubeApi.ts), in both of its
 * readings of what the runtime does to an exec whose connection ended: `close-pipes` (the output loses its reader)
 * and `stop-reading` (the output is never read again). The runtime itself never kills the process (the server does
 * not either: kubeApi.test.ts shows a plain `sh -c` lives on), so what ends it here is the lifeline.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startKubeApi, type KubeApi } from '../harness/kubeApi';
import { requireKubectl, runningPod } from '../builders/kubeCluster';
import { eventually } from '../harness/assertKind';
import { alive, processesMentioning } from '../harness/processes';
import { PodExecutor } from '../../src/core/kube/executor';
import { podTarget, type PodContainer } from '../../src/core/kube/names';
import type { KubectlAccess } from '../../src/core/kube/kubectl';
import { wrapForTarget } from '../../src/core/targets';
import { runCommand } from '../../src/core/remote';
import { RemoteRunsError } from '../../src/core/types';

const NS = 'ml';
const POD: PodContainer = { namespace: NS, pod: 'train-master-0', container: 'pytorch' };
const OWNER = path.join(__dirname, '..', 'harness', 'podExecOwner.ts');

interface Server {
  api: KubeApi;
  access: KubectlAccess;
}
const servers: Record<'close-pipes' | 'stop-reading', Server> = {} as never;


before(async () => {
  requireKubectl();
  for (const mode of ['close-pipes', 'stop-reading'] as const) {
    const api = await startKubeApi({ onDisconnect: mode });
    api.setPods([runningPod('train-master-0', 'train', NS)]);
    const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'admin', namespace: NS }, { name: 'no-user', namespace: NS, missing: 'user' }] });
    fs.writeFileSync(path.join(api.container(NS, POD.pod, POD.container).workspace, 'metrics.jsonl'), '{"step": 1, "loss": 2.5}\n');
    servers[mode] = { api, access: { cluster: { kind: 'kubernetes', name: 'lab', context: 'admin', kubeconfig, runRoots: ['/workspace'] }, home: api.dir } };
  }
});

after(async () => {
  for (const s of Object.values(servers)) {
    for (const pid of processesMentioning(s.api.dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await s.api.stop();
  }
});

/** Whether any process of the exec's session (it leads its group, as runc's do) is still there. */
function groupAlive(pgid: number): boolean {
  return alive(-pgid);
}

/**
 * Start a `tail -f` of the metrics log in the pod through a PodExecutor; resolves once its output (the log's one
 * line) has reached this process, so it is quiet from then on (a kill before that would meet its first write, which
 * SIGPIPE ends without any lifeline), with kubectl's pid, the exec's process group and the run's end.
 */
async function startQuiet(s: Server, argv: string[], signal?: AbortSignal): Promise<{ kubectl: number; pgid: number; done: Promise<unknown> }> {
  let kubectl = 0;
  let seen = '';
  const holder = { add: (pid: number | undefined) => (kubectl = pid ?? 0), remove: () => undefined };
  const earlier = new Set(s.api.running().map((p) => p.pid));
  const done = new PodExecutor(s.access, POD, holder)
    .exec(wrapForTarget(podTarget(POD), argv), { ...(signal ? { signal } : {}), onStdout: (b) => (seen += b.toString('latin1')) })
    .catch((e: unknown) => e);
  await eventually(() => s.api.running().some((p) => !earlier.has(p.pid)), 'the server runs the command');
  const exec = s.api.running().find((p) => !earlier.has(p.pid))!;
  await eventually(() => seen.includes('"loss": 2.5}\n'), 'the log\'s line was read');
  assert.ok(kubectl > 0, 'kubectl was started');
  return { kubectl, pgid: exec.pid, done };
}

/** The programs (argv[0]) of the processes in process group `pgid`. */
function groupPrograms(pgid: number): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === pgid) out.push(fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0')[0]);
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/**
 * Start the owner process (OWNER: a PodExecutor running `sleep 600` in the pod) and wait until the command runs under
 * its lifeline; resolves with the owner, its kubectl's pid and the exec's process group.
 */
async function startOwner(s: Server): Promise<{ owner: ReturnType<typeof spawn>; kubectl: number; pgid: number }> {
  const earlier = new Set(s.api.running().map((p) => p.pid));
  const owner = spawn(process.execPath, ['--import', 'tsx', OWNER, JSON.stringify({ access: s.access, pod: POD, argv: ['sleep', '600'] })], { stdio: ['ignore', 'pipe', 'inherit'] });
  let said = '';
  owner.stdout!.on('data', (b: Buffer) => (said += b.toString()));
  await eventually(() => /kubectl \d+\n/.test(said), 'the owner started kubectl');
  const kubectl = Number(/kubectl (\d+)\n/.exec(said)![1]);
  await eventually(() => s.api.running().some((p) => !earlier.has(p.pid)), 'the server runs the command');
  const pgid = s.api.running().find((p) => !earlier.has(p.pid))!.pid;
  await eventually(() => groupPrograms(pgid).includes('sleep'), 'sleep runs under the lifeline');
  return { owner, kubectl, pgid };
}

for (const mode of ['close-pipes', 'stop-reading'] as const) {
  test(`${mode}: kill -9 of kubectl mid tail -f of a quiet metrics log ends the remote tail and everything it started`, async () => {
    const s = servers[mode];
    const { kubectl, pgid, done } = await startQuiet(s, ['sh', '-c', 'tail -f /workspace/metrics.jsonl | cat']);
    process.kill(kubectl, 'SIGKILL');
    await done;
    const t0 = Date.now();
    await eventually(() => s.api.running().length === 0, 'the server has no exec process left', 10_000);
    await eventually(() => !groupAlive(pgid), 'no process of the command is left (tail, cat, the watcher)', 10_000);
    assert.ok(Date.now() - t0 < 5_000, `ended within 5 s of kubectl's death (took ${Date.now() - t0} ms)`);
    assert.ok(s.api.ended().some((p) => p.pid === pgid && !p.connected), 'the command ended after the connection was gone');
  });

  test(`${mode}: kill -9 of the owning process and its kubectl mid quiet command: nothing is left, here or in the pod`, async () => {
    const s = servers[mode];
    const { owner, kubectl, pgid } = await startOwner(s);
    const gone = new Promise((resolve) => owner.on('exit', resolve));
    owner.kill('SIGKILL');
    process.kill(kubectl, 'SIGKILL');
    await gone;
    await eventually(() => !s.api.running().some((p) => p.pid === pgid), 'the server\'s exec process ended', 10_000);
    await eventually(() => !groupAlive(pgid), 'no process of the command is left', 10_000);
    await eventually(() => !alive(kubectl), 'kubectl ended with its command', 10_000);
  });
}

test('the owner alone killed (kubectl left to itself): kubectl\'s stdin closes with the owner, so the command and kubectl end', async () => {
  const s = servers['close-pipes'];
  const { owner, kubectl, pgid } = await startOwner(s);
  // kubectl leads its own process group (kube/kubectl.ts runKubectl): the owner's death does not end it, but its
  // stdin (the owner's pipe) closes, which is the remote command's lifeline.
  const gone = new Promise((resolve) => owner.on('exit', resolve));
  owner.kill('SIGKILL');
  await gone;
  await eventually(() => s.api.running().length === 0 && !groupAlive(pgid), 'nothing of the command is left in the pod', 10_000);
  await eventually(() => !alive(kubectl), 'kubectl ended', 10_000);
});

test('a cancel mid tail -f ends the remote command as well as kubectl', async () => {
  const s = servers['stop-reading'];
  const ac = new AbortController();
  const { pgid, done } = await startQuiet(s, ['tail', '-f', '/workspace/metrics.jsonl'], ac.signal);
  ac.abort();
  const e = await done;
  assert.ok(e instanceof RemoteRunsError && e.kind === 'cancelled', String(e));
  await eventually(() => s.api.running().length === 0 && !groupAlive(pgid), 'nothing of the command is left in the pod', 10_000);
});

test('a command that ends by itself returns its output, stderr and exit code unchanged, and kubectl ends with it', async () => {
  const s = servers['close-pipes'];
  const executor = new PodExecutor(s.access, POD);
  const t0 = Date.now();
  const raw = await executor.exec(wrapForTarget(podTarget(POD), ['sh', '-c', 'read x || echo "stdin: EOF"; cat /workspace/metrics.jsonl; echo oops >&2; exit 7']));
  assert.equal(raw.code, 7);
  assert.match(raw.stdout.toString('latin1'), /stdin: EOF\n\{"step": 1, "loss": 2\.5\}\n$/);
  assert.match(raw.stderr.toString('latin1'), /oops\n/);
  assert.ok(Date.now() - t0 < 15_000, 'kubectl did not wait for its held stdin');
  // And a command that succeeds: its output through the one runner, as over SSH.
  const ok = await runCommand(executor, podTarget(POD), { argv: ['cat', '/workspace/metrics.jsonl'], describe: 'read', parse: (res) => res.stdout.toString('utf8') });
  assert.equal(ok, '{"step": 1, "loss": 2.5}\n');
  await eventually(() => s.api.running().length === 0, 'nothing left running');
});

test('without the lifeline (a command that reads its input: plain sh -c), the same kill leaves the quiet command running', async () => {
  // The control: the server really leaves a process whose kubectl died; only the lifeline ends it.
  const s = servers['close-pipes'];
  let kubectl = 0;
  const holder = { add: (pid: number | undefined) => (kubectl = pid ?? 0), remove: () => undefined };
  const done = new PodExecutor(s.access, POD, holder).exec(wrapForTarget(podTarget(POD), ['sh', '-c', 'cat >/dev/null; exec sleep 600']), { stdin: '' }).catch((e: unknown) => e);
  await eventually(() => s.api.running().length > 0, 'the server runs the command');
  const pgid = s.api.running()[0].pid;
  await eventually(() => groupPrograms(pgid).includes('sleep'), 'sleep runs');
  process.kill(kubectl, 'SIGKILL');
  await done;
  await new Promise((r) => setTimeout(r, 3_000));
  assert.ok(groupAlive(pgid), 'the quiet command outlived its kubectl');
  process.kill(-pgid, 'SIGKILL');
  await eventually(() => s.api.running().length === 0, 'cleaned up');
});

test('a context that names no user: refused before kubectl runs, never left waiting at its username prompt on the held stdin', async () => {
  const s = servers['close-pipes'];
  const access: KubectlAccess = { ...s.access, cluster: { ...s.access.cluster, context: 'no-user' } };
  const t0 = Date.now();
  await assert.rejects(
    runCommand(new PodExecutor(access, POD), podTarget(POD), { argv: ['tail', '-f', '/workspace/metrics.jsonl'], describe: 'follow', parse: (r) => r.stdout.toString() }),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'kube-config' && e.detail.cause === 'no-user',
  );
  assert.ok(Date.now() - t0 < 10_000, 'said at once');
  assert.deepEqual(processesMentioning('--context=no-user'), [], 'no kubectl left');
});

test('a user entry that identifies no one (kubectl prompts for a username): the held stdin answers EOF, so it fails as no-user at once', async () => {
  const s = servers['close-pipes'];
  const file = path.join(s.api.dir, 'empty-user.json');
  fs.writeFileSync(file, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'lab', cluster: { server: s.api.server, 'certificate-authority': s.api.caFile } }],
    users: [{ name: 'nobody', user: {} }],
    contexts: [{ name: 'empty-user', context: { cluster: 'lab', user: 'nobody', namespace: NS } }],
  }));
  const access: KubectlAccess = { ...s.access, cluster: { ...s.access.cluster, context: 'empty-user', kubeconfig: file } };
  const t0 = Date.now();
  await assert.rejects(
    runCommand(new PodExecutor(access, POD), podTarget(POD), { argv: ['tail', '-f', '/workspace/metrics.jsonl'], describe: 'follow', parse: (r) => r.stdout.toString() }),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'kube-config' && e.detail.cause === 'no-user',
  );
  assert.ok(Date.now() - t0 < 10_000, 'said at once');
  assert.deepEqual(processesMentioning('--context=empty-user'), [], 'no kubectl left');
});
