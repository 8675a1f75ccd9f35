/**
 * The test API server (test/harness/kubeApi.ts) as the real `kubectl` on PATH sees it: each test runs kubectl
 * against it and asserts what kubectl itself prints and its exit code, so the server's answers are held to what
 * kubectl accepts and how it words them (a wrong Status shape or channel frame shows here as kubectl's own error).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startKubeApi, type KubeApi, type KubePod } from '../harness/kubeApi';
import { eventually } from '../harness/assertKind';

let api: KubeApi;
let kubeconfig: string;
const NS = 'ml';

function runningPod(name: string, labels: Record<string, string>, containers = ['pytorch']): KubePod {
  return {
    metadata: { name, namespace: NS, labels },
    spec: { nodeName: 'gpu-node-1', containers: containers.map((c) => ({ name: c, image: 'pytorch/pytorch:2.4.0' })) },
    status: {
      phase: 'Running',
      podIP: '10.0.0.7',
      containerStatuses: containers.map((c) => ({ name: c, ready: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } })),
    },
  };
}

/** The kubectl on PATH, which must speak the WebSocket exec protocol (client-go's default from 1.30 on). */
function checkKubectl(): void {
  let version: { clientVersion?: { major: string; minor: string; gitVersion: string } };
  try {
    version = JSON.parse(execFileSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' }));
  } catch (e) {
    assert.fail(`these tests drive the real kubectl, and there is none on PATH (${(e as Error).message}); install kubectl >= 1.30`);
  }
  const minor = parseInt(version.clientVersion?.minor ?? '0', 10);
  assert.ok(minor >= 30, `kubectl ${version.clientVersion?.gitVersion} speaks only SPDY for exec; these tests need kubectl >= 1.30`);
}

before(async () => {
  checkKubectl();
  api = await startKubeApi();
  api.setPods([
    runningPod('train-master-0', { 'training.kubeflow.org/job-name': 'train', 'training.kubeflow.org/replica-type': 'master', 'training.kubeflow.org/replica-index': '0' }),
    runningPod('train-worker-0', { 'training.kubeflow.org/job-name': 'train', 'training.kubeflow.org/replica-type': 'worker', 'training.kubeflow.org/replica-index': '0' }),
    runningPod('other-0', { app: 'other' }),
    runningPod('distroless-0', { app: 'other' }, ['server']),
    { metadata: { name: 'unscheduled-0', namespace: NS }, spec: { containers: [{ name: 'pytorch' }] }, status: { phase: 'Pending' } },
    {
      metadata: { name: 'creating-0', namespace: NS },
      spec: { nodeName: 'gpu-node-1', containers: [{ name: 'pytorch' }] },
      status: { phase: 'Pending', containerStatuses: [{ name: 'pytorch', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] },
    },
  ]);
  api.container(NS, 'distroless-0', 'server').withoutShell();
  api.addIdentity({ name: 'viewer', token: 'viewer-token', rules: [{ verbs: ['get', 'list', 'watch'], resources: ['pods', 'pods/log'] }] });
  api.addIdentity({ name: 'system:serviceaccount:ml:lister', token: 'lister-token', rules: [{ verbs: ['get', 'list'], resources: ['pods'], namespaces: [NS] }] });
  kubeconfig = api.writeKubeconfig({
    contexts: [
      { name: 'admin', namespace: NS },
      { name: 'viewer', namespace: NS, user: { token: 'viewer-token' } },
      { name: 'lister', namespace: NS, user: { token: 'lister-token' } },
      { name: 'stranger', namespace: NS, user: { token: 'not-a-known-token' } },
      { name: 'plugin', namespace: NS, user: { execToken: 'viewer-token' } },
      { name: 'plugin-fails', namespace: NS, user: { execFails: 'error: the refresh token has expired; run: login-tool auth' } },
      { name: 'plugin-missing', namespace: NS, user: { execMissing: true } },
      { name: 'down', namespace: NS, server: 'closed' },
      { name: 'no-cluster', namespace: NS, missing: 'cluster' },
      { name: 'no-user', namespace: NS, missing: 'user' },
    ],
  });
});
after(async () => {
  await api?.stop();
});

interface Ran {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

function start(args: string[]): ChildProcessWithoutNullStreams {
  return spawn('kubectl', ['--kubeconfig', kubeconfig, ...args], { env: { PATH: process.env.PATH, HOME: api.dir } });
}

/** Run kubectl to its end (asynchronously: the server lives in this process). */
function kubectl(args: string[], input?: Buffer | string): Promise<Ran> {
  const c = start(args);
  const out: Buffer[] = [];
  let stderr = '';
  c.stdout.on('data', (b: Buffer) => out.push(b));
  c.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  c.stdin.on('error', () => undefined);
  c.stdin.end(input ?? '');
  return new Promise((resolve) => c.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr })));
}

