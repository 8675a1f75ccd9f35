/**
 * A run's config (core/runs/config.ts) and the run table (core/runs/table.ts): the command's output parsed into one
 * row per file (hostile, huge, invalid, non-text, Python-tagged files each say what they are), flattening bounded
 * against YAML alias bombs, and "config differences" as only the keys whose values differ across runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configDifferences, configSummary, flattenConfig, mergedConfig, runConfigCommand, MAX_CONFIG_KEYS, CONFIG_FILES } from '../../src/core/runs/config';
import { buildRunTable, runTableCells, runState } from '../../src/core/runs/table';
import type { ExecResult } from '../../src/core/remote';
import type { Run } from '../../src/core/types';
import { cellsCsv, cellsMarkdown } from '../../src/core/util/textTable';

/** The output runConfigCommand's script prints for these files. */
function output(files: { name: string; text?: string | Buffer; size?: number; kind?: 'N' | 'P' }[]): ExecResult {
  const lines: string[] = [];
  for (const f of files) {
    if (f.kind) {
      lines.push(`${f.kind} ${f.name}`);
      continue;
    }
    const bytes = Buffer.isBuffer(f.text) ? f.text : Buffer.from(f.text ?? '');
    lines.push(`F ${f.size ?? bytes.length} ${f.name}`);
    // base64 wraps at 76 columns, as coreutils' does.
    const b64 = bytes.toString('base64');
    for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
    lines.push('E');
  }
  return { stdout: Buffer.from(lines.join('\n') + '\n'), stderr: Buffer.alloc(0), code: 0, truncated: false };
}

const parse = (files: Parameters<typeof output>[0]) => runConfigCommand('/w/run').parse(output(files));

test('the command passes the run path and the file names as arguments, never inside the script', () => {
  const cmd = runConfigCommand('/w/$(rm -rf x) "q"');
  assert.equal(cmd.argv[0], 'sh');
  assert.equal(cmd.argv[4], '/w/$(rm -rf x) "q"');
  assert.deepEqual(cmd.argv.slice(6), [...CONFIG_FILES]);
  assert.ok(!cmd.argv[2]!.includes('/w/'));
});

test('YAML and JSON flattened to dotted keys; Lightning\'s Python tags read as data, never constructed', () => {
  const c = parse([
    { name: 'config.yaml', text: 'model:\n  layers: 12\n  dims: [512, 512]\noptimizer:\n  name: adamw\n  lr: 3.0e-4\nseed: 1\nnotes: ~\n' },
    { name: 'hparams.yaml', text: 'betas: !!python/tuple\n- 0.9\n- 0.95\nargs: !!python/object:argparse.Namespace\n  lr: 0.1\nseed: 2\n' },
    { name: 'args.json', text: '{"batch_size": 32, "fp16": true, "tags": ["a", "b"]}' },
  ]);
  assert.deepEqual(c.files.map((f) => f.ok), [true, true, true]);
  const merged = mergedConfig(c);
  assert.equal(merged['model.layers'], '12');
  assert.equal(merged['model.dims'], '[512,512]');
  assert.equal(merged['optimizer.lr'], '0.0003');
  assert.equal(merged['notes'], 'null');
  assert.equal(merged['seed'], '1', 'the first file to give a key wins');
  assert.equal(merged['betas'], '[0.9,0.95]');
  assert.equal(merged['args.lr'], '0.1');
  assert.equal(merged['fp16'], 'true');
});

test('hostile files give a clear row each: too large, invalid, not text, not a mapping, not a file, unreadable', () => {
  const c = parse([
    { name: 'config.yaml', text: 'a: [1, 2\n' },
    { name: 'config.yml', text: Buffer.from([0xff, 0xfe, 0x00, 0x41]) },
    { name: 'config.json', text: '', size: 50 * 1024 * 1024 },
    { name: 'hparams.yaml', text: '- just\n- a list\n' },
    { name: 'args.json', text: '{"a": 1,' },
  ]);
  const errors = c.files.map((f) => (f.ok ? 'ok' : f.error));
  assert.match(errors[0]!, /^config\.yaml is not valid YAML: /);
  assert.match(errors[1]!, /^config\.yml is not UTF-8 text$/);
  assert.equal(errors[2], 'config.json is 52 MB: too large to be a config (only files up to 262 KB are read)');
  assert.match(errors[3]!, /^hparams\.yaml is not a mapping of keys to values \(it is a list\)$/);
  assert.match(errors[4]!, /^args\.json is not valid JSON: /);
  const other = parse([{ name: 'config.yaml', kind: 'N' }, { name: 'args.json', kind: 'P' }]);
  assert.deepEqual(other.files.map((f) => (f.ok ? 'ok' : f.error)), ['config.yaml is not a regular file', 'args.json cannot be read by the login user (permission denied)']);
  assert.throws(() => runConfigCommand('/gone').parse({ stdout: Buffer.from('X\n'), stderr: Buffer.alloc(0), code: 0, truncated: false }), (e: Error & { kind?: string }) => e.kind === 'path-missing');
  assert.deepEqual(configSummary({ files: [] }), ['Config: none of config.yaml, config.yml, config.json, hparams.yaml, args.json in the run folder']);
});

