/**
 * The README's commands are what CI runs (issue 33): test/readmeCommand.sh finds the quick-start lines in the block
 * after `<!-- test: quick-start -->`, and `.ci/run` runs exactly the one ending in `npm test`, failing loudly when the
 * README has none. `.ci/run` is run here in a copy of the repository's scripts with `apt-get` and `npm` replaced by
 * stand-ins that record their arguments (the real ones would install packages and run every suite).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';

const ROOT = path.join(__dirname, '..', '..');
const SCRIPT = path.join(ROOT, 'test', 'readmeCommand.sh');
let tmp: string;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-readme-cmd-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function find(ending: string, readme: string): { status: number | null; stdout: string; stderr: string } {
  const file = path.join(tmp, `README-${Math.random().toString(36).slice(2)}.md`);
  fs.writeFileSync(file, readme);
  return spawnSync('bash', [SCRIPT, ending, file], { encoding: 'utf8' });
}

test("the repository's README: the quick-start line and the test line", () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  assert.equal(find('npm run demo', readme).stdout, 'npm ci && npm run demo\n');
  assert.equal(find('npm test', readme).stdout, 'npm ci && npm run setup && npm test\n');
});

test('the line is taken from the first block after the marker, its comment stripped', () => {
  const readme = ['```sh', 'npm ci && npm wrong test', '```', '<!-- test: quick-start -->', '', '```sh', 'npm ci && npm run demo   # watch it', 'npm install && npm test', '```', '```sh', 'later && npm test', '```', ''].join('\n');
  assert.equal(find('npm run demo', readme).stdout, 'npm ci && npm run demo\n');
  assert.equal(find('npm test', readme).stdout, 'npm install && npm test\n');
});

test('no marker, or no such line in its block: exit 1 and a message saying what is missing', () => {
  const noMarker = find('npm test', '```sh\nnpm ci && npm test\n```\n');
  assert.equal(noMarker.status, 1);
  assert.equal(noMarker.stdout, '');
  assert.match(noMarker.stderr, /no line ending in 'npm test' in the block after <!-- test: quick-start -->/);
  const noLine = find('npm test', '<!-- test: quick-start -->\n```sh\nnpm ci && npm run demo\n```\nnpm test\n');
  assert.equal(noLine.status, 1);
});

/** `.ci/run` in a copy of the scripts, README `readme`, with stand-in apt-get and npm logging to `calls`. */
function ciRun(readme: string): { status: number | null; output: string; calls: string[] } {
  const dir = fs.mkdtempSync(path.join(tmp, 'ci-'));
  fs.mkdirSync(path.join(dir, '.ci'));
  fs.mkdirSync(path.join(dir, 'test'));
  fs.mkdirSync(path.join(dir, 'bin'));
  fs.copyFileSync(path.join(ROOT, '.ci', 'run'), path.join(dir, '.ci', 'run'));
  fs.copyFileSync(SCRIPT, path.join(dir, 'test', 'readmeCommand.sh'));
  fs.writeFileSync(path.join(dir, 'README.md'), readme);
  const log = path.join(dir, 'calls');
  for (const tool of ['apt-get', 'npm']) {
    fs.writeFileSync(path.join(dir, 'bin', tool), `#!/bin/sh\necho "${tool} $*" >>"${log}"\n`, { mode: 0o755 });
  }
  const node = path.dirname(process.execPath);
  const r = spawnSync('bash', [path.join(dir, '.ci', 'run')], { encoding: 'utf8', env: { PATH: `${path.join(dir, 'bin')}:${node}:/usr/bin:/bin`, HOME: dir }, input: '' });
  const calls = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').trim().split('\n') : [];
  return { status: r.status, output: r.stdout + r.stderr, calls };
}

test(".ci/run runs the README's test line, exactly, after apt-get update", () => {
  const r = ciRun(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
  assert.equal(r.status, 0, r.output);
  assert.deepEqual(r.calls, ['apt-get update', 'npm ci', 'npm run setup', 'npm test']);
  assert.match(r.output, /the README's test line: npm ci && npm run setup && npm test/);
});

test('.ci/run with a README that has no test line fails before running anything but apt-get update', () => {
  const r = ciRun('# Remote Runs\n\n```sh\nnpm ci && npm test\n```\n');
  assert.notEqual(r.status, 0);
  assert.deepEqual(r.calls, ['apt-get update']);
  assert.match(r.output, /no line ending in 'npm test'/);
});
