/**
 * The one cache of remote listings in a window, shared by the tree (core/tree/model.ts) and the language server's
 * answers (extension/lsp/answers.ts), keyed by host + target + path:
 * - the targets of a host (`targets`);
 * - the listing of each run root of a target (`root`, and `target` for all of a target's roots): one command, the
 *   tree's list script (discovery/listScript.ts), read once into the tree's runs and kept beside them as the raw
 *   entries the language server asks about (listParse.ts rootEntries), so a root listed for the tree answers a hover
 *   and a root listed for a hover answers the tree;
 * - folders outside the run roots, listed for the language server (`path`, values of the caller's type P).
 *
 * The one rule of freshness: an answer is kept until it is invalidated or replaced, and each read says how old an
 * answer it takes (`maxAgeMs`; none: any age, 0: list again). The tree takes any age (its rows change by refresh:
 * the Refresh button, the timed refresh of what is open, the follow-up of a checkpoint being written, each a read
 * with 0); the language server's answers take ANSWER_MAX_AGE_MS. A new answer that differs from the one it replaces,
 * or an invalidation, fires `onDidChange` with its place, whoever asked for it: the tree redraws that row, the
 * language server drops what it copied. Targets of a host that changed drop that host's listings; roots of a target
 * that changed drop its folder listings (they are about the same folders). A failure (unreachable, container stopped)
 * is an answer too, so typing does not re-ask on every pause; a cancelled read is not.
 *
 * One request per key in flight, shared by every reader; it is aborted only when every reader that can give up
 * (one with a signal) has, and none that cannot (the tree) waits for it. No `vscode` here.
 */
import type { HostTargets } from '../service';
import { RemoteRunsError, asRemoteRunsError, formatTarget, type RootListing, type TargetListing, type TargetRef } from '../types';
import { Emitter, type Event } from '../util/event';

/** How old a listing the language server's answers take (a hover, a diagnostic, a completion). */
export const ANSWER_MAX_AGE_MS = 15_000;
/** How old a host's targets the language server's places take: containers start and stop less often than runs write. */
export const PLACES_MAX_AGE_MS = 60_000;

export type Settled<T> = { ok: true; value: T; at: number } | { ok: false; error: RemoteRunsError; at: number };

/** A place the cache changed for: a host (its targets, and so everything below), or one target of it. */
export interface ListingScope {
  host: string;
  target?: TargetRef;
}

/** One run root as listed: the root's listing (its runs, and its raw entries through rootEntries) and the remote clock. */
export interface RootAnswer {
  root: RootListing;
  remoteNow: number;
  defaultRoots?: true;
}

/** Where listings come from (the core service, RemoteRunsCore, in a window). */
export interface ListingSource<P> {
  listTargets(host: string, signal?: AbortSignal): Promise<HostTargets>;
  /** Every run root of the target, or only `roots` (a subset of runRoots, the listing's roots in that order). */
  listTarget(host: string, target: TargetRef, signal?: AbortSignal, roots?: readonly string[]): Promise<TargetListing>;
  /** The run roots a target of this host is listed with (without it, a target is always listed whole). */
  runRoots?(host: string): string[];
  /** A folder outside the run roots, `depth` levels deep. */
  listPath?(host: string, target: TargetRef, path: string, depth: number, signal?: AbortSignal): Promise<P>;
}

export interface ReadOptions {
  /** The oldest answer taken, in ms (none: any age; 0: always list again). */
  maxAgeMs?: number;
  /** The reader gives up: it gets `cancelled`; the request goes on while anyone else waits for it. */
  signal?: AbortSignal;
}

interface Flight<T> {
  promise: Promise<Settled<T>>;
  controller: AbortController;
  waiters: number;
  /** A reader without a signal waits: the request is never aborted. */
  held: boolean;
}

interface Slot<T> {
  scope: ListingScope;
  settled?: Settled<T>;
  flight?: Flight<T>;
}

