/**
 * The metric-curve feature, wired: live feeds per run over the pool's executors, full panels (restored after a
 * reload), the inline view in the panel area, the pinned run's status-bar item, the workspace reference lines,
 * and the commands. `extension.ts` calls `registerMetrics` once.
 */
import * as vscode from 'vscode';
import type { RemoteRunsCore } from '../../core/service';
import type { RunRefWire } from '../../shared/metricsProtocol';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import type { TreeNode } from '../../core/tree/nodes';
import type { RunsTreeProvider } from '../tree/treeProvider';
import { InlineMetricsView } from './inlineView';
import { saveChartExport } from './chartExport';
import type { MetricsViewDeps } from './metricsView';
import { MetricsPanels } from './panels';
import { ReferenceStore } from './referenceStore';
import { FeedRegistry, RunFeed, type EvalSource } from '../../core/metrics/follow/runFeed';
import { runKeyOf } from '../../core/runRef';
import { PinnedRunStatus } from './statusBar';
import { pickRunEverywhere } from './pickRunEverywhere';
import { pickRun, revealCheckpoint, runRefOfArg, runRefOfNode, selectedStepOf } from './treeGlue';
import { parseRestoreState } from './validate';
import { METRICS_INLINE_VIEW } from './webviewSetup';
import type { ConnectionState } from '../../core/ssh/types';
import type { StateChange } from '../../core/ssh/pool';
import type { Event } from '../../core/util/event';
import { setting } from '../settings';

export interface MetricsDeps {
  store: DisposableStore;
  core: RemoteRunsCore;
  tree: RunsTreeProvider;
  view: vscode.TreeView<TreeNode>;
  log: Logger;
  context: vscode.ExtensionContext;
  /** Each run's evals, drawn as points on its charts. */
  evals?: EvalSource;
  /** Each host's connection state (the pool's), for the connection a panel shows. */
  connectionState(hostName: string): ConnectionState;
  onDidChangeConnectionState: Event<StateChange>;
  /** The configured hosts' names: "Add run…" lists runs on all of them, not only the targets the tree expanded. */
  hostNames(): string[];
  /** A run's config as text lines, for the panel (never rejects: a failure is a line saying why). */
  runConfig?(run: RunRefWire): Promise<string[]>;
}

const PINNED_KEY = 'remoteRuns.pinnedRun';

