/**
 * "Show Eval Results": one webview panel per run with the table of its evals (evalTableHtml), redrawn when the run's
 * evals are listed again (an eval started or ended), and Copy as CSV / Markdown through VS Code's clipboard.
 */
import * as vscode from 'vscode';
import { buildEvalTable, evalTableCsv, evalTableMarkdown } from '../../core/eval/table';
import type { EvalRecord, EvalRunRef } from '../../core/eval/types';
import { formatTarget } from '../../core/types';
import type { EvalTableToWebview } from '../../shared/metricsProtocol';
import type { Logger } from '../log';
import { parseEvalTableMessage } from '../metrics/validate';
import { evalTableHtml } from './evalTableHtml';
import { runIdentity, type EvalResultsHub } from './resultsHub';

export const EVAL_TABLE_PANEL_TYPE = 'remoteRuns.evalTable';

interface OpenTable {
  panel: vscode.WebviewPanel;
  records: readonly EvalRecord[] | undefined;
  shownHtmlKey: string;
}

export class EvalTablePanels implements vscode.Disposable {
  private readonly open = new Map<string, OpenTable>();

  constructor(
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
      enableScripts: true,
      enableCommandUris: false,
      localResourceRoots: [],
    });
    const entry: OpenTable = { panel, records: undefined, shownHtmlKey: '' };
    this.open.set(id, entry);
    const title = `Evals of ${run.run.name} — ${run.host}/${formatTarget(run.target)}`;
    const render = (): void => {
      const table = buildEvalTable(entry.records ?? []);
      const emptyText = entry.records
        ? 'No evals of this run yet: evaluate a checkpoint from its context menu in the Remote Runs tree.'
        : 'Listing the evals of this run…';
      const key = JSON.stringify([table, emptyText]);
      if (key === entry.shownHtmlKey) return;
      entry.shownHtmlKey = key;
      panel.webview.html = evalTableHtml({ title, table, emptyText });
    };
    render();
    const subs = [
      this.hub.watchRecords(run, (records) => {
        entry.records = records;
        render();
      }),
      panel.webview.onDidReceiveMessage(async (raw: unknown) => {
        const msg = parseEvalTableMessage(raw);
        if (!msg) {
          this.log.warn(`eval table: ignored a malformed message: ${JSON.stringify(raw)?.slice(0, 200)}`);
          return;
        }
        const table = buildEvalTable(entry.records ?? []);
        await vscode.env.clipboard.writeText(msg.format === 'csv' ? evalTableCsv(table) : evalTableMarkdown(table));
        const reply: EvalTableToWebview = { type: 'copied', format: msg.format };
        void panel.webview.postMessage(reply);
      }),
    ];
    panel.onDidDispose(() => {
      subs.forEach((s) => s.dispose());
      if (this.open.get(id) === entry) this.open.delete(id);
    });
  }

  dispose(): void {
    for (const t of [...this.open.values()]) t.panel.dispose();
  }
}
