/** ${localCheckpoint}: known only once every file of the checkpoint is downloaded and verified; otherwise a clear error. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { downloadRootFor, localCheckpointState, requireLocalCheckpoint, usesLocalCheckpoint } from '../../src/core/eval/localCheckpoint';
import type { LocalState, PlanFile } from '../../src/core/transfer/types';
import { filePaths } from '../../src/core/transfer/records';
import { RemoteRunsError } from '../../src/core/types';

const file = (relative: string, state: LocalState): PlanFile => ({ relative, remotePath: `/r/step_1/${relative}`, bytes: 10, mtime: 1, localPath: `/dl/run/step_1/${relative}`, paths: filePaths('/dl', `/dl/run/step_1/${relative}`), state });
const plan = (...files: PlanFile[]) => ({ localRoot: '/dl/run/step_1', files });
const done: LocalState = { kind: 'complete-verified', verified: 'size' };

test('downloaded only when every file is complete and verified', () => {
  assert.deepEqual(localCheckpointState(plan(file('a.pt', done), file('b.json', done))), { kind: 'downloaded', path: '/dl/run/step_1' });
  assert.deepEqual(localCheckpointState(plan(file('a.pt', { kind: 'absent' }))), { kind: 'absent', path: '/dl/run/step_1' });
  assert.deepEqual(localCheckpointState(plan(file('a.pt', done), file('b.json', { kind: 'absent' }), file('c', { kind: 'partial', bytes: 3 }))), {
    kind: 'incomplete', path: '/dl/run/step_1', missing: 1, partial: 1, differ: 0,
  });
  assert.equal(localCheckpointState(plan(file('a.pt', { kind: 'differs', reason: 'local-changed', localBytes: 3 }))).kind, 'incomplete');
  assert.equal(localCheckpointState(plan()).kind, 'absent', 'an empty checkpoint folder is nothing to evaluate');
});

test('before a download: an error that says to download first, and where it would land', () => {
  assert.equal(requireLocalCheckpoint({ kind: 'downloaded', path: '/dl/x' }, 'p', 'step_1'), '/dl/x');
  assert.throws(
    () => requireLocalCheckpoint({ kind: 'absent', path: '/dl/run/step_1' }, 'local-acc', 'step_1'),
    (e: unknown) =>
      e instanceof RemoteRunsError &&
      e.kind === 'not-found' &&
      e.detail.localPath === '/dl/run/step_1' &&
      /"local-acc" uses \$\{localCheckpoint\}, but it has not been downloaded \(nothing at \/dl\/run\/step_1\): download step_1 first/.test(e.message),
  );
  assert.throws(
    () => requireLocalCheckpoint({ kind: 'incomplete', path: '/p', missing: 2, partial: 1, differ: 0 }, 'x', 'step_1'),
    /download at \/p is incomplete \(2 file\(s\) missing, 1 partly downloaded\)/,
  );
});

test('which profiles need a download: ${localCheckpoint} in the command, cwd, env or sbatch options', () => {
  assert.equal(usesLocalCheckpoint({ command: 'python eval.py ${checkpoint}' }), false);
  assert.equal(usesLocalCheckpoint({ command: 'python eval.py ${localCheckpoint}' }), true);
  assert.equal(usesLocalCheckpoint({ command: 'echo $${localCheckpoint}' }), false, 'the escape is the shell\'s own text');
  assert.equal(usesLocalCheckpoint({ command: 'x', cwd: '${localCheckpoint}' }), true);
  assert.equal(usesLocalCheckpoint({ command: 'x', env: { CKPT: '${localCheckpoint}/model.pt' } }), true);
  assert.equal(usesLocalCheckpoint({ command: 'x', sbatch: ['--comment=${localCheckpoint}'] }), true);
});

test('downloads of a host land under <downloadDirectory>/<host>', () => {
  assert.equal(downloadRootFor('~/ckpts', 'kpro6', '/home/me'), '/home/me/ckpts/kpro6');
  assert.equal(downloadRootFor('/data', 'a/b', '/home/me'), '/data/a_b');
});
