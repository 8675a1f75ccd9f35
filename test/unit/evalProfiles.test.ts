/** Validation of remoteRuns.evalProfiles, and the JSON schema for package.json. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EVAL_PROFILE_JSON_SCHEMA, parseEvalProfiles, parseEvalProfile } from '../../src/core/eval/profiles';
import { RemoteRunsError } from '../../src/core/types';

test('a full profile validates into typed values', () => {
  const { profiles, problems } = parseEvalProfiles([
    { name: 'acc', command: 'python eval.py ${checkpoint}' },
    { name: 'remote', where: 'gpu2/pct:300', command: 'x ${checkpoint}', cwd: '~/evals', env: { CUDA_VISIBLE_DEVICES: '0', RUN: '${run}' }, resultPattern: 'acc=(?<acc>[0-9.]+)' },
    { name: 'local', where: 'local', command: 'x ${localCheckpoint}' },
    { name: 'slurm', command: 'x', scheduler: 'slurm', sbatch: ['--gres=gpu:1', '--job-name=e-${step}'] },
  ]);
  assert.deepEqual(problems, []);
  assert.deepEqual(profiles.map((p) => p.where), [
    { kind: 'target' },
    { kind: 'remote', host: 'gpu2', target: { kind: 'pct', id: '300' } },
    { kind: 'local' },
    { kind: 'target' },
  ]);
  assert.deepEqual(profiles[1].env, { CUDA_VISIBLE_DEVICES: '0', RUN: '${run}' });
  assert.deepEqual(profiles[3].sbatch, ['--gres=gpu:1', '--job-name=e-${step}']);
});

test('each bad entry is reported with its index and field and skipped; good ones stay', () => {
  const { profiles, problems } = parseEvalProfiles([
    { name: 'ok', command: 'x' },
    { name: 'typo', command: 'eval ${ckpt}' },
    { name: 'quoted', command: 'eval "${checkpoint}"' },
    { name: 'where', command: 'x', where: 'gpu2' },
    { name: 'env', command: 'x', env: { '1BAD': 'v' } },
    { name: 'pattern', command: 'x', resultPattern: 'acc=([0-9]+)' },
    { name: 'sbatch', command: 'x', sbatch: ['--gres=gpu:1'] },
    { name: 'ok', command: 'y' },
    { command: 'x' },
    'not an object',
    { name: 'extra', command: 'x', comand: 'typo' },
  ]);
  assert.deepEqual(profiles.map((p) => p.name), ['ok', 'extra']);
  const expect = [
    /^remoteRuns\.evalProfiles\[1\]\.command: unknown variable \$\{ckpt\}/,
    /^remoteRuns\.evalProfiles\[2\]\.command: \$\{checkpoint\} stands inside double quotes/,
    /^remoteRuns\.evalProfiles\[3\]\.where: .*"gpu2" is not "target", "local" or a host\/target address/,
    /^remoteRuns\.evalProfiles\[4\]\.env\.1BAD: is not a valid environment variable name/,
    /^remoteRuns\.evalProfiles\[5\]\.resultPattern: has no named group/,
    /^remoteRuns\.evalProfiles\[6\]\.sbatch: only applies with scheduler: "slurm"/,
    /^remoteRuns\.evalProfiles\[7\]\.name: duplicate name "ok"/,
    /^remoteRuns\.evalProfiles\[8\]\.name: is required/,
    /^remoteRuns\.evalProfiles\[9\]: expected an object/,
    /^remoteRuns\.evalProfiles\[10\]\.comand: unknown field, ignored/,
  ];
  assert.equal(problems.length, expect.length, problems.join('\n'));
  expect.forEach((re, i) => assert.match(problems[i], re));
});

test('parseEvalProfile throws bad-config with the problems', () => {
  assert.throws(() => parseEvalProfile({ name: 'x', command: '${nope}' }), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /\$\{nope\}/.test(e.message));
});

test('the schema lists exactly the validated fields and the where pattern accepts what the validator accepts', () => {
  assert.deepEqual(Object.keys(EVAL_PROFILE_JSON_SCHEMA.properties).sort(), ['command', 'cwd', 'env', 'name', 'resultPattern', 'sbatch', 'scheduler', 'where']);
  const re = new RegExp(EVAL_PROFILE_JSON_SCHEMA.properties.where.pattern);
  for (const w of ['target', 'local', 'gpu2/pct:300', 'box/docker:trainer', 'box/host']) {
    assert.ok(re.test(w), w);
    assert.equal(parseEvalProfiles([{ name: 'n', command: 'x', where: w }]).problems.length, 0, w);
  }
  for (const w of ['gpu2', 'gpu2/300', 'a/b/c']) assert.ok(!re.test(w), w);
});
