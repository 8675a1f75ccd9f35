/**
 * Notifications (core/notify.ts, settings in package.json): each kind off by default and user-scoped; a new
 * checkpoint is one complete and not seen before; an eval finished is one seen pending or running that ended; a run
 * stopped logging only while its host answers, and only after having been seen logging. Nothing on the first look.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { NOTIFICATION_SETTINGS, becameStopped, finishedEvals, loggingStopped, newCheckpoints } from '../../src/core/notify';
import type { Checkpoint } from '../../src/core/types';
import type { EvalRecord } from '../../src/core/eval/types';

const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8'));

test('each kind has its own setting: boolean, off by default, user (application) scope', () => {
  const props = manifest.contributes.configuration.properties;
  assert.deepEqual(Object.keys(NOTIFICATION_SETTINGS).sort(), ['evalFinished', 'newCheckpoint', 'stoppedLogging']);
  for (const key of Object.values(NOTIFICATION_SETTINGS)) {
    const p = props[`remoteRuns.${key}`];
    assert.ok(p, `remoteRuns.${key} is contributed`);
    assert.equal(p.type, 'boolean');
    assert.equal(p.default, false, `remoteRuns.${key} is off by default`);
    assert.equal(p.scope, 'application', `remoteRuns.${key} cannot be turned on by a workspace`);
  }
});

const ck = (step: number, extra: Partial<Checkpoint> = {}): Checkpoint => ({ name: `step_${step}`, kind: 'step', step, layout: 'step_N', path: `/r/step_${step}`, isDir: true, bytes: 1, mtime: 1, files: [], newest: false, ...extra });

test('new checkpoints: complete ones not there before; one being written counts once complete; nothing on the first look', () => {
  const before = { checkpoints: [ck(100), ck(200, { incomplete: 'no weights yet' })] };
  assert.deepEqual(newCheckpoints(undefined, before), []);
  assert.deepEqual(newCheckpoints(before, before), []);
  assert.deepEqual(newCheckpoints(before, { checkpoints: [ck(100), ck(200, { incomplete: 'still' }), ck(300, { incomplete: 'x' })] }), []);
  assert.deepEqual(newCheckpoints(before, { checkpoints: [ck(100), ck(200), ck(300)] }).map((c) => c.name), ['step_200', 'step_300']);
  const alias = ck(300, { name: 'last.ckpt', kind: 'alias', step: null, path: '/r/last.ckpt' });
  assert.deepEqual(newCheckpoints(before, { checkpoints: [ck(100), alias] }), [], 'an alias names a save, it is not one');
});

const rec = (id: string, state: EvalRecord['state']): EvalRecord => ({ id, state, profile: 'p', step: 1, checkpointPath: '/r/step_1', startedAt: 1, results: [] }) as unknown as EvalRecord;

test('evals finished: seen pending or running, now ended; old finished ones and the first listing say nothing', () => {
  const before = [rec('a', 'running'), rec('b', 'pending'), rec('c', 'passed'), rec('d', 'running')];
  const after = [rec('a', 'passed'), rec('b', 'failed'), rec('c', 'passed'), rec('d', 'running'), rec('e', 'passed')];
  assert.deepEqual(finishedEvals(before, after).map((r) => r.id), ['a', 'b']);
  assert.deepEqual(finishedEvals(undefined, after), []);
});

test('stopped logging: only while connected, only from logging to stopped', () => {
  const facts = { lastLoggedAt: 1_000, stoppedAfterMs: 300_000, connected: true };
  assert.equal(loggingStopped(facts, 1_000 + 299_000), false);
  assert.equal(loggingStopped(facts, 1_000 + 301_000), true);
  assert.equal(loggingStopped({ ...facts, connected: false }, 1e9), undefined, 'a lost connection is not a stop');
  assert.equal(loggingStopped({ ...facts, lastLoggedAt: undefined }, 1e9), undefined);
  assert.equal(becameStopped(false, true), true);
  assert.equal(becameStopped(undefined, true), false, 'already stopped when first seen: not news');
  assert.equal(becameStopped(true, true), false);
  assert.equal(becameStopped(false, undefined), false);
});
