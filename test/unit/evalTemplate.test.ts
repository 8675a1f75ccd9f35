/**
 * Template substitution: every value becomes one shell word (checked by running the result through the real sh),
 * unknown and quoted placeholders are clear bad-config errors, `$${` escapes, literal fields stay unquoted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { renderCommand, renderLiteral, templateVariables, checkTemplate } from '../../src/core/eval/template';
import { RemoteRunsError } from '../../src/core/types';
import type { TemplateValues } from '../../src/core/eval/types';

const values: TemplateValues = {
  checkpoint: '/ws/checkpoints/step_20000',
  run: 'drafter v2',
  runPath: '/ws',
  step: 20000,
  host: 'gpu1',
  target: 'pct:200',
};

/** What the real sh makes of a command line: the argv it passes to printf. */
function argvOf(commandLine: string): string[] {
  const out = execFileSync('sh', ['-c', `set -- ${commandLine}; for a in "$@"; do printf '%s\\0' "$a"; done`]);
  return out.toString('utf8').split('\0').slice(0, -1);
}

function badConfig(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && pattern.test(e.message));
}

test('placeholders become values; safe values stay readable', () => {
  assert.equal(renderCommand('python eval.py --ckpt ${checkpoint} --step ${step}', values), 'python eval.py --ckpt /ws/checkpoints/step_20000 --step 20000');
  assert.equal(renderCommand('echo ${run} ${target}', values), "echo 'drafter v2' pct:200");
});

test('a value with shell syntax is one word, next to text or alone (real sh)', () => {
  const evil = `a b; touch /tmp/x && $(id) \`id\` 'q' "d" \\ * ~ \n\t$HOME`;
  const v = { ...values, checkpoint: evil, run: evil };
  assert.deepEqual(argvOf(renderCommand('${checkpoint} --run=${run} ${checkpoint}/model.pt', v)), [evil, `--run=${evil}`, `${evil}/model.pt`]);
});

test('any string value survives as exactly one argument (property, real sh)', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !s.includes('\0')), (s) => {
      assert.deepEqual(argvOf(renderCommand('x ${checkpoint} y', { ...values, checkpoint: s })), ['x', s, 'y']);
    }),
    { numRuns: 60 },
  );
});

test('an unknown variable is a bad-config error naming it', () => {
  badConfig(() => renderCommand('eval ${ckpt}', values), /unknown variable \$\{ckpt\}.*known: \$\{checkpoint\}/);
  badConfig(() => checkTemplate('cd ${HOME}', 'command', true), /\$\{HOME\}.*write \$\$\{HOME\}/);
  badConfig(() => renderLiteral('${nope}/x', values, 'cwd'), /^cwd: unknown variable \$\{nope\}/);
});

test('an unclosed ${ is an error', () => {
  badConfig(() => renderCommand('echo ${checkpoint', values), /not closed/);
});

test('a placeholder inside quotes is rejected, since the quotes would become part of the value', () => {
  badConfig(() => renderCommand('echo "${checkpoint}"', values), /inside double quotes/);
  badConfig(() => renderCommand("echo '${checkpoint}'", values), /inside single quotes/);
  // Quotes that are closed before the placeholder do not count, nor escaped ones.
  assert.equal(renderCommand(`echo "a" 'b' \\" \${step}`, values), `echo "a" 'b' \\" 20000`);
});

test('$${ is a literal ${ for the shell; $VAR and \\${ are left alone', () => {
  assert.equal(renderCommand('echo $${HOME} $HOME \\${x} ${step}', values), 'echo ${HOME} $HOME \\${x} 20000');
  assert.equal(renderLiteral('$${A}-${step}', values, 'env.X'), '${A}-20000');
});

test('localCheckpoint needs a download first', () => {
  badConfig(() => renderCommand('eval ${localCheckpoint}', values), /only known once the checkpoint has been downloaded/);
  assert.equal(renderCommand('eval ${localCheckpoint}', { ...values, localCheckpoint: '/home/me/ck pt' }), "eval '/home/me/ck pt'");
  assert.deepEqual(templateVariables('a ${localCheckpoint} ${step} ${localCheckpoint}'), ['localCheckpoint', 'step']);
});

test('literal fields (cwd, env, sbatch) substitute without quoting', () => {
  assert.equal(renderLiteral('${runPath}/eval dir', { ...values, runPath: "/w s/it's" }, 'cwd'), "/w s/it's/eval dir");
  assert.equal(renderLiteral('--job-name=eval-${step}', values, 'sbatch[0]'), '--job-name=eval-20000');
});
