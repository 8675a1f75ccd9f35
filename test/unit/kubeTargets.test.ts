/**
 * A pod container as a target: kubectl's argv (global flags in their `--flag=value` form, so no value becomes a
 * flag), the `pod:NAMESPACE/POD:CONTAINER` id, and the line the container's `sh -c` gets, built by the one quoting
 * function and run here by a real sh to show it gives back the argv exactly, hostile names included.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { kubectlArgs, podCommandArgs, type KubectlAccess } from '../../src/core/kube/kubectl';
import { PodExecutor } from '../../src/core/kube/executor';
import { LIFELINE_SCRIPT } from '../../src/core/kube/lifeline';
import { OWNER_RESOURCES, ownersVerb, podsVerb } from '../../src/core/kube/cluster';
import { parsePodTargetId, podTarget } from '../../src/core/kube/names';
import { classifyTargetFailure, targetPrefix, wrapForTarget } from '../../src/core/targets';
import { terminalKubectlArgs, terminalSshArgs } from '../../src/core/terminal';
import { FENCE, portableCommandLine } from '../../src/core/shell/portable';
import { shellJoin } from '../../src/core/shell/quote';
import { RemoteRunsError, formatTarget, parseTarget } from '../../src/core/types';

const access: KubectlAccess = { cluster: { kind: 'kubernetes', name: 'prod', context: 'arn:aws:eks:us-west-2:1:cluster/train', namespace: 'ml-team', kubeconfig: '~/.kube/eks.yaml' }, kubectl: '/opt/bin/kubectl', home: '/home/ann' };
const pod = { namespace: 'ml-team', pod: 'bert-master-0', container: 'pytorch' };

test('kubectl argv: kubeconfig (~ expanded), context, namespace, request timeout, then the verb', () => {
  assert.deepEqual(kubectlArgs(access, ['get', 'pods', '-o', 'json'], { requestTimeoutSeconds: 9.5 }), [
    '--kubeconfig=/home/ann/.kube/eks.yaml',
    '--context=arn:aws:eks:us-west-2:1:cluster/train',
    '--namespace=ml-team',
    '--request-timeout=10s',
    'get',
    'pods',
    '-o',
    'json',
  ]);
  const bare: KubectlAccess = { cluster: { kind: 'kubernetes', name: 'c', context: 'kind-kind' } };
  assert.deepEqual(kubectlArgs(bare, ['get', 'pods', '--all-namespaces']), ['--context=kind-kind', 'get', 'pods', '--all-namespaces']);
  assert.deepEqual(kubectlArgs(access, ['get', 'namespaces'], { namespace: null }), ['--kubeconfig=/home/ann/.kube/eks.yaml', '--context=arn:aws:eks:us-west-2:1:cluster/train', 'get', 'namespaces']);
  assert.throws(() => kubectlArgs(bare, ['get'], { requestTimeoutSeconds: 0 }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'internal');
});

test('a context that looks like flags stays one value', () => {
  const hostile: KubectlAccess = { cluster: { kind: 'kubernetes', name: 'c', context: "-n kube-system --as=system:admin 'x'" } };
  const args = kubectlArgs(hostile, ['get', 'pods']);
  assert.equal(args[0], "--context=-n kube-system --as=system:admin 'x'");
  assert.equal(args.length, 3);
});

test('the pod target: its id, its spelling, its prefix on this machine; never reachable over SSH', () => {
  const t = podTarget(pod);
  assert.deepEqual(t, { kind: 'pod', id: 'ml-team/bert-master-0:pytorch' });
  assert.equal(formatTarget(t), 'pod:ml-team/bert-master-0:pytorch');
  assert.deepEqual(parsePodTargetId(t.id), pod);
  assert.deepEqual(targetPrefix(t, access), ['/opt/bin/kubectl', '--kubeconfig=/home/ann/.kube/eks.yaml', '--context=arn:aws:eks:us-west-2:1:cluster/train', '--namespace=ml-team', 'exec', '-i', 'bert-master-0', '-c', 'pytorch', '--']);
  assert.throws(() => targetPrefix(t), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'internal' && /reached through kubectl on this machine, never over SSH/.test(e.message));
  // The pod's own namespace wins over the entry's (a cluster without one lists every namespace).
  assert.ok(targetPrefix(podTarget({ ...pod, namespace: 'other' }), access).includes('--namespace=other'));
});

test('pod target ids that are not three Kubernetes names are refused', () => {
  for (const id of ['ml-team/bert:', '/bert:c', 'ml-team/bert', 'ML/bert:c', 'ns/$(reboot):c', 'ns/a/b:c', 'ns/p:c:d', 'ns/p:C', `ns/${'a'.repeat(254)}:c`, 'ns/p:c\n']) {
    assert.throws(() => parsePodTargetId(id), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-address', JSON.stringify(id));
  }
  assert.deepEqual(parsePodTargetId('a/b.c-1:d'), { namespace: 'a', pod: 'b.c-1', container: 'd' });
});

const HOSTILE = ["it's", 'a b', '$(touch /tmp/rr-pwned)', '`id`', 'new\nline', 'back\\slash', '100%', '!bang', '"dq"', '-n', 'ünï', '*', ''];

test('the line a container\'s sh -c runs gives back the argv exactly (run by a real sh here)', () => {
  const line = wrapForTarget(podTarget(pod), ['printf', '[%s]\\n', ...HOSTILE]);
  assert.equal(line, portableCommandLine(shellJoin(['printf', '[%s]\\n', ...HOSTILE])), 'the same portable line as over SSH, without a prefix');
  const args = new PodExecutor(access, pod).argsFor(line);
  assert.deepEqual(args.slice(-5), ['sh', '-c', LIFELINE_SCRIPT, 'sh', line], 'the line is the lifeline\'s $1, never pasted into its script');
  assert.deepEqual(podCommandArgs(access, pod, ['printf', '[%s]\\n', ...HOSTILE]), args);
  assert.deepEqual(new PodExecutor(access, pod).argsFor(line, { input: true }).slice(-3), ['sh', '-c', line], 'a command that reads its input: plain sh -c');
  // What kubectl hands the container: `sh -c LIFELINE sh LINE`, its stdin held open and never written (here a FIFO
  // this process holds open for writing, as kubectl holds the exec's stdin). Run it here.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-lifeline-'));
  execFileSync('mkfifo', [path.join(dir, 'stdin')]);
  const held = fs.openSync(path.join(dir, 'stdin'), 'r+');
  const r = spawnSync(args[args.length - 5], args.slice(-4), { encoding: 'buffer', stdio: [held, 'pipe', 'pipe'] });
  fs.closeSync(held);
  fs.rmSync(dir, { recursive: true, force: true });
  assert.equal(r.status, 0, r.stderr.toString());
  const out = r.stdout.subarray(r.stdout.indexOf(FENCE) + FENCE.length).toString('utf8');
  assert.equal(out, HOSTILE.map((h) => `[${h}]\n`).join(''));
});

test('classifyTargetFailure in a pod: kubectl\'s own failure named, the command\'s own left to the runner', () => {
  const t = podTarget(pod);
  const refused = classifyTargetFailure(t, { stdout: Buffer.alloc(0), stderr: Buffer.from('Error from server (NotFound): pods "bert-master-0" not found\n'), code: 1, truncated: false });
  assert.equal(refused?.kind, 'container-missing');
  assert.equal(classifyTargetFailure(t, { stdout: Buffer.alloc(0), stderr: Buffer.from('cat: x: No such file or directory\n'), code: 1, truncated: false, shellNoise: 0 }), undefined);
});

test('what a cluster is asked: pods in the entry\'s namespace or all, with its selector; owner kinds fully qualified', () => {
  assert.deepEqual(podsVerb(access), ['get', 'pods', '-o', 'json']);
  const all: KubectlAccess = { cluster: { kind: 'kubernetes', name: 'c', context: 'k', selector: 'training.kubeflow.org/job-name,team in (nlp)' } };
  assert.deepEqual(podsVerb(all), ['get', 'pods', '-o', 'json', '--all-namespaces', '--selector=training.kubeflow.org/job-name,team in (nlp)']);
  assert.deepEqual(ownersVerb(all, OWNER_RESOURCES[1]), ['get', 'jobsets.jobset.x-k8s.io', '-o', 'json', '--all-namespaces']);
  assert.ok(OWNER_RESOURCES.every((r) => r.split('.').length >= 2), 'each kind names its API group');
});

test('a pod container never gets an ssh terminal (its terminal is kubectl exec on this machine)', () => {
  const hop = { alias: 'h', hostname: 'h', port: 22, user: 'u', identityFiles: [], identitiesOnly: false };
  assert.throws(() => terminalSshArgs([], hop, podTarget(pod), '/workspace'), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'internal' && /its terminal is kubectl exec/.test(e.message));
  assert.ok(terminalSshArgs([], hop, { kind: 'docker', id: 'x' }, '/w').includes('h'), 'control: a container on a host still gets one');
});

test('a pod container\'s terminal: the user\'s kubectl with the cluster\'s kubeconfig, context and namespace, exec -it into the container, the run folder as $1', () => {
  const folder = "/workspace/it's $(here)\nnow";
  const { program, args } = terminalKubectlArgs(access, podTarget(pod), folder);
  assert.equal(program, '/opt/bin/kubectl', 'remoteRuns.kubectlPath');
  assert.deepEqual(args, [
    '--kubeconfig=/home/ann/.kube/eks.yaml',
    '--context=arn:aws:eks:us-west-2:1:cluster/train',
    '--namespace=ml-team',
    'exec', '-it', 'bert-master-0', '-c', 'pytorch', '--',
    'sh', '-c', 'cd -- "$1" 2>/dev/null; if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi', 'sh', folder,
  ]);
  // The same global flags as every kubectl the extension runs (the runner's own function).
  assert.deepEqual(args.slice(0, 3), kubectlArgs(access, [], { namespace: pod.namespace }));
  assert.equal(terminalKubectlArgs({ cluster: access.cluster }, podTarget(pod), '').program, 'kubectl', 'no setting: kubectl from PATH');
  assert.throws(() => terminalKubectlArgs(access, { kind: 'docker', id: 'x' }, '/w'), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'internal');
});

test('a pod target as formatTarget spells it is read back by parseTarget (the language server\'s places carry it so)', () => {
  const t = podTarget({ namespace: 'ml-team', pod: 'bert-master-0', container: 'pytorch' });
  assert.deepEqual(parseTarget(formatTarget(t)), t);
  assert.throws(() => parseTarget('pod:'), /Not a target: "pod:" \(expected host, pct:<vmid>, docker:<name> or pod:<namespace>\/<pod>:<container>\)/);
});