export class Listings<P = unknown> {
  private readonly changeEmitter = new Emitter<ListingScope | undefined>();
  /** A place whose answers changed or were dropped (undefined: everything). */
  readonly onDidChange: Event<ListingScope | undefined> = this.changeEmitter.event;

  private readonly hostTargets = new Map<string, Slot<HostTargets>>();
  /** Per target: all its roots together, as the tree reads them (built from the root slots, or a failure of the target). */
  private readonly targetListings = new Map<string, Slot<TargetListing>>();
  private readonly roots = new Map<string, Slot<RootAnswer>>();
  private readonly paths = new Map<string, Slot<P>>();

  constructor(
    private readonly source: ListingSource<P>,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The targets of a host. */
  targets(host: string, opts: ReadOptions = {}): Promise<Settled<HostTargets>> {
    const slot = this.slot(this.hostTargets, host, { host });
    if (this.fresh(slot, opts)) return Promise.resolve(slot.settled!);
    if (!slot.flight) {
      slot.flight = this.start(slot, (signal) => this.source.listTargets(host, signal), (before, after) => {
        if (!before || same(before, after)) return;
        // Targets changed: what was listed in them may be gone or stale too.
        this.drop({ host }, false);
        this.changeEmitter.fire({ host });
      });
    }
    return this.join(slot.flight, opts.signal);
  }

  /** What is cached for a host's targets, without listing. */
  peekTargets(host: string): Settled<HostTargets> | undefined {
    return this.hostTargets.get(host)?.settled;
  }

  /** Every run root of a target, in one command (only the roots not already answered, when the host's roots are known). */
  async target(host: string, target: TargetRef, opts: ReadOptions = {}): Promise<Settled<TargetListing>> {
    const key = targetKey(host, target);
    const slot = this.slot(this.targetListings, key, { host, target });
    if (this.fresh(slot, opts)) return slot.settled!;
    if (slot.flight) return this.join(slot.flight, opts.signal);
    let roots: string[] | undefined;
    try {
      roots = this.source.runRoots?.(host);
    } catch (e) {
      return { ok: false, error: asRemoteRunsError(e), at: this.clock() };
    }
    // Roots answered already (a hover listed them) are taken as they are, if fresh enough for this read.
    const missing = roots?.filter((r) => !this.fresh(this.roots.get(rootKey(host, target, r)), opts));
    if (roots && missing && missing.length === 0) {
      const built = this.assemble(host, target, roots);
      if (built) {
        slot.settled = built;
        return built;
      }
    }
    const subset = roots && missing && missing.length < roots.length ? missing : undefined;
    slot.flight = this.startTarget(slot, host, target, roots, subset);
    return this.join(slot.flight, opts.signal);
  }

  /** What is cached for a target's listing, without listing. */
  peekTarget(host: string, target: TargetRef): Settled<TargetListing> | undefined {
    return this.targetListings.get(targetKey(host, target))?.settled;
  }

  /** One run root of a target (`root` as the host's run roots spell it). */
  async root(host: string, target: TargetRef, root: string, opts: ReadOptions = {}): Promise<Settled<RootAnswer>> {
    const key = rootKey(host, target, root);
    const slot = this.slot(this.roots, key, { host, target });
    if (this.fresh(slot, opts)) return slot.settled!;
    const whole = this.targetListings.get(targetKey(host, target));
    // The target being listed whole (the tree opened it): that command answers this root too.
    if (!slot.flight && whole?.flight && !whole.flight.controller.signal.aborted) {
      const r = await this.join(whole.flight, opts.signal);
      if (!r.ok) return r;
      const mine = this.roots.get(key)?.settled;
      if (mine) return mine;
    }
    if (!slot.flight) {
      slot.flight = this.start(slot, async (signal) => {
        const listing = await this.source.listTarget(host, target, signal, [root]);
        const r = listing.roots.find((x) => x.root === root) ?? listing.roots[0];
        if (!r) throw new RemoteRunsError('protocol', `The listing of ${root} came back without it`);
        return { root: r, remoteNow: listing.remoteNow, ...(listing.defaultRoots ? { defaultRoots: true as const } : {}) };
      }, (before, after) => {
        if (!after.ok || !before || same(before, after)) return;
        // The target's listing as the tree holds it shows this root as it was: built again from the roots when next read.
        const t = this.targetListings.get(targetKey(host, target));
        if (t?.settled) t.settled = undefined;
        this.changed({ host, target });
      });
    }
    return this.join(slot.flight, opts.signal);
  }

  /** A folder outside the run roots, `depth` levels deep. */
  path(host: string, target: TargetRef, path: string, depth: number, opts: ReadOptions = {}): Promise<Settled<P>> {
    const listPath = this.source.listPath;
    if (!listPath) return Promise.resolve({ ok: false, error: new RemoteRunsError('internal', 'No folder listings here'), at: this.clock() });
    const slot = this.slot(this.paths, JSON.stringify([host, formatTarget(target), path, depth]), { host, target });
    if (this.fresh(slot, opts)) return Promise.resolve(slot.settled!);
    slot.flight ??= this.start(slot, (signal) => listPath.call(this.source, host, target, path, depth, signal), undefined);
    return this.join(slot.flight, opts.signal);
  }

  /** Drop the answers about a place (a host: its targets and everything listed in them; none: everything). */
  invalidate(scope?: ListingScope): void {
    this.drop(scope, true);
    this.changeEmitter.fire(scope);
  }

  dispose(): void {
    this.changeEmitter.dispose();
  }

  private startTarget(slot: Slot<TargetListing>, host: string, target: TargetRef, roots: string[] | undefined, subset: string[] | undefined): Flight<TargetListing> {
    let changed = false;
    return this.start(
      slot,
      async (signal) => {
        const listing = await this.source.listTarget(host, target, signal, subset);
        changed = this.storeRoots(host, target, listing);
        if (!subset || !roots) return listing;
        const built = this.assemble(host, target, roots);
        if (!built) throw new RemoteRunsError('protocol', `The listing of ${formatTarget(target)} came back without some of its roots`);
        if (!built.ok) throw built.error;
        return built.value;
      },
      (before, after) => {
        if ((before && !same(before, after)) || changed) this.changed({ host, target });
      },
    );
  }

  /** Keep each root of a listing in its own slot; whether any replaced a different one. */
  private storeRoots(host: string, target: TargetRef, listing: TargetListing): boolean {
    let changed = false;
    const at = this.clock();
    for (const r of listing.roots) {
      const slot = this.slot(this.roots, rootKey(host, target, r.root), { host, target });
      const value: RootAnswer = { root: r, remoteNow: listing.remoteNow, ...(listing.defaultRoots ? { defaultRoots: true as const } : {}) };
      const before = slot.settled;
      slot.settled = { ok: true, value, at };
      if (before && !same(before, slot.settled)) changed = true;
    }
    return changed;
  }

  /** A target's listing from its roots' slots (undefined when one is missing; a failure when one failed). */
  private assemble(host: string, target: TargetRef, roots: readonly string[]): Settled<TargetListing> | undefined {
    const parts: RootAnswer[] = [];
    let at = Infinity;
    for (const r of roots) {
      const s = this.roots.get(rootKey(host, target, r))?.settled;
      if (!s) return undefined;
      if (!s.ok) return s;
      parts.push(s.value);
      at = Math.min(at, s.at);
    }
    const remoteNow = Math.max(...parts.map((p) => p.remoteNow));
    const listing: TargetListing = { target, roots: parts.map((p) => p.root), remoteNow, ...(parts.some((p) => p.defaultRoots) ? { defaultRoots: true as const } : {}) };
    return { ok: true, value: listing, at };
  }

  private changed(scope: ListingScope): void {
    // The folders listed in this target are about the same files: asked again when next read.
    for (const [key, slot] of this.paths) if (slot.settled && inScope(slot.scope, scope)) this.paths.delete(key);
    this.changeEmitter.fire(scope);
  }

  private drop(scope: ListingScope | undefined, withTargets: boolean): void {
    const maps: Map<string, Slot<unknown>>[] = [this.targetListings, this.roots, this.paths];
    if (withTargets && !scope?.target) maps.push(this.hostTargets);
    for (const map of maps) {
      for (const [key, slot] of map) {
        // In flight: it answers the question as asked now, and replaces what was dropped.
        if (!scope || inScope(slot.scope, scope)) {
          if (slot.flight) slot.settled = undefined;
          else map.delete(key);
        }
      }
    }
  }

  /** The slot of a key; a request in it that every asker gave up on is no longer one to join. */
  private slot<T>(map: Map<string, Slot<T>>, key: string, scope: ListingScope): Slot<T> {
    let slot = map.get(key);
    if (!slot) {
      slot = { scope };
      map.set(key, slot);
    }
    if (slot.flight?.controller.signal.aborted) slot.flight = undefined;
    return slot;
  }

  private fresh<T>(slot: Slot<T> | undefined, opts: ReadOptions): boolean {
    const s = slot?.settled;
    if (!s) return false;
    return opts.maxAgeMs === undefined || this.clock() - s.at < opts.maxAgeMs;
  }

  /** Start the one request of a slot; `settled(before, after)` runs once its answer is in the slot. */
  private start<T>(slot: Slot<T>, fetch: (signal: AbortSignal) => Promise<T>, settled: ((before: Settled<T> | undefined, after: Settled<T>) => void) | undefined): Flight<T> {
    const controller = new AbortController();
    const flight: Flight<T> = { controller, waiters: 0, held: false, promise: undefined as unknown as Promise<Settled<T>> };
    flight.promise = (async (): Promise<Settled<T>> => {
      let after: Settled<T>;
      try {
        after = { ok: true, value: await fetch(controller.signal), at: this.clock() };
      } catch (e) {
        after = { ok: false, error: controller.signal.aborted ? new RemoteRunsError('cancelled', 'Cancelled') : asRemoteRunsError(e), at: this.clock() };
      }
      if (slot.flight === flight) slot.flight = undefined;
      if (controller.signal.aborted) return after; // nobody waits for it: not an answer to keep
      const before = slot.settled;
      slot.settled = after;
      settled?.(before, after);
      return after;
    })();
    return flight;
  }

  private join<T>(flight: Flight<T>, signal?: AbortSignal): Promise<Settled<T>> {
    if (!signal) {
      flight.held = true;
      return flight.promise;
    }
    flight.waiters++;
    return new Promise<Settled<T>>((resolve) => {
      let done = false;
      const finish = (r: Settled<T>): void => {
        if (done) return;
        done = true;
        flight.waiters--;
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      const onAbort = (): void => {
        finish({ ok: false, error: new RemoteRunsError('cancelled', 'Cancelled'), at: this.clock() });
        if (flight.waiters === 0 && !flight.held) flight.controller.abort();
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort);
      void flight.promise.then(finish);
    });
  }
}

function targetKey(host: string, target: TargetRef): string {
  return JSON.stringify([host, formatTarget(target)]);
}

function rootKey(host: string, target: TargetRef, root: string): string {
  return JSON.stringify([host, formatTarget(target), root]);
}

function inScope(slot: ListingScope, scope: ListingScope): boolean {
  return slot.host === scope.host && (!scope.target || (slot.target !== undefined && formatTarget(slot.target) === formatTarget(scope.target)));
}

/** Two answers say the same (the remote clock, which moves on every listing, aside). */
export function same<T>(a: Settled<T>, b: Settled<T>): boolean {
  if (a.ok !== b.ok) return false;
  if (a.ok && b.ok) return stableJson(a.value) === stableJson(b.value);
  if (!a.ok && !b.ok) return a.error.kind === b.error.kind && a.error.message === b.error.message;
  return false;
}

function stableJson(v: unknown): string {
  return JSON.stringify(v, (k, val) => (k === 'remoteNow' ? undefined : val));
}
