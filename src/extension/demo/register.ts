/**
 * Wires "Try the demo host" and "Stop the Demo Host": the controller (registered, so deactivation stops the demo),
 * the two commands through the one command wrapper, and the `remoteRuns.demoRunning` context key for menus.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import { DemoHostController } from './demoHostController';

export interface DemoDeps {
  store: DisposableStore;
  context: vscode.ExtensionContext;
  log: Logger;
}

/** Registers the demo commands; returns the controller (tests and other features may ask what runs). */
export function registerDemo({ store, context, log }: DemoDeps): DemoHostController {
  const controller = store.register(new DemoHostController(path.join(context.globalStorageUri.fsPath, 'demo'), log));
  store.register(
    controller.onDidChange((running) => void vscode.commands.executeCommand('setContext', 'remoteRuns.demoRunning', running !== undefined)),
  );
  store.register(
    registerCommand(
      CommandIds.tryDemoHost,
      async () => {
        const running = await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: 'Remote Runs: starting the demo training host…' },
          () => controller.start(),
        );
        await vscode.commands.executeCommand('remoteRuns.hosts.focus');
        void vscode.window
          .showInformationMessage(
            `Remote Runs: the demo host "${running.name}" runs on 127.0.0.1:${running.port} until this window closes. ` +
              'Its Proxmox container pct:200 has a run that is training right now.',
            'Stop Demo Host',
          )
          .then((choice) => choice && vscode.commands.executeCommand(CommandIds.stopDemoHost));
      },
      log,
    ),
  );
  store.register(registerCommand(CommandIds.stopDemoHost, () => controller.stop(), log));
  void controller.removeStaleEntries().catch((e: unknown) => log.warn(`demo host: could not clean the settings: ${String(e)}`));
  return controller;
}
