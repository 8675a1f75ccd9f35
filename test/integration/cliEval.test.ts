/** `remote-runs eval` (the CLI from source, over the same core) against the real test sshd. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { startSpecServer, type SpecServer } from '../harness/specServer';

const ROOT = path.join(__dirname, '..', '..');
const MAIN = path.join(ROOT, 'src', 'cli', 'main.ts');
let host: TestHost;
let config: string;
let evalsDir: string;
let spec: SpecServer;

/** The CLI run asynchronously: the stand-in engine server lives in this process and must answer while it runs. */
function cliAsync(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args, '--config', config, '--known-hosts', host.knownHostsFile], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: host.clientHome },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b));
  child.stderr.on('data', (b: Buffer) => (stderr += b));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr })));
}

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
  // A vLLM-like server with speculative decoding on 127.0.0.1 (test/harness/specServer.ts), reached through sshd.
  spec = await startSpecServer({ mode: 'vllm', k: 3, seed: 5 });
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
        { kind: 'speculative-server', name: 'drafter', server: spec.url, maxTokens: 32, concurrency: 2 },
      ],
    }),
  );
});
after(async () => {
  await spec?.stop();
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

  test('a speculative-server profile measures the running server through the host\'s link: the result line on stdout, τ defined on stderr; --json holds the settings', async () => {
    const r = await cliAsync(['eval', 'drafter', 'ev/host/story/latest']);
    assert.equal(r.code, 0, r.stderr);
    const t = spec.totals();
    assert.equal(t.requests, 12, 'the 12 built-in prompts were sent');
    const line = JSON.parse(r.stdout);
    assert.deepEqual(Object.keys(line).sort(), ['acceptance_rate', 'output_tokens_per_s', 'p_1', 'p_2', 'p_3', 'tau']);
    assert.ok(Math.abs(line.tau - (1 + t.accepted / t.verifySteps)) < 1e-12, `τ ${line.tau} is the toy's 1 + accepted / steps`);
    assert.ok(Math.abs(line.acceptance_rate - t.accepted / t.drafted) < 1e-12);
    assert.match(r.stderr, /^eval drafter of ev\/host\/story\/step_\d+: http:\/\/127\.0\.0\.1:\d+ through ev's link$/m);
    assert.match(r.stderr, /τ [\d.]+ \(1 \+ accepted draft tokens \/ verify steps \(bonus token counted/);
    assert.match(r.stderr, /stats from /);
    const j = await cliAsync(['eval', 'drafter', 'ev/host/story/latest', '--json']);
    assert.equal(j.code, 0, j.stderr);
    const out = JSON.parse(j.stdout);
    assert.equal(out.profile, 'drafter');
    assert.equal(out.engine, 'vllm');
    assert.equal(out.settings.temperature, 0);
    assert.equal(out.settings.maxTokens, 32);
    assert.equal(out.settingSources.maxTokens, 'pinned');
    assert.equal(out.settings.numSpeculativeTokens, 3);
    assert.match(out.address, /^ev\/host\/story\/step_\d+$/);
  });

  test('a speculative-server profile whose server does not answer: unreachable, naming the host and the address', async () => {
    const cfg = JSON.parse(fs.readFileSync(config, 'utf8'));
    const closed = path.join(host.dir, 'config-eval-closed.json');
    cfg.evalProfiles = [{ kind: 'speculative-server', name: 'gone', server: 'http://127.0.0.1:9' }];
    fs.writeFileSync(closed, JSON.stringify(cfg));
    const saved = config;
    config = closed;
    try {
      const r = await cliAsync(['eval', 'gone', 'ev/host/story/latest', '--json']);
      assert.equal(r.code, 2, r.stderr);
      const e = JSON.parse(r.stdout).error;
      assert.equal(e.kind, 'unreachable');
      assert.match(e.message, /127\.0\.0\.1:9/);
    } finally {
      config = saved;
    }
  });
});
