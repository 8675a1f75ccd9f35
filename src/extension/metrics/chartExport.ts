/**
 * Saving a chart's export (exportContent.ts) where the user says: VS Code's save dialog, opened in the download
 * folder setting (`remoteRuns.downloadDirectory`) or else the home folder, never writing without it (the dialog
 * itself asks before replacing an existing file). The bytes go to a temporary file beside the target, renamed over
 * it when complete: a crash leaves the old file (and at worst a stray temporary), never half a CSV.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { Logger } from '../log';
import type { ExportFile } from './exportContent';
import { downloadDirectory } from '../settings';
import { downloadFolder } from '../../core/eval/localCheckpoint';

/** The folder the save dialog opens in: the download folder when it is set and exists, else home. */
export function exportFolder(): string {
  const home = os.homedir();
  const setting = downloadDirectory();
  if (!setting) return home;
  const dir = downloadFolder(setting, home);
  try {
    if (fs.statSync(dir).isDirectory()) return dir;
  } catch {
    // Not there (yet): home instead.
  }
  return home;
}

/** Ask where, then write `file` there (see the file comment). Cancelling the dialog saves nothing. */
export function saveChartExport(log: Logger): (file: ExportFile) => Promise<void> {
  return async (file) => {
    const uri = await vscode.window.showSaveDialog({
      defaultUri: vscode.Uri.file(path.join(exportFolder(), file.name)),
      filters: file.kind === 'csv' ? { 'CSV (comma-separated values)': ['csv'] } : { 'PNG image': ['png'] },
      saveLabel: 'Save',
      title: `Save ${file.what}`,
    });
    if (!uri) return;
    const dir = vscode.Uri.joinPath(uri, '..');
    const base = path.posix.basename(uri.path);
    const tmp = vscode.Uri.joinPath(dir, `.${base}.${randomBytes(4).toString('hex')}.remote-runs-partial`);
    try {
      await vscode.workspace.fs.writeFile(tmp, file.bytes);
      await vscode.workspace.fs.rename(tmp, uri, { overwrite: true });
    } catch (e) {
      await Promise.resolve(vscode.workspace.fs.delete(tmp)).catch(() => undefined);
      const message = `Could not save ${uri.fsPath}: ${e instanceof Error ? e.message : String(e)}`;
      log.error(message);
      void vscode.window.showErrorMessage(message);
      return;
    }
    log.info(`saved ${file.what} to ${uri.fsPath}`);
    const open = await vscode.window.showInformationMessage(`Saved ${file.what} to ${uri.fsPath}`, 'Open');
    if (open === 'Open') await vscode.commands.executeCommand('vscode.open', uri);
  };
}
