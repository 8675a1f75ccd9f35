/**
 * Checkpoint downloads in VS Code: from the tree (a checkpoint's context menu or inline button) or the palette
 * (host → target → run → checkpoint quick picks, or the latest checkpoint of the selected/pinned run), with a
 * cancellable progress notification. The bytes move through the core (`src/core/transfer`).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { HostDirectory } from '../../core/hosts';
import type { RemoteRunsCore } from '../../core/service';
import { pickCheckpointWithNote as checkpointOf, runListedInPart } from '../../core/service';
import type { ConnectionPool } from '../../core/ssh/pool';
import { discardPartialDownload, findPartialDownloads, transferSourceFor, partialPercent, progressText, pullCheckpoint, skippedLines, verificationText, type PartialDownload, type DownloadResult, type PlanFile, type PullOutcome, type VerifyMode, type ClientChoice, type TransferSource } from '../../core/transfer';
import { isRemoteRunsError, type Checkpoint, type Run, type TargetRef } from '../../core/types';
import { formatBytes } from '../../core/util/format';
import { hasLoneSurrogate } from '../../core/util/nameBytes';
import { CommandIds } from '../commandIds';
import { pickCheckpoint, quickPick, type Item } from '../pickCheckpoint';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import { downloadDirectory, setUserSetting, setting, type Settings } from '../settings';
import type { TreeNode } from '../../core/tree/nodes';
import type { RunsTreeProvider } from '../tree/treeProvider';
import { isInside, offeredDownloadFolder } from './downloadFolder';
import { downloadFolder, downloadRootFor } from '../../core/eval/localCheckpoint';
import { withCancellation } from '../../core/util/abort';

export interface DownloadDeps {
  store: DisposableStore;
  core: RemoteRunsCore;
  pool: ConnectionPool;
  hosts: HostDirectory;
  tree: RunsTreeProvider;
  view: vscode.TreeView<TreeNode>;
  log: Logger;
  context: vscode.ExtensionContext;
  /** sshPath is read through it: user settings only, never a workspace's program. */
  settings: Settings;
  /** A download ended with files in place (the tree's downloaded marks are read again). */
  onDidDownload?(): void;
}

/** What a download is of: a checkpoint of a run on a host's target. */
export interface CheckpointRef {
  hostName: string;
  target: TargetRef;
  run: Run;
  checkpoint: Checkpoint;
  /** What picking it passed over or warns of (`latest` skipped a save still being written; a named incomplete one). */
  note?: string;
}

const PINNED_KEY = 'remoteRuns.pinnedRun';

export function registerDownloads(deps: DownloadDeps): void {
  const { store, log } = deps;
  store.register(
    registerCommand(CommandIds.downloadCheckpoint, async (node?: TreeNode) => {
      const ref = node?.type === 'checkpoint' ? { hostName: node.hostName, target: node.target, run: node.run, checkpoint: node.checkpoint } : await pickCheckpoint(deps.core, deps.hosts, 'Download Checkpoint');
      if (ref?.checkpoint.incomplete !== undefined) sayNote(deps, `${ref.checkpoint.name} is incomplete (${ref.checkpoint.incomplete}): downloading it because it was chosen`);
      if (ref) await downloadCheckpoint(deps, ref);
    }, log),
  );
  store.register(
    registerCommand(CommandIds.downloadLatestCheckpoint, async (node?: TreeNode) => {
      const ref = await latestOf(deps, node);
      if (ref?.note) sayNote(deps, ref.note);
      if (ref) await downloadCheckpoint(deps, ref);
    }, log),
  );
  void announceInterrupted(deps).catch((e: unknown) => log.warn(`Looking for interrupted downloads: ${e instanceof Error ? e.message : String(e)}`));
}

/** A pick's note, in the log and as a warning (not modal: the download goes on). */
function sayNote(deps: DownloadDeps, note: string): void {
  deps.log.warn(note);
  void vscode.window.showWarningMessage(`Remote Runs: ${note}`);
}

/**
 * Downloads a window reload, a crash, a cancel or a killed CLI interrupted, announced once when the extension starts:
 * one notification each (at most MAX_ANNOUNCED, largest share first) offering Resume (the same download, which
 * continues from the `.part` files) or Discard (removes them). The tree marks the checkpoint `partial N%` meanwhile.
 */
