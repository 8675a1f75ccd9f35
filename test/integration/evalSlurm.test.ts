/**
 * Slurm-profile evals on a real single-node Slurm (test/harness/slurm.ts) reached over the real test sshd: submitted
 * with sbatch, seen pending behind a job that holds the node, then running, then finished with its result read from
 * the output file in the eval folder; and a running job stopped with scancel.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { EvalService } from '../../src/core/eval/service';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import type { EvalSubject } from '../../src/core/eval/types';
import type { TestHost } from '../harness/testHost';
import { startSlurm, type TestSlurm } from '../harness/slurm';
import { TEST_USER } from '../harness/sshd';
import { eventually } from '../harness/assertKind';
import { startEvalSetup, type EvalSetup } from '../harness/evalSetup';

let setup: EvalSetup;
let host: TestHost;
let slurm: TestSlurm;
let evals: EvalService;
const jobs: string[] = [];

function runDir(name: string): string {
  const dir = path.join(host.dir, 'slurm-runs', name);
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, path.join(host.dir, 'slurm-runs')]);
  return dir;
}

function subject(run: string, step: number): EvalSubject {
  return { host: 'testbox', target: { kind: 'host', id: '' }, run: { name: path.basename(run), path: run }, checkpoint: { path: `${run}/step_${step}`, step } };
}

before(async () => {
  slurm = await startSlurm();
  setup = await startEvalSetup();
  ({ host, evals } = setup);
});

after(async () => {
  for (const j of jobs) {
    try {
      slurm.cancel(j);
    } catch {
      // already gone
    }
  }
  await setup?.stop();
  await slurm?.stop();
});

describe('a Slurm eval', () => {
  test('goes pending → running → finished, its output followed from the eval folder and its result read', async () => {
    const run = runDir('drafter');
    // Hold the whole node so the eval has to wait in the queue.
    const blocker = slurm.submitAs(TEST_USER, ['--exclusive', '--output=/dev/null', '--wrap', 'sleep 600']);
    jobs.push(blocker);
    await eventually(() => slurm.jobState(blocker) === 'RUNNING', 'the blocker job to run', 60_000);

    const profile = parseEvalProfile({
      name: 'slurm-acc',
      scheduler: 'slurm',
      sbatch: ['--ntasks=1', '--time=00:10:00'],
      env: { EVAL_STEP: '${step}' },
      command: 'echo "job $SLURM_JOB_ID step $EVAL_STEP on" ${checkpoint}; while [ ! -e go ]; do sleep 0.2; done; echo \'{"acceptance_length": 3.2}\'',
    });
    const subj = subject(run, 20000);
    const started = await evals.start(profile, subj);
    assert.match(started.jobId ?? '', /^\d+$/);
    jobs.push(started.jobId!);
    assert.ok(fs.existsSync(path.join(run, '.remote-runs', 'evals', started.id, 'job.sh')));

    const [pending] = await evals.list(started.place);
    assert.equal(pending.state, 'pending');
    assert.equal(pending.slurm?.jobId, started.jobId);
    assert.equal(pending.slurm?.state, 'PENDING');

    const seen: string[] = [];
    const out: Buffer[] = [];
    const following = evals.follow(started.place, started.id, started.meta, {
      pollMs: 150,
      onPoll: (h) => {
        const s = h.slurmState ?? '-';
        if (seen[seen.length - 1] !== s) seen.push(s);
      },
      onData: (b) => out.push(b),
    });
    await eventually(() => seen.includes('PENDING'), 'the follower to see the job pending', 60_000);
    slurm.cancel(blocker);
    await eventually(() => seen.includes('RUNNING') && Buffer.concat(out).toString().includes('on '), 'the job to run and print', 60_000);
    const [running] = await evals.list(started.place);
    assert.equal(running.state, 'running');
    fs.writeFileSync(path.join(run, 'go'), '');
    const end = await following;

    assert.equal(end.state, 'passed');
    assert.equal(end.exitCode, 0);
    assert.deepEqual(end.results, [{ acceptance_length: 3.2 }]);
    assert.ok(seen.indexOf('PENDING') < seen.indexOf('RUNNING'), `states seen in order: ${seen.join(' → ')}`);
    const text = Buffer.concat(out).toString();
    assert.equal(text, `job ${started.jobId} step 20000 on ${subj.checkpoint.path}\n{"acceptance_length": 3.2}\n`);
    assert.equal(fs.readFileSync(path.join(run, '.remote-runs', 'evals', started.id, 'log'), 'utf8'), text, 'the Slurm output file is the eval log');

    const [finished] = await evals.list(started.place);
    assert.equal(finished.state, 'passed');
    assert.deepEqual(finished.results, [{ acceptance_length: 3.2 }]);
    assert.ok(['COMPLETED', 'COMPLETING'].includes(finished.slurm?.state ?? ''), `scheduler state ${finished.slurm?.state}`);
  });

  test('a running job is stopped with scancel and recorded as stopped', async () => {
    const run = runDir('stopme');
    const profile = parseEvalProfile({ name: 'slurm-long', scheduler: 'slurm', command: 'echo started; sleep 600' });
    const started = await evals.start(profile, subject(run, 5));
    jobs.push(started.jobId!);
    await eventually(() => slurm.jobState(started.jobId!) === 'RUNNING', 'the job to run', 60_000);
    const report = await evals.stop(started.place, started.id, { graceMs: 1000 });
    assert.equal(report.left, false);
    assert.ok(!['PENDING', 'RUNNING', 'COMPLETING'].includes(slurm.jobState(started.jobId!)), 'the job is gone from the queue');
    const [record] = await evals.list(started.place);
    assert.equal(record.state, 'failed');
    assert.equal(record.stopped, true);
  });
});
