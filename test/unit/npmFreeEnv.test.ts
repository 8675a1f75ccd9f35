/**
 * What `npm run` puts into a child's environment is taken out again before the demo and the setup scripts start
 * anything (issue 33: code-server's postinstall read the outer npm's "node v20" from `npm_config_user_agent`). The
 * environments are the ones a real `npm run` gives its script; the TS rule (withoutNpmEnv) and the shell one the
 * setup scripts source (test/npmFreeEnv.sh) must give the same result.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { withoutNpmEnv } from '../../src/demo/launch';

const ROOT = path.join(__dirname, '..', '..');
let tmp: string;
/** The environment given to npm, and the one its script saw. */
let given: Record<string, string>;
let underNpm: Record<string, string>;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-npmenv-'));
  fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'probe', version: '1.0.0', scripts: { dump: 'node dump.js' } }));
  fs.writeFileSync(path.join(tmp, 'dump.js'), "require('fs').writeFileSync('env.json', JSON.stringify(process.env))");
  // A plain PATH (this Node's folder and the system's), not this process's: the suite itself may run under `npm run`,
  // whose own node_modules/.bin entries withoutNpmEnv rightly takes out as well.
  given = { PATH: `${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`, HOME: process.env.HOME ?? tmp, EDITOR: 'nano', LANG: 'C.UTF-8', KEEP_ME: 'yes' };
  execFileSync('npm', ['run', '--silent', 'dump'], { cwd: tmp, env: given, stdio: 'ignore' });
  underNpm = JSON.parse(fs.readFileSync(path.join(tmp, 'env.json'), 'utf8')) as Record<string, string>;
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('control: under a real `npm run`, npm_config_user_agent names this Node, and PATH starts with node_modules/.bin', () => {
  assert.match(underNpm.npm_config_user_agent, new RegExp(`node/${process.version.replace(/\./g, '\\.')}`));
  assert.match(underNpm.PATH.split(':')[0], /\/node_modules\/\.bin$/);
  assert.ok(underNpm.INIT_CWD);
});

test('withoutNpmEnv gives back exactly the environment npm was started with (and the PWD its shell sets)', () => {
  const { PWD, ...rest } = withoutNpmEnv(underNpm);
  assert.equal(PWD, fs.realpathSync(tmp));
  assert.deepEqual(rest, given);
});

test('outside npm run: NODE, COLOR and PATH stay; stray npm_config_* (any case) still go', () => {
  const env = { PATH: '/x/node_modules/.bin:/usr/bin', NODE: '/opt/node', COLOR: '1', npm_config_nodedir: '/usr', NPM_CONFIG_CACHE: '/c', HOME: '/h' };
  assert.deepEqual(withoutNpmEnv(env), { PATH: '/x/node_modules/.bin:/usr/bin', NODE: '/opt/node', COLOR: '1', HOME: '/h' });
});

test('test/npmFreeEnv.sh, sourced by the setup scripts, leaves what withoutNpmEnv leaves', () => {
  const out = execFileSync('bash', ['--norc', '-c', 'source "$1"; env -0', 'probe', path.join(ROOT, 'test', 'npmFreeEnv.sh')], { env: underNpm, encoding: 'utf8' });
  const seen: Record<string, string> = {};
  for (const entry of out.split('\0').filter(Boolean)) {
    const i = entry.indexOf('=');
    seen[entry.slice(0, i)] = entry.slice(i + 1);
  }
  // bash's own: the working folder, the shell level and the last command. (--norc: Node's stdio are sockets, which
  // makes bash take itself for a remote shell and read ~/.bashrc otherwise.)
  for (const k of ['PWD', 'OLDPWD', 'SHLVL', '_']) delete seen[k];
  const { PWD: _pwd, ...expected } = withoutNpmEnv(underNpm);
  assert.deepEqual(seen, expected);
});
