/**
 * Full metrics panels: one per primary run (opening it again reveals it), restored after a reload by the
 * WebviewPanelSerializer from the state the webview kept.
 */
import * as vscode from 'vscode';
import type { PanelRestoreState, RunRefWire } from '../../shared/metricsProtocol';
import type { Logger } from '../log';
import { MetricsView, type MetricsViewDeps } from './metricsView';
import { runKeyOf, whereOf } from '../../core/runRef';
import { panelTitles } from './statusText';
import { parseRestoreState } from './validate';
import { METRICS_PANEL_TYPE, setupWebview, webviewOptions } from './webviewSetup';
import { displayName } from '../../shared/display';

interface OpenPanel {
  panel: vscode.WebviewPanel;
  view: MetricsView;
  ref: RunRefWire;
}

export class MetricsPanels implements vscode.Disposable {
  private readonly panels = new Map<string, OpenPanel>();
  private readonly disposables: vscode.Disposable[] = [];
  private active: OpenPanel | undefined;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly deps: MetricsViewDeps,
    private readonly log: Logger,
  ) {
    this.disposables.push(
      vscode.window.registerWebviewPanelSerializer(METRICS_PANEL_TYPE, {
        deserializeWebviewPanel: async (panel, state) => this.restore(panel, state),
      }),
    );
  }

  /** Open (or reveal) the panel of this run. */
  open(ref: RunRefWire): MetricsView {
    const key = runKeyOf(ref);
    const existing = this.panels.get(key);
    if (existing) {
      existing.panel.reveal(undefined, false);
      return existing.view;
    }
    const panel = vscode.window.createWebviewPanel(METRICS_PANEL_TYPE, `Metrics: ${displayName(ref.runName)}`, vscode.ViewColumn.Active, {
      ...webviewOptions(this.extensionUri),
      retainContextWhenHidden: false,
    });
    return this.attach(panel, { version: 1, primary: ref, others: [] }).view;
  }

  /** Tab titles that tell panels of same-named runs apart (panelTitles). */
  private retitle(): void {
    const titles = panelTitles([...this.panels].map(([key, p]) => ({ key, runName: p.ref.runName, where: whereOf(p.ref) })));
    for (const [key, p] of this.panels) {
      const t = titles.get(key);
      if (t && p.panel.title !== t) p.panel.title = t;
    }
  }

  /** The panel last focused (for palette commands that act on "the" panel). */
  get activeView(): MetricsView | undefined {
    return this.active?.view;
  }

  /** Every open panel's view. */
  views(): MetricsView[] {
    return [...this.panels.values()].map((p) => p.view);
  }

  private restore(panel: vscode.WebviewPanel, state: unknown): void {
    const restore = parseRestoreState(state);
    if (!restore) {
      this.log.warn('metrics panel: could not restore a panel (no usable state); closing it');
      panel.dispose();
      return;
    }
    const key = runKeyOf(restore.primary);
    if (this.panels.has(key)) {
      panel.dispose();
      return;
    }
    this.attach(panel, restore);
  }

  private attach(panel: vscode.WebviewPanel, state: PanelRestoreState): OpenPanel {
    const key = runKeyOf(state.primary);
    panel.title = `Metrics: ${displayName(state.primary.runName)}`;
    const view = new MetricsView(panel.webview, 'panel', this.deps);
    const entry: OpenPanel = { panel, view, ref: state.primary };
    this.panels.set(key, entry);
    this.retitle();
    this.active = entry;
    setupWebview(panel.webview, this.extensionUri, 'panel');
    view.setPrimary(state.primary);
    for (const o of state.others) view.addRun(o.run, o.role);
    const subs = [
      panel.onDidChangeViewState((e) => {
        if (e.webviewPanel.active) this.active = entry;
      }),
    ];
    panel.onDidDispose(() => {
      view.dispose();
      subs.forEach((s) => s.dispose());
      this.panels.delete(key);
      this.retitle();
      if (this.active === entry) this.active = undefined;
    });
    return entry;
  }

  dispose(): void {
    for (const p of [...this.panels.values()]) p.panel.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
