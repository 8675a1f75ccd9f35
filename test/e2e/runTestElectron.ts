/**
 * For contributors with a desktop: runs the extension-host suite (hostSuite/index.ts) in a VS Code downloaded by
 * `@vscode/test-electron`. Not part of `npm test` (CI cannot download VS Code; it runs the same suite through
 * code-server, see extensionHost.test.ts). Usage: `node esbuild.mjs && node --import tsx test/e2e/runTestElectron.ts`.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runTests } from '@vscode/test-electron';
import { bundleExtensionHostTests } from './extensionHostTests';
import { REPO_ROOT } from './toolchain';

async function main(): Promise<void> {
  const extensionTestsPath = await bundleExtensionHostTests(path.join(__dirname, 'hostSuite', 'index.ts'));
  const workspace = mkdtempSync(path.join(tmpdir(), 'rr-electron-ws-'));
  await runTests({
    extensionDevelopmentPath: REPO_ROOT,
    extensionTestsPath,
    // Other installed extensions stay off so they cannot interfere; the development extension still loads.
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust'],
  });
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
