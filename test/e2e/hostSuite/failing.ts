/** A suite that must fail: the control proving runExtensionHostTests reports failures, not always 0. */
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { runHostTests } from './runner';

/** Entry point called by VS Code's test loader. */
export function run(): Promise<void> {
  return runHostTests([
    ['runs inside VS Code', () => assert.match(vscode.version, /^\d+\.\d+/)],
    ['fails on purpose', () => assert.equal(1 + 1, 3)],
  ]);
}
