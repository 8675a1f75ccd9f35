/**
 * Notifications, off by default per kind (user settings `remoteRuns.notifications.newCheckpoint`, `.stoppedLogging`,
 * `.evalFinished`; application scope, so a workspace cannot turn them on): a new checkpoint in the pinned run, a
 * followed run (shown in a panel, the inline view or the status bar) that stopped logging, an eval that finished.
 * What counts as new is core/notify.ts; this file looks and says. Nothing is looked at for a kind that is off.
 */
import * as vscode from 'vscode';
import type { RemoteRunsCore } from '../core/service';
import type { Listings } from '../core/discovery/listings';
import { NOTIFICATION_SETTINGS, becameStopped, finishedEvals, loggingStopped, newCheckpoints, type NotificationKind } from '../core/notify';
import type { EvalRecord, EvalRunRef } from '../core/eval/types';
import type { FeedRegistry } from '../core/metrics';
import { runKeyOf } from '../core/runRef';
import { formatTarget, type Run, type TargetRef } from '../core/types';
import type { TreeNode } from '../core/tree/nodes';
import { CommandIds } from './commandIds';
import type { Logger } from './log';
import { displayName, displayText } from '../shared/display';
import { setting, type SettingKey } from './settings';

/** workspaceState key of the pinned run (metrics/register.ts owns it; read here). */
const PINNED_KEY = 'remoteRuns.pinnedRun';
/** How often followed runs are checked for a stop. */
const STOPPED_CHECK_MS = 15_000;
/** How often the pinned run is listed for new checkpoints when remoteRuns.refreshIntervalSeconds is 0. */
const PINNED_LIST_MS = 30_000;

export function notificationEnabled(kind: NotificationKind): boolean {
  return setting<unknown>(NOTIFICATION_SETTINGS[kind] as SettingKey, false) === true;
}

export class Notifier implements vscode.Disposable {
  private readonly stopped = new Map<string, boolean | undefined>();
  private pinnedSeen: { key: string; run: Run } | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private listing = false;

  constructor(
    private readonly deps: {
      core: RemoteRunsCore;
      context: vscode.ExtensionContext;
      log: Logger;
      feeds?: FeedRegistry;
      /**
       * The window's one listing cache: the pinned run's target is read from it (listed again only when older than
       * one check's interval), so a new checkpoint found here is what the tree and the language server show next, and
       * a listing the tree's timed refresh just made is not made again.
       */
      listings?: Listings<unknown>;
    },
  ) {
    this.timers.push(setInterval(() => this.checkStopped(), STOPPED_CHECK_MS));
    this.schedulePinned();
  }

  /** A run's evals were listed again (eval/register.ts): say which ended since the last listing. */
  evalsListed(subject: EvalRunRef, before: readonly EvalRecord[] | undefined, after: readonly EvalRecord[]): void {
    if (!notificationEnabled('evalFinished')) return;
    for (const r of finishedEvals(before, after)) {
      const name = r.checkpointPath.slice(r.checkpointPath.replace(/\/+$/, '').lastIndexOf('/') + 1);
      const values = r.results.length ? Object.entries(r.results[r.results.length - 1]!).slice(0, 3).map(([k, v]) => `${k} ${v}`).join(', ') : '';
      void vscode.window
        .showInformationMessage(displayText(`Remote Runs: eval ${r.profile} of ${displayName(subject.run.name)}/${displayName(name)} ${r.state}${values ? `: ${values}` : ''}.`), 'Show Eval Results')
        .then((c) => c && vscode.commands.executeCommand(CommandIds.showEvalResults, { type: 'run', id: '', hostName: subject.host, target: subject.target, run: { ...subject.run, metrics: [], checkpoints: [], metricsMtime: 0, live: false } } satisfies TreeNode));
    }
  }

