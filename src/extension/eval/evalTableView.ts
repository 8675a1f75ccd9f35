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
import { KeyedPanels, setupWebviewPage } from '../metrics/webviewSetup';
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
  private readonly panels: KeyedPanels<EvalTableView>;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly hub: EvalResultsHub,
    private readonly log: Logger,
  ) {
    this.panels = new KeyedPanels(EVAL_TABLE_PANEL_TYPE, extensionUri);
  }

  /** Open (or reveal) the table of a run's evals. */
  show(run: EvalRunRef): void {
    const id = runIdentity(run.host, run.target, run.run.path);
    if (this.panels.reveal(id)) return;
    this.panels.create(id, `Evals: ${run.run.name}`, (panel) => new EvalTableView(panel, run, this.extensionUri, this.hub, this.log));
  }

  dispose(): void {
    this.panels.dispose();
  }
}
