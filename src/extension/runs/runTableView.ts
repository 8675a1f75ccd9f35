/**
 * "Show Run Table" (a target's context menu): one webview panel per target with its runs as a table (name, state,
 * latest step, last values, the config keys that differ between them), on the shared table page (table/tablePage.ts)
 * with its strict CSP, Copy as CSV / Markdown, and Refresh. The target is listed and each run read (runFacts.ts)
 * when the panel opens and on Refresh; what the page posts is validated (table/tableMessages.ts).
 */
import * as vscode from 'vscode';
import type { RemoteRunsCore } from '../../core/service';
import { runsOf } from '../../core/service';
import { buildRunTable, runTableCells, runTableNumeric, runState, MAX_METRIC_COLUMNS } from '../../core/runs/table';
import { formatTarget, type TargetRef } from '../../core/types';
import { cellsCsv, cellsMarkdown } from '../../core/util/textTable';
import type { RunTableFromWebview, TableToWebview } from '../../shared/tableProtocol';
import type { Logger } from '../log';
import { KeyedPanels, setupWebviewPage } from '../metrics/webviewSetup';
import { tablePageHtml } from '../table/tablePage';
import { parseRunTableFromWebview } from '../table/tableMessages';
import type { RunFactsReader } from './runFacts';

export const RUN_TABLE_PANEL_TYPE = 'remoteRuns.runTable';

export interface RunTablePlace {
  hostName: string;
  target: TargetRef;
}

class RunTableView implements vscode.Disposable {
  private cells: string[][] = [['run']];
  private numeric: boolean[] = [];
  private generation = 0;
  private readonly controller = new AbortController();
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly place: RunTablePlace,
    private readonly deps: { core: RemoteRunsCore; reader: RunFactsReader; extensionUri: vscode.Uri; log: Logger },
  ) {
    this.subs.push(panel.webview.onDidReceiveMessage((m) => void this.onMessage(m)));
    void this.load();
  }

  private get where(): string {
    return `${this.place.hostName}/${formatTarget(this.place.target)}`;
  }

  private render(notes: string[], emptyText: string): void {
    setupWebviewPage(this.panel.webview, this.deps.extensionUri, 'evalTable.css', (parts) =>
      tablePageHtml({
        ...parts,
        name: 'Runs',
        title: `Runs on ${this.where}`,
        notes,
        cells: this.cells,
        numeric: this.numeric,
        emptyText,
        copyMessage: 'copyRunTable',
        buttons: [{ label: 'Refresh', type: 'refreshRunTable' }],
      }),
    );
  }

  /** List the target, show its runs at once, then their configs and metrics once read. */
  async load(): Promise<void> {
    const gen = ++this.generation;
    this.cells = [['run']];
    this.render([], `Listing the runs on ${this.where}…`);
    try {
      const listing = await this.deps.core.listTarget(this.place.hostName, this.place.target, this.controller.signal);
      if (gen !== this.generation) return;
      const runs = runsOf(listing);
      if (runs.length === 0) {
        this.cells = [['run']];
        const why = listing.roots.map((r) => `${r.root}: ${r.state === 'ok' ? 'no runs' : r.state}`).join('; ');
        this.render([], `No runs on ${this.where} (${why}).`);
        return;
      }
      this.cells = [['run', 'state', 'path'], ...runs.map((r) => [r.name, runState(r, listing.remoteNow), r.path])];
      this.numeric = [];
      this.render([`Reading the config and metrics of ${runs.length} run${runs.length === 1 ? '' : 's'}…`], '');
      const facts = await this.deps.reader.facts(this.place.hostName, this.place.target, runs, this.controller.signal);
      if (gen !== this.generation) return;
      const table = buildRunTable(facts, listing.remoteNow);
      this.cells = runTableCells(table);
      this.numeric = runTableNumeric(table);
      const notes = [
        table.differing.length
          ? `Config columns: the ${table.differing.length} key${table.differing.length === 1 ? '' : 's'} whose values differ between these runs (keys every run sets alike are left out).`
          : facts.filter((f) => f.config && f.config.files.some((x) => x.ok)).length >= 2
            ? 'The configs of these runs do not differ.'
            : 'Config: fewer than two runs have a readable config file (config.yaml, config.json, hparams.yaml, args.json) to compare.',
        ...(table.moreMetrics ? [`Last values: the ${MAX_METRIC_COLUMNS} metrics most runs log; ${table.moreMetrics} more are not shown.`] : []),
      ];
      this.render(notes, '');
    } catch (e) {
      if (gen !== this.generation || this.controller.signal.aborted) return;
      this.cells = [['run']];
      this.render([], `Could not list ${this.where}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async onMessage(raw: unknown): Promise<void> {
    const msg = parseRunTableFromWebview(raw);
    if (!msg) {
      this.deps.log.warn(`run table: ignored a malformed message from the webview: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    switch (msg.type) {
      case 'copyRunTable': {
        await vscode.env.clipboard.writeText(msg.format === 'csv' ? cellsCsv(this.cells) : cellsMarkdown(this.cells, this.numeric));
        const reply: TableToWebview = { type: 'copied', format: msg.format };
        void this.panel.webview.postMessage(reply);
        return;
      }
      case 'refreshRunTable':
        await this.load();
        return;
      default: {
        const never: never = msg;
        return never;
      }
    }
  }

  dispose(): void {
    this.controller.abort();
    this.subs.forEach((s) => s.dispose());
  }
}

export class RunTablePanels implements vscode.Disposable {
  private readonly panels: KeyedPanels<RunTableView>;

  constructor(private readonly deps: { core: RemoteRunsCore; reader: RunFactsReader; extensionUri: vscode.Uri; log: Logger }) {
    this.panels = new KeyedPanels(RUN_TABLE_PANEL_TYPE, deps.extensionUri);
  }

  /** Open (or reveal and refresh) the run table of a target. */
  show(place: RunTablePlace): void {
    const id = `${place.hostName}\0${formatTarget(place.target)}`;
    const existing = this.panels.reveal(id);
    if (existing) {
      void existing.load();
      return;
    }
    this.panels.create(id, `Runs: ${place.hostName}/${formatTarget(place.target)}`, (panel) => new RunTableView(panel, place, this.deps));
  }

  dispose(): void {
    this.panels.dispose();
  }
}
