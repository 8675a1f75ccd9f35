/**
 * "Add run…" lists on demand across every configured host (core/tree/runsEverywhere.ts): runs with metrics only,
 * those already shown left out, stopped containers not asked, and every host or target that could not be listed is a
 * marked entry with its reason, never silently missing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addRunChoices, listRunsEverywhere, type RunsSource } from '../../src/core/tree/runsEverywhere';
import { runId } from '../../src/core/tree/nodes';
import { RemoteRunsError, formatTarget, type Run, type Target, type TargetListing, type TargetRef } from '../../src/core/types';

const run = (name: string, metrics: string[]): Run => ({ name, path: `/workspace/${name}`, metrics, checkpoints: [], metricsMtime: 0, live: false });
const listing = (target: TargetRef, runs: Run[]): TargetListing => ({ target, roots: [{ root: '/workspace', path: '/workspace', state: 'ok', runs, truncated: false }], remoteNow: 0 });
const host: Target = { kind: 'host', id: '', state: 'running', label: 'host' };
const pct: Target = { kind: 'pct', id: '200', state: 'running', label: 'trainer' };
const stopped: Target = { kind: 'pct', id: '201', state: 'stopped', label: 'old' };
const docker: Target = { kind: 'docker', id: 'broken', state: 'running', label: 'broken' };

function source(asked: string[]): RunsSource {
  return {
    async listTargets(h) {
      asked.push(`targets ${h}`);
      if (h === 'down') throw new RemoteRunsError('unreachable', 'connect ECONNREFUSED 127.0.0.1:2');
      return { targets: h === 'a' ? [host, pct, stopped, docker] : [host] };
    },
    async listTarget(h, t) {
      asked.push(`list ${h}/${formatTarget(t)}`);
      if (t.kind === 'docker') throw new RemoteRunsError('container-missing', 'No such container: broken');
      if (h === 'a' && t.kind === 'host') return listing(t, [run('bare', ['/workspace/bare/train.jsonl']), run('ckpts-only', [])]);
      if (h === 'a') return listing(t, [run('exp1', ['/workspace/exp1/metrics.csv'])]);
      return listing(t, [run('far', ['/workspace/far/events.out.tfevents.1'])]);
    },
  };
}

test('every configured host is asked (not only expanded ones); stopped containers are not; each place reported as it answers', async () => {
  const asked: string[] = [];
  const seen: string[] = [];
  const places = await listRunsEverywhere(source(asked), ['a', 'b', 'down'], (p) => seen.push(`${p.hostName}${p.target ? `/${formatTarget(p.target)}` : ''}`));
  assert.deepEqual(asked.filter((a) => a.startsWith('targets')).sort(), ['targets a', 'targets b', 'targets down']);
  assert.ok(!asked.includes('list a/pct:201'), 'a stopped container is not listed');
  assert.deepEqual(seen.sort(), ['a/docker:broken', 'a/host', 'a/pct:200', 'b/host', 'down']);
  assert.equal(places.length, 5);
});

test('choices: runs with metrics only, minus those shown; unreachable hosts and failed targets marked with their reason', async () => {
  const places = await listRunsEverywhere(source([]), ['a', 'b', 'down']);
  const shown = runId('a', { kind: 'pct', id: '200' }, '/workspace/exp1');
  const choices = addRunChoices(places, [shown]);
  assert.deepEqual(
    choices.map((c) => [c.kind, c.label, c.description]),
    [
      ['run', 'bare', 'a/host'],
      ['run', 'far', 'b/host'],
      ['unreachable', 'a/docker:broken', 'container does not exist'],
      ['unreachable', 'down', 'unreachable'],
    ],
  );
  const down = choices.find((c) => c.label === 'down')!;
  assert.match(down.detail, /ECONNREFUSED/);
  const bare = choices[0]!;
  assert.ok(bare.kind === 'run' && bare.key === runId('a', { kind: 'host', id: '' }, '/workspace/bare'));
  assert.ok(!choices.some((c) => c.label === 'ckpts-only'), 'a run without metrics logs cannot be compared');
});
