/**
 * The packaged extension (`npm run package`, the same vsce packaging the e2e sessions install) holds only what runs:
 * the manifest, readme, changelog, licence, the production bundles and the icons and styles, with no tests, sources,
 * source maps, dependencies, dev tooling, README pictures or other documents (docs/, CONTRIBUTING.md, bench/); and its
 * bundles load nothing that a user's install lacks.
 */
import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { REPO_ROOT } from './toolchain';
import { describeVsix, extensionVsix, listVsix, readVsixFile, vsixProblems, type VsixEntry } from './vsix';

test('the .vsix holds the manifest, readme, changelog, licence, the three bundles and media, and nothing else', async (t) => {
  const vsix = await extensionVsix();
  const entries = listVsix(vsix);
  for (const line of describeVsix(vsix, entries).split('\n')) t.diagnostic(line);
  assert.deepEqual(vsixProblems(entries), []);
  const names = entries.map((e) => e.name);
  for (const name of ['extension/package.json', 'extension/readme.md', 'extension/changelog.md', 'extension/LICENSE.txt', 'extension/dist/extension.js', 'extension/dist/cli.js', 'extension/dist/webview.js', 'extension/media/remote-runs.svg']) {
    assert.ok(names.includes(name), `${name} is packaged`);
  }
  assert.deepEqual(names.filter((n) => /\.(map|ts)$|\/(src|test|bench|docs|node_modules)\/|screenshots/.test(n)), []);
  // Among documents, the three the Marketplace shows and no other.
  assert.deepEqual(names.filter((n) => /\.(md|txt)$|LICENSE/i.test(n)).sort(), ['extension/LICENSE.txt', 'extension/changelog.md', 'extension/readme.md']);
});

test('`vsce ls` of the package lists README, CHANGELOG and LICENSE as its only documents', async () => {
  const vsce = path.join(REPO_ROOT, 'node_modules', '.bin', 'vsce');
  const { stdout } = await promisify(execFile)(vsce, ['ls', '--no-dependencies'], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 });
  const files = stdout.split('\n').filter(Boolean);
  assert.ok(files.includes('package.json'), stdout);
  assert.deepEqual(files.filter((f) => !/^(dist|media)\/[^/]+\.(js|css|svg)$/.test(f) && f !== 'package.json').sort(), ['CHANGELOG.md', 'LICENSE', 'README.md']);
});

test('the bundles are production builds that require only Node built-ins and vscode', async () => {
  const vsix = await extensionVsix();
  // ssh2 tries its optional native binding and cpu-features inside try/catch; a missing one is expected.
  const optional = new Set(['cpu-features', './crypto/build/Release/sshcrypto.node']);
  const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
  const nodeBundles = listVsix(vsix).map((e) => e.name).filter((n) => /^extension\/dist\/[\w.-]+\.js$/.test(n) && !n.endsWith('/webview.js'));
  assert.ok(nodeBundles.includes('extension/dist/extension.js') && nodeBundles.includes('extension/dist/cli.js'));
  for (const bundle of nodeBundles) {
    const code = readVsixFile(vsix, bundle).toString('utf8');
    assert.doesNotMatch(code, /sourceMappingURL/, `${bundle}: no source map reference`);
    const required = [...code.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)].map((m) => m[1]);
    assert.ok(required.length > 0, `control: ${bundle} requires built-ins`);
    const foreign = [...new Set(required)].filter((m) => !builtins.has(m) && !optional.has(m) && !(bundle.endsWith('extension.js') && m === 'vscode'));
    assert.deepEqual(foreign, [], `${bundle} requires modules a --no-dependencies install does not have`);
  }
  const webview = readVsixFile(vsix, 'extension/dist/webview.js').toString('utf8');
  assert.doesNotMatch(webview, /\brequire\(|sourceMappingURL/);
});

test('the check names what does not belong, and a missing bundle', () => {
  const entry = (name: string): VsixEntry => ({ name, bytes: 1, offset: 0, method: 0, compressedBytes: 1 });
  const good = ['extension.vsixmanifest', '[Content_Types].xml', 'extension/package.json', 'extension/readme.md', 'extension/changelog.md', 'extension/LICENSE.txt',
    'extension/dist/extension.js', 'extension/dist/cli.js', 'extension/dist/webview.js', 'extension/media/metrics.css'].map(entry);
  assert.deepEqual(vsixProblems(good), []);
  const bad = [...good.filter((e) => e.name !== 'extension/dist/cli.js' && e.name !== 'extension/changelog.md'), ...['extension/dist/extension.js.map', 'extension/src/core/types.ts',
    'extension/test/unit/a.test.ts', 'extension/node_modules/ssh2/package.json', 'extension/media/screenshots/tree.png',
    'extension/docs/cli.md', 'extension/CONTRIBUTING.md', 'extension/bench/README.md'].map(entry)];
  assert.deepEqual(vsixProblems(bad), [
    'extension/dist/extension.js.map: not something the extension runs',
    'extension/src/core/types.ts: not something the extension runs',
    'extension/test/unit/a.test.ts: not something the extension runs',
    'extension/node_modules/ssh2/package.json: not something the extension runs',
    'extension/media/screenshots/tree.png: not something the extension runs',
    'extension/docs/cli.md: not something the extension runs',
    'extension/CONTRIBUTING.md: not something the extension runs',
    'extension/bench/README.md: not something the extension runs',
    'extension/dist/cli.js: missing',
    'extension/changelog.md: missing',
  ]);
});

test('`npm run package` ends with this check, which prints the size', () => {
  const pkg = JSON.parse(readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.match(pkg.scripts.package, /^vsce package .*-o dist\/remote-runs\.vsix && node --import tsx test\/e2e\/vsix\.ts --check dist\/remote-runs\.vsix$/);
});
