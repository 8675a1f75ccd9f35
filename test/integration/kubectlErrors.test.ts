/**
 * kubectl's failures that need no API server, produced by the real kubectl on PATH (1.32) against real kubeconfigs:
 * a closed port, a context that is not there, a context whose cluster is missing, no kubeconfig at all, a kubeconfig
 * that does not exist or is not YAML, an exec credential plugin that exits 1 or is not installed, a kubectl that is
 * not there. Each goes through the core's kubectl runner (kube/kubectl.ts kubectlOutput) and through the one command
 * runner with a pod container's executor (remote.ts runCommand + kube/executor.ts), and must come out as the kind
 * that names its cause, with kubectl's own words kept. The API server's answers (401, 403, not found, exec) are
 * re-tested against the test API server the harness starts.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { kubectlOutput, type KubectlAccess } from '../../src/core/kube/kubectl';
import { PodExecutor } from '../../src/core/kube/executor';
import { listNamespaces, listOwners, listPods } from '../../src/core/kube/cluster';
import { podTarget } from '../../src/core/kube/names';
import { runCommand } from '../../src/core/remote';
import { RemoteRunsError, type ClusterConfig } from '../../src/core/types';

let dir = '';
let home = '';

before(() => {
  let version = '';
  try {
    version = execFileSync('kubectl', ['version', '--client', '-o', 'json'], { encoding: 'utf8' });
  } catch (e) {
    assert.fail(`these tests need the real kubectl (1.32) on PATH: ${(e as Error).message}`);
  }
  assert.match(JSON.parse(version).clientVersion.minor, /^3[2-9]/, `kubectl 1.32 or newer on PATH, not ${version}`);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-kubectl-'));
  home = path.join(dir, 'home');
  fs.mkdirSync(home);
  fs.writeFileSync(
    path.join(dir, 'config.yaml'),
    `apiVersion: v1
kind: Config
clusters:
- name: closed
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: closed
  context: {cluster: closed, user: token, namespace: default}
- name: dangling
  context: {cluster: not-in-this-file, user: token}
- name: plugin-fails
  context: {cluster: closed, user: fails}
- name: plugin-missing
  context: {cluster: closed, user: missing}
- name: plugin-hangs
  context: {cluster: closed, user: hangs}
users:
- name: hangs
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "exec sleep 4242"]
      interactiveMode: Never
- name: token
  user: {token: abc}
- name: fails
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /bin/sh
      args: ["-c", "echo 'token expired: run example-login' >&2; exit 1"]
      interactiveMode: Never
- name: missing
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: example-auth-plugin-not-installed
      installHint: "Install example-auth-plugin from the cloud's SDK"
      interactiveMode: Never
`,
  );
  fs.writeFileSync(path.join(dir, 'broken.yaml'), 'clusters: [\n');
});

after(() => fs.rmSync(dir, { recursive: true, force: true }));

function access(over: Partial<ClusterConfig> = {}, kubectl?: string): KubectlAccess {
  return { cluster: { kind: 'kubernetes', name: 'lab', context: 'closed', kubeconfig: path.join(dir, 'config.yaml'), ...over }, ...(kubectl ? { kubectl } : {}), home };
}

/** kubectl with HOME and KUBECONFIG of its own, so the user's ~/.kube/config never answers. */
function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, HOME: home };
  delete e.KUBECONFIG;
  return e;
}

async function failure(a: KubectlAccess): Promise<RemoteRunsError> {
  try {
    await kubectlOutput(a, ['get', 'pods', '-o', 'json'], { requestTimeoutSeconds: 5, env: env() });
  } catch (e) {
    assert.ok(e instanceof RemoteRunsError, String(e));
    return e;
  }
  assert.fail('kubectl succeeded');
}

test('a closed port: unreachable, naming the server, kubectl\'s words kept and its klog retries dropped', async () => {
  const e = await failure(access());
  assert.equal(e.kind, 'unreachable');
  assert.equal(e.detail.cause, 'refused');
  assert.match(e.message, /^The API server 127\.0\.0\.1:1 refused the connection \(cluster lab, context "closed"\)/);
  assert.equal(e.detail.kubectl, 'The connection to the server 127.0.0.1:1 was refused - did you specify the right host or port?');
});

test('a context the kubeconfig does not have: kube-config, context-missing', async () => {
  const e = await failure(access({ context: 'prod-typo' }));
  assert.equal(e.kind, 'kube-config');
  assert.equal(e.detail.cause, 'context-missing');
  assert.match(e.message, /The kubeconfig has no context "prod-typo"/);
  assert.match(String(e.detail.kubectl), /context was not found for specified context: prod-typo/);
});

test('a context whose cluster is not in the kubeconfig, and no kubeconfig at all: kube-config, no-server (kubectl fell back to localhost:8080)', async () => {
  const dangling = await failure(access({ context: 'dangling' }));
  assert.equal(dangling.kind, 'kube-config');
  assert.equal(dangling.detail.cause, 'no-server');
  const none = await failure({ cluster: { kind: 'kubernetes', name: 'lab', context: 'anything' }, home });
  // With no kubeconfig at all, a named context is not found (client-go checks it before falling back).
  assert.equal(none.kind, 'kube-config');
  assert.equal(none.detail.cause, 'context-missing');
});