/** kubectl's stdout as it comes: `until(re)` resolves with all of it once it matches `re`. */
function output(c: ChildProcessWithoutNullStreams): { until(re: RegExp): Promise<string> } {
  let seen = '';
  const waiting = new Set<() => void>();
  c.stdout.on('data', (b: Buffer) => {
    seen += b.toString();
    for (const w of waiting) w();
  });
  return {
    until: (re) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          if (!re.test(seen)) return;
          waiting.delete(check);
          resolve(seen);
        };
        waiting.add(check);
        c.once('close', () => (re.test(seen) ? resolve(seen) : reject(new Error(`kubectl ended before ${re}: ${seen}`))));
        check();
      }),
  };
}

test('get pods with a label selector, by name and as JSON; a field selector on status.phase and spec.nodeName', async () => {
  const names = await kubectl(['get', 'pods', '-l', 'training.kubeflow.org/job-name=train', '-o', 'name']);
  assert.equal(names.code, 0, names.stderr);
  assert.equal(names.stdout.toString(), 'pod/train-master-0\npod/train-worker-0\n');

  const json = await kubectl(['get', 'pods', '-l', 'training.kubeflow.org/replica-type in (worker)', '-o', 'json']);
  assert.equal(json.code, 0, json.stderr);
  const list = JSON.parse(json.stdout.toString());
  assert.equal(list.kind, 'List');
  assert.deepEqual(list.items.map((p: KubePod) => [p.metadata.name, p.metadata.labels?.['training.kubeflow.org/replica-index'], p.status?.phase]), [['train-worker-0', '0', 'Running']]);

  const pending = await kubectl(['get', 'pods', '--field-selector', 'status.phase=Pending,spec.nodeName=', '-o', 'name']);
  assert.equal(pending.stdout.toString(), 'pod/unscheduled-0\n');

  const table = await kubectl(['get', 'pods', '-l', 'app=other']);
  assert.match(table.stdout.toString(), /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\ndistroless-0\s+1\/1\s+Running\s+0\s+\S+\nother-0\s+1\/1\s+Running\s+0\s+\S+\n$/);

  const sets = await kubectl(['get', 'pods', '-l', '!app,training.kubeflow.org/replica-type notin (master)', '-o', 'name']);
  assert.equal(sets.stdout.toString(), 'pod/creating-0\npod/train-worker-0\npod/unscheduled-0\n', 'a missing label is "notin" any set');

  const bad = await kubectl(['get', 'pods', '--field-selector', 'spec.gpu=a100']);
  assert.equal(bad.code, 1);
  assert.equal(bad.stderr, 'Error from server (BadRequest): Unable to find "/v1, Resource=pods" that match label selector "", field selector "spec.gpu=a100": field label not supported: spec.gpu\n');
});

