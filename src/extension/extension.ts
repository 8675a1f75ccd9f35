/**
 * Wires, does not work: pool → core → views → commands. Every disposable is registered on creation.
 */
import * as vscode from 'vscode';
import * as os from 'node:os';
import * as path from 'node:path';
import { ConnectionPool } from '../core/ssh/pool';
import { describeTransport, problemsFor } from '../core/ssh/transport';
import { HostDirectory } from '../core/hosts';
import { RemoteRunsCore } from '../core/service';
import type { Executor } from '../core/remote';
import { DisposableStore } from './lifecycle';
import { channelLogger } from './log';
import { VSCodePrompter } from './prompter';
import { Settings } from './settings';
import { RunsTreeProvider } from './tree/treeProvider';
import { InspectCache, inspectRemote, listedFilesOf } from '../core/inspect/remoteRead';
import type { TreeNode } from '../core/tree/nodes';
import { registerCommands } from './commands';
import { registerMetrics } from './metrics/register';
import { downloadClient, registerDownloads } from './download/register';
import { BulkLinks } from '../core/metrics/follow/bulkLinks';
import { DownloadMarks } from './download/downloadMarks';
import { RunFactsReader } from './runs/runFacts';
import { registerRuns } from './runs/register';
import { Notifier } from './notifications';
import { configSummary } from '../core/runs/config';
import { registerEvals, type EvalsHandle } from './eval/register';
import { EvalResultsHub } from './eval/resultsHub';
import { registerSpecCard } from './eval/specCardView';
import { registerDemo } from './demo/register';
import { registerCompare } from './inspect/register';
import type { Checkpoint, TargetRef } from '../core/types';
import { registerLanguageServer } from './lsp/client';
import { windowListings } from './lsp/answers';
import { closeIdleParseWorkers } from '../core/metrics';
import { expandHome } from '../core/util/home';

/** workspaceState key of the tree's open and selected rows (core/tree/model.ts TreeViewState). */
const TREE_VIEW_STATE_KEY = 'remoteRuns.treeViewState';

export interface RemoteRunsApi {
  tree: RunsTreeProvider;
  core: RemoteRunsCore;
}