export async function announceInterrupted(deps: DownloadDeps): Promise<void> {
  const setting = downloadDirectory();
  if (!setting) return;
  const base = downloadFolder(setting);
  const scan = async (): Promise<PartialDownload[]> => {
    const hosts = await fs.promises.readdir(base, { withFileTypes: true }).catch(() => []);
    const found: PartialDownload[] = [];
    for (const h of hosts) if (h.isDirectory()) found.push(...(await findPartialDownloads(path.join(base, h.name))));
    return found;
  };
  const announced = new Set<string>();
  let left = MAX_ANNOUNCED;
  // A window that was just reloaded may still hold its download's lock for a moment (its extension host ends after
  // the new one starts): partials still running are looked at again for a while.
  for (let waited = 0; left > 0; waited += RECHECK_MS) {
    const found = await scan();
    for (const p of found.filter((x) => !x.running)) {
      const key = JSON.stringify([p.root, p.origin]);
      if (announced.has(key) || left <= 0) continue;
      announced.add(key);
      left--;
      void offerResume(deps, p);
    }
    if (!found.some((x) => x.running) || waited >= RECHECK_FOR_MS || deps.store.isDisposed) return;
    await new Promise((r) => setTimeout(r, RECHECK_MS));
  }
}

const MAX_ANNOUNCED = 3;
const RECHECK_MS = 2000;
const RECHECK_FOR_MS = 60_000;

async function offerResume(deps: DownloadDeps, p: PartialDownload): Promise<void> {
  const { host, target, run: runName, checkpoint: name } = p.origin;
  const label = `${runName}/${name}`;
  deps.log.info(`interrupted download of ${label} from ${host}: ${p.bytesHere} of ${p.bytesTotal} bytes in ${p.parts.map((x) => x.part).join(', ')}`);
  const choice = await vscode.window.showInformationMessage(
    `Remote Runs: the download of ${label} from ${host} was interrupted with ${partialPercent(p.bytesHere, p.bytesTotal)} here (${formatBytes(p.bytesHere)} of ${formatBytes(p.bytesTotal)}).`,
    'Resume',
    'Discard',
  );
  try {
    if (choice === 'Resume') {
      const { run } = await deps.core.findRun(host, target, runName);
      const checkpoint = run.checkpoints.find((c) => c.name === name);
      if (!checkpoint) throw new Error(`${label} is no longer on ${host}; Discard removes what was downloaded of it`);
      await downloadCheckpoint(deps, { hostName: host, target, run, checkpoint });
    } else if (choice === 'Discard') {
      await discardPartialDownload(p);
      deps.onDidDownload?.();
      void vscode.window.showInformationMessage(`Remote Runs: discarded the interrupted download of ${label}.`);
    }
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    deps.log.error(`${choice ?? 'announce'} ${label}: ${message}`);
    void vscode.window.showErrorMessage(`Remote Runs: ${label}: ${message}`);
  }
}

/** The latest checkpoint of the run given, selected in the tree, or pinned — re-listed so it is truly the latest. */
async function latestOf(deps: DownloadDeps, node?: TreeNode): Promise<CheckpointRef | undefined> {
  const from = node ?? deps.view.selection[0];
  let where: { hostName: string; target: TargetRef; runName: string } | undefined;
  if (from && (from.type === 'run' || from.type === 'checkpoint' || from.type === 'file')) {
    const run = from.type === 'file' ? (from.parent?.type === 'checkpoint' ? from.parent.run : undefined) : from.run;
    if (run) where = { hostName: from.hostName, target: from.target, runName: run.name };
  }
  if (!where) {
    const pinned = deps.context.workspaceState.get<{ hostName?: string; target?: TargetRef; runName?: string }>(PINNED_KEY);
    if (pinned?.hostName && pinned.target && pinned.runName) where = { hostName: pinned.hostName, target: pinned.target, runName: pinned.runName };
  }
  if (!where) return pickCheckpoint(deps.core, deps.hosts, 'Download Latest Checkpoint', { latestOnly: true });
  const { run, listing } = await deps.core.findRun(where.hostName, where.target, where.runName);
  const { checkpoint, note } = checkpointOf(run, 'latest', runListedInPart(listing, run));
  return { hostName: where.hostName, target: where.target, run, checkpoint, ...(note ? { note } : {}) };
}

