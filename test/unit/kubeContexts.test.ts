/**
 * "Use Contexts from ~/.kube/config" (core/kube/contexts.ts): kubectl's argv (no --context: it would pick one instead
 * of listing them), its `-o name` answer read, and the cluster entries named from the contexts as EKS and GKE spell
 * them, valid (no `/`, config.ts requireName) and apart from every name in use. listContexts runs the real kubectl in
 * test/integration/kubeTree.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clusterEntriesFor, clusterEntryName, getContextsArgs, parseContextNames } from '../../src/core/kube/contexts';
import { parseHostsSetting } from '../../src/core/config';

test('the argv: the named kubeconfig (with ~ expanded), and never a --context', () => {
  assert.deepEqual(getContextsArgs(), ['config', 'get-contexts', '-o', 'name']);
  assert.deepEqual(getContextsArgs('~/.kube/eks.yaml', '/home/me'), ['--kubeconfig=/home/me/.kube/eks.yaml', 'config', 'get-contexts', '-o', 'name']);
});

test('kubectl\'s answer: one name a line, blank lines and CRs dropped, each once', () => {
  assert.deepEqual(parseContextNames('kind-dev\r\narn:aws:eks:us-west-2:123456789012:cluster/train\n\nkind-dev\n'), ['kind-dev', 'arn:aws:eks:us-west-2:123456789012:cluster/train']);
  assert.deepEqual(parseContextNames(''), []);
});

test('names: the cluster\'s own short name for EKS and GKE contexts, no "/", apart from names in use', () => {
  assert.equal(clusterEntryName('arn:aws:eks:us-west-2:123456789012:cluster/train', new Set()), 'train');
  assert.equal(clusterEntryName('gke_my-proj_europe-west4_train-a100', new Set()), 'train-a100');
  assert.equal(clusterEntryName('team/dev cluster', new Set()), 'team-dev-cluster');
  assert.equal(clusterEntryName('kind-dev', new Set(['kind-dev', 'kind-dev-2'])), 'kind-dev-3');
  assert.equal(clusterEntryName('///', new Set()), 'cluster');
  const entries = clusterEntriesFor(
    [{ context: 'arn:aws:eks:us-west-2:1:cluster/train' }, { context: 'gke_p_z_train', namespace: 'ml-team' }, { context: 'train' }],
    ['gpu1'],
  );
  assert.deepEqual(entries, [
    { name: 'train', kind: 'kubernetes', context: 'arn:aws:eks:us-west-2:1:cluster/train' },
    { name: 'train-2', kind: 'kubernetes', context: 'gke_p_z_train', namespace: 'ml-team' },
    { name: 'train-3', kind: 'kubernetes', context: 'train' },
  ]);
  // What is written is what the settings read: clusters, no problems.
  const read = parseHostsSetting([{ name: 'gpu1', host: 'gpu1' }, ...entries], 'remoteRuns.hosts');
  assert.deepEqual(read.problems, []);
  assert.deepEqual(read.clusters.map((c) => c.name), ['train', 'train-2', 'train-3']);
});
