/**
 * The eval listing: the framing parser on built output (hostile bytes inside files), the state rules, the read and
 * stop headers, and the real LIST_SCRIPT run by the real sh over real eval folders (running, passed, failed, lost).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { evalState, parseEvalListing, parseReadOutput, parseStopOutput, toEvalRecords } from '../../src/core/eval/records';
import { listEvalsCommand, recordMeasuredCommand } from '../../src/core/eval/commands';
import { formatSpecRecord } from '../../src/core/eval/spec/record';
import { LocalExecutor } from '../../src/core/eval/localExecutor';
import { runCommand } from '../../src/core/remote';
import { RemoteRunsError } from '../../src/core/types';
import type { EvalMeta } from '../../src/core/eval/types';

function meta(id: string, over: Partial<EvalMeta> = {}): EvalMeta {
  return {
    id,
    profile: 'acc',
    checkpoint: '/ws/checkpoints/step_100',
    step: 100,
    startedAt: '2025-01-30T14:20:03.000Z',
    command: 'python eval.py',
    cwd: '/ws',
    run: { host: 'gpu1', target: 'pct:200', name: 'ws', path: '/ws' },
    ...over,
  };
}

/** Build LIST_SCRIPT-shaped output. */
function listing(evals: { id: string; files: Record<string, string | Buffer>; log?: number; alive?: boolean; q?: string }[]): Buffer {
  const parts: Buffer[] = [];
  for (const e of evals) {
    parts.push(Buffer.from(`E ${e.id}\n`));
    for (const [name, content] of Object.entries(e.files)) {
      const b = Buffer.isBuffer(content) ? content : Buffer.from(content);
      parts.push(Buffer.from(`F ${name} ${b.length}\n`), b, Buffer.from('\n'));
    }
    parts.push(Buffer.from(`L ${e.log ?? 0}\nA ${e.alive ? 1 : 0}\n`));
    if (e.q) parts.push(Buffer.from(`Q ${e.q}\n`));
  }
  return Buffer.concat(parts);
}

test('framed files may hold any bytes, including lines that look like frames', () => {
  const tail = 'E fake\nF meta 3\nabc\nA 1\n\u00e9\n';
  const raw = parseEvalListing(
    listing([
      { id: 'e1', files: { meta: JSON.stringify(meta('e1')), status: '1\n', tail }, log: 99 },
      { id: 'e2', files: { meta: JSON.stringify(meta('e2')) }, alive: true, log: 5 },
    ]),
  );
  assert.equal(raw.length, 2);
  assert.equal(raw[0].files.tail.toString(), tail);
  assert.equal(raw[0].logBytes, 99);
  assert.equal(raw[1].alive, true);
});

test('a cut frame is a protocol error, not a wrong record', () => {
  const full = listing([{ id: 'e1', files: { meta: JSON.stringify(meta('e1')) } }]);
  assert.throws(() => parseEvalListing(full.subarray(0, 30)), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol');
  assert.deepEqual(parseEvalListing(Buffer.from('N\n')), []);
});

test('state rules: status wins; alive is running or pending; Slurm failures; else lost', () => {
  assert.equal(evalState(0, false), 'passed');
  assert.equal(evalState(0, true), 'passed');
  assert.equal(evalState(3, false), 'failed');
  assert.equal(evalState(undefined, true), 'running');
  assert.equal(evalState(undefined, true, 'PENDING'), 'pending');
  assert.equal(evalState(undefined, true, 'RUNNING'), 'running');
  assert.equal(evalState(undefined, false, 'CANCELLED'), 'failed');
  assert.equal(evalState(undefined, false, 'TIMEOUT'), 'failed');
  assert.equal(evalState(undefined, false), 'lost');
  assert.equal(evalState(undefined, false, ''), 'lost');
});

test('records: typed fields, results, tail only for failures, foreign folders skipped, newest first', () => {
  const raw = parseEvalListing(
    listing([
      { id: 'old', files: { meta: JSON.stringify(meta('old', { startedAt: '2025-01-01T00:00:00Z' })), status: '0\n', results: '{"acc":1}\n{"acc":2}\n', tail: 'ok\n' } },
      { id: 'new', files: { meta: JSON.stringify(meta('new', { step: 200 })), status: '137\n', stopped: 'x\n', tail: 'Killed\n' }, log: 7 },
      { id: 'slurm', files: { meta: JSON.stringify(meta('slurm')), jobid: '42\n' }, alive: true, q: 'PENDING' },
      { id: 'notours', files: { meta: '{"hello": 1}' } },
      { id: '../evil', files: { meta: JSON.stringify(meta('x')) } },
    ]),
  );
  const records = toEvalRecords(raw, (id) => `/ws/.remote-runs/evals/${id}`);
  // Newest first; the same start time falls back to the id, descending.
  assert.deepEqual(records.map((r) => r.id), ['slurm', 'new', 'old']);
  const byId = Object.fromEntries(records.map((r) => [r.id, r]));
  assert.deepEqual(byId.old.results, [{ acc: 1 }, { acc: 2 }]);
  assert.equal(byId.old.state, 'passed');
  assert.equal(byId.old.resultsRecorded, true);
  assert.equal(byId.old.logTail, undefined, 'no tail for a passed eval');
  assert.equal(byId.new.state, 'failed');
  assert.equal(byId.new.exitCode, 137);
  assert.equal(byId.new.stopped, true);
  assert.equal(byId.new.logTail, 'Killed\n');
  assert.equal(byId.new.step, 200);
  assert.equal(byId.new.dir, '/ws/.remote-runs/evals/new');
  assert.equal(byId.slurm.state, 'pending');
  assert.deepEqual(byId.slurm.slurm, { jobId: '42', state: 'PENDING' });
  assert.equal(byId.old.startedAt, Date.parse('2025-01-01T00:00:00Z'));
});

test('read and stop headers', () => {
  const r = parseReadOutput(Buffer.from('- 120 1 -\nhello\n'));
  assert.deepEqual(r.header, { size: 120, alive: true });
  assert.equal(r.data.toString(), 'hello\n');
  assert.deepEqual(parseReadOutput(Buffer.from('3 5 0 COMPLETED\n')).header, { status: 3, size: 5, alive: false, slurmState: 'COMPLETED' });
  assert.throws(() => parseReadOutput(Buffer.from('garbage\n')), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol');
  assert.deepEqual(parseStopOutput('stopped 1 0 143\n'), { killed: true, left: false, exitCode: 143 });
  assert.deepEqual(parseStopOutput('stopped 0 0 -\n'), { killed: false, left: false });
});

// The real listing script over real folders.
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-evals-unit-'));
const sleepers: number[] = [];
after(() => {
  for (const p of sleepers) {
    try {
      process.kill(-p, 'SIGKILL');
    } catch {
      // gone
    }
  }
  fs.rmSync(root, { recursive: true, force: true });
});

function evalFolder(id: string, files: Record<string, string>): void {
  const d = path.join(root, 'evals', id);
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'meta.json'), JSON.stringify(meta(id)) + '\n');
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(d, name), content);
}