test('get -w receives a pod\'s update, and a pod that leaves or rejoins the field selector is DELETED or ADDED for the watch', async () => {
  const c = start([
    'get', 'pods', '-w', '--output-watch-events', '--field-selector', 'status.phase=Running', '-l', 'training.kubeflow.org/job-name=train',
    '-o', 'jsonpath={.type} {.object.metadata.name} {.object.status.phase} {.object.status.containerStatuses[0].restartCount}{"\\n"}',
  ]);
  const out = output(c);
  try {
    await out.until(/ADDED train-master-0 Running 0\nADDED train-worker-0 Running 0\n/);
    const pod = structuredClone(api.pod(NS, 'train-worker-0')!);
    pod.status!.containerStatuses![0].restartCount = 1;
    api.updatePod(pod);
    await out.until(/MODIFIED train-worker-0 Running 1\n/);
    const master = structuredClone(api.pod(NS, 'train-master-0')!);
    master.status!.phase = 'Failed';
    api.updatePod(master);
    await out.until(/DELETED train-master-0 Failed 0\n/);
    master.status!.phase = 'Running';
    api.updatePod(master);
    const all = await out.until(/ADDED train-master-0 Running 0\n$/);
    assert.equal(all, 'ADDED train-master-0 Running 0\nADDED train-worker-0 Running 0\nMODIFIED train-worker-0 Running 1\nDELETED train-master-0 Failed 0\nADDED train-master-0 Running 0\n');
  } finally {
    c.kill();
  }
});

test('logs -f follows the container\'s log as it is written and ends when the container ends; --timestamps, --tail and --previous', async () => {
  api.updatePod(runningPod('logger-0', { app: 'logger' }));
  const log = api.container(NS, 'logger-0', 'pytorch');
  log.log('step 1 loss 2.0\n');
  const c = start(['logs', '-f', 'logger-0', '-c', 'pytorch']);
  const ended = new Promise<number | null>((resolve) => c.on('close', resolve));
  const out = output(c);
  await out.until(/step 1 loss 2\.0\n/);
  log.log('step 2 loss 1.5\nstep 3 ');
  log.log('loss 1.2\n');
  const all = await out.until(/step 3 loss 1\.2\n/);
  assert.equal(all, 'step 1 loss 2.0\nstep 2 loss 1.5\nstep 3 loss 1.2\n');
  log.terminate(0);
  assert.equal(await ended, 0, 'kubectl logs -f ends with the container');

  const stamped = await kubectl(['logs', 'logger-0', '--timestamps', '--tail', '1']);
  assert.match(stamped.stdout.toString(), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z step 3 loss 1\.2\n$/);

  log.restart();
  log.log('resumed at step 3\n');
  assert.equal((await kubectl(['logs', 'logger-0'])).stdout.toString(), 'resumed at step 3\n');
  assert.equal((await kubectl(['logs', 'logger-0', '--previous'])).stdout.toString(), 'step 1 loss 2.0\nstep 2 loss 1.5\nstep 3 loss 1.2\n');

  assert.equal((await kubectl(['logs', 'logger-0', '--since-time', '2099-01-01T00:00:00Z'])).stdout.toString(), '', 'nothing was written after sinceTime');

  const waiting = await kubectl(['logs', 'creating-0']);
  assert.deepEqual([waiting.code, waiting.stderr], [1, 'Error from server (BadRequest): container "pytorch" in pod "creating-0" is waiting to start: ContainerCreating\n']);
  const noPrevious = await kubectl(['logs', 'other-0', '--previous']);
  assert.deepEqual([noPrevious.code, noPrevious.stderr], [1, 'Error from server (BadRequest): previous terminated container "pytorch" in pod "other-0" not found\n']);
});