/**
 * The folder downloads of a host land under: the setting, else asked once and remembered in the user settings. The
 * folder offered is outside the workspace (downloadFolder.ts); one chosen inside a workspace folder is taken, with a
 * warning that its checkpoints will show in Explorer and git.
 */
async function destinationRoot(hostName: string): Promise<string | undefined> {
  let dir = downloadDirectory();
  if (!dir) {
    const offered = offeredDownloadFolder(os.homedir(), (p) => {
      try {
        return fs.statSync(p).isDirectory();
      } catch {
        return false;
      }
    });
    const items: Item<string | 'choose'>[] = [
      { label: offered, description: 'outside the workspace; kept in your user settings', value: offered },
      { label: 'Choose a folder…', value: 'choose' },
    ];
    const picked = await quickPick('Where should checkpoints be downloaded?', items, 'Downloads go to <folder>/<host>/<run>/<checkpoint>/');
    if (!picked) return undefined;
    if (picked === 'choose') {
      const uris = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, canSelectMany: false, openLabel: 'Download Here' });
      if (!uris?.[0]) return undefined;
      dir = uris[0].fsPath;
      const inside = vscode.workspace.workspaceFolders?.find((f) => isInside(dir, f.uri.fsPath));
      if (inside) {
        void vscode.window.showWarningMessage(`Checkpoints will be downloaded inside the workspace folder ${inside.name}: they will show in Explorer, search and git (add the folder to .gitignore).`);
      }
    } else {
      dir = picked;
    }
    // The user's settings, not the workspace's: a download folder is a property of this machine, not of a project
    // (and a workspace's .vscode/settings.json is often committed).
    await setUserSetting('downloadDirectory', dir);
  }
  return downloadRootFor(dir, hostName);
}

