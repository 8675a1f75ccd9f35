/**
 * Starts the Remote Runs language server (dist/lspServer.js) for shell, Python, YAML, JSON, TOML, Markdown and
 * notebook cells (plus `remoteRuns.languageServer.languages`), answers its questions through RemoteAnswers, and
 * tells it when what it rests on changed: the window's listing cache holds a new listing of a place (the tree's
 * refresh, or a listing made for a hover), or the settings changed.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { LanguageClient, TransportKind, type CancellationToken, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import type { RemoteRunsCore } from '../../core/service';
import type { HostDirectory } from '../../core/hosts';
import type { ConnectionPool } from '../../core/ssh/pool';
import { formatTarget, parseTarget } from '../../core/types';
import { LspMethods, type LatestMetricsParams, type InspectSummaryParams, type ListParams, type PathMapping, type Place } from '../../shared/lspProtocol';
import type { RunRefWire } from '../../shared/metricsProtocol';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import { revealCheckpoint } from '../metrics/treeGlue';
import type { TreeNode } from '../../core/tree/nodes';
import type { RunsTreeProvider } from '../tree/treeProvider';
import { RemoteAnswers } from './answers';
import { setting } from '../settings';
import { withCancellation } from '../../core/util/abort';
import type { InspectCache } from '../../core/inspect/remoteRead';
import type { Listings } from '../../core/discovery/listings';
import type { ListedFolder } from './answers';

/** Languages served by default; `remoteRuns.languageServer.languages` adds to them. */
export const DEFAULT_LANGUAGES: readonly string[] = ['shellscript', 'python', 'yaml', 'json', 'toml', 'markdown'];

export interface LanguageServerDeps {
  store: DisposableStore;
  context: vscode.ExtensionContext;
  core: RemoteRunsCore;
  hosts: HostDirectory;
  pool: ConnectionPool;
  tree: RunsTreeProvider;
  view: vscode.TreeView<TreeNode>;
  log: Logger;
  /** The window's one cache of checkpoint headers (extension.ts), so a hover and the tree read a checkpoint once. */
  inspectCache: InspectCache;
  /** The window's one listing cache (extension.ts), read by the tree too: a root listed once answers both. */
  listings: Listings<ListedFolder>;
}

/** Start the client (and its server) and wire refreshes; everything is registered on `deps.store`. */
export function registerLanguageServer(deps: LanguageServerDeps): RemoteAnswers {
  const { store, context, tree, view, log } = deps;
  const answers = new RemoteAnswers({
    core: deps.core,
    hosts: () => deps.hosts.configs(),
    isConnected: (name) => deps.pool.getState(name).kind === 'connected',
    knownPlaces: () => tree.knownRuns().map((n) => ({ host: n.hostName, target: formatTarget(n.target) })),
    mappings: () => pathMappings(log),
    inspectCache: deps.inspectCache,
    listings: deps.listings,
  });
  store.register(answers);

  store.register(
    registerCommand(CommandIds.revealInTree, async (run?: RunRefWire, step?: number | null) => {
      if (!run?.runPath) return;
      const at = step ?? run.checkpoints[run.checkpoints.length - 1]?.step;
      await vscode.commands.executeCommand('remoteRuns.hosts.focus');
      if (at !== undefined) await revealCheckpoint(tree, view, run, at);
    }, log),
  );

  let client: LanguageClient | undefined;
  let starting: Promise<void> = Promise.resolve();
  const start = (): void => {
    starting = starting.then(async () => {
      if (client) await client.stop().catch(() => undefined);
      client = makeClient(context, answers);
      try {
        await client.start();
        log.info(`language server started for ${languages().join(', ')}`);
      } catch (e) {
        log.error(`language server failed to start: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
  };
  start();
  store.register({ dispose: () => void starting.then(() => client?.stop()).catch(() => undefined) });

  // A place listed anew with a different answer, or dropped (a refresh of everything, a host whose targets changed),
  // whoever listed it: the server drops its copies and re-checks the diagnostics resting on them.
  store.register(
    deps.listings.onDidChange((scope) => {
      const place: Place | undefined = scope?.target ? { host: scope.host, target: formatTarget(scope.target) } : undefined;
      if (client?.isRunning()) void client.sendNotification(LspMethods.indexChanged, place ? { place } : {});
    }),
  );
  store.register(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('remoteRuns.languageServer.languages')) start();
      else if (e.affectsConfiguration('remoteRuns')) answers.invalidate();
    }),
  );
  return answers;
}

function languages(): string[] {
  const extra = setting<unknown>('languageServer.languages', []);
  return [...new Set([...DEFAULT_LANGUAGES, ...(Array.isArray(extra) ? extra : []).filter((l): l is string => typeof l === 'string' && l.trim() !== '').map((l) => l.trim())])];
}

function makeClient(context: vscode.ExtensionContext, answers: RemoteAnswers): LanguageClient {
  const module = context.asAbsolutePath(path.join('dist', 'lspServer.js'));
  const serverOptions: ServerOptions = {
    run: { module, transport: TransportKind.ipc },
    debug: { module, transport: TransportKind.ipc, options: { execArgv: ['--nolazy', '--inspect=6019'] } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: languages().flatMap((language) => [
      { scheme: 'file', language },
      { scheme: 'untitled', language },
      { scheme: 'vscode-notebook-cell', language },
    ]),
    outputChannelName: 'Remote Runs Paths',
  };
  const client = new LanguageClient('remoteRuns.paths', 'Remote Runs Paths', serverOptions, clientOptions);
  client.onRequest(LspMethods.config, () => answers.config());
  client.onRequest(LspMethods.places, (_: unknown, token: CancellationToken) => withCancellation(token, (signal) => answers.places(signal)));
  client.onRequest(LspMethods.list, (params: ListParams, token: CancellationToken) => withCancellation(token, (signal) => answers.list(params, signal)));
  client.onRequest(LspMethods.latestMetrics, (params: LatestMetricsParams, token: CancellationToken) => withCancellation(token, (signal) => answers.latestMetrics(params, signal)));
  client.onRequest(LspMethods.inspectSummary, (params: InspectSummaryParams, token: CancellationToken) => withCancellation(token, (signal) => answers.inspectSummary(params, signal)));
  return client;
}

/** `remoteRuns.pathMappings`: `{ "<folder>": "host/target" }`, folders absolute or relative to each workspace folder. */
function pathMappings(log: Logger): PathMapping[] {
  const raw = setting<Record<string, unknown>>('pathMappings', {}) ?? {};
  const out: PathMapping[] = [];
  for (const [folder, value] of Object.entries(raw)) {
    const m = typeof value === 'string' ? /^([^/\s]+)(?:\/(.+))?$/.exec(value.trim()) : null;
    if (!m) {
      log.warn(`remoteRuns.pathMappings: ${JSON.stringify(folder)} → ${JSON.stringify(value)} is not "host/target"; skipped`);
      continue;
    }
    try {
      const target = formatTarget(parseTarget(m[2] ?? 'host'));
      const bases = path.isAbsolute(folder) ? [folder] : (vscode.workspace.workspaceFolders ?? []).map((w) => path.join(w.uri.fsPath, folder));
      for (const base of bases) out.push({ folderUri: vscode.Uri.file(base).toString(), place: { host: m[1], target } });
    } catch (e) {
      log.warn(`remoteRuns.pathMappings: ${JSON.stringify(folder)}: ${e instanceof Error ? e.message : String(e)}; skipped`);
    }
  }
  return out;
}