test('exec -i: stdin in, stdout and stderr apart, /workspace is the container\'s own, the exit code is kubectl\'s', async () => {
  fs.writeFileSync(path.join(api.container(NS, 'other-0', 'pytorch').workspace, 'marker'), 'in other-0\n');
  const r = await kubectl(['exec', '-i', 'other-0', '-c', 'pytorch', '--', 'sh', '-c', 'cat /workspace/marker; tr a-z A-Z; echo to-stderr >&2; exit 7'], 'from stdin\n');
  assert.equal(r.code, 7);
  assert.equal(r.stdout.toString(), 'in other-0\nFROM STDIN\n');
  assert.equal(r.stderr, 'to-stderr\ncommand terminated with exit code 7\n');

  const exec = api.requests.filter((r) => r.includes('/pods/other-0/exec'));
  assert.deepEqual(exec.map((r) => r.replace(/\?.*? \(/, ' (')), ['GET /api/v1/namespaces/ml/pods/other-0/exec (upgrade: websocket; protocols: v5.channel.k8s.io)'], 'kubectl 1.32 asks for WebSocket v5 first and needs no SPDY fallback');

  const other = await kubectl(['exec', 'train-master-0', '-c', 'pytorch', '--', 'sh', '-c', 'ls -A /workspace']);
  assert.deepEqual([other.code, other.stdout.toString()], [0, ''], 'another container does not see it');
});

test('exec carries 1 MiB of binary stdout and of stdin byte for byte', async () => {
  const ws = api.container(NS, 'train-worker-0', 'pytorch').workspace;
  const blob = randomBytes(1024 * 1024);
  fs.writeFileSync(path.join(ws, 'blob.bin'), blob);
  const down = await kubectl(['exec', 'train-worker-0', '-c', 'pytorch', '--', 'cat', '/workspace/blob.bin']);
  assert.equal(down.code, 0, down.stderr);
  assert.ok(down.stdout.equals(blob), `stdout is the file (${down.stdout.length} bytes)`);

  const up = await kubectl(['exec', '-i', 'train-worker-0', '-c', 'pytorch', '--', 'sh', '-c', 'cat > /workspace/up.bin'], blob);
  assert.equal(up.code, 0, up.stderr);
  assert.ok(fs.readFileSync(path.join(ws, 'up.bin')).equals(blob), 'stdin arrived whole and its end ended cat (v5 CLOSE)');
});

test('RBAC: a user without create on pods/exec gets the apiserver\'s Forbidden, as kubectl prints it; reads still work', async () => {
  const r = await kubectl(['--context', 'viewer', 'exec', 'other-0', '-c', 'pytorch', '--', 'true']);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, 'Error from server (Forbidden): pods "other-0" is forbidden: User "viewer" cannot create resource "pods/exec" in API group "" in the namespace "ml"\n');
  const list = await kubectl(['--context', 'viewer', 'get', 'namespaces']);
  assert.equal(list.code, 1);
  assert.equal(list.stderr, 'Error from server (Forbidden): namespaces is forbidden: User "viewer" cannot list resource "namespaces" in API group "" at the cluster scope\n');
  const get = await kubectl(['--context', 'viewer', 'get', 'pod', 'other-0', '-o', 'name']);
  assert.deepEqual([get.code, get.stdout.toString()], [0, 'pod/other-0\n']);

  // A namespaced Role that reads pods and nothing else: not their logs.
  const lists = await kubectl(['--context', 'lister', 'get', 'pods', '-l', 'app=other', '-o', 'name']);
  assert.deepEqual([lists.code, lists.stdout.toString()], [0, 'pod/distroless-0\npod/other-0\n']);
  const logs = await kubectl(['--context', 'lister', 'logs', 'other-0', '-c', 'pytorch']);
  assert.equal(logs.code, 1);
  assert.equal(logs.stderr, 'Error from server (Forbidden): pods "other-0" is forbidden: User "system:serviceaccount:ml:lister" cannot get resource "pods/log" in API group "" in the namespace "ml"\n');
  const elsewhere = await kubectl(['--context', 'lister', 'get', 'pods', '-n', 'kube-system']);
  assert.equal(elsewhere.stderr, 'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:ml:lister" cannot list resource "pods" in API group "" in the namespace "kube-system"\n');
});

