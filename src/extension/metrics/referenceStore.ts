/**
 * The workspace's reference lines: read from `.vscode/remote-runs.references.json` in the first workspace
 * folder, written back when a panel adds or deletes one, and re-read when the file changes on disk (a pull, a
 * hand edit). Without a workspace folder the lines live in memory for the session.
 */
import * as vscode from 'vscode';
import type { ReferenceLine } from '../../shared/metricsProtocol';
import type { SpecReferenceRow } from '../../core/eval/spec/card';
import type { Logger } from '../log';
import { parseReferences, REFERENCES_FILE, rewriteBlocked, serializeReferences, withLineAdded, withLineRemoved } from '../../core/metrics/references';
import { RemoteRunsError } from '../../core/types';

export class ReferenceStore implements vscode.Disposable {
  private current: ReferenceLine[] = [];
  /** The file's card rows (version 2), written back untouched when a line is added or removed. */
  private specRows: SpecReferenceRow[] = [];
  /** Why the file as read cannot be written back whole (core/metrics/references.ts rewriteBlocked). */
  private blocked: string | undefined;
  private readonly changed = new vscode.EventEmitter<ReferenceLine[]>();
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private lastProblems = '';

  constructor(private readonly log: Logger) {
    const folder = this.folder();
    if (folder) {
      const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, REFERENCES_FILE));
      const reload = () => void this.load();
      this.disposables.push(watcher, watcher.onDidChange(reload), watcher.onDidCreate(reload), watcher.onDidDelete(reload));
    }
    void this.load();
  }

  get lines(): ReferenceLine[] {
    return this.current;
  }

  /** Where the file is (undefined without a workspace folder). */
  get uri(): vscode.Uri | undefined {
    const folder = this.folder();
    return folder ? vscode.Uri.joinPath(folder.uri, REFERENCES_FILE) : undefined;
  }

  async add(line: Omit<ReferenceLine, 'id'>): Promise<void> {
    await this.write(withLineAdded(this.current, line));
  }

  async remove(id: string): Promise<void> {
    await this.write(withLineRemoved(this.current, id));
  }

  async load(): Promise<void> {
    const uri = this.uri;
    if (!uri) return;
    let text: string | undefined;
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    } catch {
      text = undefined; // no file yet: no lines
    }
    const parsed = parseReferences(text);
    const problems = parsed.problems.join('\n');
    if (problems && problems !== this.lastProblems) this.log.warn(`reference lines: ${problems}`);
    this.lastProblems = problems;
    this.specRows = parsed.specRows;
    this.blocked = rewriteBlocked(parsed);
    this.set(parsed.lines);
  }

  private async write(lines: ReferenceLine[]): Promise<void> {
    const uri = this.uri;
    if (uri && this.blocked) throw new RemoteRunsError('bad-config', this.blocked);
    if (uri) {
      // The file first: what the views show is always what a commit of the workspace would hold.
      await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
      await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(serializeReferences(lines, this.specRows)));
    }
    this.set(lines);
  }

  private set(lines: ReferenceLine[]): void {
    if (JSON.stringify(lines) === JSON.stringify(this.current)) return;
    this.current = lines;
    this.changed.fire(lines);
  }

  private folder(): vscode.WorkspaceFolder | undefined {
    return vscode.workspace.workspaceFolders?.[0];
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
