/**
 * The workspace's reference lines and speculative-decoding card rows: read from
 * `.vscode/remote-runs.references.json` in the first workspace folder, written back when a panel adds or deletes a
 * line or a card adds or removes a row, and re-read when the file changes on disk (a pull, a hand edit). The one
 * owner of that file in the editor: the metrics panels and the cards both go through it. Every edit reads the file
 * again first, so what is written is the file as it is now plus the edit; a file read only in part is never
 * rewritten (core/metrics/references.ts rewriteBlocked). Without a workspace folder both live in memory for the
 * session.
 */
import * as vscode from 'vscode';
import type { ReferenceLine } from '../../shared/metricsProtocol';
import type { SpecReferenceRow } from '../../core/eval/spec/card';
import type { Logger } from '../log';
import { parseReferences, REFERENCES_FILE, rewriteBlocked, serializeReferences, withLineAdded, withLineRemoved, withSpecRowRemoved } from '../../core/metrics/references';
import { RemoteRunsError } from '../../core/types';

export class ReferenceStore implements vscode.Disposable {
  private current: ReferenceLine[] = [];
  /** The file's card rows (version 2), written back untouched when a line is added or removed. */
  private rows: SpecReferenceRow[] = [];
  /** Why the file as read cannot be written back whole (core/metrics/references.ts rewriteBlocked). */
  private blocked: string | undefined;
  private readonly changed = new vscode.EventEmitter<ReferenceLine[]>();
  readonly onDidChange = this.changed.event;
  private readonly rowsChanged = new vscode.EventEmitter<void>();
  /** The card rows, or whether the file can be written, changed. */
  readonly onDidChangeSpecRows = this.rowsChanged.event;
  private readonly disposables: vscode.Disposable[] = [this.changed, this.rowsChanged];
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

  /** Every card row of the file (of every run: a card shows its own run's). */
  get specRows(): readonly SpecReferenceRow[] {
    return this.rows;
  }

  /** Why the file cannot be written now (it holds what could not be read), or undefined. */
  get writeBlocked(): string | undefined {
    return this.blocked;
  }

  async add(line: Omit<ReferenceLine, 'id'>): Promise<void> {
    await this.edit(() => ({ lines: withLineAdded(this.current, line), rows: this.rows }));
  }

  async remove(id: string): Promise<void> {
    await this.edit(() => ({ lines: withLineRemoved(this.current, id), rows: this.rows }));
  }

  /** Add a card row (validated by the caller with references.ts parseSpecRow / specRowFromForm). */
  async addSpecRow(row: SpecReferenceRow): Promise<void> {
    await this.edit(() => ({ lines: this.current, rows: [...this.rows, row] }));
  }

  /** Remove the card row with this id (references.ts specRowIds); a row already gone is not an error. */
  async removeSpecRow(id: string): Promise<void> {
    await this.edit(() => ({ lines: this.current, rows: withSpecRowRemoved(this.rows, id) }));
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
    this.setRows(parsed.specRows, rewriteBlocked(parsed));
    this.set(parsed.lines);
  }

  /**
   * One edit of the file: read it again (a hand edit the watcher has not reported yet is not overwritten), refuse
   * when it holds what could not be read, write lines and rows, then tell the views.
   */
  private async edit(change: () => { lines: ReferenceLine[]; rows: SpecReferenceRow[] }): Promise<void> {
    const uri = this.uri;
    if (uri) await this.load();
    if (uri && this.blocked) throw new RemoteRunsError('bad-config', this.blocked);
    const { lines, rows } = change();
    if (uri) {
      // The file first: what the views show is always what a commit of the workspace would hold.
      await vscode.workspace.fs.createDirectory(vscode.Uri.joinPath(uri, '..'));
      await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(serializeReferences(lines, rows)));
    }
    this.setRows(rows, this.blocked);
    this.set(lines);
  }

  private setRows(rows: SpecReferenceRow[], blocked: string | undefined): void {
    if (JSON.stringify([rows, blocked]) === JSON.stringify([this.rows, this.blocked])) return;
    this.rows = rows;
    this.blocked = blocked;
    this.rowsChanged.fire();
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
