/**
 * The inline metrics view in VS Code's panel area (beside Terminal and Debug Console): compact charts of the
 * pinned run, or else of the run selected in the tree, so the curves stay in sight while debugging.
 */
import * as vscode from 'vscode';
import type { RunRefWire } from '../../shared/metricsProtocol';
import { MetricsView, type MetricsViewDeps } from './metricsView';
import { setupWebview } from './webviewSetup';

export class InlineMetricsView implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: MetricsView | undefined;
  private shown: RunRefWire | undefined;
  private subs: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly deps: MetricsViewDeps,
  ) {}

  resolveWebviewView(webviewView: vscode.WebviewView): void {
    this.disposeView();
    const view = new MetricsView(webviewView.webview, 'inline', this.deps);
    this.view = view;
    setupWebview(webviewView.webview, this.extensionUri, 'inline');
    this.subs.push(webviewView.onDidDispose(() => this.disposeView()));
    view.setPrimary(this.shown);
  }

  /** The run to follow (pinned, else selected); undefined shows the hint. */
  show(ref: RunRefWire | undefined): void {
    this.shown = ref;
    this.view?.setPrimary(ref);
  }

  /** The view's controller while the webview exists (for highlights). */
  get current(): MetricsView | undefined {
    return this.view;
  }

  private disposeView(): void {
    this.view?.dispose();
    this.view = undefined;
    this.subs.forEach((s) => s.dispose());
    this.subs = [];
  }

  dispose(): void {
    this.disposeView();
  }
}