/** Plan, ask where needed, move the bytes with a cancellable progress notification, then offer what is next. */
export async function downloadCheckpoint(deps: DownloadDeps, ref: CheckpointRef, fresh = false): Promise<DownloadResult | undefined> {
  const root = await destinationRoot(ref.hostName);
  if (!root) return undefined;
  // A cluster's pod container is read through kubectl exec (transfer/podSource.ts); a host's target through its pool.
  const source: TransferSource = transferSourceFor(deps.core, deps.pool, (h) => deps.hosts.resolve(h), ref.hostName, ref.target);
  const verify: VerifyMode = setting<string>('verifyDownloads', 'sha256') === 'size' ? 'size' : 'sha256';
  const label = `${ref.run.name}/${ref.checkpoint.name}`;

  let outcome: PullOutcome;
  try {
    outcome = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Downloading ${label}`, cancellable: true },
      (progress, token) => {
        let reported = 0;
        return withCancellation(token, (signal) =>
          pullCheckpoint(source, ref.checkpoint, { root, run: ref.run.name }, {
            signal,
            verify,
            fresh,
            concurrency: Math.max(1, setting<number>('downloadConcurrency', 4)),
            client: downloadClient(),
            sshPath: deps.settings.sshPath(),
            logger: deps.log,
            holder: 'a VS Code window',
            overwrite: (file) => askOverwrite(file),
            onProgress: (p) => {
              const pct = p.phase === 'list' ? 0 : p.bytesTotal > 0 ? (100 * p.bytesDone) / p.bytesTotal : 100;
              progress.report({ message: progressText(p), increment: Math.max(0, pct - reported) });
              reported = Math.max(reported, pct);
            },
          }),
        );
      },
    );
  } catch (e) {
    if (isRemoteRunsError(e) && e.kind === 'verify-failed') {
      const again = await vscode.window.showErrorMessage(`Remote Runs: ${label}: ${e.message}`, 'Fetch Again', 'Show Log');
      if (again === 'Fetch Again') return downloadCheckpoint(deps, ref, true);
      if (again === 'Show Log') void vscode.commands.executeCommand(CommandIds.showLog);
      return undefined;
    }
    if (isRemoteRunsError(e) && e.kind === 'cancelled') {
      void vscode.window.showInformationMessage(`Remote Runs: download of ${label} cancelled; what arrived is kept and the next download continues from it.`);
      return undefined;
    }
    throw e;
  }
  const { result, declined, plan } = outcome;
  deps.onDidDownload?.();
  const client = result.client === 'openssh' ? 'OpenSSH' : result.client === 'kubectl' ? 'kubectl exec' : `ssh2${result.clientNote ? ` (not OpenSSH: ${result.clientNote})` : ''}`;
  deps.log.info(`download ${label}: ${result.bytesFetched} bytes fetched, ${outcome.resumedBytes} resumed, ${result.lanes} lane(s) over ${result.transport} by ${client}, ${result.retries} retries; ${outcome.summary}`);
  const summary = outcome.alreadyThere
    ? `Remote Runs: ${label} is ${outcome.summary}.`
    : declined.length
      ? `Remote Runs: ${label} downloaded, except ${declined.length} file(s) you kept.`
      : `Remote Runs: downloaded ${label} (${formatBytes(plan.bytes)}${outcome.resumedBytes ? `, ${formatBytes(outcome.resumedBytes)} resumed` : ''}, ${verificationText(verify)})${plan.skipped.length ? `, but ${plan.skipped.length} entr${plan.skipped.length > 1 ? 'ies were' : 'y was'} left out (see the log)` : ''}.`;
  for (const line of skippedLines(plan)) deps.log.warn(`download ${label}: ${line}`);
  void afterDownload(summary, result.localRoot, ref);
  return result;
}

/** remoteRuns.downloadClient, anything unknown read as the default. */
export function downloadClient(): ClientChoice {
  const v = setting<string>('downloadClient', 'auto');
  return v === 'openssh' || v === 'ssh2' ? v : 'auto';
}

async function askOverwrite(file: PlanFile): Promise<boolean> {
  const reason = file.state.kind === 'differs' ? file.state.reason : 'no-record';
  const why = reason === 'local-changed' ? 'was changed locally since it was downloaded' : reason === 'remote-changed' ? 'is an older download; the remote file changed' : 'was not downloaded by Remote Runs';
  const replace = 'Replace';
  const answer = await vscode.window.showWarningMessage(
    `${path.basename(file.localPath)} already exists and differs from the remote file.`,
    { modal: true, detail: `${file.localPath} ${why}.\nReplace it with ${file.remotePath} (${formatBytes(file.bytes)})?` },
    replace,
  );
  return answer === replace;
}

async function afterDownload(message: string, localPath: string, ref: CheckpointRef): Promise<void> {
  // "Evaluate" is offered when the user has eval profiles: the natural next step after fetching a checkpoint.
  const profiles = setting<unknown>('evalProfiles', []);
  const actions = ['Reveal', 'Open Folder', ...(Array.isArray(profiles) && profiles.length > 0 ? ['Evaluate'] : [])];
  const choice = await vscode.window.showInformationMessage(message, ...actions);
  // A VS Code URI holds text, not bytes: a path whose names are not UTF-8 (nameBytes.ts) is shown by its nearest folder
  // that is (Uri.file would throw on the lone surrogates, or name another file with U+FFFD).
  const shown = utf8Ancestor(localPath);
  const uri = vscode.Uri.file(shown);
  if (choice === 'Reveal') await vscode.commands.executeCommand('revealFileInOS', uri);
  else if (choice === 'Open Folder') await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(shown === localPath ? path.dirname(localPath) : shown), { forceNewWindow: true });
  else if (choice === 'Evaluate') {
    // The Evaluate command takes a checkpoint as the tree gives it.
    const node: TreeNode = { type: 'checkpoint', id: '', hostName: ref.hostName, target: ref.target, run: ref.run, checkpoint: ref.checkpoint };
    await vscode.commands.executeCommand(CommandIds.evaluateCheckpoint, node);
  }
}

/** `p`, or its nearest ancestor whose path is text (holds no byte that is not UTF-8). */
function utf8Ancestor(p: string): string {
  let at = p;
  while (hasLoneSurrogate(at) && path.dirname(at) !== at) at = path.dirname(at);
  return at;
}
