/**
 * Evals against a real OpenSSH server: detached launch through the bare host and the pct/docker shims, a connection
 * killed mid-eval, re-attach from the start, results recorded exactly once, stop of a whole process group (checked
 * with ps), a failing eval's exit code and stderr tail, hostile template values, and a local eval.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { EvalService } from '../../src/core/eval/service';
import { parseEvalProfile } from '../../src/core/eval/profiles';
import type { EvalSubject, EvalResult } from '../../src/core/eval/types';
import type { TargetRef } from '../../src/core/types';
import type { TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { eventually } from '../harness/assertKind';
import { startEvalSetup, type EvalSetup } from '../harness/evalSetup';

let setup: EvalSetup;
let host: TestHost;
let evals: EvalService;
let localState: string;
/** Process groups of evals started here, killed in `after` whatever happened. */
const groups = new Set<number>();

const HOST: TargetRef = { kind: 'host', id: '' };

function ownedByTestUser(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, dir]);
  return dir;
}

function subject(target: TargetRef, runPath: string, step = 20000, runName = path.basename(runPath)): EvalSubject {
  return { host: 'testbox', target, run: { name: runName, path: runPath }, checkpoint: { path: `${runPath}/checkpoints/step_${step}`, step } };
}

/** Live (non-zombie) processes of a process group, from ps on this machine (the test sshd is local). */
function groupMembers(pgid: number): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,pgid=,stat=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => {
      const [, g, stat] = l.split(/\s+/);
      return Number(g) === pgid && !stat?.startsWith('Z');
    });
}

function processesMatching(marker: string): string[] {
  const out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.includes(marker) && !/^\s*\d+\s+Z/.test(l));
}

before(async () => {
  setup = await startEvalSetup({ backoffBaseMs: 100 });
  ({ host, evals, localState } = setup);
});