export function activate(context: vscode.ExtensionContext): RemoteRunsApi {
  const activateStarted = performance.now();
  const store = new DisposableStore();
  context.subscriptions.push(store);

  // The metrics parse threads kept warm between backlogs end with the extension, not a minute later.
  store.register({ dispose: closeIdleParseWorkers });
  const channel = store.register(vscode.window.createOutputChannel('Remote Runs', { log: true }));
  const log = channelLogger(channel);
  const settings = new Settings(log);

  const knownHostsFiles = (): string[] => {
    const files = settings.knownHostsFiles();
    return files.length ? files.map((f) => expandHome(f)) : [path.join(os.homedir(), '.ssh', 'known_hosts')];
  };
  // One live list: the pool reads it at every connect, so a changed setting (the demo host adds its file) applies
  // to the next connection without a reload.
  const knownHostsList = knownHostsFiles();
  store.register(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('remoteRuns.knownHostsFiles')) knownHostsList.splice(0, knownHostsList.length, ...knownHostsFiles());
    }),
  );
  const pool = store.register(
    new ConnectionPool({
      prompter: new VSCodePrompter(),
      logger: log,
      knownHostsFiles: knownHostsList,
      idleTimeoutMs: settings.idleDisconnectSeconds() * 1000,
      // The ssh of hosts on the OpenSSH transport: the user's remoteRuns.sshPath (never a workspace's), read at each connect.
      sshPath: () => settings.sshPath(),
    }),
  );
  const hosts = new HostDirectory({
    hosts: () => settings.hosts(),
    includeSshConfigHosts: () => settings.useSshConfigHosts(),
    sshConfigPath: () => settings.sshConfigFile(),
    onSshConfigProblems: (problems) => problems.forEach((p) => log.warn(`ssh config: ${p}`)),
  });
  // Long metrics backlogs as one OpenSSH stream per read, on the host's session that the pool keeps (one login per
  // host, shared with downloads, ended with the host's connection: the pool's own rule, the CLI's as here).
  const bulk = new BulkLinks(pool, { sshPath: () => settings.sshPath(), client: downloadClient, logger: log });
  store.register({ dispose: () => void bulk.dispose() });
  const core = new RemoteRunsCore({
    hosts: () => hosts.configs(),
    executorFor: (host): Executor => {
      const resolved = hosts.resolve(host);
      // Listings are idempotent: safe to retry once on a connection that dropped under them.
      return pool.executor(resolved, { idempotent: true });
    },
    streamFor: (host, target) => bulk.runner(hosts.resolve(host), target),
    // Kubernetes clusters: reached through the user's own kubectl on this machine (never a workspace's program).
    clusters: () => settings.clusters(),
    kubectlPath: () => settings.kubectlPath(),
  });

  const runFacts = new RunFactsReader(core);
  let evalsHandle: EvalsHandle | undefined;
  let downloadMarks: DownloadMarks | undefined;
  const inspectCache = new InspectCache();
  // The window's one cache of remote listings: the tree's rows and the language server's answers read it.
  const listings = store.register(windowListings(core));
  // A checkpoint's contents (tree rows, hover, compare): its headers over one remote command, cached per (path, size, mtime).
  const inspectCheckpoint = async (hostName: string, target: TargetRef, checkpoint: Checkpoint) =>
    (await inspectRemote(core.targetExecutor(hostName, target), target, listedFilesOf(checkpoint), { cache: inspectCache, host: hostName })).inspection;
  const tree = store.register(
    new RunsTreeProvider({
      core,
      hosts: () => [
        ...hosts.all().map((h) => ({ name: h.config.name, source: h.source })),
        ...settings.clusters().map((c) => ({ name: c.name, source: 'settings' as const, cluster: { context: c.context, ...(c.namespace ? { namespace: c.namespace } : {}), ...(c.selector ? { selector: c.selector } : {}) } })),
      ],
      connectionState: (name) => pool.getState(name),
      onDidChangeConnectionState: pool.onDidChangeState,
      log,
      // A config ssh would refuse fails the listing itself (bad-config): no rows to add then.
      sshConfigProblems: (name) => {
        try {
          const resolved = hosts.resolve(core.host(name));
          return problemsFor(resolved.configProblems ?? [], pool.transportFor(resolved));
        } catch {
          return [];
        }
      },
      transport: (name) => {
        try {
          return describeTransport(pool.transportFor(hosts.resolve(core.host(name))));
        } catch {
          return undefined; // a config ssh would refuse: the host's row says why
        }
      },
      // Bound once evals are registered below (they need the tree to redraw).
      checkpointDecoration: (node) => evalsHandle?.checkpointDecoration(node),
      checkpointEvalRunning: (node) => evalsHandle?.checkpointEvalRunning(node) ?? false,
      checkpointLocalCopy: (node) => downloadMarks?.markOf(node),
      // A run's hover: its config files (config.yaml/.json, hparams.yaml, args.json), one bounded remote command.
      runConfig: (node) => runFacts.config(node.hostName, node.target, node.run),
      inspect: inspectCheckpoint,
      listings,
      // The rows left open and the row selected, for the next window on this workspace.
      viewState: {
        get: () => context.workspaceState.get(TREE_VIEW_STATE_KEY),
        set: (state) =>
          void context.workspaceState.update(TREE_VIEW_STATE_KEY, state).then(undefined, (e: unknown) => log.warn(`saving the tree's state: ${e instanceof Error ? e.message : String(e)}`)),
      },
    }),
  );
  // canSelectMany: two checkpoints selected together can be compared (Compare Checkpoints… on the selection), and
  // several evaluated in one queue (Evaluate Checkpoint… on the selection).
  const view = store.register(vscode.window.createTreeView<TreeNode>('remoteRuns.hosts', { treeDataProvider: tree, showCollapseAll: true, canSelectMany: true }));
  tree.attach(view);
  downloadMarks = store.register(new DownloadMarks((node) => tree.redraw(node)));
  // A whole-tree refresh (the Refresh button) reads every downloaded mark again too.
  store.register(tree.onDidChangeTreeData((node) => node === undefined && downloadMarks?.recheckAll()));

  // A workspace's settings files are read for restricted settings VS Code will not apply, and each one is said
  // (docs/workspace-trust.md); again whenever they or the trust may have changed.
  const checkWorkspaceSettings = (): void => void settings.checkWorkspaceFiles().catch((e) => log.warn(`checking workspace settings: ${e instanceof Error ? e.message : String(e)}`));
  checkWorkspaceSettings();
  const settingsFiles = store.register(vscode.workspace.createFileSystemWatcher('**/.vscode/settings.json'));
  store.register(settingsFiles.onDidCreate(checkWorkspaceSettings));
  store.register(settingsFiles.onDidChange(checkWorkspaceSettings));
  store.register(settingsFiles.onDidDelete(checkWorkspaceSettings));
  store.register(vscode.workspace.onDidChangeWorkspaceFolders(checkWorkspaceSettings));
  store.register(vscode.workspace.onDidGrantWorkspaceTrust(checkWorkspaceSettings));

  const updateNoHosts = (): void => {
    void vscode.commands.executeCommand('setContext', 'remoteRuns.noHosts', hosts.all().length === 0 && settings.clusters().length === 0);
  };
  updateNoHosts();
  store.register(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('remoteRuns')) {
        checkWorkspaceSettings();
        hosts.invalidate();
        updateNoHosts();
        tree.refresh();
      }
    }),
  );

  // Timed refresh of what is open; the interval follows the setting.
  let timer: NodeJS.Timeout | undefined;
  const schedule = (): void => {
    if (timer) clearInterval(timer);
    const s = settings.refreshIntervalSeconds();
    timer = s > 0 ? setInterval(() => tree.refreshExpanded(), s * 1000) : undefined;
  };
  schedule();
  store.register({ dispose: () => timer && clearInterval(timer) });
  store.register(vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('remoteRuns.refreshIntervalSeconds') && schedule()));

  for (const d of registerCommands({ tree, hosts, log, showLog: () => channel.show(), knownHostsFiles, kubectlPath: () => settings.kubectlPath(), core, kubectlAccess: (name) => {
    const cluster = core.cluster(name);
    return cluster && core.kubectlAccess(cluster);
  } })) store.register(d);
  // Eval listings → the charts' points and the eval table (the hub is shared, so metrics can register first).
  const evalResults = store.register(new EvalResultsHub());
  const { feeds, references } = registerMetrics({
    store, core, tree, view, log, context, evals: evalResults,
    connectionState: (name) => pool.getState(name),
    onDidChangeConnectionState: pool.onDidChangeState,
    hostNames: () => hosts.all().map((h) => h.config.name),
    runConfig: (ref) =>
      runFacts.config(ref.hostName, ref.target, { path: ref.runPath }).then(configSummary, (e: unknown) => [`Config not read: ${e instanceof Error ? e.message : String(e)}`]),
  });
  registerDownloads({ store, core, pool, hosts, tree, view, log, context, settings, onDidDownload: () => downloadMarks?.recheckAll() });
  const notifier = store.register(new Notifier({ core, context, log, feeds, listings }));
  evalsHandle = registerEvals({ store, core, pool, hosts, tree, log, context, settings, results: evalResults, onEvalsListed: (subject, before, after) => notifier.evalsListed(subject, before, after) });
  // The speculative-decoding card of a run: its evals from the hub, its paper and reference rows from the references file's one owner.
  registerSpecCard({ store, tree, log, context, results: evalResults, references });
  registerCompare({ store, core, hosts, log, context, inspect: inspectCheckpoint });
  registerRuns({ store, core, hosts, reader: runFacts, log, context });
  registerDemo({ store, context, log });
  // Last: the language server asks the tree and the pool, so both exist before its first question.
  registerLanguageServer({ store, context, core, hosts, pool, tree, view, log, inspectCache, listings });
  // bench/activation.ts reads this line: the time spent inside activate(), next to VS Code's own figures.
  log.info(`Remote Runs activated in ${(performance.now() - activateStarted).toFixed(1)} ms`);
  return { tree, core };
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions.
}
