/**
 * The server's view of the extension's answers, not a second owner of what is on the remote side: the listings are
 * the window's listing cache's (core/discovery/listings.ts, in the extension, which the tree reads too), asked for by
 * `remoteRuns/list`. This keeps what it was answered only so that a document's many questions about one run root do
 * not carry the same thousands of entries over the wire again: for no longer than the extension's own answers last
 * (ANSWER_MAX_AGE_MS), and dropped as soon as the extension says the place changed (`remoteRuns/indexChanged`, sent
 * whenever its cache holds a new listing of a place, whoever asked for it). It also shares one request between
 * everyone who asks the same question while it is in flight, and cancels a request whose every asker gave up (the
 * user typed on).
 */
import type { ListParams, ListResult, Place } from '../shared/lspProtocol';
import { samePlace } from '../shared/lspProtocol';
import { answers, relOf, type ListingView } from './listingView';
import { ANSWER_MAX_AGE_MS } from '../core/discovery/listings';

/** Asks the extension for one listing; `signal` aborts when nobody waits for it any more. */
export type Fetch = (params: ListParams, signal: AbortSignal) => Promise<ListResult>;

/** How deep a run root is listed: the tree's depth (root/run/checkpoints/step_N/file, and one more). */
export const ROOT_DEPTH = 5;
/** How deep a folder outside any run root is listed: its entries and theirs (for folder sizes). */
export const FOLDER_DEPTH = 2;

export type Located = { ok: true; view: ListingView; rel: string } | { ok: false; kind: string; message: string };

interface Slot {
  at: number;
  params: ListParams;
  result?: ListResult;
  promise: Promise<ListResult>;
  waiters: number;
  controller: AbortController;
}

export class RemoteIndex {
  private readonly slots = new Map<string, Slot>();

  constructor(
    private readonly fetch: Fetch,
    private readonly ttlMs = ANSWER_MAX_AGE_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** One listing, from the cache when fresh. Never rejects: a failure or cancellation is a `{ ok: false }`. */
  async list(params: ListParams, signal?: AbortSignal): Promise<ListResult> {
    const key = JSON.stringify([params.place.host, params.place.target, params.path, params.depth]);
    let slot = this.slots.get(key);
    if (slot && (slot.result ? this.clock() - slot.at > this.ttlMs || !slot.result.ok : slot.controller.signal.aborted)) {
      this.slots.delete(key);
      slot = undefined;
    }
    if (!slot) {
      const controller = new AbortController();
      const created: Slot = { at: this.clock(), params, waiters: 0, controller, promise: Promise.resolve({ ok: false, kind: 'cancelled', message: '' }) };
      created.promise = this.fetch(params, controller.signal).then(
        (r) => {
          created.result = r;
          created.at = this.clock();
          return r;
        },
        (e: unknown) => {
          const r: ListResult = { ok: false, kind: controller.signal.aborted ? 'cancelled' : 'protocol', message: e instanceof Error ? e.message : String(e) };
          created.result = r;
          return r;
        },
      );
      this.slots.set(key, created);
      slot = created;
    }
    if (slot.result) return slot.result;
    return this.wait(slot, signal);
  }

  private wait(slot: Slot, signal?: AbortSignal): Promise<ListResult> {
    slot.waiters++;
    return new Promise<ListResult>((resolve) => {
      let done = false;
      const finish = (r: ListResult): void => {
        if (done) return;
        done = true;
        slot.waiters--;
        signal?.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onAbort = (): void => {
        finish({ ok: false, kind: 'cancelled', message: 'cancelled' });
        if (slot.waiters === 0 && !slot.result) slot.controller.abort();
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort);
      void slot.promise.then(finish);
    });
  }

  /** Forget answers (about one place, or all). */
  invalidate(place?: Place): void {
    for (const [key, slot] of this.slots) {
      if (!place || samePlace(slot.params.place, place)) {
        if (!slot.result) continue; // in flight: it answers the question as asked now
        this.slots.delete(key);
      }
    }
  }

  /**
   * The listing that answers about `path` on `place`: its run root's (listed as deep as the tree lists it) when
   * it lies under one of `roots`, else its parent folder's. `childDepth` 1 asks for a listing that also holds
   * the path's children.
   */
  async locate(place: Place, path: string, roots: readonly string[], signal?: AbortSignal, childDepth = 0): Promise<Located> {
    const root = rootOf(path, roots);
    if (root !== undefined) {
      const r = await this.list({ place, path: root, depth: ROOT_DEPTH }, signal);
      if (!r.ok) return r;
      const view = toView(root, ROOT_DEPTH, r);
      const rel = relOf(view, path);
      if (rel !== undefined && (view.state !== 'ok' || answers(view, childDepth ? joinRel(rel, 'x') : rel))) return { ok: true, view, rel };
    }
    const dir = childDepth ? stripSlash(path) : parentOf(path);
    const r = await this.list({ place, path: dir, depth: FOLDER_DEPTH }, signal);
    if (!r.ok) return r;
    const view = toView(dir, FOLDER_DEPTH, r);
    return { ok: true, view, rel: relOf(view, path) ?? '' };
  }

  /** The nearest folder above `path` that exists, listed one level deep (at most `maxUp` listings). */
  async nearestExisting(place: Place, path: string, roots: readonly string[], signal?: AbortSignal, maxUp = 4): Promise<{ view: ListingView; rel: string } | undefined> {
    let p = parentOf(path);
    for (let i = 0; i < maxUp && p !== ''; i++) {
      const located = await this.locate(place, p, roots, signal, 1);
      if (!located.ok) return undefined;
      const { view, rel } = located;
      if (view.state === 'ok' && (rel === '' || view.entries.some((e) => e.rel === rel && e.type === 'd'))) return { view, rel };
      if (p === '/' || p === '~') return undefined;
      p = parentOf(p);
    }
    return undefined;
  }
}

export function toView(base: string, depth: number, r: Extract<ListResult, { ok: true }>): ListingView {
  return { base, depth, resolved: r.resolved, state: r.state, entries: r.entries, truncated: r.truncated, remoteNow: r.remoteNow };
}

/** The longest root `path` lies in (or is), if any. */
export function rootOf(path: string, roots: readonly string[]): string | undefined {
  const p = stripSlash(path);
  let best: string | undefined;
  for (const raw of roots) {
    const r = stripSlash(raw);
    if ((p === r || p.startsWith(r === '/' ? '/' : `${r}/`)) && (!best || r.length > best.length)) best = r;
  }
  return best;
}

export function parentOf(path: string): string {
  const p = stripSlash(path);
  const i = p.lastIndexOf('/');
  if (i < 0) return '';
  if (i === 0) return p === '/' ? '' : '/';
  return p.slice(0, i);
}

function joinRel(rel: string, name: string): string {
  return rel === '' ? name : `${rel}/${name}`;
}

function stripSlash(p: string): string {
  return p.length > 1 ? p.replace(/\/+$/, '') : p;
}