after(async () => {
  for (const g of groups) {
    try {
      process.kill(-g, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await setup?.stop();
});

describe('a detached eval on a Proxmox container (pct shim)', () => {
  test('survives the connection being killed; re-attach shows the log from the start; the result is recorded exactly once', async () => {
    // The run's folder is the container's /workspace; the trainer (the test user) owns the extension's folder in it.
    ownedByTestUser(path.join(host.containers.pct200.workspace, '.remote-runs'));
    const goFile = path.join(host.containers.pct200.workspace, '.remote-runs', 'go-1');
    const profile = parseEvalProfile({
      name: 'acceptance',
      command:
        'echo eval of step ${step} at ${checkpoint}; i=0; while [ ! -e .remote-runs/go-1 ]; do echo "progress $i"; i=$((i+1)); sleep 0.2; done; ' +
        'echo \'{"acceptance_length": 3.41, "tokens_per_s": 812}\'; echo done',
    });
    const subj = subject({ kind: 'pct', id: '200' }, '/workspace', host.storySteps[host.storySteps.length - 1]);
    const started = await evals.start(profile, subj);
    assert.ok(started.pgid && started.pgid > 1, 'a process group id is recorded');
    groups.add(started.pgid!);
    assert.match(started.id, /^\d{8}-\d{6}-acceptance-step\d+-[0-9a-f]{4}$/);

    const first: Buffer[] = [];
    const firstResults: EvalResult[] = [];
    const retries: string[] = [];
    const firstFollow = evals.follow(started.place, started.id, started.meta, {
      pollMs: 100,
      retryMs: 100,
      onData: (b) => first.push(b),
      onResult: (r) => firstResults.push(r),
      onRetry: (e) => retries.push(e.kind),
    });
    await eventually(() => Buffer.concat(first).toString().includes('progress 2'), 'progress lines', 30_000);

    assert.ok(host.sshd.killConnections() >= 1, 'a connection was there to kill');
    // The eval is not a child of the dead session: its process group lives on.
    assert.ok(groupMembers(started.pgid!).length > 0, 'the eval keeps running after the connection died');
    const runningRecord = (await evals.list(started.place)).find((r) => r.id === started.id);
    assert.equal(runningRecord?.state, 'running');

    // Re-attach (as after a reload): a second follower from offset 0, while the first one resumes on its own.
    const second: Buffer[] = [];
    const secondFollow = evals.follow(started.place, started.id, started.meta, { pollMs: 100, retryMs: 100, onData: (b) => second.push(b) });
    await eventually(() => Buffer.concat(second).toString().includes('progress 4'), 're-attached output', 30_000);
    fs.writeFileSync(goFile, '');
    const [end1, end2] = await Promise.all([firstFollow, secondFollow]);

    const logOnDisk = fs.readFileSync(path.join(host.containers.pct200.workspace, '.remote-runs', 'evals', started.id, 'log'));
    assert.ok(logOnDisk.toString().startsWith(`eval of step ${subj.checkpoint.step} at /workspace/checkpoints/step_`));
    assert.deepEqual(Buffer.concat(first), logOnDisk, 'the first follower got every byte once, across the drop');
    assert.deepEqual(Buffer.concat(second), logOnDisk, 'the re-attached follower showed the log from the start');
    assert.equal(end1.state, 'passed');
    assert.equal(end1.exitCode, 0);
    assert.deepEqual(firstResults, [{ acceptance_length: 3.41, tokens_per_s: 812 }]);
    assert.equal([end1.wroteResults, end2.wroteResults].filter(Boolean).length, 1, 'exactly one follower wrote results.jsonl');

    const resultsFile = fs.readFileSync(path.join(host.containers.pct200.workspace, '.remote-runs', 'evals', started.id, 'results.jsonl'), 'utf8');
    assert.equal(resultsFile, '{"acceptance_length":3.41,"tokens_per_s":812}\n');
    const record = (await evals.list(started.place)).find((r) => r.id === started.id)!;
    assert.equal(record.state, 'passed');
    assert.deepEqual(record.results, [{ acceptance_length: 3.41, tokens_per_s: 812 }]);
    assert.equal(record.profile, 'acceptance');
    assert.equal(record.step, subj.checkpoint.step);
    assert.equal(record.checkpointPath, subj.checkpoint.path);
  });
});

describe('stop', () => {
  test('TERM, then KILL after the grace period, takes the whole process group (docker shim; no orphan in ps)', async () => {
    ownedByTestUser(path.join(host.containers.trainer.workspace, 'hf-run', '.remote-runs'));
    const marker = `rr-stop-${process.pid}`;
    const profile = parseEvalProfile({
      name: 'stubborn',
      // A child that dies on TERM, a grandchild that ignores TERM (only KILL ends it), and the main shell waiting.
      command:
        `sh -c 'exec sleep 3001' ${marker}-a & ` +
        `sh -c 'trap "" TERM; sleep 3002 & wait' ${marker}-b & ` +
        'echo ready; wait',
    });
    const subj = subject({ kind: 'docker', id: 'trainer' }, '/workspace/hf-run', 1000);
    const started = await evals.start(profile, subj);
    groups.add(started.pgid!);
    const log = path.join(host.containers.trainer.workspace, 'hf-run', '.remote-runs', 'evals', started.id, 'log');
    await eventually(() => fs.readFileSync(log, 'utf8').includes('ready') && groupMembers(started.pgid!).length >= 4, 'the eval and its children', 30_000);
    assert.ok(processesMatching(`${marker}-b`).length > 0, 'the TERM-ignoring child runs before the stop');

    const report = await evals.stop(started.place, started.id, { graceMs: 1000 });
    assert.equal(report.killed, true, 'KILL was needed for the child that ignores TERM');
    assert.equal(report.left, false);
    assert.deepEqual(groupMembers(started.pgid!), [], 'nothing of the process group is left');
    assert.deepEqual(processesMatching(marker), [], 'no orphaned child survived');

    const record = (await evals.list(started.place)).find((r) => r.id === started.id)!;
    assert.equal(record.state, 'failed');
    assert.equal(record.stopped, true);
    assert.equal(record.exitCode, 143, 'the main process ended by TERM');
  });
});

describe('a failing eval', () => {
  test('shows its exit code and the tail of its stderr', async () => {
    const run = ownedByTestUser(path.join(host.dir, 'eval-runs', 'failing'));
    const profile = parseEvalProfile({ name: 'broken', command: 'echo loading ${checkpoint}; echo "Traceback: CUDA out of memory" >&2; exit 7' });
    const started = await evals.start(profile, subject(HOST, run, 500));
    groups.add(started.pgid!);
    const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
    assert.equal(end.state, 'failed');
    assert.equal(end.exitCode, 7);
    const record = (await evals.list(started.place)).find((r) => r.id === started.id)!;
    assert.equal(record.state, 'failed');
    assert.equal(record.exitCode, 7);
    assert.equal(record.stopped, false);
    assert.match(record.logTail ?? '', /Traceback: CUDA out of memory\n$/);
    assert.deepEqual(record.results, []);
    assert.equal(record.resultsRecorded, true);
  });

  test('a missing working directory fails with 126 and says why', async () => {
    const run = ownedByTestUser(path.join(host.dir, 'eval-runs', 'nocwd'));
    const profile = parseEvalProfile({ name: 'nocwd', command: 'echo never', cwd: '${runPath}/does-not-exist' });
    const started = await evals.start(profile, subject(HOST, run, 1));
    const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
    assert.equal(end.exitCode, 126);
    const record = (await evals.list(started.place)).find((r) => r.id === started.id)!;
    assert.match(record.logTail ?? '', /cannot change to the working directory .*does-not-exist/);
  });

  test('a run folder the user cannot write is reported as permission denied, and nothing starts', async () => {
    const run = path.join(host.dir, 'eval-runs', 'root-owned');
    fs.mkdirSync(run, { recursive: true, mode: 0o755 });
    const profile = parseEvalProfile({ name: 'x', command: 'touch started' });
    await assert.rejects(evals.start(profile, subject(HOST, run, 1)), (e: Error & { kind?: string }) => e.kind === 'permission-denied');
    assert.equal(fs.existsSync(path.join(run, '.remote-runs')), false);
  });

  test('an evals folder the user cannot read is permission denied, not "no evals"', async () => {
    const run = path.join(host.dir, 'eval-runs', 'unreadable');
    fs.mkdirSync(path.join(run, '.remote-runs', 'evals'), { recursive: true });
    fs.chmodSync(path.join(run, '.remote-runs', 'evals'), 0o700);
    const place = evals.place({ where: { kind: 'target' } }, subject(HOST, run, 1));
    await assert.rejects(evals.list(place), (e: Error & { kind?: string }) => e.kind === 'permission-denied' && /permission denied reading/.test(e.message));
  });
});

describe('hostile values', () => {
  test('each substituted value arrives as one argument, and no canary file appears', async () => {
    const base = ownedByTestUser(path.join(host.dir, 'eval-runs', 'hostile'));
    const canary = path.join(base, 'CANARY');
    const evil = `run; touch ${canary} && $(touch ${canary}) \`touch ${canary}\` 'q' "dq" \\ * \n$HOME`;
    const run = ownedByTestUser(path.join(base, evil.replace(/\//g, '_')));
    const subj: EvalSubject = {
      host: 'testbox',
      target: HOST,
      run: { name: evil, path: run },
      checkpoint: { path: `${run}/ckpt ${evil}`, step: 42 },
    };
    const profile = parseEvalProfile({
      name: 'args',
      command: `sh -c 'for a in "$@"; do printf "<%s>\\n" "$a"; done; echo "argc=$#"' argv0 \${checkpoint} \${run} \${runPath} \${step} --tag=\${run}`,
      env: { EVAL_RUN: '${run}' },
    });
    const started = await evals.start(profile, subj);
    const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
    assert.equal(end.state, 'passed');
    const log = fs.readFileSync(path.join(run, '.remote-runs', 'evals', started.id, 'log'), 'utf8');
    const expected = [subj.checkpoint.path, evil, run, '42', `--tag=${evil}`].map((v) => `<${v}>\n`).join('') + 'argc=5\n';
    assert.equal(log, expected);
    assert.equal(fs.existsSync(canary), false, 'no value was executed');
    const meta = JSON.parse(fs.readFileSync(path.join(run, '.remote-runs', 'evals', started.id, 'meta.json'), 'utf8'));
    assert.equal(meta.run.name, evil, 'meta.json keeps the value exactly');
  });

  test('an env value reaches the eval verbatim', async () => {
    const run = ownedByTestUser(path.join(host.dir, 'eval-runs', 'env'));
    const value = `a b; $(echo x) 'q' "d"\nline2`;
    const profile = parseEvalProfile({ name: 'env', command: 'printf "%s" "$EVAL_VALUE"', env: { EVAL_VALUE: value } });
    const started = await evals.start(profile, subject(HOST, run, 3));
    await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
    assert.equal(fs.readFileSync(path.join(run, '.remote-runs', 'evals', started.id, 'log'), 'utf8'), value);
  });
});

describe('several evals and re-listing', () => {
  test('two evals of different checkpoints run at once and both are listed with their own results (regex profile)', async () => {
    const run = ownedByTestUser(path.join(host.dir, 'eval-runs', 'several'));
    const profile = parseEvalProfile({
      name: 'regex',
      command: 'echo step ${step}: acceptance length = ${step}.5 "(n=100)"',
      resultPattern: 'acceptance length = (?<acc_len>[0-9.]+) \\(n=(?<n>\\d+)\\)',
    });
    const a = await evals.start(profile, subject(HOST, run, 100));
    const b = await evals.start(profile, subject(HOST, run, 200));
    assert.notEqual(a.id, b.id);
    // Nobody follows them: the listing records their results once they have ended.
    await eventually(async () => (await evals.list(a.place, { record: false })).every((r) => r.state === 'passed'), 'both evals to end', 30_000);
    const records = await evals.list(a.place);
    const byStep = Object.fromEntries(records.map((r) => [r.step, r.results]));
    assert.deepEqual(byStep, { 100: [{ acc_len: 100.5, n: 100 }], 200: [{ acc_len: 200.5, n: 100 }] });
    assert.ok(records.every((r) => r.resultsRecorded));
  });
});

describe('another host/target', () => {
  test('a profile with where: host/target runs there, in ~/.remote-runs/evals/<run key>, and is found among the run\'s places', async () => {
    const profile = parseEvalProfile({ name: 'elsewhere', where: 'testbox/host', command: 'echo evaluating ${checkpoint} from ${target}; pwd' });
    const subj = subject({ kind: 'pct', id: '200' }, '/workspace', 500);
    const started = await evals.start(profile, subj);
    assert.equal(started.place.kind, 'remote');
    assert.match(started.place.evalsDir, /^~\/\.remote-runs\/evals\/testbox-pct-200-workspace-[0-9a-f]{12}$/);
    const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100 });
    assert.equal(end.state, 'passed');
    const home = execFileSync('getent', ['passwd', TEST_USER], { encoding: 'utf8' }).split(':')[5];
    const log = fs.readFileSync(path.join(home, started.place.evalsDir.slice(2), started.id, 'log'), 'utf8');
    assert.equal(log, `evaluating /workspace/checkpoints/step_500 from pct:200\n${home}\n`, 'runs on the bare host, in the home folder');
    const places = evals.places([profile], subj);
    assert.equal(places.length, 2, 'the run\'s own place and the other host\'s');
    const found = await evals.list(places[1]);
    assert.ok(found.some((r) => r.id === started.id));
    fs.rmSync(path.join(home, '.remote-runs'), { recursive: true, force: true });
  });
});

describe('a local eval', () => {
  test('runs detached on this machine with the same folder layout, and is listed and followed', async () => {
    const profile = parseEvalProfile({ name: 'local', where: 'local', command: 'echo local ${host} ${target} ${step}; echo \'{"score": 1}\'' });
    const subj = subject(HOST, '/remote/run', 7, 'run');
    const started = await evals.start(profile, subj);
    assert.equal(started.place.kind, 'local');
    assert.ok(started.dir.startsWith(localState));
    groups.add(started.pgid!);
    const out: Buffer[] = [];
    const end = await evals.follow(started.place, started.id, started.meta, { pollMs: 100, onData: (b) => out.push(b) });
    assert.equal(Buffer.concat(out).toString(), 'local testbox host 7\n{"score": 1}\n');
    assert.deepEqual(end.results, [{ score: 1 }]);
    const [record] = await evals.list(started.place);
    assert.equal(record.state, 'passed');
    assert.deepEqual(record.results, [{ score: 1 }]);
  });
});
