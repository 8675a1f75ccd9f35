/**
 * Checks run inside the extension host (loaded by runExtensionHostTests): the extension activates and hands out its
 * API, every command its manifest contributes is registered, and a command runs through the real command service.
 */
import assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { runHostTests } from './runner';

const EXTENSION_ID = 'remote-runs.remote-runs';

/** Entry point called by VS Code's test loader. */
export function run(): Promise<void> {
  return runHostTests([
    ['the extension activates and returns its API', async () => {
      const ext = vscode.extensions.getExtension(EXTENSION_ID);
      assert.ok(ext, `${EXTENSION_ID} is not loaded`);
      const api = (await ext.activate()) as Record<string, unknown>;
      assert.ok(ext.isActive);
      assert.ok(api.tree, 'API has no tree');
      assert.ok(api.core, 'API has no core');
    }],
    ['every contributed command is registered', async () => {
      const ext = vscode.extensions.getExtension(EXTENSION_ID);
      const contributed = ((ext?.packageJSON as { contributes?: { commands?: { command: string }[] } }).contributes
        ?.commands ?? []).map((c) => c.command);
      assert.ok(contributed.length > 0, 'the manifest contributes no commands');
      const registered = new Set(await vscode.commands.getCommands(true));
      assert.deepEqual(contributed.filter((c) => !registered.has(c)), []);
    }],
    ['remoteRuns.refresh runs without throwing', async () => {
      await vscode.commands.executeCommand('remoteRuns.refresh');
    }],
  ]);
}
