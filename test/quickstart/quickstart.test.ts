/**
 * The README's quick start, run literally as a newcomer runs it : the quick-start line is read from the
 * README's `<!-- test: quick-start -->` block (test/readmeCommand.sh) and run by bash in a fresh clone of this
 * repository, with a fresh HOME, no code-server in the clone and no desktop `code` on PATH. So `npm ci` installs the
 * extension's packages and `npm run demo` builds, starts the demo host and installs code-server for real (test/vscode/
 * setup.sh: minutes) before it opens it. Asserted: the demo host answers the CLI's `ls`, the printed editor URL
 * answers 200 with the VS Code workbench page, and Ctrl-C (SIGINT to the foreground process group, as a terminal
 * sends it) stops everything: nothing of the group, the demo machine or code-server is left running.
 *
 * The one thing shared with this machine: HOME/.npm is a link to this user's npm cache, so the packages come from
 * the cache the machine's own installs filled (the install scripts and builds all run again). Its own suite
 * (test/run-all.sh runs it beside unit and integration): it uses no fixed port and nothing outside its temp folder.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { eventually } from '../harness/assertKind';
import { groupMembers, spawnGroup, type GroupProcess } from '../e2e/processGroup';
import { killLeftovers, processesMentioning } from '../harness/processes';

const ROOT = path.join(__dirname, '..', '..');
let tmp: string;
let demo: GroupProcess | undefined;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-quickstart-'));
});
after(() => {
  // code-server runs in a group of its own: if the demo died before stopping it, it is found by its folder.
  killLeftovers(demo ? [demo.pgid] : [], tmp);
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** PATH without folders holding an executable `code`: the quick start must take the code-server route here. */
function pathWithoutCode(pathVar: string): string {
  return pathVar
    .split(':')
    .filter((dir) => {
      try {
        fs.accessSync(path.join(dir, 'code'), fs.constants.X_OK);
        return false;
      } catch {
        return true;
      }
    })
    .join(':');
}

async function waitFor(pattern: RegExp, what: string, limitMs: number): Promise<RegExpMatchArray> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const m = demo!.output().match(pattern);
    if (m) return m;
    // The demo keeps its host running when the editor fails (e.g. code-server's install refusing the Node version
    // an outer npm's environment named): that is this test's failure, at once.
    assert.doesNotMatch(demo!.output(), /Could not open VS Code/, `before ${what}:\n${demo!.output().slice(-6000)}`);
    assert.ok(Date.now() < deadline, `${what} did not happen within ${limitMs / 1000} s:\n${demo!.output().slice(-6000)}`);
    assert.equal(demo!.child.exitCode, null, `the quick start exited before ${what}:\n${demo!.output().slice(-6000)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

test("the README's quick-start line in a fresh clone: demo host up, editor URL serves the workbench, Ctrl-C leaves nothing", { timeout: 40 * 60_000 }, async (t) => {
  const repo = path.join(tmp, 'remote-runs');
  execFileSync('git', ['clone', '-q', ROOT, repo]);
  assert.equal(fs.existsSync(path.join(repo, 'node_modules')), false, 'a fresh clone has no packages');
  assert.equal(fs.existsSync(path.join(repo, 'test', 'vscode', 'node_modules')), false, 'nor code-server');
  const line = execFileSync('bash', [path.join(repo, 'test', 'readmeCommand.sh'), 'npm run demo', path.join(repo, 'README.md')], { encoding: 'utf8' }).trim();
  assert.equal(line, 'npm ci && npm run demo');

  const home = path.join(tmp, 'home');
  const cache = path.join(tmp, 'cache');
  fs.mkdirSync(home);
  fs.symlinkSync(path.join(os.homedir(), '.npm'), path.join(home, '.npm'));
  // A login's environment, nothing of this test runner's (which may itself run under `npm test`).
  const env = { PATH: pathWithoutCode(process.env.PATH ?? '/usr/bin:/bin'), HOME: home, XDG_CACHE_HOME: cache, LANG: 'C.UTF-8', TERM: 'dumb' };
  const started = Date.now();
  const seconds = (): number => Math.round((Date.now() - started) / 1000);
  demo = spawnGroup('bash', ['-c', line], { cwd: repo, env });

  const ready = await waitFor(/ready on 127\.0\.0\.1:(\d+)/, 'the demo host', 15 * 60_000);
  t.diagnostic(`demo host ready after ${seconds()} s (npm ci, build, start)`);
  const base = path.join(cache, 'remote-runs-demo');
  const ls = execFileSync(
    process.execPath,
    [path.join(repo, 'dist', 'cli.js'), 'ls', 'demo/pct:200', '--json', '--config', path.join(base, 'cli-config.json'), '--known-hosts', path.join(base, 'known_hosts')],
    { encoding: 'utf8', env: { PATH: env.PATH, HOME: home } },
  );
  const runs = JSON.parse(ls).runs as { name: string; live: boolean; checkpoints: unknown[] }[];
  assert.deepEqual(runs.map((r) => [r.name, r.live]), [['workspace', true]], `ls against port ${ready[1]}`);
  assert.ok(runs[0].checkpoints.length >= 10);

  const [, url] = await waitFor(/Open this URL in your browser: (http:\/\/127\.0\.0\.1:\d+\/\S*)/, 'the editor URL', 30 * 60_000);
  t.diagnostic(`editor URL printed after ${seconds()} s (code-server installed, extension packaged, server up)`);
  assert.match(demo.output(), /installing code-server/, 'code-server was installed by the quick start itself');
  const page = await fetch(url);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /workbench/i, 'the VS Code workbench page');
  assert.match(html, /vs\/code\/browser\/workbench\/workbench/, 'it loads the workbench script');

  const machinePids = processesMentioning(path.join(base, 'mnt'));
  assert.ok(machinePids.length > 0, 'control: the demo machine runs (unshare with its mount point)');
  const editorPids = processesMentioning(path.join(base, 'vscode', 'user-data'));
  assert.ok(editorPids.length > 0, 'control: code-server runs with the demo profile');

  process.kill(-demo.pgid, 'SIGINT');
  await demo.exited;
  assert.match(demo.output(), /Demo stopped; nothing of it is left running/);
  // Generous waits (a loaded CI machine): they bound hanging, they measure nothing.
  await eventually(() => groupMembers(demo!.pgid).length === 0 && processesMentioning(tmp).length === 0, 'everything exited', 60_000).catch(() => undefined);
  assert.deepEqual(groupMembers(demo.pgid), []);
  assert.deepEqual(processesMentioning(tmp), []);
  for (const pid of [...machinePids, ...editorPids]) assert.equal(fs.existsSync(`/proc/${pid}`), false, `process ${pid} still runs`);
  assert.equal(fs.existsSync(path.join(base, 'running.json')), false);
  t.diagnostic(`whole quick start, stop included: ${seconds()} s`);
});
