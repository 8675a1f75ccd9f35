/**
 * Completion of remote path segments: the entries of the folder typed so far, step folders newest first, each
 * with its size and age. Before a run root is typed out, the roots themselves are offered.
 */
import { CompletionItemKind, type CompletionItem } from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { parseCheckpointName } from '../core/discovery/checkpointLayout';
import type { ConfigResult, Place } from '../shared/lspProtocol';
import type { Found } from './analysis';
import { findPathRefsIn, findPlaceComment } from './finder';
import { hasGlob } from './glob';
import { childrenOf, pathOf } from './listingView';
import { sizeAge } from './messages';
import { displayName, hasUnsafe } from '../shared/display';
import type { AnalysisDeps } from './documentAnalysis';
import { allRoots, documentPlace, resolveRef, rootsOf } from './places';
import { rootOf } from './remoteIndex';
import { rangeOf } from './features';

/** Completion items at `offset`, or [] when the cursor is not in a remote path. */
export async function completionsAt(deps: AnalysisDeps, doc: TextDocument, offset: number, signal?: AbortSignal): Promise<CompletionItem[]> {
  const config = await deps.config();
  const text = doc.getText();
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  const typedToken = /(?:~\/|\/)[^\s'"`;|&<>(){},$\\]*$/.exec(text.slice(lineStart, offset));
  if (!typedToken) return [];
  const roots = allRoots(config);
  // The cursor's own line only: the document may be megabytes.
  const ref = findPathRefsIn(text, offset, offset, { roots }).find((r) => r.start <= offset && offset <= r.end);
  if (!ref) return rootItems(doc, roots, typedToken[0], offset);
  const typed = text.slice(ref.start, offset);
  if (hasGlob(typed)) return [];
  const slash = typed.lastIndexOf('/');
  const dir = slash <= 0 ? (typed.startsWith('~') ? '~' : '/') : typed.slice(0, slash);
  const prefix = typed.slice(slash + 1);
  const resolution = resolveRef({ ...ref, path: dir }, config, documentPlace(config, doc.uri, findPlaceComment(text)));
  if (resolution.kind === 'unknown-host') return [];
  const places =
    resolution.kind === 'place'
      ? [resolution.place]
      : (await deps.places()).filter((p) => (!resolution.target || p.target === resolution.target) && rootOf(dir, rootsOf(config, p.host)) !== undefined);
  const lists = await Promise.all(places.map((place) => childrenAt(deps, config, place, dir, signal)));
  const found = lists.find((l) => l !== undefined && l.length > 0) ?? [];
  const range = rangeOf(doc, offset - prefix.length, offset);
  return found
    .filter((f) => f.name.startsWith(prefix) && (!f.name.startsWith('.') || prefix.startsWith('.')))
    .map((f): CompletionItem => {
      const step = f.type === 'd' ? (parseCheckpointName(f.name, true)?.step ?? undefined) : undefined;
      const folder = f.type === 'd';
      // Shown through the display function; a name holding a control or bidi character is listed (escaped) but
      // never written into the document: accepting it leaves what was typed as it was.
      const shown = displayName(f.name);
      const unsafe = hasUnsafe(f.name);
      return {
        label: shown,
        kind: folder ? CompletionItemKind.Folder : CompletionItemKind.File,
        detail: `${sizeAge(f, f.now)}${step !== undefined ? ` · step ${step}` : ''}${unsafe ? ' · its name holds control characters, shown escaped: not inserted' : ''}`,
        // Step folders newest first, then everything else by name.
        sortText: step !== undefined ? `0${String(1e15 - step).padStart(16, '0')}` : `1${shown}`,
        filterText: shown,
        textEdit: { range, newText: unsafe ? prefix : folder ? `${f.name}/` : f.name },
        ...(folder && !unsafe ? { command: { title: 'Next segment', command: 'editor.action.triggerSuggest' } } : {}),
      };
    });
}

async function childrenAt(deps: AnalysisDeps, config: ConfigResult, place: Place, dir: string, signal?: AbortSignal): Promise<(Found & { now: number })[] | undefined> {
  const located = await deps.index.locate(place, dir, rootsOf(config, place.host), signal, 1);
  if (!located.ok || located.view.state !== 'ok') return undefined;
  const { view, rel } = located;
  return childrenOf(view, rel).map((e) => {
    const below = e.type === 'd' ? view.entries.filter((x) => x.rel.startsWith(`${e.rel}/`)) : [];
    const bytes = e.type === 'd' ? below.reduce((s, x) => s + (x.type === 'f' ? x.bytes : 0), 0) : e.bytes;
    const mtime = Math.max(e.mtime, ...below.map((x) => x.mtime));
    return { path: pathOf(view, e.rel), name: e.rel.slice(e.rel.lastIndexOf('/') + 1), type: e.type, bytes, mtime, now: view.remoteNow };
  });
}

/** The run roots that start with what is typed (`/wo` → `/workspace/`). */
function rootItems(doc: TextDocument, roots: readonly string[], typed: string, offset: number): CompletionItem[] {
  const range = rangeOf(doc, offset - typed.length, offset);
  return roots
    .filter((r) => r.startsWith(typed) && r !== typed)
    .map((r) => ({ label: r, kind: CompletionItemKind.Folder, detail: 'a Remote Runs run root', textEdit: { range, newText: `${r}/` }, command: { title: 'Next segment', command: 'editor.action.triggerSuggest' } }));
}
