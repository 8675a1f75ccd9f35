/**
 * "Show Eval Results": one webview panel per run with the table of its evals (evalTableHtml), redrawn when the run's
 * evals are listed again (an eval started or ended), and Copy as CSV / Markdown through VS Code's clipboard. Like
 * every webview of the extension it gets the shared options and CSP (webviewSetup.ts, html.ts) and validates what
 * its page posts with parseFromWebview.
 */
import * as vscode from 'vscode';
import { buildEvalTable, evalTableCsv, evalTableMarkdown } from '../../core/eval/table';
import type { EvalRecord, EvalRunRef } from '../../core/eval/types';
import { formatTarget } from '../../core/types';
import type { EvalTableToWebview } from '../../shared/metricsProtocol';
import type { Logger } from '../log';
import { parseFromWebview } from '../metrics/validate';
import { setupWebviewPage, webviewOptions } from '../metrics/webviewSetup';
import { evalTableHtml } from './evalTableHtml';
import { runIdentity, type EvalResultsHub } from './resultsHub';

export const EVAL_TABLE_PANEL_TYPE = 'remoteRuns.evalTable';

/** One open table: its panel, the run's records as last listed, and what the page shows. */
class EvalTableView implements vscode.Disposable {
  private records: readonly EvalRecord[] | undefined;
  private shown = '';
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly run: EvalRunRef,
    private readonly extensionUri: vscode.Uri,
    hub: EvalResultsHub,
    private readonly log: Logger,
  ) {
    this.render();
    this.subs.push(
      hub.watchRecords(run, (records) => {
        this.records = records;
        this.render();
      }),
      panel.webview.onDidReceiveMessage((m) => void this.onMessage(m)),
    );
  }

  private render(): void {
    const table = buildEvalTable(this.records ?? []);
    const emptyText = this.records
      ? 'No evals of this run yet: evaluate a checkpoint from its context menu in the Remote Runs tree.'
      : 'Listing the evals of this run…';
    const key = JSON.stringify([table, emptyText]);
    if (key === this.shown) return;
    this.shown = key;
    const title = `Evals of ${this.run.run.name} — ${this.run.host}/${formatTarget(this.run.target)}`;
    setupWebviewPage(this.panel.webview, this.extensionUri, 'evalTable.css', (parts) => evalTableHtml({ ...parts, title, table, emptyText }));
  }

  private async onMessage(raw: unknown): Promise<void> {
    const msg = parseFromWebview(raw);
    if (!msg) {
      this.log.warn(`eval table: ignored a malformed message from the webview: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    // The table page posts nothing else; a metrics message here is ignored.
    if (msg.type !== 'copyEvalTable') return;
    const table = buildEvalTable(this.records ?? []);
    await vscode.env.clipboard.writeText(msg.format === 'csv' ? evalTableCsv(table) : evalTableMarkdown(table));
    const reply: EvalTableToWebview = { type: 'copied', format: msg.format };
    void this.panel.webview.postMessage(reply);
  }

  dispose(): void {
    this.subs.forEach((s) => s.dispose());
  }
}

export class EvalTablePanels implements vscode.Disposable {
  private readonly open = new Map<string, EvalTableView>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly hub: EvalResultsHub,
    private readonly log: Logger,
  ) {}

  /** Open (or reveal) the table of a run's evals. */
  show(run: EvalRunRef): void {
    const id = runIdentity(run.host, run.target, run.run.path);
    const existing = this.open.get(id);
    if (existing) {
      existing.panel.reveal(undefined, false);
      return;
    }
    const panel = vscode.window.createWebviewPanel(EVAL_TABLE_PANEL_TYPE, `Evals: ${run.run.name}`, vscode.ViewColumn.Active, {
      ...webviewOptions(this.extensionUri),
      retainContextWhenHidden: false,
    });
    const view = new EvalTableView(panel, run, this.extensionUri, this.hub, this.log);
    this.open.set(id, view);
    panel.onDidDispose(() => {
      view.dispose();
      if (this.open.get(id) === view) this.open.delete(id);
    });
  }

  dispose(): void {
    for (const v of [...this.open.values()]) v.panel.dispose();
  }
}