test('a YAML alias bomb is bounded: flattening and value text stop at their limits, fast', () => {
  const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i < 10; i++) levels.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]`);
  const maps = ['m0: &m0 {x: 1, y: 2, z: 3}'];
  for (let i = 1; i < 8; i++) maps.push(`m${i}: &m${i} {p: *m${i - 1}, q: *m${i - 1}, r: *m${i - 1}, s: *m${i - 1}, t: *m${i - 1}, u: *m${i - 1}, v: *m${i - 1}, w: *m${i - 1}, z: *m${i - 1}}`);
  const started = Date.now();
  const c = parse([{ name: 'config.yaml', text: [...levels, ...maps].join('\n') + '\n' }]);
  const f = c.files[0]!;
  assert.ok(f.ok);
  assert.ok(Object.keys(f.values).length <= MAX_CONFIG_KEYS);
  assert.ok(f.omitted > 0, 'what was left out is counted');
  assert.ok(f.values['j']!.length <= 201, 'a huge aliased list is cut, not written out');
  assert.ok(Date.now() - started < 5000);
  const flat = flattenConfig({ a: { b: { c: { d: { e: { f: { g: { h: { i: { j: 1 } } } } } } } } } });
  assert.equal(Object.keys(flat.values).length, 0);
  assert.equal(flat.omitted, 1, 'deeper than the depth bound');
});

test('config differences: only keys whose values differ (missing counts as different); unreadable configs left out', () => {
  assert.deepEqual(
    configDifferences([
      { lr: '0.1', seed: '1', layers: '12', opt: 'adam' },
      { lr: '0.01', seed: '2', layers: '12', opt: 'adam' },
      undefined,
      { lr: '0.1', seed: '3', layers: '12' },
    ]),
    ['lr', 'seed', 'opt'],
  );
  assert.deepEqual(configDifferences([{ a: '1' }]), [], 'one run has nothing to differ from');
});

const run = (name: string, extra: Partial<Run> = {}): Run => ({ name, path: `/w/${name}`, metrics: [`/w/${name}/metrics.jsonl`], checkpoints: [], metricsMtime: 1_000, live: false, ...extra });

test('the run table: name, state, latest step, last values, differing config; CSV and Markdown from the same cells', () => {
  const cfg = (lr: string, layers = '12') => ({ files: [{ name: 'config.yaml', ok: true as const, values: { lr, layers }, omitted: 0 }] });
  const table = buildRunTable(
    [
      { run: run('a', { live: true }), config: cfg('0.1'), latestStep: 300, last: { loss: 1.25, acc: 0.5 } },
      { run: run('b'), config: cfg('0.01'), latestStep: 200, last: { loss: 0.0001234 } },
      { run: run('c', { metrics: [] }), configError: 'config not read: Permission denied' },
    ],
    1_000 + 3 * 3600_000,
  );
  assert.deepEqual(table.metrics, ['loss', 'acc']);
  assert.deepEqual(table.differing, ['lr']);
  const cells = runTableCells(table);
  assert.deepEqual(cells[0], ['run', 'state', 'latest step', 'loss', 'acc', 'lr', 'notes']);
  assert.deepEqual(cells[1], ['a', 'live', '300', '1.25', '0.5', '0.1', '']);
  assert.deepEqual(cells[2], ['b', 'last logged 3 h ago', '200', '1.234e-4', '', '0.01', '']);
  assert.deepEqual(cells[3], ['c', 'no metrics log', '', '', '', '', 'config not read: Permission denied']);
  assert.match(cellsCsv(cells), /^run,state,latest step,loss,acc,lr,notes\r\na,live,300,1\.25,0\.5,0\.1,\r\n/);
  assert.match(cellsMarkdown(cells, [false, false, true, true, true, false, false]), /^\| run \| state \| latest step \| loss \| acc \| lr \| notes \|\n\| --- \| --- \| ---: \| ---: \| ---: \| --- \| --- \|\n/);
  assert.equal(runState(run('x', { metricsMtime: 0 }), 5), 'not logging');
});
