/** Kubernetes cluster entries of remoteRuns.hosts (`"kind": "kubernetes"`): validated as strictly as SSH hosts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HOSTS_JSON_SCHEMA, parseConfigFile, parseConfigFileEntries, parseHostsSetting } from '../../src/core/config';
import { RemoteRunsError } from '../../src/core/types';

const SRC = 'remoteRuns.hosts';

function cluster(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'prod', kind: 'kubernetes', context: 'arn:aws:eks:us-west-2:123456789012:cluster/train', namespace: 'ml-team', selector: 'training.kubeflow.org/job-name,team=nlp', kubeconfig: '~/.kube/eks.yaml', runRoots: ['/workspace'], ...over };
}

function problemsOf(entry: unknown): string[] {
  return parseHostsSetting([entry], SRC).problems;
}

test('a full cluster entry becomes a ClusterConfig, apart from the SSH hosts', () => {
  const r = parseHostsSetting([{ name: 'box', host: 'b' }, cluster(), { name: 'gke', kind: 'kubernetes', context: 'gke_proj_europe-west4_train' }], SRC);
  assert.deepEqual(r.problems, []);
  assert.deepEqual(r.hosts, [{ name: 'box', host: 'b' }]);
  assert.deepEqual(r.clusters, [cluster(), { name: 'gke', kind: 'kubernetes', context: 'gke_proj_europe-west4_train' }]);
});

test('"kind": "ssh" is the default spelled out', () => {
  const r = parseHostsSetting([{ name: 'box', kind: 'ssh', host: 'b' }], SRC);
  assert.deepEqual(r, { hosts: [{ name: 'box', host: 'b' }], clusters: [], problems: [] });
});

test('bad cluster fields skip the entry and say which field and why', () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['unknown kind', { kind: 'slurm' }, /\[0\]\.kind: must be "ssh" \(the default\) or "kubernetes", got "slurm"; entry skipped/],
    ['kind not a string', { kind: 1 }, /\.kind: must be "ssh".*got number 1/],
    ['no context', { context: undefined }, /\.context: is required; entry skipped/],
    ['context not a string', { context: ['a'] }, /\.context: must be a string, got an array/],
    ['context with a newline', { context: 'a\nb' }, /\.context: "a\\nb" contains a control character/],
    ['namespace upper case', { namespace: 'ML' }, /\.namespace: "ML" is not a Kubernetes namespace name/],
    ['namespace with a slash', { namespace: 'a/b' }, /\.namespace: "a\/b" is not a Kubernetes namespace name/],
    ['namespace too long', { namespace: 'a'.repeat(64) }, /\.namespace: .* is not a Kubernetes namespace name/],
    ['selector empty', { selector: '' }, /\.selector: must not be empty/],
    ['kubeconfig as a list', { kubeconfig: '~/.kube/a:~/.kube/b' }, /\.kubeconfig: .* looks like a \$KUBECONFIG list/],
    ['relative run root', { runRoots: ['runs'] }, /\.runRoots\[0\]: "runs" must be absolute/],
    ['slash in name', { name: 'a/b' }, /\.name: "a\/b" contains "\/"/],
  ];
  for (const [what, over, re] of cases) {
    const entry = cluster(over);
    for (const k of Object.keys(over)) if (over[k] === undefined) delete entry[k];
    const r = parseHostsSetting([entry], SRC);
    assert.equal(r.clusters.length, 0, what);
    assert.equal(r.problems.length, 1, what);
    assert.match(r.problems[0], re, what);
  }
});

test('a field of the other kind is named as such, and ignored', () => {
  assert.deepEqual(problemsOf(cluster({ host: 'x' })), [`${SRC}[0].host: is a field of an SSH host, not of a "kind": "kubernetes" entry; ignored (known: name, kind, context, namespace, selector, kubeconfig, runRoots)`]);
  const [p] = problemsOf({ name: 'box', host: 'b', namespace: 'ml' });
  assert.match(p, /\.namespace: is a field of a Kubernetes cluster: add "kind": "kubernetes" to this entry; ignored/);
  // An entry with a context but no kind lacks its host: the message says what was meant.
  assert.match(problemsOf({ name: 'c', context: 'ctx' })[0], /\.host: is required \(an entry with "context" is a Kubernetes cluster: add "kind": "kubernetes"\); entry skipped/);
});

test('hosts and clusters share one set of names (the first part of every address)', () => {
  const r = parseHostsSetting([{ name: 'a', host: 'h' }, cluster({ name: 'a' })], SRC);
  assert.equal(r.clusters.length, 0);
  assert.match(r.problems[0], /\[1\]\.name: duplicate name "a" \(also remoteRuns\.hosts\[0\]\); entry skipped/);
});

test('a CLI config file: clusters come back beside the hosts; any problem fails the whole file', () => {
  const text = JSON.stringify({ hosts: [{ name: 'box', host: 'b' }, cluster()] });
  assert.deepEqual(parseConfigFileEntries(text, '/c.json'), { hosts: [{ name: 'box', host: 'b' }], clusters: [cluster()] });
  assert.deepEqual(parseConfigFile(text, '/c.json'), [{ name: 'box', host: 'b' }]);
  assert.throws(
    () => parseConfigFileEntries(JSON.stringify({ hosts: [cluster({ namespace: 'Bad' })] }), '/c.json'),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /namespace: "Bad" is not a Kubernetes namespace name/.test(e.message),
  );
});

test('the schema\'s namespace and context patterns accept and reject what the validator does', () => {
  const ns = new RegExp(HOSTS_JSON_SCHEMA.properties.namespace.pattern);
  for (const v of ['default', 'ml-team', 'a1', 'ML', '-a', 'a-', 'a.b', 'a_b', '']) {
    assert.equal(ns.test(v), problemsOf(cluster({ namespace: v })).length === 0, `namespace ${JSON.stringify(v)}`);
  }
  const ctx = new RegExp(HOSTS_JSON_SCHEMA.properties.context.pattern);
  for (const v of ['kind-kind', 'arn:aws:eks:r:1:cluster/x', 'with space', 'a\tb', 'a\u007fb']) {
    assert.equal(ctx.test(v), problemsOf(cluster({ context: v })).length === 0, `context ${JSON.stringify(v)}`);
  }
});