test('a kubeconfig that does not exist, and one that is not YAML: kube-config, each said as such', async () => {
  const missing = await failure(access({ kubeconfig: path.join(dir, 'nope.yaml') }));
  assert.equal(missing.kind, 'kube-config');
  assert.equal(missing.detail.cause, 'kubeconfig-missing');
  assert.match(missing.message, /The kubeconfig .*nope\.yaml does not exist/);
  const broken = await failure(access({ kubeconfig: path.join(dir, 'broken.yaml') }));
  assert.equal(broken.kind, 'kube-config');
  assert.equal(broken.detail.cause, 'kubeconfig-unreadable');
  assert.match(broken.message, /kubectl cannot read the kubeconfig .*broken\.yaml/);
});

test('a kubeconfig given with ~ is the home folder\'s', async () => {
  fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
  fs.copyFileSync(path.join(dir, 'config.yaml'), path.join(home, '.kube', 'lab.yaml'));
  const e = await failure(access({ kubeconfig: '~/.kube/lab.yaml' }));
  assert.equal(e.detail.cause, 'refused', 'the file was found and read');
});

test('a credential plugin that exits 1: credential-plugin, plugin-failed, with the plugin\'s own words', async () => {
  const e = await failure(access({ context: 'plugin-fails' }));
  assert.equal(e.kind, 'credential-plugin');
  assert.equal(e.detail.cause, 'plugin-failed');
  assert.equal(e.detail.exitCode, 1);
  assert.match(e.message, /credential plugin \/bin\/sh failed \(exit code 1\).*: token expired: run example-login/);
});

test('a credential plugin that is not installed: credential-plugin, plugin-missing, the install hint kept', async () => {
  const e = await failure(access({ context: 'plugin-missing' }));
  assert.equal(e.kind, 'credential-plugin');
  assert.equal(e.detail.cause, 'plugin-missing');
  assert.match(e.message, /credential plugin example-auth-plugin-not-installed is not installed/);
  assert.match(String(e.detail.kubectl), /Install example-auth-plugin from the cloud's SDK/);
});

test('a kubectl that is not there: kubectl-missing, naming the path and the setting', async () => {
  const e = await failure(access({}, path.join(dir, 'no-kubectl')));
  assert.equal(e.kind, 'kubectl-missing');
  assert.match(e.message, /kubectl was not found \(".*no-kubectl": ENOENT\); install kubectl or set remoteRuns\.kubectlPath/);
});

test('through the one command runner in a pod container: kubectl\'s failure is named, never taken for a login shell\'s refusal', async () => {
  const pod = { namespace: 'ml-team', pod: 'bert-master-0', container: 'pytorch' };
  const target = podTarget(pod);
  const prior = process.env.HOME;
  process.env.HOME = home; // PodExecutor starts kubectl with this process's environment
  try {
    for (const [over, kind, cause] of [
      [{}, 'unreachable', 'refused'],
      [{ context: 'plugin-fails' }, 'credential-plugin', 'plugin-failed'],
      [{ context: 'prod-typo' }, 'kube-config', 'context-missing'],
    ] as const) {
      const executor = new PodExecutor(access(over), pod);
      await assert.rejects(
        runCommand(executor, target, { argv: ['ls', '-la', "/workspace/it's here"], describe: 'list', parse: (r) => r.stdout.toString() }),
        (e: unknown) => e instanceof RemoteRunsError && e.kind === kind && e.detail.cause === cause,
        `${JSON.stringify(over)} → ${kind}`,
      );
    }
  } finally {
    process.env.HOME = prior;
  }
});

test('the listings a tree asks for fail as themselves: an unreachable server is never "no pods" or "no jobs"', async () => {
  for (const list of [listPods, listNamespaces, listOwners]) {
    await assert.rejects(list(access(), { env: env() }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'unreachable' && e.detail.cause === 'refused', list.name);
  }
  await assert.rejects(listPods(access({ context: 'plugin-missing' }), { env: env() }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'credential-plugin');
});

/** Processes of this user whose command line is exactly `sleep 4242` (the hanging plugin). */
function hangingPlugins(): string[] {
  const r = spawnSync('pgrep', ['-x', '-f', 'sleep 4242'], { encoding: 'utf8' });
  return r.stdout.split('\n').filter(Boolean);
}

// A kubectl whose plugin outlives it keeps its pipes open, and the run would never end: the timeout makes that a failure.
test('a cancel while a credential plugin hangs: cancelled, and neither kubectl nor its plugin is left running', { timeout: 20_000 }, async () => {
  assert.deepEqual(hangingPlugins(), [], 'control: none before');
  const stop = new AbortController();
  const run = kubectlOutput(access({ context: 'plugin-hangs' }), ['get', 'pods'], { signal: stop.signal, env: env() });
  // The plugin is running once pgrep sees it: the moment the cancel must strike.
  for (let i = 0; i < 200 && hangingPlugins().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(hangingPlugins().length, 1, 'the plugin runs');
  stop.abort();
  await assert.rejects(run, (e: unknown) => e instanceof RemoteRunsError && e.kind === 'cancelled');
  for (let i = 0; i < 40 && hangingPlugins().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(hangingPlugins(), [], 'the plugin went with kubectl');
});
