/**
 * kubectl's failures named (kube/errors.ts) for the texts an API server or kubelet makes, copied from the source
 * that makes them (cited in each case); the no-server texts are produced by the real kubectl in
 * test/integration/kubectlErrors.test.ts. No two causes come out alike, and kubectl's own words are always kept.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commandOwnStderr, kubectlFailure, kubectlText, podExecFailure } from '../../src/core/kube/errors';
import { FENCE } from '../../src/core/shell/portable';
import type { ExecResult } from '../../src/core/types';

const cluster = { name: 'prod', context: 'gke_p_z_train' };
const pod = { namespace: 'ml-team', pod: 'bert-master-0', container: 'pytorch' };

function fail(stderr: string, code = 1): ReturnType<typeof kubectlFailure> {
  return kubectlFailure({ stderr: Buffer.from(stderr), code }, { cluster, pod });
}

/** [kubectl's stderr, kind, cause, what the message must say] */
const CASES: [string, string, string, string, RegExp][] = [
  [
    // apiserver responsewriters/errors.go forbiddenMessage + apimachinery errors.go NewForbidden, kubectl StandardErrorMessage.
    'pods/exec denied',
    'Error from server (Forbidden): pods "bert-master-0" is forbidden: User "alice@example.com" cannot create resource "pods/exec" in API group "" in the namespace "ml-team"\n',
    'forbidden',
    'forbidden',
    /^RBAC denied alice@example\.com "create" on pods\/exec \(bert-master-0\) in the namespace ml-team \(cluster prod, context "gke_p_z_train"\): a Role granting verbs \["create"\] on resources \["pods\/exec"\] is needed/,
  ],
  [
    'list at the cluster scope denied, with the authorizer\'s reason',
    'Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:ml:runner" cannot list resource "pods" in API group "" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "view-pods" not found\n',
    'forbidden',
    'forbidden',
    /^RBAC denied system:serviceaccount:ml:runner "list" on pods at the cluster scope .*ClusterRole.*\(RBAC: clusterrole\.rbac\.authorization\.k8s\.io "view-pods" not found\)/,
  ],
  ['401 on a request (kubectl StandardErrorMessage)', 'error: You must be logged in to the server (Unauthorized)\n', 'auth-failed', 'unauthorized', /did not accept your credentials \(401 Unauthorized\)/],
  ['401 on the exec upgrade (client-go transport/spdy)', 'error: unable to upgrade connection: Unauthorized\n', 'auth-failed', 'unauthorized', /did not accept your credentials/],
  ['pod not found (apimachinery NewNotFound)', 'Error from server (NotFound): pods "bert-master-0" not found\n', 'container-missing', 'pod-not-found', /^The pod ml-team\/bert-master-0 does not exist \(any more\)/],
  [
    'container not in the pod (kubectl exec.go, podcmd.AllContainerNames)',
    'error: container trainer is not valid for pod bert-master-0 out of: pytorch, metrics-agent, fetch-data (init)\n',
    'container-missing',
    'container-not-found',
    /^The pod ml-team\/bert-master-0 has no container trainer \(it has pytorch, metrics-agent, fetch-data \(init\)\)/,
  ],
  ['pod completed (kubectl exec.go)', 'error: cannot exec into a container in a completed pod; current phase is Succeeded\n', 'container-stopped', 'pod-completed', /^The pod ml-team\/bert-master-0 has completed \(Succeeded\)/],
  ['pod not scheduled yet (apiserver pod/strategy.go streamLocation)', 'Error from server (BadRequest): pod bert-master-0 does not have a host assigned\n', 'container-stopped', 'pod-not-scheduled', /is not running yet: it is not scheduled to a node/],
  ['container not started (kubelet, through the exec upgrade)', 'error: unable to upgrade connection: container not found ("pytorch")\n', 'container-stopped', 'container-not-running', /^The container pytorch of ml-team\/bert-master-0 is not running \(yet\)/],
  [
    'no sh in the image (runc through the CRI)',
    'error: Internal error occurred: error executing command in container: failed to exec in container: failed to start exec "4f1c": OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": executable file not found in $PATH: unknown\n',
    'command-failed',
    'no-shell',
    /^The container pytorch of ml-team\/bert-master-0 has no sh \(a distroless image\?\)/,
  ],
  ['apiserver cannot reach the kubelet (upgradeaware.go)', 'Error from server: error dialing backend: dial tcp 10.0.3.7:10250: connect: connection refused\n', 'exec-refused', 'exec-refused', /refused to open an exec stream .*error dialing backend/],
  // Produced here by the real kubectl 1.32 (10.255.255.1 answered TLS with a certificate for another name; .invalid does not resolve).
  ['TLS not accepted (real kubectl 1.32)', "Unable to connect to the server: tls: failed to verify certificate: x509: cannot validate certificate for 10.255.255.1 because it doesn't contain any IP SANs\n", 'unreachable', 'tls', /TLS certificate was not accepted/],
  ['a name that does not resolve (real kubectl 1.32)', 'Unable to connect to the server: dial tcp: lookup nosuch.invalid on 10.255.255.53:53: no such host\n', 'unreachable', 'dns', /name does not resolve/],
  ['no answer in time (kubectl StandardErrorMessage url.Error)', 'Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout\n', 'unreachable', 'timeout', /did not answer in time/],
  ['a text no rule knows', 'error: the server doesn\'t have a resource type "pytorchjobs"\n', 'command-failed', 'other', /^kubectl failed \(exit code 1\) \(cluster prod, context "gke_p_z_train"\): error: the server doesn't have a resource type "pytorchjobs"$/],
];

test('each cause comes out as its kind and case, with kubectl\'s own words in the message and the detail', () => {
  const seen = new Set<string>();
  for (const [what, stderr, kind, cause, says] of CASES) {
    const e = fail(stderr);
    assert.equal(e.kind, kind, what);
    assert.equal(e.detail.cause, cause, what);
    assert.match(e.message, says, what);
    assert.equal(e.detail.kubectl, stderr.trim(), what);
    assert.ok(e.message.includes(stderr.trim().split('\n')[0]), `${what}: kubectl's first line is in the message`);
    seen.add(`${kind}/${cause}/${e.message}`);
  }
  assert.equal(seen.size, CASES.length, 'no two causes read alike');
});

test('forbidden names the verb, resource, user and namespace in its detail', () => {
  const e = fail(CASES[0][1]);
  assert.deepEqual({ ...e.detail, kubectl: undefined, exitCode: undefined }, { cause: 'forbidden', kubectl: undefined, exitCode: undefined, user: 'alice@example.com', verb: 'create', resource: 'pods/exec', group: '', namespace: 'ml-team' });
});

test('klog lines (one line, and err=< … > blocks) are dropped, the message kubectl ends with is kept', () => {
  const stderr = [
    'E1205 06:30:53.136313   16247 memcache.go:265] "Unhandled Error" err=<',
    '\tcouldn\'t get current server API group list: Get "https://127.0.0.1:1/api?timeout=32s": getting credentials: exec: executable x not found',
    '\t',
    '\tIt looks like you are trying to use a client-go credential plugin that is not installed.',
    ' >',
    'E1205 06:30:52.922075   16216 memcache.go:265] "Unhandled Error" err="couldn\'t get current server API group list"',
    'Unable to connect to the server: getting credentials: exec: executable x not found',
  ].join('\n');
  assert.equal(kubectlText(stderr), 'Unable to connect to the server: getting credentials: exec: executable x not found');
});

function result(stdout: Buffer, stderr: string, code: number, shellNoise?: number): ExecResult {
  return { stdout, stderr: Buffer.from(stderr), code, truncated: false, ...(shellNoise !== undefined ? { shellNoise } : {}) };
}

test('in a pod container, the command\'s own failure is its own; kubectl\'s is named (even when the command printed kubectl-like words)', () => {
  const mimic = 'Error from server (Forbidden): pods "x" is forbidden: User "u" cannot create resource "pods/exec" in API group "" in the namespace "n"\n';
  // The command ran: FENCE on stdout (raw), shellNoise (unfenced), or kubectl's exit line closing stderr (fence-less streams).
  assert.equal(podExecFailure(pod, result(Buffer.concat([FENCE, Buffer.from('x')]), mimic, 1)), undefined);
  assert.equal(podExecFailure(pod, result(Buffer.from(''), mimic, 1, 0)), undefined);
  assert.equal(podExecFailure(pod, result(Buffer.from(''), `${mimic}command terminated with exit code 2\n`, 2)), undefined);
  // It did not: kubectl's own.
  const e = podExecFailure(pod, result(Buffer.from(''), mimic, 1), cluster);
  assert.equal(e?.kind, 'forbidden');
  assert.equal(podExecFailure(pod, result(Buffer.from(''), '', 0)), undefined);
});

test('commandOwnStderr takes off only kubectl\'s closing line', () => {
  const own = "ls: cannot access '/x': No such file or directory\n";
  assert.equal(commandOwnStderr(Buffer.from(`${own}command terminated with exit code 2\n`)).toString(), own);
  assert.equal(commandOwnStderr(Buffer.from('command terminated with exit code 2\n')).toString(), '');
  assert.equal(commandOwnStderr(Buffer.from(`${own}`)).toString(), own);
  // A name that is not UTF-8 stays its bytes.
  const bytes = Buffer.concat([Buffer.from([0xff, 0x0a]), Buffer.from('command terminated with exit code 1\n')]);
  assert.deepEqual([...commandOwnStderr(bytes)], [0xff, 0x0a]);
});

test('a kubectl stopped by a signal, and one that said nothing, are command-failed saying so', () => {
  assert.match(kubectlFailure({ stderr: Buffer.from(''), code: null, signal: 'SIGKILL' }).message, /^kubectl was stopped by SIGKILL, and said nothing$/);
  assert.match(kubectlFailure({ stderr: Buffer.from(''), code: 3 }).message, /^kubectl failed \(exit code 3\), and said nothing$/);
});

test('a context that names no user: kubectl 1.32 prompts on stdout and says only `error: EOF`; named kube-config no-user, in a listing and in a pod container', () => {
  // Captured from the real kubectl 1.32 with a context of no user and stdin closed at once (as the runner closes it).
  const out = { stdout: Buffer.from('Please enter Username: '), stderr: Buffer.from('error: EOF\n'), code: 1 };
  const listed = kubectlFailure(out, { cluster: { name: 'lab', context: 'bare' } });
  assert.equal(listed.kind, 'kube-config');
  assert.equal(listed.detail.cause, 'no-user');
  assert.match(listed.message, /context "bare" names no user/);
  const inPod = podExecFailure({ namespace: 'ns', pod: 'p', container: 'c' }, { ...out, truncated: false });
  assert.equal(inPod?.detail.cause, 'no-user');
  // The same words printed by a command that ran (after FENCE) are the command's own.
  assert.equal(podExecFailure({ namespace: 'ns', pod: 'p', container: 'c' }, { stdout: Buffer.concat([FENCE, Buffer.from('Please enter Username: ')]), stderr: Buffer.from('error: EOF\n'), code: 1, truncated: false }), undefined);
  // Without the prompt, `error: EOF` alone is not taken for it.
  assert.notEqual(kubectlFailure({ stderr: Buffer.from('error: EOF\n'), code: 1 }).detail.cause, 'no-user');
});
