/**
 * The follower over real files with the real read script (LocalExecutor): tiny reads that cut lines and a multi-byte
 * character in two still deliver every byte once and every result line once; the last line counts without a newline;
 * an eval that vanished without a status ends as lost.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { followEval } from '../../src/core/eval/follow';
import { LocalExecutor } from '../../src/core/eval/localExecutor';
import type { EvalResult } from '../../src/core/eval/types';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-follow-unit-'));
after(() => fs.rmSync(root, { recursive: true, force: true }));

function folder(name: string, log: string, files: Record<string, string>): string {
  const d = path.join(root, name);
  fs.mkdirSync(d);
  fs.writeFileSync(path.join(d, 'meta.json'), '{}\n');
  fs.writeFileSync(path.join(d, 'log'), log);
  for (const [k, v] of Object.entries(files)) fs.writeFileSync(path.join(d, k), v);
  return d;
}

test('small reads: bytes once and in order, results once, the unterminated last line counted at the end', async () => {
  const log = 'héllo wörld\n{"acc": 0.5}\nstep 3 acc=0.75 ✓\n{"acc": 0.9, "n": 3}';
  const dir = folder('done', log, { status: '0\n', pid: '999999\n' });
  const chunks: Buffer[] = [];
  const results: { r: EvalResult; offset: number }[] = [];
  const end = await followEval({
    executor: new LocalExecutor(),
    target: { kind: 'host', id: '' },
    dir,
    resultPattern: 'acc=(?<acc>[0-9.]+)',
    maxBytesPerPoll: 5,
    pollMs: 1,
    onData: (b) => chunks.push(b),
    onResult: (r, _line, offset) => results.push({ r, offset }),
  });
  assert.ok(chunks.length > 10, 'many small reads');
  assert.equal(Buffer.concat(chunks).toString('utf8'), log);
  const bytes = Buffer.from(log);
  assert.deepEqual(results, [
    { r: { acc: 0.5 }, offset: bytes.indexOf('{"acc": 0.5}') },
    { r: { acc: 0.75 }, offset: bytes.indexOf('step 3') },
    { r: { acc: 0.9, n: 3 }, offset: bytes.indexOf('{"acc": 0.9') },
  ]);
  assert.deepEqual(end, { state: 'passed', exitCode: 0, results: results.map((x) => x.r), offset: bytes.length });
});

test('starting from an offset skips what came before', async () => {
  const dir = folder('offset', '{"a": 1}\n{"a": 2}\n', { status: '4\n', pid: '999999\n' });
  const end = await followEval({ executor: new LocalExecutor(), target: { kind: 'host', id: '' }, dir, fromOffset: 9, pollMs: 1 });
  assert.deepEqual(end.results, [{ a: 2 }]);
  assert.equal(end.state, 'failed');
  assert.equal(end.exitCode, 4);
});

test('no status and nothing alive: lost, after the whole log', async () => {
  const dir = folder('lost', 'partial output', { pid: '999999\n', wrapper: '999998\n' });
  const out: Buffer[] = [];
  const end = await followEval({ executor: new LocalExecutor(), target: { kind: 'host', id: '' }, dir, pollMs: 1, onData: (b) => out.push(b) });
  assert.equal(end.state, 'lost');
  assert.equal(Buffer.concat(out).toString(), 'partial output');
});