test('an unknown token is 401 Unauthorized; an exec credential plugin\'s token is used; a failing or missing plugin is kubectl\'s own error', async () => {
  const stranger = await kubectl(['--context', 'stranger', 'get', 'pods']);
  assert.deepEqual([stranger.code, stranger.stderr], [1, 'error: You must be logged in to the server (Unauthorized)\n']);

  const plugin = await kubectl(['--context', 'plugin', 'get', 'pod', 'other-0', '-o', 'name']);
  assert.deepEqual([plugin.code, plugin.stdout.toString()], [0, 'pod/other-0\n']);
  const pluginExec = await kubectl(['--context', 'plugin', 'exec', 'other-0', '--', 'true']);
  assert.match(pluginExec.stderr, /User "viewer" cannot create resource "pods\/exec"/, 'the plugin\'s token is the viewer\'s identity');

  const fails = await kubectl(['--context', 'plugin-fails', 'get', 'pods']);
  assert.equal(fails.code, 1);
  assert.match(fails.stderr, /^error: the refresh token has expired; run: login-tool auth\n/, 'the plugin\'s stderr comes through');
  assert.match(fails.stderr, /Unable to connect to the server: getting credentials: exec: executable \S+plugin-fails-credential failed with exit code 1\n$/);

  const missing = await kubectl(['--context', 'plugin-missing', 'get', 'pods']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^Unable to connect to the server: getting credentials: exec: fork\/exec \S+plugin-missing-no-such-plugin: no such file or directory\n$/);
});

test('an API server nobody listens on, and a context the kubeconfig does not have', async () => {
  const down = await kubectl(['--context', 'down', 'get', 'pods']);
  assert.equal(down.code, 1);
  assert.match(down.stderr, /\nThe connection to the server 127\.0\.0\.1:\d+ was refused - did you specify the right host or port\?\n$/);
  const missing = await kubectl(['--context', 'nowhere', 'get', 'pods']);
  assert.deepEqual([missing.code, missing.stderr], [1, 'Error in configuration: context was not found for specified context: nowhere\n']);
  // A context whose cluster entry is missing: client-go falls back to its default server, http://localhost:8080.
  const noCluster = await kubectl(['--context', 'no-cluster', 'get', 'pods']);
  assert.equal(noCluster.code, 1);
  assert.match(noCluster.stderr, /localhost:8080/);
  // A context whose user entry is missing: no credentials at all, so kubectl asks for a user name on stdin (empty here).
  const noUser = await kubectl(['--context', 'no-user', 'get', 'pods']);
  assert.deepEqual([noUser.code, noUser.stdout.toString() + noUser.stderr], [1, 'Please enter Username: error: EOF\n']);
});

test('exec refused: no such pod, no node yet, container not started, no such container, a completed pod, an image without sh', async () => {
  const cases: [string[], string][] = [
    [['exec', 'gone-0', '--', 'true'], 'Error from server (NotFound): pods "gone-0" not found\n'],
    [['exec', 'unscheduled-0', '--', 'true'], 'Error from server (BadRequest): pod unscheduled-0 does not have a host assigned\n'],
    [['exec', 'creating-0', '--', 'true'], 'error: unable to upgrade connection: container not found ("pytorch")\n'],
    [['exec', 'other-0', '-c', 'tensorboard', '--', 'true'], 'Error from server (BadRequest): container tensorboard is not valid for pod other-0\n'],
  ];
  for (const [args, text] of cases) {
    const r = await kubectl(args);
    assert.deepEqual([r.code, r.stderr], [1, text], args.join(' '));
  }
  const done = structuredClone(api.pod(NS, 'logger-0')!);
  done.status!.phase = 'Succeeded';
  api.updatePod(done);
  const completed = await kubectl(['exec', 'logger-0', '--', 'true']);
  assert.deepEqual([completed.code, completed.stderr], [1, 'error: cannot exec into a container in a completed pod; current phase is Succeeded\n']);

  const noSh = await kubectl(['exec', 'distroless-0', '-c', 'server', '--', 'sh', '-c', 'true']);
  assert.equal(noSh.code, 1);
  assert.match(
    noSh.stderr,
    /^error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "[0-9a-f]{64}": OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": executable file not found in \$PATH: unknown\n$/,
  );
  assert.equal(api.running().length, 0, 'nothing was started for any of them');
});

