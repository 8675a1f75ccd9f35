/** `remote-runs eval` (the CLI from source, over the same core) against the real test sshd. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { startSpecServer, type SpecServer } from '../harness/specServer';
import { testPool } from '../builders/pool';
import { HostDirectory } from '../../src/core/hosts';
import { EvalService } from '../../src/core/eval/service';
import type { ConnectionPool } from '../../src/core/ssh/pool';
import type { HostConfig } from '../../src/core/types';
import type { SpecCard } from '../../src/core/eval/spec/card';

const ROOT = path.join(__dirname, '..', '..');
const MAIN = path.join(ROOT, 'src', 'cli', 'main.ts');
let host: TestHost;
let config: string;
let evalsDir: string;
let spec: SpecServer;
/** A second stand-in drafter: another seed and K, so its row differs from the first's. */
let spec2: SpecServer;
/** The eval listing of the story run, as the tree, the eval table and the metrics panel read it (EvalService.list). */
let pool: ConnectionPool;
let listing: EvalService;
let storyPath: string;

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
  spec2 = await startSpecServer({ mode: 'vllm', k: 4, seed: 9 });
  // The trainer (the test user) owns the run's .remote-runs folder, where evals live.
  const own = path.join(host.paths.runs, 'story', '.remote-runs');
  fs.mkdirSync(own, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, own]);
  evalsDir = path.join(own, 'evals');
  storyPath = path.join(host.paths.runs, 'story');
  config = path.join(host.dir, 'config-eval.json');
  const ev: HostConfig = host.hostConfig('ev', { runRoots: [host.paths.runs], targets: ['host'] });
  pool = testPool(host);
  const directory = new HostDirectory({ hosts: () => [ev], includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  listing = new EvalService({ executorFor: (_name, { idempotent }) => pool.executor(directory.resolve(ev), { idempotent }), localStateDir: path.join(host.dir, 'eval-local') });
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: [ev],
      evalProfiles: [
        {
          name: 'acceptance',
          where: 'target',
          command: 'echo eval of step ${step} at ${checkpoint}; for i in 1 2; do printf "progress $i/3\\r"; done; echo "progress 3/3"; echo \'{"acceptance_length": 6.4}\'',
        },
        { name: 'failing', where: 'target', command: 'echo loading ${run}; echo "CUDA out of memory" >&2; exit 7' },
        { name: 'local-copy', where: 'local', command: 'b=$(basename ${localCheckpoint}); echo "evaluating $b"; ls ${localCheckpoint}' },
        { kind: 'speculative-server', name: 'drafter', server: spec.url, maxTokens: 32, concurrency: 2 },
        { kind: 'speculative-server', name: 'drafter-b', server: spec2.url, maxTokens: 32, concurrency: 2 },
      ],
    }),
  );
});
after(async () => {
  pool?.dispose();
  await spec?.stop();
  await spec2?.stop();
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
    // Recorded as an eval of the checkpoint: the run's eval listing (what the tree, the eval table and the metrics
    // panel read) shows the result at the checkpoint's step, with the whole result in spec.json beside it.
    assert.match(r.stderr, /^eval (\S+) recorded in ev\/host:\S+\/story\/\.remote-runs\/evals\/\1$/m);
    const place = listing.place({ where: { kind: 'target' } }, { host: 'ev', target: { kind: 'host', id: '' }, run: { name: 'story', path: storyPath } });
    const records = await listing.list(place);
    const rec = records.find((x) => x.id === out.id);
    assert.ok(rec, `eval ${out.id} is listed (${records.map((x) => x.id).join(', ')})`);
    assert.equal(rec.step, out.step);
    assert.equal(rec.checkpointPath, path.join(storyPath, 'checkpoints', `step_${out.step}`));
    assert.equal(rec.state, 'passed');
    assert.equal(rec.meta.kind, 'speculative-server');
    assert.deepEqual(rec.results, [out.result]);
    assert.equal(rec.spec?.result.tauDefinition, 'one-plus-accepted-per-draft');
    assert.equal(rec.spec?.result.settings.maxTokens, 32);
    assert.equal(rec.spec?.result.settingSources.maxTokens, 'pinned');
    assert.equal(rec.spec?.engine, 'vllm');
    // The log ends with the result line, as a command eval's does: the log stays the source of truth.
    const log = fs.readFileSync(path.join(evalsDir, out.id, 'log'), 'utf8');
    assert.deepEqual(JSON.parse(log.trimEnd().split('\n').pop()!), out.result);
    const plainId = /^eval (\S+) recorded in /m.exec(r.stderr)![1];
    assert.deepEqual(records.find((x) => x.id === plainId)?.results, [line]);
  });

  test('eval --card: two checkpoints measured against two drafters beside the paper row at another temperature; temperature is flagged', async () => {
    const [first] = host.storySteps;
    const a = await cliAsync(['eval', 'drafter', `ev/host/story/${first}`, '--json']);
    assert.equal(a.code, 0, a.stderr);
    const b = await cliAsync(['eval', 'drafter-b', 'ev/host/story/latest', '--json']);
    assert.equal(b.code, 0, b.stderr);
    const ea = JSON.parse(a.stdout);
    const eb = JSON.parse(b.stdout);
    assert.notEqual(ea.result.tau, eb.result.tau, 'the two drafters differ');
    const refs = path.join(host.dir, 'references.json');
    fs.writeFileSync(refs, JSON.stringify({
      version: 2,
      lines: [{ metric: 'tau', value: 3.1, label: 'paper', source: 'Table 2' }],
      specRows: [
        { run: 'ev/host/story', kind: 'paper', label: 'DFlash Table 2', tau: 3.1, tauDefinition: 'one-plus-accepted-per-draft', pk: [0.8, 0.6, 0.4], settings: { temperature: 1, maxTokens: 32, numSpeculativeTokens: 3 }, source: 'arXiv Table 2' },
        { run: 'ev/host/story', kind: 'reference', label: 'EAGLE3 drafter', tau: 2.4, tauDefinition: 'one-plus-accepted-per-draft', settings: { temperature: 0, maxTokens: 32 } },
        { run: 'ev/host/other', kind: 'paper', label: 'another run', tau: 9, tauDefinition: 'one-plus-accepted-per-draft', settings: {} },
      ],
    }));
    const j = await cliAsync(['eval', '--card', 'ev/host/story', '--references', refs, '--json']);
    assert.equal(j.code, 0, j.stderr);
    const card = JSON.parse(j.stdout) as SpecCard;
    const rowA = card.rows.find((r) => r.evalId === ea.id);
    const rowB = card.rows.find((r) => r.evalId === eb.id);
    assert.ok(rowA && rowB, 'both checkpoint rows');
    assert.equal(rowA.step, ea.step);
    assert.equal(rowB.step, eb.step);
    assert.equal(rowA.tau, ea.result.tau);
    assert.equal(rowB.tau, eb.result.tau);
    assert.equal(rowB.pk.length, 4, 'K = 4 for the second drafter');
    assert.deepEqual(card.rows.filter((r) => r.kind !== 'checkpoint').map((r) => [r.kind, r.label]), [['paper', 'DFlash Table 2'], ['reference', 'EAGLE3 drafter']]);
    const temperature = card.checklist.find((c) => c.key === 'temperature')!;
    assert.equal(temperature.status, 'differs');
    assert.equal(temperature.flagged, true);
    const k = card.checklist.find((c) => c.key === 'numSpeculativeTokens')!;
    assert.equal(k.flagged, true, 'K 3 against K 4');
    const cmpA = card.comparisons[card.rows.indexOf(rowA)]!;
    assert.equal(cmpA.tau.kind, 'compared');
    assert.ok(cmpA.tau.kind === 'compared' && Math.abs(cmpA.tau.abs - (ea.result.tau - 3.1)) < 1e-12);
    assert.ok(cmpA.settingsDiffer.includes('temperature'));
    const t = await cliAsync(['eval', '--card', 'ev/host/story', '--references', refs]);
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /^speculative-decoding card of ev\/host\/story$/m);
    assert.match(t.stdout, new RegExp(`^step_${first} \\(drafter\\)\\s+${first}\\s`, 'm'));
    assert.match(t.stdout, /^paper: DFlash Table 2\s/m);
    assert.match(t.stdout, /^reference: EAGLE3 drafter\s/m);
    assert.match(t.stdout, /^!\s+temperature\s+(0\s+)+1\s+0$/m);
    assert.match(t.stdout, /! temperature differs/);
    assert.match(t.stdout, /1: 1 \+ accepted draft tokens \/ verify steps/);
    assert.doesNotMatch(t.stdout, /another run/);
    // A tool's output file on this machine as another checkpoint's rows (readSpecOutput), beside the recorded evals.
    const bench = path.join(ROOT, 'test', 'fixtures', 'spec', 'sglang_bench_speculative.jsonl');
    const f = await cliAsync(['eval', '--card', 'ev/host/story', '--references', refs, '--results', `${first + 2000}=${bench}`, '--json']);
    assert.equal(f.code, 0, f.stderr);
    const withFile = JSON.parse(f.stdout) as SpecCard;
    const fileRows = withFile.rows.filter((r) => r.source === bench);
    assert.ok(fileRows.length > 0 && fileRows.every((r) => r.step === first + 2000 && r.label.startsWith('sglang_bench_speculative.jsonl: ')));
    assert.ok(withFile.rows.some((r) => r.evalId === ea.id) && withFile.rows.some((r) => r.evalId === eb.id));
    const noStep = await cliAsync(['eval', '--card', 'ev/host/story', '--results', bench, '--json']);
    assert.equal(noStep.code, 2);
    assert.match(JSON.parse(noStep.stdout).error.message, /give STEP=FILE/);
    // A bad row is a clear error, never a card without it.
    fs.writeFileSync(refs, JSON.stringify({ version: 2, lines: [], specRows: [{ run: 'ev/host/story', kind: 'paper', label: 'x', tau: 2, tauDefinition: 'acceptance length', settings: {} }] }));
    const bad = await cliAsync(['eval', '--card', 'ev/host/story', '--references', refs, '--json']);
    assert.equal(bad.code, 2);
    assert.equal(JSON.parse(bad.stdout).error.kind, 'bad-config');
    assert.match(JSON.parse(bad.stdout).error.message, /specRows\[0\]: "tauDefinition" must say how τ was computed/);
  });

  test('a speculative-server eval whose run folder cannot be written: permission-denied, and the measured numbers are on stderr already', async () => {
    fs.chmodSync(evalsDir, 0o555);
    try {
      const r = await cliAsync(['eval', 'drafter', 'ev/host/story/latest', '--json']);
      assert.equal(r.code, 2, r.stderr);
      const e = JSON.parse(r.stdout).error;
      assert.equal(e.kind, 'permission-denied');
      assert.match(e.message, /^Recording eval \S+: mkdir: cannot create directory .*\/story\/\.remote-runs\/evals\/.*Permission denied/);
      assert.match(r.stderr, /^eval drafter of ev\/host\/story\/step_\d+ \(vllm, target-model\): τ [\d.]+ \(1 \+ accepted/m);
    } finally {
      fs.chmodSync(evalsDir, 0o755);
    }
    assert.deepEqual(fs.readdirSync(evalsDir).filter((n) => n.startsWith('.')), [], 'no half-written folder is left');
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
