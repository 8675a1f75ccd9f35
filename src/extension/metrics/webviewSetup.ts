/**
 * Webview options and HTML shared by every webview (the metrics panel, the inline view, the eval table): scripts on,
 * resources from dist/ and media/ only.
 */
import * as vscode from 'vscode';
import type { ViewMode } from '../../shared/metricsProtocol';
import { metricsHtml } from './html';

export const METRICS_PANEL_TYPE = 'remoteRuns.metrics';
export const METRICS_INLINE_VIEW = 'remoteRuns.metricsInline';

export function webviewOptions(extensionUri: vscode.Uri): vscode.WebviewOptions {
  return {
    enableScripts: true,
    enableCommandUris: false,
    localResourceRoots: [vscode.Uri.joinPath(extensionUri, 'dist'), vscode.Uri.joinPath(extensionUri, 'media')],
  };
}

/** Set options and HTML on a fresh (or restored) webview. */
export function setupWebview(webview: vscode.Webview, extensionUri: vscode.Uri, mode: ViewMode): void {
  webview.options = webviewOptions(extensionUri);
  webview.html = metricsHtml({
    cspSource: webview.cspSource,
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'dist', 'webview.js')).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', 'metrics.css')).toString(),
    mode,
  });
}

/** Set the shared options and a page the caller builds (with html.ts's CSP) around a stylesheet of media/, e.g. the eval table. */
export function setupWebviewPage(webview: vscode.Webview, extensionUri: vscode.Uri, stylesheet: string, page: (parts: { cspSource: string; styleUri: string }) => string): void {
  webview.options = webviewOptions(extensionUri);
  webview.html = page({ cspSource: webview.cspSource, styleUri: webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, 'media', stylesheet)).toString() });
}

/** A view living in one webview panel: disposed when its panel closes. */
export interface PanelView {
  readonly panel: vscode.WebviewPanel;
  dispose(): void;
}

/**
 * The panels of one kind, one per key (a run's eval table, a target's run table, a pair's comparison): a second
 * `show` of the same key reveals the open one instead of a copy. A view is forgotten when its panel closes; all
 * close with the registry.
 */
export class KeyedPanels<V extends PanelView> implements vscode.Disposable {
  private readonly open = new Map<string, V>();

  constructor(
    private readonly viewType: string,
    private readonly extensionUri: vscode.Uri,
  ) {}

  /** The view open under `key`, brought to the front; undefined when there is none. */
  reveal(key: string): V | undefined {
    const existing = this.open.get(key);
    existing?.panel.reveal(undefined, false);
    return existing;
  }

  /**
   * A new panel titled `title` in the active column, its view made by `make` and kept under `key`. `make` is given
   * `rekey`, which moves the view to another key (a comparison whose pair changed); the view calls it later, never
   * while it is being made.
   */
  create(key: string, title: string, make: (panel: vscode.WebviewPanel, rekey: (to: string) => void) => V): V {
    const panel = vscode.window.createWebviewPanel(this.viewType, title, vscode.ViewColumn.Active, {
      ...webviewOptions(this.extensionUri),
      retainContextWhenHidden: false,
    });
    let current = key;
    const view = make(panel, (to) => {
      if (this.open.get(current) === view) this.open.delete(current);
      current = to;
      this.open.set(current, view);
    });
    this.open.set(current, view);
    panel.onDidDispose(() => {
      view.dispose();
      if (this.open.get(current) === view) this.open.delete(current);
    });
    return view;
  }

  dispose(): void {
    for (const v of [...this.open.values()]) v.panel.dispose();
  }
}