test('LIST_SCRIPT in the real sh: running (live process group), passed, failed with tail, lost; other folders ignored', async () => {
  const sleeper = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
  sleepers.push(sleeper.pid!);
  sleeper.unref();
  evalFolder('e-running', { pid: `${sleeper.pid}\n`, log: 'step 1\n' });
  evalFolder('e-passed', { pid: '999999\n', status: '0\n', log: 'ok\n', 'results.jsonl': '{"acc":0.5}\n' });
  evalFolder('e-failed', { pid: '999999\n', status: '2\n', log: 'x'.repeat(5000) + '\nTraceback: boom\n' });
  evalFolder('e-lost', { pid: '999999\n', log: 'was here\n' });
  fs.mkdirSync(path.join(root, 'evals', 'weird\nname'), { recursive: true });
  fs.writeFileSync(path.join(root, 'evals', 'weird\nname', 'meta.json'), '{}');
  fs.mkdirSync(path.join(root, 'evals', 'no-meta'));

  const raw = await runCommand(new LocalExecutor(), { kind: 'host', id: '' }, listEvalsCommand(path.join(root, 'evals'), 100));
  const records = toEvalRecords(raw, (id) => id);
  const state = Object.fromEntries(records.map((r) => [r.id, r.state]));
  assert.deepEqual(state, { 'e-running': 'running', 'e-passed': 'passed', 'e-failed': 'failed', 'e-lost': 'lost' });
  const failed = records.find((r) => r.id === 'e-failed')!;
  assert.equal(failed.exitCode, 2);
  assert.equal(failed.logTail?.length, 100);
  assert.match(failed.logTail ?? '', /Traceback: boom\n$/);
  assert.equal(records.find((r) => r.id === 'e-lost')!.logTail, 'was here\n');
  assert.deepEqual(records.find((r) => r.id === 'e-passed')!.results, [{ acc: 0.5 }]);
  assert.equal(records.find((r) => r.id === 'e-running')!.logBytes, 7);
});

test('LIST_SCRIPT on a missing folder: no evals, no error', async () => {
  const raw = await runCommand(new LocalExecutor(), { kind: 'host', id: '' }, listEvalsCommand(path.join(root, 'nothing-here')));
  assert.deepEqual(raw, []);
});

test('MEASURED_SCRIPT in the real sh: a measured eval appears whole (passed, results, spec.json, a log with hostile text); an id is written once; a hidden leftover is never listed', async () => {
  const evals = path.join(root, 'measured');
  const local = new LocalExecutor();
  const HOST = { kind: 'host', id: '' } as const;
  const spec = formatSpecRecord({ version: 1, engine: 'vllm', result: { tool: 'speculative-server', label: "it's $(x)", speculative: true, tau: 2.5, tauDefinition: 'one-plus-accepted-per-draft', extra: {}, settings: { temperature: 0 }, settingSources: { temperature: 'pinned' }, notes: ['a\nb'] } });
  const log = "eval of 'step' $(rm -rf /) `x`\n{\"tau\": 2.5}\n";
  const cmd = recordMeasuredCommand({ evalsDir: evals, id: 'm-1', meta: meta('m-1', { cwd: '' }), log, results: '{"tau":2.5}\n', spec });
  const { dir } = await runCommand(local, HOST, cmd);
  assert.equal(dir, path.join(evals, 'm-1'));
  assert.equal(fs.readFileSync(path.join(dir, 'log'), 'utf8'), log);
  fs.mkdirSync(path.join(evals, '.m-2.tmp.123'));
  fs.writeFileSync(path.join(evals, '.m-2.tmp.123', 'meta.json'), JSON.stringify(meta('m-2')));
  const records = toEvalRecords(await runCommand(local, HOST, listEvalsCommand(evals)), (id) => id);
  assert.deepEqual(records.map((r) => [r.id, r.state, r.results]), [['m-1', 'passed', [{ tau: 2.5 }]]]);
  assert.equal(records[0].spec?.result.label, "it's $(x)");
  assert.deepEqual(records[0].spec?.result.notes, ['a\nb']);
  await assert.rejects(runCommand(local, HOST, cmd), /m-1 exists already/);
  assert.deepEqual(fs.readdirSync(evals).sort(), ['.m-2.tmp.123', 'm-1'], 'the refused write left nothing behind');
});
