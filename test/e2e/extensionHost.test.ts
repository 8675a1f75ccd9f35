/**
 * Tests inside the extension host of a real VS Code (code-server's smoke-test driver route), plus the control that
 * the route reports a failing suite as a failure.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { bundleExtensionHostTests, runExtensionHostTests } from './vscode';

let workspace: string;
before(() => {
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-host-'));
});
after(() => rmSync(workspace, { recursive: true, force: true }));

test('inside the extension host: activation, API, registered commands, a command runs', async () => {
  const index = await bundleExtensionHostTests(path.join(__dirname, 'hostSuite', 'index.ts'));
  const result = await runExtensionHostTests({ testsIndexPath: index, workspaceFolder: workspace });
  const lines = result.log.filter((l) => /\b(not )?ok - |host tests:/.test(l));
  assert.equal(result.exitCode, 0, lines.join('\n'));
  assert.ok(lines.some((l) => l.includes('host tests: 3 passed, 0 failed')), result.log.join('\n'));
});

test('a failing extension-host suite is reported with a non-zero exit code and the failing check', async () => {
  const index = await bundleExtensionHostTests(path.join(__dirname, 'hostSuite', 'failing.ts'));
  const result = await runExtensionHostTests({ testsIndexPath: index, workspaceFolder: workspace });
  assert.notEqual(result.exitCode, 0);
  assert.ok(result.log.some((l) => l.includes('not ok - fails on purpose')), result.log.join('\n'));
  assert.ok(result.log.some((l) => l.includes('ok - runs inside VS Code')), result.log.join('\n'));
});