  private checkStopped(): void {
    const feeds = this.deps.feeds?.active() ?? [];
    const on = notificationEnabled('stoppedLogging');
    const now = Date.now();
    for (const feed of feeds) {
      const key = runKeyOf(feed.ref);
      const state = loggingStopped({ lastLoggedAt: feed.lastLoggedAt, stoppedAfterMs: feed.stoppedAfterMs, connected: feed.link.state === 'connected' }, now);
      const before = this.stopped.get(key);
      if (state !== undefined) this.stopped.set(key, state);
      if (on && becameStopped(before, state) && feed.lastLoggedAt !== undefined) {
        const mins = Math.round((now - feed.lastLoggedAt) / 60_000);
        void vscode.window
          .showWarningMessage(`Remote Runs: ${displayName(feed.ref.runName)} on ${feed.ref.hostName}/${formatTarget(feed.ref.target)} stopped logging (last write ${mins} min ago; its host answers).`, 'Open Metrics')
          .then((c) => c && vscode.commands.executeCommand(CommandIds.openMetrics, feed.ref));
      }
    }
  }

  private pinnedEveryMs = PINNED_LIST_MS;

  private schedulePinned(): void {
    const s = setting<number>('refreshIntervalSeconds', 0);
    this.pinnedEveryMs = s > 0 ? Math.max(5, s) * 1000 : PINNED_LIST_MS;
    this.timers.push(setInterval(() => void this.checkPinned(), this.pinnedEveryMs));
  }

  /** The pinned run as listed now: from the window's listings when one is younger than a check's interval. */
  private async pinnedRun(hostName: string, target: TargetRef, runName: string): Promise<Run> {
    const listings = this.deps.listings;
    if (!listings) return (await this.deps.core.findRun(hostName, target, runName)).run;
    // Half an interval: a listing from the last check is never taken for this one.
    const r = await listings.target(hostName, target, { maxAgeMs: this.pinnedEveryMs / 2 });
    if (!r.ok) throw r.error;
    return this.deps.core.runNamed(hostName, r.value, runName);
  }

  /** List the pinned run's target (one command) and say which checkpoints are new since the last look. */
  private async checkPinned(): Promise<void> {
    if (!notificationEnabled('newCheckpoint') || this.listing) return;
    const pinned = this.deps.context.workspaceState.get<{ hostName?: string; target?: TargetRef; runName?: string; runPath?: string }>(PINNED_KEY);
    if (!pinned?.hostName || !pinned.target || !pinned.runName) {
      this.pinnedSeen = undefined;
      return;
    }
    const key = `${pinned.hostName}\0${formatTarget(pinned.target)}\0${pinned.runPath ?? pinned.runName}`;
    this.listing = true;
    try {
      const run = await this.pinnedRun(pinned.hostName, pinned.target, pinned.runName);
      const before = this.pinnedSeen?.key === key ? this.pinnedSeen.run : undefined;
      this.pinnedSeen = { key, run };
      const fresh = newCheckpoints(before, run);
      if (fresh.length === 0) return;
      const names = fresh.map((c) => displayName(c.name));
      const node: TreeNode = { type: 'checkpoint', id: '', hostName: pinned.hostName, target: pinned.target, run, checkpoint: fresh[fresh.length - 1]! };
      const choice = await vscode.window.showInformationMessage(`Remote Runs: new checkpoint${names.length > 1 ? 's' : ''} in ${displayName(run.name)}: ${names.join(', ')}.`, 'Download', 'Evaluate');
      if (choice === 'Download') await vscode.commands.executeCommand(CommandIds.downloadCheckpoint, node);
      else if (choice === 'Evaluate') await vscode.commands.executeCommand(CommandIds.evaluateCheckpoint, node);
    } catch (e) {
      // The host being down is what the tree and the panels say; here it only means no news.
      this.deps.log.info(`new-checkpoint notifications: ${pinned.runName} not listed: ${e instanceof Error ? e.message : String(e)}`);
    } finally {
      this.listing = false;
    }
  }

  dispose(): void {
    this.timers.forEach((t) => clearInterval(t));
  }
}
