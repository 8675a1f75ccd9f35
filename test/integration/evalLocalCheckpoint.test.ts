/**
 * ${localCheckpoint} against the real test sshd: before a download the eval cannot start and says to download first;
 * after a real download (core/transfer) the variable is the local folder the download wrote, and a local eval reads
 * the checkpoint's bytes from there; a download missing a file is not a local checkpoint.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import { downloadRootFor, localCheckpointState, requireLocalCheckpoint, usesLocalCheckpoint } from '../../src/core/eval/localCheckpoint';
import { download, planDownload } from '../../src/core/transfer';
import type { Checkpoint, TargetRef } from '../../src/core/types';
import type { EvalSubject } from '../../src/core/eval/types';
import { shellQuote } from '../../src/core/shell/quote';
import { rejectsWith } from '../harness/assertKind';
import { startEvalSetup, type EvalSetup } from '../harness/evalSetup';
import { TEST_USER } from '../harness/sshd';

const HOST: TargetRef = { kind: 'host', id: '' };
let setup: EvalSetup;
let downloads: string;
let runPath: string;
let checkpoint: Checkpoint;

before(async () => {
  setup = await startEvalSetup();
  downloads = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-local-ckpt-'));
  runPath = path.join(setup.host.dir, 'local-ckpt-run');
  const ckpt = path.join(runPath, 'checkpoints', 'step_700');
  fs.mkdirSync(ckpt, { recursive: true });
  fs.writeFileSync(path.join(ckpt, 'model.pt'), 'weights of step 700\n');
  fs.writeFileSync(path.join(ckpt, 'config.json'), '{"layers": 2}\n');
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, runPath]);
  checkpoint = {
    name: 'step_700', kind: 'step' as const, step: 700, layout: 'step_N', path: ckpt, isDir: true, bytes: 0, mtime: 0, newest: true,
    files: [],
  } as Checkpoint;
});

after(async () => {
  await setup?.stop();
  if (downloads) fs.rmSync(downloads, { recursive: true, force: true });
});

const source = () => ({ pool: setup.pool, host: setup.resolve('testbox'), target: HOST });
const dest = () => ({ root: downloadRootFor(downloads, 'testbox'), run: 'local-ckpt-run' });
const subject = (localCheckpoint?: string): EvalSubject => ({
  host: 'testbox', target: HOST, run: { name: 'local-ckpt-run', path: runPath }, checkpoint: { path: checkpoint.path, step: 700 },
  ...(localCheckpoint !== undefined ? { localCheckpoint } : {}),
});

const profile = parseEvalProfile({ name: 'local-read', where: 'local', command: 'cat ${localCheckpoint}/model.pt; ls ${localCheckpoint}' });

test('before a download: not a local checkpoint, a clear error, and nothing starts', async () => {
  assert.equal(usesLocalCheckpoint(profile), true);
  const state = localCheckpointState(await planDownload(source(), checkpoint, dest()));
  assert.deepEqual(state, { kind: 'absent', path: path.join(downloads, 'testbox', 'local-ckpt-run', 'step_700') });
  assert.throws(() => requireLocalCheckpoint(state, profile.name, 'step_700'), /uses \$\{localCheckpoint\}, but it has not been downloaded .*: download step_700 first/);
  // The service itself refuses a template whose value is unknown.
  const e = await rejectsWith(setup.evals.start(profile, subject()), 'bad-config');
  assert.match(e.message, /only known once the checkpoint has been downloaded/);
  assert.equal(fs.existsSync(path.join(setup.localState, 'evals')), false, 'no eval folder was made');
});

test('after a download: ${localCheckpoint} is the downloaded folder and the eval reads its files', async () => {
  const plan = await planDownload(source(), checkpoint, dest());
  await download(plan, { threads: false, concurrency: 1 });
  const state = localCheckpointState(await planDownload(source(), checkpoint, dest()));
  assert.equal(state.kind, 'downloaded');
  const local = requireLocalCheckpoint(state, profile.name, 'step_700');
  assert.equal(local, path.join(downloads, 'testbox', 'local-ckpt-run', 'step_700'));

  const started = await setup.evals.start(profile, subject(local));
  const end = await setup.evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
  assert.equal(end.state, 'passed');
  const log = fs.readFileSync(path.join(started.dir, 'log'), 'utf8');
  assert.equal(log, 'weights of step 700\nconfig.json\nmodel.pt\n');
  assert.equal(started.meta.command, `cat ${shellQuote(local)}/model.pt; ls ${shellQuote(local)}`, 'the path went in as one quoted word');
});

test('a download with a file missing is not a local checkpoint', async () => {
  fs.rmSync(path.join(downloads, 'testbox', 'local-ckpt-run', 'step_700', 'config.json'));
  const state = localCheckpointState(await planDownload(source(), checkpoint, dest()));
  assert.equal(state.kind, 'incomplete');
  assert.throws(() => requireLocalCheckpoint(state, profile.name, 'step_700'), /is incomplete \(1 file\(s\) missing\)/);
});
