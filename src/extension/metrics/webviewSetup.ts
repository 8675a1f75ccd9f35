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