/** Register everything of the metrics feature on `store`. */
export function registerMetrics(deps: MetricsDeps): { feeds: FeedRegistry; references: ReferenceStore } {
  const { store, core, tree, view, log, context } = deps;

  const feeds = store.register(
    new FeedRegistry(
      (ref) =>
        new RunFeed(ref, {
          // The host's executor, or kubectl exec for a cluster's pod container (service.ts targetExecutor); a
          // cluster has no stream (core.stream is undefined for it), so its runs are followed by polling alone.
          executor: () => core.targetExecutor(ref.hostName, ref.target),
          stream: (target) => core.stream(ref.hostName, target),
          intervalMs: () => Math.max(0.25, setting<number>('metrics.pollIntervalSeconds', 5)) * 1000,
          log: (m) => log.warn(m),
          // A cluster holds no connection of its own (each read is one kubectl exec, whose failure the feed's status
          // says): its link is shown as up, never as "connecting…" to a pool entry that never exists.
          connection: core.cluster(ref.hostName)
            ? { state: () => ({ kind: 'connected' }), onDidChange: () => ({ dispose: () => undefined }) }
            : {
                state: () => deps.connectionState(ref.hostName),
                onDidChange: (listener) => deps.onDidChangeConnectionState((e) => e.host === ref.hostName && listener(e.state)),
              },
        }),
    ),
  );
  const references = store.register(new ReferenceStore(log));
  // A re-listing (a restarted run's new event file, a log that appeared) reaches the feeds of the runs shown.
  store.register(
    tree.onDidChangeTreeData(() =>
      feeds.refresh((key) => {
        const node = tree.knownRuns().find((n) => n.id === key);
        return node ? runRefOfNode(node) : undefined;
      }),
    ),
  );

  let panels: MetricsPanels | undefined;
  const viewDeps: MetricsViewDeps = {
    feeds,
    references,
    log,
    plateau: () => ({
      window: Math.max(1, setting<number>('metrics.plateauWindow', 2000)),
      fraction: Math.max(0, setting<number>('metrics.plateauFraction', 0.01)),
    }),
    pickRun: (exclude) => pickRunEverywhere(core, deps.hostNames(), 'Add a run to compare', exclude),
    revealCheckpoint: (run, step) => revealCheckpoint(tree, view, run, step),
    openPanel: (run) => void panels?.open(run),
    selectedStep: (runKey) => selectedStepOf(view, runKey),
    ...(deps.evals ? { evals: deps.evals } : {}),
    showEvalTable: (run) => void vscode.commands.executeCommand(CommandIds.showEvalResults, run),
    ...(deps.runConfig ? { runConfig: deps.runConfig } : {}),
    saveExport: saveChartExport(log),
    showError: (message) => void vscode.window.showErrorMessage(message),
  };
  panels = store.register(new MetricsPanels(context.extensionUri, viewDeps, log));
  const inline = store.register(new InlineMetricsView(context.extensionUri, viewDeps));
  store.register(vscode.window.registerWebviewViewProvider(METRICS_INLINE_VIEW, inline, { webviewOptions: { retainContextWhenHidden: false } }));
  const status = store.register(new PinnedRunStatus(feeds, () => setting<string>('metrics.statusBarMetric', '')));

  // Pinned run: kept per workspace, followed by the status bar and (before the selection) the inline view.
  let pinned = parseRestoreState({ version: 1, primary: context.workspaceState.get(PINNED_KEY), others: [] })?.primary;
  const configured = (hostName: string): boolean => {
    if (core.cluster(hostName)) return true; // a Kubernetes cluster's name is a host's name too
    try {
      core.host(hostName);
      return true;
    } catch {
      return false;
    }
  };
  // A pinned run whose host is no longer configured is unpinned (said once), not shown in the status bar forever.
  const unpinIfHostGone = (): void => {
    if (!pinned || configured(pinned.hostName)) return;
    log.info(`unpinned ${pinned.runName}: host ${pinned.hostName} was removed from settings`);
    void setPinned(undefined);
  };
  let selected: RunRefWire | undefined;
  const followInline = (): void => inline.show(pinned ?? selected);
  const setPinned = async (ref: RunRefWire | undefined): Promise<void> => {
    pinned = ref;
    await context.workspaceState.update(PINNED_KEY, ref);
    void vscode.commands.executeCommand('setContext', 'remoteRuns.hasPinnedRun', ref !== undefined);
    status.pin(ref);
    followInline();
  };
  void setPinned(pinned);
  unpinIfHostGone();

  store.register(
    view.onDidChangeSelection((e) => {
      const node = e.selection[0];
      const ref = runRefOfNode(node);
      if (ref) selected = ref;
      followInline();
      // A checkpoint selected in the tree is highlighted on its run's charts.
      const step = node?.type === 'checkpoint' ? node.checkpoint.step : null;
      const key = ref ? runKeyOf(ref) : undefined;
      for (const v of [...(panels?.views() ?? []), ...(inline.current ? [inline.current] : [])]) {
        const p = v.primary;
        if (!p) continue;
        v.highlight(key !== undefined && runKeyOf(p) === key ? step : null);
      }
    }),
  );
  store.register(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('remoteRuns.metrics.statusBarMetric')) status.render();
      if (e.affectsConfiguration('remoteRuns')) {
        // Hosts may have gone (unpin their run; panels already said so) or come back (their feeds try again).
        unpinIfHostGone();
        feeds.hostsChanged();
      }
    }),
  );

  const needRun = async (arg: unknown, title: string): Promise<RunRefWire | undefined> =>
    runRefOfArg(arg) ?? runRefOfNode(view.selection[0]) ?? (await pickRun(tree, title));

  const commands: [Parameters<typeof registerCommand>[0], (...args: unknown[]) => unknown][] = [
    [
      CommandIds.openMetrics,
      async (arg) => {
        const ref = await needRun(arg, 'Open the metrics of a run');
        if (ref) panels?.open(ref);
      },
    ],
    [
      CommandIds.addRunToMetrics,
      async (arg) => {
        const target = panels?.activeView;
        if (!target?.primary) throw new Error('Open a metrics panel first (Remote Runs: Open Metrics)');
        const ref = runRefOfArg(arg) ?? (await pickRunEverywhere(core, deps.hostNames(), 'Add a run to compare', target.presenter.runs.map((r) => r.key)));
        if (ref) target.addRun(ref, 'compare');
      },
    ],
    [
      CommandIds.pinRun,
      async (arg) => {
        const ref = await needRun(arg, 'Pin a run');
        if (ref) await setPinned(ref);
      },
    ],
    [CommandIds.unpinRun, () => setPinned(undefined)],
    [CommandIds.showInlineMetrics, () => vscode.commands.executeCommand(`${METRICS_INLINE_VIEW}.focus`)],
  ];
  for (const [id, handler] of commands) store.register(registerCommand(id, handler, log));
  return { feeds, references };
}
