/**
 * The pinned run in the status bar: its latest step and one chosen metric, updated live from the run's feed.
 * Clicking it opens the run's full metrics panel.
 */
import * as vscode from 'vscode';
import type { RunRefWire } from '../../shared/metricsProtocol';
import { CommandIds } from '../commandIds';
import type { RunFeed, FeedRegistry } from '../../core/metrics/follow/runFeed';
import { runKeyOf, whereOf } from '../../core/runRef';
import { pickStatusMetric, statusAriaLabel, statusText } from './statusText';

export class PinnedRunStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private lease: { feed: RunFeed; release(): void } | undefined;
  private sub: { dispose(): void } | undefined;
  private ref: RunRefWire | undefined;

  constructor(
    private readonly feeds: FeedRegistry,
    private readonly metricSetting: () => string,
  ) {
    this.item = vscode.window.createStatusBarItem('remoteRuns.pinnedRun', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Remote Runs: Pinned Run';
  }

  /** Follow this run (undefined hides the item). */
  pin(ref: RunRefWire | undefined): void {
    this.sub?.dispose();
    this.lease?.release();
    this.sub = undefined;
    this.lease = undefined;
    this.ref = ref;
    if (!ref) {
      this.item.hide();
      return;
    }
    this.lease = this.feeds.acquire(runKeyOf(ref), ref);
    this.sub = this.lease.feed.onDidChange(() => this.render());
    this.item.command = { title: 'Open Metrics', command: CommandIds.openMetrics, arguments: [ref] };
    this.render();
    this.item.show();
  }

  /** Re-read the chosen metric (the setting changed). */
  render(): void {
    const ref = this.ref;
    const feed = this.lease?.feed;
    if (!ref || !feed) return;
    const series = feed.series();
    const metric = pickStatusMetric([...series.keys()], this.metricSetting());
    const s = metric !== undefined ? series.get(metric) : undefined;
    const value = s && s.length ? s.yShown(s.length - 1) : undefined;
    this.item.text = statusText(ref.runName, feed.latestStep(), metric, value, feed.xAxis);
    this.item.accessibilityInformation = { label: statusAriaLabel(ref.runName, whereOf(ref), feed.latestStep(), metric, value, feed.xAxis), role: 'button' };
    const md = new vscode.MarkdownString();
    md.appendText(`${ref.runName} on ${whereOf(ref)}\n${ref.runPath}\n${feed.status}${feed.skipped ? `\n${feed.skipped}` : ''}\n\nClick to open its metrics.`);
    this.item.tooltip = md;
  }

  dispose(): void {
    this.sub?.dispose();
    this.lease?.release();
    this.item.dispose();
  }
}
