import * as vscode from 'vscode';
import { isRemoteRunsError } from '../core/types';
import { emptyStateText } from '../core/emptyStates';
import { displayText } from '../shared/display';
import type { Logger } from './log';
import type { CommandId } from './commandIds';
import { CommandIds } from './commandIds';

/**
 * Every command goes through here: it is logged, its failure is caught and shown with actions that help
 * (Retry, Show Log, Open Settings), and it is registered as a disposable.
 */
export function registerCommand(
  id: CommandId,
  handler: (...args: any[]) => unknown,
  log: Logger,
): vscode.Disposable {
  const run = async (...args: unknown[]): Promise<unknown> => {
    log.info(`command ${id}`);
    try {
      return await handler(...args);
    } catch (e) {
      const kind = isRemoteRunsError(e) ? e.kind : undefined;
      const message = e instanceof Error ? e.message : String(e);
      log.error(`command ${id} failed${kind ? ` [${kind}]` : ''}: ${message}`);
      if (kind === 'cancelled') return undefined;
      const title = kind ? `${emptyStateText(kind).title}: ` : '';
      const actions = ['Retry', 'Show Log', ...(kind === 'bad-config' || kind === 'auth-failed' || kind === 'path-missing' ? ['Open Settings'] : [])];
      // The message may quote remote names and bytes: shown through the one display function (shared/display.ts).
      void vscode.window.showErrorMessage(displayText(`Remote Runs: ${title}${message}`), ...actions).then((choice) => {
        if (choice === 'Retry') void run(...args);
        else if (choice === 'Show Log') void vscode.commands.executeCommand(CommandIds.showLog);
        else if (choice === 'Open Settings') void vscode.commands.executeCommand(CommandIds.openSettings);
      });
      return undefined;
    }
  };
  return vscode.commands.registerCommand(id, run);
}
