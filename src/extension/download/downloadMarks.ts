/**
 * The "downloaded" mark on checkpoints in the tree: what core/transfer/localCopy.ts says of each checkpoint drawn,
 * read from the local side only (no remote command), cached per checkpoint and checked again when the tree draws it
 * after a while, when a download ends, and when something under the download folder is deleted. It survives a
 * reload because it is read from the download's own records, not kept in memory.
 */
import * as vscode from 'vscode';
import { localCopyOf, partialPercent, type LocalCopy } from '../../core/transfer';
import { downloadFolder, downloadRootFor } from '../../core/eval/localCheckpoint';
import type { CheckpointNode } from '../../core/tree/nodes';
import { downloadDirectory } from '../settings';

/** A mark older than this is checked again the next time its checkpoint is drawn. */
const STALE_MS = 3000;

interface Entry {
  node: CheckpointNode;
  /** What the listing said of the checkpoint when this was read (a re-listing with other files reads again). */
  listed: string;
  copy?: LocalCopy;
  at: number;
  checking?: Promise<void>;
}

export class DownloadMarks implements vscode.Disposable {
  private readonly entries = new Map<string, Entry>();
  private readonly subs: vscode.Disposable[] = [];
  private watcher: vscode.Disposable[] = [];
  private watched = '';

  constructor(private readonly redraw: (node: CheckpointNode) => void) {
    this.watch();
    this.subs.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('remoteRuns.downloadDirectory')) {
          this.watch();
          this.recheckAll();
        }
      }),
      // Back in the window: a copy may have been deleted outside VS Code (the watcher does not see every file system).
      vscode.window.onDidChangeWindowState((s) => s.focused && this.recheckAll()),
    );
  }

  /** The mark as last read (undefined until read); a stale or missing one is read again and the node redrawn if it changed. */
  markOf(node: CheckpointNode): LocalCopy | undefined {
    const listed = JSON.stringify([node.checkpoint.bytes, node.checkpoint.files.length, node.checkpoint.mtime]);
    let entry = this.entries.get(node.id);
    if (!entry || entry.listed !== listed) {
      entry = { node, listed, at: 0 };
      this.entries.set(node.id, entry);
    }
    entry.node = node;
    if (Date.now() - entry.at > STALE_MS) void this.check(entry);
    return entry.copy;
  }

  /** Read every mark again (a download ended, a file was deleted). */
  recheckAll(): void {
    for (const e of this.entries.values()) void this.check(e);
  }

  private check(entry: Entry): Promise<void> {
    if (entry.checking) return entry.checking;
    entry.at = Date.now();
    entry.checking = (async () => {
      const dir = downloadDirectory();
      const copy: LocalCopy | undefined = dir ? await localCopyOf(downloadRootFor(dir, entry.node.hostName), entry.node.run.name, entry.node.checkpoint) : undefined;
      const share = (c?: LocalCopy): string => (c?.kind === 'partial' ? partialPercent(c.bytesHere, c.bytesTotal) : '');
      const changed = copy?.kind !== entry.copy?.kind || copy?.path !== entry.copy?.path || share(copy) !== share(entry.copy);
      entry.copy = copy;
      entry.at = Date.now();
      if (changed && this.entries.get(entry.node.id) === entry) this.redraw(entry.node);
    })().finally(() => {
      entry.checking = undefined;
    });
    return entry.checking;
  }

  /** A deletion under the download folder drops the marks it concerns (all are read again: a few local stats each). */
  private watch(): void {
    const setting = downloadDirectory();
    const dir = setting ? downloadFolder(setting) : '';
    if (dir === this.watched) return;
    this.watcher.splice(0).forEach((d) => d.dispose());
    this.watched = dir;
    if (!dir) return;
    const w = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(dir), '**/*'), true, true, false);
    this.watcher.push(w, w.onDidDelete(() => this.recheckAll()));
  }

  dispose(): void {
    this.watcher.splice(0).forEach((d) => d.dispose());
    this.subs.forEach((s) => s.dispose());
    this.entries.clear();
  }
}
