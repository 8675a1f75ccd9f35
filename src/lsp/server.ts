/**
 * The Remote Runs language server (its own bundle, dist/lspServer.js, spoken to over stdio or IPC). It finds
 * remote path references in open documents and says what they point at: hover, diagnostics, completion,
 * document links and code actions. It never opens SSH: every listing is asked of the extension
 * (`remoteRuns/list`), which answers from its cache or with one listing over the shared connection.
 *
 * Typing is never blocked and every request is answered while documents are analysed: diagnostics run debounced
 * per document, in steps that give the event loop a turn every SLICE_MS (all analyses share one LoopTurns), up to
 * REF_CAP references per document; a newer version aborts the older analysis at its next step, and a listing nobody
 * waits for any more is cancelled. A hover, completion or code action works on the lines it is asked about (from the
 * stored analysis when it is current, else on demand), never on the whole document.
 */
import {
  CancellationTokenSource,
  ProposedFeatures,
  TextDocumentSyncKind,
  TextDocuments,
  createConnection,
  type CancellationToken,
  type Diagnostic,
} from 'vscode-languageserver/node';
import { TextDocument } from 'vscode-languageserver-textdocument';
import { LspMethods, type ConfigResult, type LatestMetricsResult, type InspectSummaryResult, type IndexChangedParams, type ListParams, type ListResult, type Place, type PlacesResult } from '../shared/lspProtocol';
import { completionsAt } from './completion';
import { LoopTurns } from '../core/util/delay';
import { analyseDocument, analyseRef, refAt, type AnalysisDeps, type DocumentResult, type RefResult } from './documentAnalysis';
import { actionsOf, checkpointRefOf, diagnosticSteps, hoverFor, latestLine, linksOf, runLogOf } from './features';
import { findPathRefsIn, findPlaceComment } from './finder';
import { mdText } from './markdown';
import { allRoots, documentPlace } from './places';
import { RemoteIndex } from './remoteIndex';
import { withCancellation } from '../core/util/abort';

const DEBOUNCE_MS = 300;
const PLACES_TTL_MS = 10_000;
/** The longest stretch of analysis between two turns of the event loop (a hover waits at most about this long). */
const SLICE_MS = 5;
/** How long a hover, completion or code action may keep analysis waiting while it is answered (it may wait on a listing). */
const HOLD_MS = 150;

const connection = createConnection(ProposedFeatures.all);
const documents = new TextDocuments(TextDocument);

const index = new RemoteIndex((params: ListParams, signal: AbortSignal) => connection.sendRequest<ListResult>(LspMethods.list, params, tokenOf(signal)));

let configPromise: Promise<ConfigResult> | undefined;
let placesCache: { at: number; value: Promise<Place[]> } | undefined;