test('kill -9 of kubectl mid-cat: the remote cat is not killed, and ends by SIGPIPE when its output has no reader', async () => {
  const ws = api.container(NS, 'train-master-0', 'pytorch').workspace;
  fs.writeFileSync(path.join(ws, 'big.bin'), '');
  fs.truncateSync(path.join(ws, 'big.bin'), 256 * 1024 * 1024);
  const c = start(['exec', 'train-master-0', '-c', 'pytorch', '--', 'cat', '/workspace/big.bin']);
  // Read the first MiB (the bytes are flowing), then stop reading: kubectl blocks, the socket fills, cat blocks.
  let got = 0;
  let stderr = '';
  c.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  await new Promise<void>((resolve, reject) => {
    c.stdout.on('data', (b: Buffer) => {
      got += b.length;
      if (got >= 1024 * 1024) {
        c.stdout.pause();
        resolve();
      }
    });
    c.once('exit', (code) => reject(new Error(`kubectl ended (${code}) after ${got} bytes: ${stderr}`)));
  });
  const cat = api.running().find((p) => p.argv[0] === 'cat');
  assert.ok(cat, 'the remote cat runs');
  // 'exit', not 'close': the paused stdout holds unread bytes, so it never ends by itself.
  const exited = new Promise((resolve) => c.on('exit', resolve));
  c.kill('SIGKILL');
  await exited;
  c.stdout.destroy();
  await eventually(() => api.ended().some((p) => p.pid === cat.pid), 'the remote cat ended');
  const end = api.ended().find((p) => p.pid === cat.pid)!;
  assert.deepEqual([end.code, end.signal, end.connected], [null, 'SIGPIPE', false], 'cat was not killed, nor did it finish: its next write found no reader');
});

test('kill -9 of kubectl while the remote command is quiet: it runs on after the connection is gone, until it writes', async () => {
  const ws = api.container(NS, 'train-master-0', 'pytorch').workspace;
  fs.rmSync(path.join(ws, 'go'), { force: true });
  const c = start(['exec', 'train-master-0', '-c', 'pytorch', '--', 'sh', '-c', 'echo started; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo written; echo again']);
  await output(c).until(/started\n/);
  const closed = new Promise((resolve) => c.on('close', resolve));
  c.kill('SIGKILL');
  await closed;
  await eventually(() => api.running().some((p) => p.argv[0] === 'sh' && !p.connected), 'the server saw the connection end');
  const quiet = api.running().find((p) => p.argv[0] === 'sh' && !p.connected)!;
  assert.ok(quiet, 'the remote command still runs with nobody connected');
  fs.writeFileSync(path.join(ws, 'go'), '');
  await eventually(() => api.ended().some((p) => p.pid === quiet.pid), 'the remote command ended once it wrote');
  const end = api.ended().find((p) => p.pid === quiet.pid)!;
  assert.deepEqual([end.code, end.signal], [null, 'SIGPIPE']);
});

test('with onDisconnect stop-reading, a remote command whose kubectl died writes into a pipe nobody reads and runs on', async () => {
  const other = await startKubeApi({ onDisconnect: 'stop-reading' });
  try {
    other.setPods([runningPod('solo-0', { app: 'solo' })]);
    const ws = other.container(NS, 'solo-0', 'pytorch').workspace;
    const config = other.writeKubeconfig({ contexts: [{ name: 'admin', namespace: NS }] });
    const c = spawn('kubectl', ['--kubeconfig', config, 'exec', 'solo-0', '--', 'sh', '-c', 'echo started; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo written; touch /workspace/after; exec sleep 600'], {
      env: { PATH: process.env.PATH, HOME: other.dir },
    });
    await output(c).until(/started\n/);
    const exited = new Promise((resolve) => c.on('exit', resolve));
    c.kill('SIGKILL');
    await exited;
    await eventually(() => other.running().some((p) => !p.connected), 'the server saw the connection end');
    fs.writeFileSync(path.join(ws, 'go'), '');
    await eventually(() => fs.existsSync(path.join(ws, 'after')), 'the write went into the pipe and the command went on');
    assert.deepEqual(other.running().map((p) => [p.argv[0], p.connected]), [['sh', false]], 'still running, nobody connected');
    assert.deepEqual(other.ended(), []);
  } finally {
    await other.stop();
  }
});
