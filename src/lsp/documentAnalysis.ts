/**
 * One document's references, each resolved to its place and analysed: what diagnostics, links and code actions
 * are built from. Bare paths with no place from the command, mapping or comment are probed on the places the
 * extension can answer for, and belong to the one where they exist.
 */
import type { LoopTurns } from '../core/util/delay';
import type { ConfigResult, Place } from '../shared/lspProtocol';
import { samePlace } from '../shared/lspProtocol';
import { analyse as analysePlace, type Analysis } from './analysis';
import { findPlaceComment, scanLines, type Fallback, type PathRef } from './finder';
import { allRoots, documentPlace, resolveRef, rootsOf } from './places';
import type { RemoteIndex } from './remoteIndex';
import { rootOf } from './remoteIndex';

export interface RefResult {
  ref: PathRef;
  place?: Place;
  analysis?: Analysis;
  /** A bare path found on several places: where (no diagnostic then). */
  ambiguous?: Place[];
  /** The command names a host that is not configured. */
  unknownHost?: string;
}

/**
 * How many references of one document are checked: a script generated with 100,000 remote paths would otherwise be
 * 100,000 analyses and as many diagnostics (megabytes sent to the editor at every edit). The ones after the cap are
 * still answered one at a time when hovered or asked for a code action.
 */
export const REF_CAP = 2_000;

export interface DocumentResult {
  refs: RefResult[];
  fallbacks: Fallback[];
  /** Checking stopped at REF_CAP: the first reference not checked (its line and the ones after it were not scanned). */
  capped?: { cap: number; next: PathRef };
  /** Logical lines over MAX_LINE characters that were not scanned: how many, and the first. */
  longLines?: { count: number; first: { start: number; end: number } };
}

export interface AnalysisDeps {
  index: RemoteIndex;
  config(): Promise<ConfigResult>;
  /** Places answerable without a new connection (for bare paths with no place). */
  places(): Promise<Place[]>;
  /** The event loop's turns, shared by every analysis the server runs (so all of them together yield every slice). */
  turns: LoopTurns;
}

/** How many references are analysed at once (each may wait for a listing; most answer from the index's cache). */
const CONCURRENCY = 8;

/**
 * Find and analyse the references of a document, in steps that give the event loop a turn every slice (hovers and
 * other requests are answered in between), up to REF_CAP references. The same path on the same place is analysed
 * once per document. Rejects with `cancelled` as soon as `signal` aborts (a newer version of the text).
 */
export async function analyseDocument(deps: AnalysisDeps, uri: string, text: string, signal?: AbortSignal): Promise<DocumentResult> {
  const config = await deps.config();
  const docPlace = documentPlace(config, uri, findPlaceComment(text));
  const refs: PathRef[] = [];
  const fallbacks: Fallback[] = [];
  let capped: DocumentResult['capped'];
  let longLines: DocumentResult['longLines'];
  for (const line of scanLines(text, { roots: allRoots(config) })) {
    if (line.long) {
      longLines = { count: (longLines?.count ?? 0) + 1, first: longLines?.first ?? { start: line.from, end: Math.min(line.to, line.from + 200) } };
    } else if (line.refs && refs.length + line.refs.length > REF_CAP) {
      capped = { cap: REF_CAP, next: line.refs[0] };
      break;
    } else {
      if (line.refs) refs.push(...line.refs);
      if (line.fallbacks) fallbacks.push(...line.fallbacks);
    }
    await deps.turns.maybe(signal);
  }
  const memo = new Map<string, Promise<Analysis>>();
  const results: RefResult[] = new Array(refs.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < refs.length) {
      const i = next++;
      results[i] = await analyseRef(deps, config, docPlace, refs[i], signal, memo);
      await deps.turns.maybe(signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, refs.length) }, worker));
  return { refs: results, fallbacks, ...(capped ? { capped } : {}), ...(longLines ? { longLines } : {}) };
}

/** Resolve and analyse one reference. */
export async function analyseRef(deps: AnalysisDeps, config: ConfigResult, docPlace: Place | undefined, ref: PathRef, signal?: AbortSignal, memo?: Map<string, Promise<Analysis>>): Promise<RefResult> {
  const analyse = (place: Place, path: string, roots: readonly string[]): Promise<Analysis> => {
    const key = `${place.host}\0${place.target}\0${path}`;
    let a = memo?.get(key);
    if (!a) {
      a = analysePlace(deps.index, place, path, roots, signal);
      memo?.set(key, a);
    }
    return a;
  };
  const resolution = resolveRef(ref, config, docPlace);
  if (resolution.kind === 'unknown-host') return { ref, unknownHost: resolution.host };
  if (resolution.kind === 'place') {
    const analysis = await analyse(resolution.place, ref.path, rootsOf(config, resolution.place.host));
    return { ref, place: resolution.place, analysis };
  }
  // A bare path: the places whose host has it under a run root (and the command's target, if it names one).
  const candidates = (await deps.places()).filter(
    (p) => (!resolution.target || p.target === resolution.target) && rootOf(ref.path, rootsOf(config, p.host)) !== undefined,
  );
  const analysed = await Promise.all(candidates.map(async (place) => ({ place, analysis: await analyse(place, ref.path, rootsOf(config, place.host)) })));
  const present = analysed.filter(({ analysis: a }) => a.kind === 'exists' || (a.kind === 'glob' && (a.matches.length > 0 || a.dirState === 'ok')));
  if (present.length === 1) return { ref, ...present[0] };
  if (present.length > 1) {
    // The same path on several places: show what is where, do not guess.
    const withMatches = present.filter(({ analysis: a }) => a.kind === 'exists' || (a.kind === 'glob' && a.matches.length > 0));
    if (withMatches.length === 1) return { ref, ...withMatches[0] };
    return { ref, ambiguous: present.map((p) => p.place) };
  }
  return { ref };
}

/** The reference at a text offset (inclusive of its end, for a cursor just after it). */
export function refAt<T extends { ref: PathRef }>(results: readonly T[], offset: number): T | undefined {
  return results.find((r) => r.ref.start <= offset && offset <= r.ref.end);
}

export function uniquePlaces(places: readonly Place[]): Place[] {
  const out: Place[] = [];
  for (const p of places) if (!out.some((q) => samePlace(p, q))) out.push(p);
  return out;
}
