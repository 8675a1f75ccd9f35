/**
 * One document's references, each resolved to its place and analysed: what diagnostics, links and code actions
 * are built from. Bare paths with no place from the command, mapping or comment are probed on the places the
 * extension can answer for, and belong to the one where they exist.
 */
import type { ConfigResult, Place } from '../shared/lspProtocol';
import { samePlace } from '../shared/lspProtocol';
import { analyse, type Analysis } from './analysis';
import { findFallbacks, findPathRefs, findPlaceComment, type Fallback, type PathRef } from './finder';
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

export interface DocumentResult {
  refs: RefResult[];
  fallbacks: Fallback[];
}

export interface AnalysisDeps {
  index: RemoteIndex;
  config(): Promise<ConfigResult>;
  /** Places answerable without a new connection (for bare paths with no place). */
  places(): Promise<Place[]>;
}

/** Find and analyse every reference of a document. */
export async function analyseDocument(deps: AnalysisDeps, uri: string, text: string, signal?: AbortSignal): Promise<DocumentResult> {
  const config = await deps.config();
  const refs = findPathRefs(text, { roots: allRoots(config) });
  const docPlace = documentPlace(config, uri, findPlaceComment(text));
  const results = await Promise.all(refs.map((ref) => analyseRef(deps, config, docPlace, ref, signal)));
  return { refs: results, fallbacks: findFallbacks(text) };
}

/** Resolve and analyse one reference. */
export async function analyseRef(deps: AnalysisDeps, config: ConfigResult, docPlace: Place | undefined, ref: PathRef, signal?: AbortSignal): Promise<RefResult> {
  const resolution = resolveRef(ref, config, docPlace);
  if (resolution.kind === 'unknown-host') return { ref, unknownHost: resolution.host };
  if (resolution.kind === 'place') {
    const analysis = await analyse(deps.index, resolution.place, ref.path, rootsOf(config, resolution.place.host), signal);
    return { ref, place: resolution.place, analysis };
  }
  // A bare path: the places whose host has it under a run root (and the command's target, if it names one).
  const candidates = (await deps.places()).filter(
    (p) => (!resolution.target || p.target === resolution.target) && rootOf(ref.path, rootsOf(config, p.host)) !== undefined,
  );
  const analysed = await Promise.all(candidates.map(async (place) => ({ place, analysis: await analyse(deps.index, place, ref.path, rootsOf(config, place.host), signal) })));
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