const deps: AnalysisDeps = {
  index,
  turns: new LoopTurns(SLICE_MS, HOLD_MS),
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
/** Per document: the debounce timer, and the analysis under way (for `version`). */
const pending = new Map<string, { timer?: NodeJS.Timeout; controller?: AbortController; running?: { version: number; promise: Promise<DocumentResult | undefined> } }>();

function schedule(doc: TextDocument, delay = DEBOUNCE_MS): void {
  const slot = pending.get(doc.uri) ?? {};
  if (slot.timer) clearTimeout(slot.timer);
  slot.controller?.abort();
  slot.controller = undefined;
  slot.running = undefined;
  slot.timer = setTimeout(() => void validate(doc.uri), delay);
  pending.set(doc.uri, slot);
}

/** Analyse the document as it is now and publish its diagnostics; undefined when a newer version took over. */
function validate(uri: string): Promise<DocumentResult | undefined> {
  const doc = documents.get(uri);
  const slot = pending.get(uri);
  if (!doc || !slot) return Promise.resolve(undefined);
  if (slot.timer) clearTimeout(slot.timer);
  slot.timer = undefined;
  slot.controller?.abort();
  const controller = new AbortController();
  slot.controller = controller;
  const running = { version: doc.version, promise: Promise.resolve<DocumentResult | undefined>(undefined) };
  running.promise = (async (): Promise<DocumentResult | undefined> => {
    try {
      const result = await analyseDocument(deps, uri, doc.getText(), controller.signal);
      const now = documents.get(uri);
      if (controller.signal.aborted || !now || now.version !== doc.version) return undefined;
      results.set(uri, { version: doc.version, result });
      const diagnostics: Diagnostic[] = [];
      for (const d of diagnosticSteps(doc, result)) {
        diagnostics.push(d);
        await deps.turns.maybe(controller.signal);
      }
      await connection.sendDiagnostics({ uri, version: doc.version, diagnostics });
      return result;
    } catch (e) {
      // A newer version (or closing the document) stopped it: nothing to say.
      if (!controller.signal.aborted) connection.console.error(`analysis of ${uri} failed: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
      return undefined;
    } finally {
      if (slot.controller === controller) slot.controller = undefined;
      if (slot.running === running) slot.running = undefined;
    }
  })();
  slot.running = running;
  return running.promise;
}

/** The analysis of the whole document as it is now: the stored one, the one under way, or one started now. */
async function current(doc: TextDocument): Promise<DocumentResult | undefined> {
  const stored = results.get(doc.uri);
  if (stored && stored.version === doc.version) return stored.result;
  const running = pending.get(doc.uri)?.running;
  if (running && running.version === doc.version) return running.promise;
  if (!pending.has(doc.uri)) pending.set(doc.uri, {});
  return validate(doc.uri);
}

/**
 * The references between two offsets, analysed: from the stored analysis when it is current and covers them, else
 * found on those lines alone and analysed now (the document not analysed yet, being typed in, or past REF_CAP).
 */
async function refsBetween(doc: TextDocument, from: number, to: number, token: CancellationToken): Promise<RefResult[]> {
  const stored = results.get(doc.uri);
  if (stored?.version === doc.version) {
    const capAt = stored.result.capped?.next.start ?? Infinity;
    const found = stored.result.refs.filter((r) => r.ref.end >= from && r.ref.start <= to);
    if (to < capAt && (found.length > 0 || !stored.result.longLines)) return found;
  }
  const config = await deps.config();
  const text = doc.getText();
  const refs = findPathRefsIn(text, from, to, { roots: allRoots(config) });
  if (refs.length === 0) return [];
  const docPlace = documentPlace(config, doc.uri, findPlaceComment(text));
  const memo = new Map();
  return withCancellation(token, (signal) => Promise.all(refs.map((ref) => analyseRef(deps, config, docPlace, ref, signal, memo))));
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

connection.onHover((params, token) => deps.turns.hold(async () => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return null;
  const offset = doc.offsetAt(params.position);
  const r = refAt(await refsBetween(doc, offset, offset, token), offset);
  if (!r) return null;
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
    if (contents) extra = [extra, contents.ok ? `contents: ${mdText(contents.summary)}` : `contents not read: ${mdText(contents.message)}`].filter(Boolean).join('\n\n');
  }
  return token.isCancellationRequested ? null : (hoverFor(doc, r, extra) ?? null);
}));

connection.onCompletion((params, token) => deps.turns.hold(async () => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return [];
  return withCancellation(token, (signal) => completionsAt(deps, doc, doc.offsetAt(params.position), signal));
}));

connection.onDocumentLinks(async (params, token) => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return [];
  const result = await current(doc);
  return result && !token.isCancellationRequested ? linksOf(doc, result) : [];
});

connection.onCodeAction((params, token) => deps.turns.hold(async () => {
  const doc = documents.get(params.textDocument.uri);
  if (!doc) return [];
  const refs = await refsBetween(doc, doc.offsetAt(params.range.start), doc.offsetAt(params.range.end), token);
  return actionsOf(doc, { refs, fallbacks: [] }, params.range, params.context.diagnostics);
}));

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

