/** `remote-runs eval` (the CLI from source, over the same core) against the real test sshd. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync, execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';

const ROOT = path.join(__dirname, '..', '..');
const MAIN = path.join(ROOT, 'src', 'cli', 'main.ts');
let host: TestHost;
let config: string;
let evalsDir: string;

function cli(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args, '--config', config, '--known-hosts', host.knownHostsFile], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: host.clientHome },
    input: '',
    timeout: 60_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

before(async () => {
  host = await startTestHost();
  // The trainer (the test user) owns the run's .remote-runs folder, where evals live.
  const own = path.join(host.paths.runs, 'story', '.remote-runs');
  fs.mkdirSync(own, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, own]);
  evalsDir = path.join(own, 'evals');
  config = path.join(host.dir, 'config-eval.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: [host.hostConfig('ev', { runRoots: [host.paths.runs], targets: ['host'] })],
      evalProfiles: [
        {
          name: 'acceptance',
          where: 'target',
          command: 'echo eval of step ${step} at ${checkpoint}; for i in 1 2; do printf "progress $i/3\\r"; done; echo "progress 3/3"; echo \'{"acceptance_length": 6.4}\'',
        },
        { name: 'failing', where: 'target', command: 'echo loading ${run}; echo "CUDA out of memory" >&2; exit 7' },
        { name: 'local-copy', where: 'local', command: 'b=$(basename ${localCheckpoint}); echo "evaluating $b"; ls ${localCheckpoint}' },
      ],
    }),
  );
});
after(async () => {
  await host?.stop();
});

describe('remote-runs eval', () => {
  test('--follow streams the whole log to stdout, exits 0, and the result is recorded in the eval folder', () => {
    const last = host.storySteps[host.storySteps.length - 1];
    const r = cli(['eval', 'acceptance', 'ev/host/story/latest', '--follow']);
    assert.equal(r.code, 0, r.stderr);
    const id = /eval (\S+) of ev\/host\/story\/step_/.exec(r.stderr)?.[1];
    assert.ok(id, r.stderr);
    const log = fs.readFileSync(path.join(evalsDir, id, 'log'), 'utf8');
    // A progress bar's bare CRs (as tqdm redraws its line) are line ends on the terminal; the log keeps its bytes.
    assert.equal(r.stdout, log.replace(/\r\n?/g, '\n'), 'stdout is the log, a bare CR shown as a line end');
    assert.match(log, /progress 1\/3\rprogress 2\/3\rprogress 3\/3\n/);
    assert.match(log, new RegExp(`^eval of step ${last} at ${path.join(host.paths.runs, 'story')}/checkpoints/step_${last}\n`));
    assert.match(log, /progress 3\/3\n\{"acceptance_length": 6.4\}\n$/);
    assert.match(r.stderr, /passed \(exit 0\): acceptance_length=6.4/);
    assert.equal(fs.readFileSync(path.join(evalsDir, id, 'results.jsonl'), 'utf8'), '{"acceptance_length":6.4}\n');
  });

  test('--follow exits with a failing eval\'s own status and shows its stderr', () => {
    const r = cli(['eval', 'failing', `ev/host/story/${host.storySteps[0]}`, '--follow']);
    assert.equal(r.code, 7, r.stderr);
    assert.match(r.stdout, /loading story\n/);
    assert.match(r.stdout, /CUDA out of memory/);
    assert.match(r.stderr, /failed \(exit 7\)/);
  });

  test('without --follow prints the id and where the log is, and the eval runs on its own', async () => {
    const r = cli(['eval', 'acceptance', 'ev/host/story/latest']);
    assert.equal(r.code, 0, r.stderr);
    const [id, where] = r.stdout.trim().split('\n');
    assert.match(id!, /-acceptance-step\d+-/);
    assert.equal(where, `ev/host:${path.join(evalsDir, id!, 'log')}`);
    const status = path.join(evalsDir, id!, 'log');
    for (let i = 0; i < 600 && !fs.readFileSync(status, 'utf8').includes('acceptance_length'); i++) await new Promise((res) => setTimeout(res, 50));
    assert.match(fs.readFileSync(status, 'utf8'), /\{"acceptance_length": 6.4\}/);
  });

  test('an unknown profile is bad-config naming the known ones; nothing is started', () => {
    const before = fs.readdirSync(evalsDir).length;
    const r = cli(['eval', 'nope', 'ev/host/story/latest']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /bad-config: No eval profile "nope" .*known: acceptance, failing/);
    assert.equal(fs.readdirSync(evalsDir).length, before);
  });

  test('an address without a checkpoint is bad-address', () => {
    const r = cli(['eval', 'acceptance', 'ev/host/story']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /bad-address/);
  });

  test('${localCheckpoint}: "pull it first" before a download; after `pull --to DIR` the eval gets that folder', () => {
    const step = host.storySteps[0];
    const dir = fs.mkdtempSync(path.join(host.dir, 'cli-local-ckpt-'));
    const before = cli(['eval', 'local-copy', `ev/host/story/${step}`, '--follow', '--to', dir]);
    assert.equal(before.code, 2, before.stderr);
    assert.match(before.stderr, /not-found: .*\$\{localCheckpoint\}.*has not been downloaded.*download step_\d+ first/);
    const pulled = cli(['pull', `ev/host/story/${step}`, '--to', dir]);
    assert.equal(pulled.code, 0, pulled.stderr);
    const local = pulled.stdout.trim();
    assert.equal(local, path.join(dir, 'story', `step_${step}`));
    const after = cli(['eval', 'local-copy', `ev/host/story/${step}`, '--follow', '--to', dir]);
    assert.equal(after.code, 0, after.stderr);
    assert.match(after.stdout, new RegExp(`evaluating step_${step}\n`));
    assert.deepEqual(after.stdout.split('\n').slice(1).filter(Boolean).sort(), fs.readdirSync(local).filter((n) => !n.startsWith('.')).sort());
  });
});
