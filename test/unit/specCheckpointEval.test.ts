/**
 * The glue both faces share for a speculative-server eval of a checkpoint (core/eval/spec/server/checkpointEval.ts),
 * the editor's profile picker rows (core/eval/profiles.ts profileChoices) and the consent a workspace's server
 * profile needs (core/settingsTrust.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluateCheckpointWithServer, otherDrafterNote, specServerLinkHost } from '../../src/core/eval/spec/server/checkpointEval';
import { parseEvalProfiles, profileChoices } from '../../src/core/eval/profiles';
import { consentDetail, needsConsent, profileFingerprint, withApproval } from '../../src/core/settingsTrust';
import type { SpecServerProfile } from '../../src/core/eval/spec/server/profile';
import type { Checkpoint } from '../../src/core/types';
import { rejectsWith } from '../harness/assertKind';

const server: SpecServerProfile = { kind: 'speculative-server', name: 'drafter τ', server: 'http://10.0.0.5:30000', temperature: 0, maxTokens: 256, concurrency: 1 };

test('the draft model the server reports: no note when it names the checkpoint, a note naming both when it does not', () => {
  const ckpt = { name: 'step_2000', path: '/workspace/checkpoints/step_2000' };
  for (const same of ['/workspace/checkpoints/step_2000', '/workspace/checkpoints/step_2000/', '/var/lib/lxc/200/rootfs/workspace/checkpoints/step_2000', '/mnt/ckpt/step_2000/hf', 'step_2000']) {
    assert.equal(otherDrafterNote(same, ckpt), undefined, same);
  }
  assert.equal(otherDrafterNote(undefined, ckpt), undefined, 'a server that says nothing gets no note');
  // step_20000 is not step_2000: the name must end the path or be a whole folder of it.
  for (const other of ['/workspace/checkpoints/step_20000', '/models/drafter-1b', '/workspace/checkpoints/step_2000x/a']) {
    const note = otherDrafterNote(other, ckpt);
    assert.ok(note, other);
    assert.match(note, new RegExp(`draft model as ${other.replace(/[/.]/g, '\\$&')}, which does not name step_2000`));
    assert.match(note, /\/workspace\/checkpoints\/step_2000 as the server sees it/);
  }
});

test('the link host: the profile\'s host, else the checkpoint\'s; a Kubernetes cluster is refused with what to set', () => {
  const clusters = new Set(['k8s']);
  const isCluster = (n: string): boolean => clusters.has(n);
  assert.equal(specServerLinkHost(server, 'gpu1', isCluster), 'gpu1');
  assert.equal(specServerLinkHost({ ...server, host: 'login' }, 'k8s', isCluster), 'login', 'a cluster run measured through an SSH host the profile names');
  assert.throws(() => specServerLinkHost(server, 'k8s', isCluster), (e: Error & { kind?: string }) => {
    assert.equal(e.kind, 'bad-config');
    assert.match(e.message, /drafter τ: k8s is a Kubernetes cluster, and a speculative-server eval reaches its server through an SSH host's link: name one in the profile's "host"/);
    return true;
  });
});

test('a checkpoint without a step is refused before the server is asked anything', async () => {
  let measured = 0;
  const final: Checkpoint = { name: 'final', kind: 'final', step: null, layout: 'flat', path: '/r/final.pt', isDir: false, bytes: 1, mtime: 0, files: [], newest: true };
  const err = await rejectsWith(
    evaluateCheckpointWithServer(
      {
        evals: { recordMeasured: () => Promise.reject(new Error('not reached')) },
        measure: () => {
          measured++;
          return Promise.reject(new Error('not reached'));
        },
        isCluster: () => false,
      },
      server,
      { host: 'gpu1', target: { kind: 'host', id: '' }, run: { name: 'r', path: '/r' }, checkpoint: final },
    ),
    'bad-address',
  );
  assert.match(err.message, /evals are recorded by step/);
  assert.equal(measured, 0);
});

test('the profile picker lists command and speculative-server profiles together, each saying what it runs', () => {
  const { profiles, serverProfiles, problems } = parseEvalProfiles([
    { name: 'mt-bench', where: 'target', command: 'python eval.py ${checkpoint}' },
    { kind: 'speculative-server', name: 'drafter τ', server: 'http://10.0.0.5:30000', host: 'login', prompts: '~/p.jsonl', temperature: 0.6, maxTokens: 512 },
  ]);
  assert.deepEqual(problems, []);
  const rows = profileChoices(profiles, serverProfiles);
  assert.deepEqual(rows.map((r) => [r.label, r.description, r.value.kind]), [['mt-bench', 'target', 'command'], ['drafter τ', 'speculative-server', 'server']]);
  assert.equal(rows[0].detail, 'python eval.py ${checkpoint}');
  assert.equal(rows[1].detail, "http://10.0.0.5:30000 through login's SSH link · temperature 0.6 · max tokens 512 · concurrency 1 · prompts ~/p.jsonl");
  assert.equal(profileChoices(profiles, [{ ...server }])[1].detail.startsWith("http://10.0.0.5:30000 through the run's host's SSH link"), true);
});

test('a workspace\'s speculative-server profile needs a yes, shows the server, the link and the prompt file, and is asked again when any of it changes', () => {
  const p: SpecServerProfile = { ...server, prompts: '~/secret/prompts.jsonl', host: 'login' };
  assert.equal(needsConsent(p, 'workspace', []), true);
  assert.equal(needsConsent(p, 'user', []), false);
  const approved = withApproval([], p);
  assert.equal(needsConsent(p, 'workspace', approved), false);
  for (const changed of [{ ...p, server: 'http://evil:80' }, { ...p, prompts: '~/.ssh/id_ed25519' }, { ...p, host: 'other' }, { ...p, baseline: { kind: 'server' as const, url: 'http://x:1' } }]) {
    assert.notEqual(profileFingerprint(changed), profileFingerprint(p));
    assert.equal(needsConsent(changed, 'workspace', approved), true);
  }
  const detail = consentDetail(p);
  assert.match(detail, /sends prompts to http:\/\/10\.0\.0\.5:30000 through login's SSH link/);
  assert.match(detail, /prompts: the file ~\/secret\/prompts\.jsonl on this machine \(its lines are sent to the server\)/);
  assert.match(consentDetail(server), /prompts: the built-in set/);
});
