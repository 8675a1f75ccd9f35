/**
 * The Remote Runs language server (its own bundle, dist/lspServer.js, spoken to over stdio or IPC). It finds
 * remote path references in open documents and says what they point at: hover, diagnostics, completion,
 * document links and code actions. It never opens SSH: every listing is asked of the extension
 * (`remoteRuns/list`), which answers from its cache or with one listing over the shared connection.
 *
 * Typing is never blocked: diagnostics run debounced per document, a newer version aborts the older analysis,
 * and a listing nobody waits for any more is cancelled.
 */
import {
  CancellationTokenSource,
  ProposedFeatures,
  TextDocumentSyncKind,
  TextDocuments,
  createConnection,
  type CancellationToken,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { LspMethods, type ConfigResult, type LatestMetricsResult, type InspectSummaryResult, type IndexChangedParams, type ListParams, type ListResult, type Place, type PlacesResult } from '../shared/lspProtocol';
import { completionsAt } from './completion';
import { analyseDocument, analyseRef, refAt, type AnalysisDeps, type DocumentResult } from './documentAnalysis';
import { actionsOf, checkpointRefOf, diagnosticsOf, hoverFor, latestLine, linksOf, runLogOf } from './features';
import { findPathRefs, findPlaceComment } from './finder';
import { allRoots, documentPlace } from './places';
import { RemoteIndex } from './remoteIndex';

const DEBOUNCE_MS = 300;
const PLACES_TTL_MS = 10_000;

const connection = createConnection(ProposedFeatures.all);
const documents = new TextDocuments(TextDocument);

const index = new RemoteIndex((params: ListParams, signal: AbortSignal) => connection.sendRequest<ListResult>(LspMethods.list, params, tokenOf(signal)));

let configPromise: Promise<ConfigResult> | undefined;
let placesCache: { at: number; value: Promise<Place[]> } | undefined;

const deps: AnalysisDeps = {
  index,
  config: () =>
    (configPromise ??= connection.sendRequest<ConfigResult>(LspMethods.config).catch((e: unknown) => {
      configPromise = undefined;
      connection.console.error(`remoteRuns/config failed: ${e instanceof Error ? e.message : String(e)}`);
      return { hosts: [], mappings: [] };
    })),
  places: () => {
    if (!placesCache || Date.now() - placesCache.at > PLACES_TTL_MS) {
      placesCache = { at: Date.now(), value: connection.sendRequest<PlacesResult>(LspMethods.places).then((r) => r.places, () => []) };
    }
    return placesCache.value;
  },
};

/** The latest analysis of each open document, with the version it was made for. */
const results = new Map<string, { version: number; result: DocumentResult }>();
const pending = new Map<string, { timer?: NodeJS.Timeout; controller?: AbortController }>();

function schedule(doc: TextDocument, delay = DEBOUNCE_MS): void {
  const slot = pending.get(doc.uri) ?? {};
  if (slot.timer) clearTimeout(slot.timer);
  slot.controller?.abort();
  slot.controller = undefined;
  slot.timer = setTimeout(() => void validate(doc.uri), delay);
  pending.set(doc.uri, slot);
}

async function validate(uri: string): Promise<void> {
  const doc = documents.get(uri);
  const slot = pending.get(uri);
  if (!doc || !slot) return;
  slot.timer = undefined;
  const controller = new AbortController();
  slot.controller = controller;
  try {
    const result = await analyseDocument(deps, uri, doc.getText(), controller.signal);
    const now = documents.get(uri);
    if (controller.signal.aborted || !now || now.version !== doc.version) return;
    results.set(uri, { version: doc.version, result });
    await connection.sendDiagnostics({ uri, version: doc.version, diagnostics: diagnosticsOf(doc, result) });
  } catch (e) {
    connection.console.error(`analysis of ${uri} failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
  } finally {
    if (slot.controller === controller) slot.controller = undefined;
  }
}

/** The analysis of the document as it is now: the stored one, or a fresh one. */
async function current(doc: TextDocument, token: CancellationToken): Promise<DocumentResult> {
  const stored = results.get(doc.uri);
  if (stored && stored.version === doc.version) return stored.result;
  return analyseDocument(deps, doc.uri, doc.getText(), signalOf(token));
}

connection.onInitialize(() => ({
  capabilities: {
    textDocumentSync: TextDocumentSyncKind.Incremental,
    hoverProvider: true,
    completionProvider: { triggerCharacters: ['/'], resolveProvider: false },
    documentLinkProvider: { resolveProvider: false },
    codeActionProvider: { codeActionKinds: ['quickfix', ''] },
  },
  serverInfo: { name: 'remote-runs-lsp' },
}));

documents.onDidOpen((e) => schedule(e.document, 0));
documents.onDidChangeContent((e) => schedule(e.document));
documents.onDidClose((e) => {
  const slot = pending.get(e.document.uri);
  if (slot?.timer) clearTimeout(slot.timer);
  slot?.controller?.abort();
  pending.delete(e.document.uri);
  results.delete(e.document.uri);
  void connection.sendDiagnostics({ uri: e.document.uri, diagnostics: [] });
});

connection.onHover(async (params, token) => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return null;
  const offset = doc.offsetAt(params.position);
  const stored = results.get(doc.uri);
  let r = stored?.version === doc.version ? refAt(stored.result.refs, offset) : undefined;
  if (!r) {
    // Not analysed yet (typing): analyse just this reference.
    const config = await deps.config();
    const text = doc.getText();
    const ref = findPathRefs(text, { roots: allRoots(config) }).find((x) => x.start <= offset && offset <= x.end);
    if (!ref) return null;
    r = await analyseRef(deps, config, documentPlace(config, doc.uri, findPlaceComment(text)), ref, signalOf(token));
  }
  // Over a run itself: its latest logged values too (the last few KB of its JSONL log, read by the extension).
  const log = runLogOf(r);
  let extra: string | undefined;
  if (log) {
    const latest = await connection.sendRequest<LatestMetricsResult>(LspMethods.latestMetrics, log, token).catch(() => undefined);
    if (latest?.ok) extra = latestLine(latest.step, latest.values);
  }
  // Over a checkpoint itself: what it holds, from its headers (read by the extension, one remote command).
  const ck = checkpointRefOf(r);
  if (ck) {
    const contents = await connection.sendRequest<InspectSummaryResult>(LspMethods.inspectSummary, ck, token).catch(() => undefined);
    if (contents) extra = [extra, contents.ok ? `contents: ${contents.summary}` : `contents not read: ${contents.message}`].filter(Boolean).join('\n\n');
  }
  return token.isCancellationRequested ? null : (hoverFor(doc, r, extra) ?? null);
});

connection.onCompletion(async (params, token) => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return [];
  return completionsAt(deps, doc, doc.offsetAt(params.position), signalOf(token));
});

connection.onDocumentLinks(async (params, token) => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return [];
  return linksOf(doc, await current(doc, token));
});

connection.onCodeAction(async (params, token) => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return [];
  return actionsOf(doc, await current(doc, token), params.range, params.context.diagnostics);
});

connection.onNotification(LspMethods.indexChanged, (params: IndexChangedParams | undefined) => {
  index.invalidate(params?.place);
  if (!params?.place) configPromise = undefined;
  placesCache = undefined;
  for (const doc of documents.all()) schedule(doc);
});

documents.listen(connection);
connection.listen();

/** A jsonrpc token that cancels when the signal aborts. */
function tokenOf(signal: AbortSignal): CancellationToken {
  const source = new CancellationTokenSource();
  if (signal.aborted) source.cancel();
  else signal.addEventListener('abort', () => source.cancel(), { once: true });
  return source.token;
}

/** An AbortSignal that aborts when the LSP request is cancelled. */
function signalOf(token: CancellationToken): AbortSignal {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  else token.onCancellationRequested(() => controller.abort());
  return controller.signal;
}
