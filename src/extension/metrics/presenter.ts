/**
 * The state of one metrics view (a panel or the inline view) and the messages that describe it: which runs
 * (one primary, any compared, at most one reference), the view the webview reported (width, range, smoothing,
 * hidden metrics), the reference lines, the highlighted checkpoint, each run's evals. Builds whole snapshots and
 * incremental updates from the runs' feeds, and answers "values at this step". Pure: no `vscode`, no I/O.
 */
import { detectPlateau, type Series } from '../../core/metrics';
import { plateauDirection, type PlateauDirection } from '../../shared/metricDirection';
import type {
  EvalPointWire,
  PanelRestoreState,
  PlateauHint,
  ReferenceLine,
  RunHeader,
  RunRefWire,
  RunRole,
  RunSnapshot,
  RunUpdate,
  SeriesChunk,
  SeriesUpdate,
  ToWebview,
  LinkWire,
  ValueRow,
  ViewMode,
  XRange,
} from '../../shared/metricsProtocol';
import { runKeyOf, whereOf } from '../../core/runRef';
import { SeriesTracker } from './seriesTracker';
import type { IncrementalEma } from './incrementalEma';
import { put } from '../../core/util/dict';
import { STOPPED_MIN_MS, type LinkState } from '../../core/metrics/follow/liveness';
import { displayName } from '../../shared/display';

/** What the presenter reads from a run's live feed (RunFeed implements it). */
export interface FeedView {
  series(): Map<string, Series>;
  readonly revision: number;
  readonly status: string;
  readonly skipped: string | undefined;
  /** Where the run restarted from an earlier step and what that replaced (RunFeed.resumed). */
  readonly resumed?: string;
  readonly badLines: number;
  latestStep(): number | undefined;
  /** What x is (RunFeed.xAxis). */
  readonly xAxis?: string;
  /** The user's x column, and the columns there are to choose from (RunFeed). */
  readonly xPick?: string;
  xChoices?(): string[];
  setXPick?(key: string | undefined): void;
  pollNow?(): Promise<boolean>;
  /** The connection to the run's host, when you know it (RunFeed.link). */
  readonly link?: LinkState;
  /** When the run last wrote a log, this process's clock (RunFeed.lastLoggedAt). */
  readonly lastLoggedAt?: number;
  readonly stoppedAfterMs?: number;
}

/** The link on the wire: durations as of `now` instead of times. */
export function linkWire(link: LinkState | undefined, now: number): LinkWire {
  if (!link) return { state: 'connected' };
  const forMs = Math.max(0, now - link.since);
  switch (link.state) {
    case 'connected':
      return { state: 'connected' };
    case 'connecting':
      return { state: 'connecting', forMs, attempt: link.attempt };
    case 'reconnecting':
      return { state: 'reconnecting', forMs, attempt: link.attempt, ...(link.lastError !== undefined ? { lastError: link.lastError } : {}) };
    case 'unreachable':
      return { state: 'unreachable', forMs, reason: link.reason, attempt: link.attempt };
    case 'refused':
      return { state: 'refused', kind: link.kind, forMs, reason: link.reason };
    case 'removed':
      return { state: 'removed', reason: link.reason };
  }
}

/** Columns offered as x at most (a log with hundreds of columns is not a menu). */
const MAX_X_CHOICES = 64;

export interface PresenterRun {
  key: string;
  ref: RunRefWire;
  role: RunRole;
  color: number;
  feed: FeedView;
}

export interface PlateauSettings {
  window: number;
  fraction: number;
}

export interface PresenterOptions {
  plateau(): PlateauSettings;
  /** Milliseconds; plateau detection on a long series is O(n), so it runs at most this often per metric. */
  now(): number;
  plateauIntervalMs?: number;
}

export interface ViewState {
  width: number;
  range: XRange | null;
  smoothing: number;
  hidden: Set<string>;
  /** The user's plateau direction per metric (the webview's choice); a metric not named: its name's direction. */
  directions: Readonly<Record<string, PlateauDirection>>;
}

const DEFAULT_WIDTH = 400;

export class MetricsPresenter {
  private readonly runsList: PresenterRun[] = [];
  private readonly trackers = new Map<string, Map<string, SeriesTracker>>();
  private readonly sentRevision = new Map<string, number>();
  /** Each run's header as last sent, without its durations: a change of status or link alone is an update too. */
  private readonly sentHeader = new Map<string, string>();
  private readonly plateauCache = new Map<string, { revision: number; at: number; hint: PlateauHint | undefined }>();
  /** Each run's evals as last sent (or to be sent with the next snapshot). */
  private readonly evalsByRun = new Map<string, { evals: EvalPointWire[]; text: string }>();
  view: ViewState = { width: DEFAULT_WIDTH, range: null, smoothing: 0.6, hidden: new Set(), directions: {} };
  references: ReferenceLine[] = [];
  highlight: number | null = null;

  constructor(private readonly options: PresenterOptions) {}

  get runs(): readonly PresenterRun[] {
    return this.runsList;
  }

  get primary(): PresenterRun | undefined {
    return this.runsList.find((r) => r.role === 'primary');
  }

  get reference(): PresenterRun | undefined {
    return this.runsList.find((r) => r.role === 'reference');
  }

  /** Add a run (replacing one with the same key). A new reference demotes the old one to a compared run. */
  addRun(ref: RunRefWire, role: RunRole, feed: FeedView): PresenterRun {
    const key = runKeyOf(ref);
    this.removeRun(key);
    if (role === 'primary' || role === 'reference') for (const r of this.runsList) if (r.role === role) r.role = 'compare';
    const used = new Set(this.runsList.map((r) => r.color));
    let color = 0;
    while (used.has(color)) color++;
    const run: PresenterRun = { key, ref, role, color, feed };
    if (role === 'primary') this.runsList.unshift(run);
    else this.runsList.push(run);
    return run;
  }

  removeRun(key: string): PresenterRun | undefined {
    const i = this.runsList.findIndex((r) => r.key === key);
    if (i < 0) return undefined;
    const [run] = this.runsList.splice(i, 1);
    this.trackers.delete(key);
    this.evalsByRun.delete(key);
    this.sentRevision.delete(key);
    this.sentHeader.delete(key);
    return run;
  }

  /**
   * Take a run's evals; the `evals` message to send when they differ from what the view has, else undefined
   * (a relisting that found nothing new costs no message). Unknown runs are ignored.
   */
  setEvals(key: string, evals: readonly EvalPointWire[]): Extract<ToWebview, { type: 'evals' }> | undefined {
    if (!this.runsList.some((r) => r.key === key)) return undefined;
    const text = JSON.stringify(evals);
    if (this.evalsByRun.get(key)?.text === text) return undefined;
    this.evalsByRun.set(key, { evals: [...evals], text });
    return { type: 'evals', runKey: key, evals: [...evals] };
  }

  /** A run's evals as the view has them. */
  evalsOf(key: string): EvalPointWire[] {
    return this.evalsByRun.get(key)?.evals ?? [];
  }

  /** Make this compared run the reference (or none with null); the previous reference becomes a compared run. */
  setReferenceRun(key: string | null): boolean {
    const target = key === null ? undefined : this.runsList.find((r) => r.key === key);
    if (key !== null && (!target || target.role === 'primary')) return false;
    for (const r of this.runsList) if (r.role === 'reference') r.role = 'compare';
    if (target) target.role = 'reference';
    return true;
  }

  /**
   * Take the webview's view (the webview owns it: these values are never sent back); true when it differs from the
   * one the last snapshot was computed for (a new snapshot is due).
   */
  setView(width: number, range: XRange | null, smoothing: number, hidden: readonly string[], directions: Readonly<Record<string, PlateauDirection>> = {}): boolean {
    const v = this.view;
    const hiddenSet = new Set(hidden);
    const sameDirections = (a: Readonly<Record<string, PlateauDirection>>, b: Readonly<Record<string, PlateauDirection>>) =>
      Object.keys(a).length === Object.keys(b).length && Object.keys(a).every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
    const same =
      v.width === width &&
      v.smoothing === smoothing &&
      ((v.range === null && range === null) || (v.range !== null && range !== null && v.range.xMin === range.xMin && v.range.xMax === range.xMax)) &&
      v.hidden.size === hiddenSet.size &&
      [...hiddenSet].every((h) => v.hidden.has(h)) &&
      sameDirections(v.directions, directions);
    this.view = { width, range, smoothing, hidden: hiddenSet, directions: { ...directions } };
    return !same;
  }

  /** What a restored panel needs to reopen this view. */
  restoreState(): PanelRestoreState | undefined {
    const p = this.primary;
    if (!p) return undefined;
    return {
      version: 1,
      primary: p.ref,
      others: this.runsList.filter((r) => r.role !== 'primary').map((r) => ({ run: r.ref, role: r.role as 'compare' | 'reference' })),
    };
  }

  /** The whole view: every run, every metric (hidden ones as empty chunks, so the webview can list them). */
  snapshot(mode: ViewMode, title: string): Extract<ToWebview, { type: 'snapshot' }> | undefined {
    const restore = this.restoreState();
    if (!restore) return undefined;
    const runs: RunSnapshot[] = this.runsList.map((run) => {
      const trackers = this.trackersOf(run.key);
      const series: SeriesChunk[] = [];
      for (const [key, s] of run.feed.series()) {
        const tracker = trackerFor(trackers, key);
        if (this.view.hidden.has(key)) {
          tracker.invalidate();
          series.push({ key, x: [], y: [], s: [], segmentStarts: [], total: s.length });
        } else {
          series.push(tracker.whole(s, this.trackerView()));
        }
      }
      this.sentRevision.set(run.key, run.feed.revision);
      const header = this.header(run);
      this.sentHeader.set(run.key, headerSignature(run, header));
      return { ...header, checkpoints: run.ref.checkpoints, series, evals: this.evalsOf(run.key) };
    });
    return {
      type: 'snapshot',
      mode,
      title,
      runs,
      references: this.references,
      highlight: this.highlight,
      restore,
    };
  }

  /** What changed since the last snapshot or update; undefined when nothing did. */
  update(): Extract<ToWebview, { type: 'update' }> | undefined {
    const runs: RunUpdate[] = [];
    for (const run of this.runsList) {
      const rev = run.feed.revision;
      const header = this.header(run);
      const signature = headerSignature(run, header);
      const same = this.sentRevision.get(run.key) === rev;
      if (same && this.sentHeader.get(run.key) === signature) continue;
      this.sentHeader.set(run.key, signature);
      if (same) {
        runs.push({ ...header, series: [] });
        continue;
      }
      this.sentRevision.set(run.key, rev);
      const trackers = this.trackersOf(run.key);
      const series: SeriesUpdate[] = [];
      for (const [key, s] of run.feed.series()) {
        const tracker = trackerFor(trackers, key);
        if (this.view.hidden.has(key)) continue;
        const u = tracker.update(s, this.trackerView());
        if (u) series.push(u);
      }
      runs.push({ ...header, series });
    }
    return runs.length ? { type: 'update', runs } : undefined;
  }

  /** A header-only update for every run (status text changed without new data). */
  headers(): Extract<ToWebview, { type: 'update' }> {
    return { type: 'update', runs: this.runsList.map((run) => ({ ...this.header(run), series: [] })) };
  }

  /**
   * Exact values of every shown metric of every run at the point nearest to step `x` (within each run's own
   * steps), with the reference run's value at the same step where there is one.
   */
  valuesAt(x: number): ValueRow[] {
    const rows: ValueRow[] = [];
    const ref = this.reference;
    const refSeries = ref?.feed.series();
    for (const run of this.runsList) {
      const all = run.feed.series();
      const trackers = this.trackersOf(run.key);
      for (const [key, s] of all) {
        if (this.view.hidden.has(key) || s.length === 0) continue;
        const i = nearestIndex(s, x);
        const smoothed = trackerFor(trackers, key).smoothed(s, this.view.smoothing);
        const row: ValueRow = { runKey: run.key, metric: key, step: s.xAt(i), value: s.yShown(i), smoothed: smoothed.at(i) };
        const rs = refSeries?.get(key);
        if (rs && rs.length && run !== ref) row.referenceValue = rs.yShown(nearestIndex(rs, s.xAt(i)));
        rows.push(row);
      }
    }
    return rows;
  }

  private trackerView() {
    return { width: this.view.width, range: this.view.range, smoothing: this.view.smoothing };
  }

  private trackersOf(runKey: string): Map<string, SeriesTracker> {
    let t = this.trackers.get(runKey);
    if (!t) {
      t = new Map();
      this.trackers.set(runKey, t);
    }
    return t;
  }

  private header(run: PresenterRun): RunHeader {
    const now = this.options.now();
    const latest: Record<string, number> = {};
    const all = run.feed.series();
    let startTime = Infinity;
    for (const [key, s] of all) {
      if (s.length) put(latest, key, s.yShown(s.length - 1));
      startTime = Math.min(startTime, firstTime(s));
    }
    return {
      runKey: run.key,
      // Shown text (legend, readout, tooltips): remote names escaped as everywhere (display.ts); runKey stays exact.
      label: displayName(run.ref.runName),
      where: displayName(whereOf(run.ref)),
      role: run.role,
      color: run.color,
      status: run.feed.status,
      skipped: run.feed.skipped,
      ...(run.feed.resumed !== undefined ? { resumed: run.feed.resumed } : {}),
      badLines: run.feed.badLines,
      latestStep: run.feed.latestStep(),
      latest,
      plateaus: run.role === 'primary' ? this.plateaus(run, all) : [],
      ...(run.feed.xAxis !== undefined ? { xAxis: run.feed.xAxis } : {}),
      ...(run.feed.xChoices ? { xChoices: run.feed.xChoices().slice(0, MAX_X_CHOICES) } : {}),
      ...(run.feed.setXPick ? { xPick: run.feed.xPick ?? null } : {}),
      link: linkWire(run.feed.link, now),
      loggedAgoMs: run.feed.lastLoggedAt !== undefined ? Math.max(0, now - run.feed.lastLoggedAt) : null,
      stoppedAfterMs: run.feed.stoppedAfterMs ?? STOPPED_MIN_MS,
      ...(Number.isFinite(startTime) ? { startTime } : {}),
    };
  }

  private plateaus(run: PresenterRun, all: Map<string, Series>): PlateauHint[] {
    const settings = this.options.plateau();
    const out: PlateauHint[] = [];
    const now = this.options.now();
    const interval = this.options.plateauIntervalMs ?? 2000;
    const trackers = this.trackersOf(run.key);
    for (const [key, s] of all) {
      const direction = plateauDirection(key, this.view.directions);
      if (direction === 'off' || this.view.hidden.has(key) || s.length === 0) continue;
      const cacheKey = `${run.key}\u0000${key}\u0000${settings.window}\u0000${settings.fraction}\u0000${this.view.smoothing}\u0000${direction}`;
      const cached = this.plateauCache.get(cacheKey);
      let hint = cached?.hint;
      if (!cached || (cached.revision !== s.length && now - cached.at >= interval)) {
        const smoothed = trackerFor(trackers, key).smoothed(s, this.view.smoothing);
        const r = detectPlateau(s, smoothed, { window: settings.window, fraction: settings.fraction, direction }, s.segments);
        hint =
          r.state === 'plateau'
            ? { key, direction, flatSince: r.flatSince, flatValue: valueAtStep(s, smoothed, r.flatSince), best: r.best, bestStep: r.bestStep, window: settings.window, fraction: settings.fraction }
            : undefined;
        this.plateauCache.set(cacheKey, { revision: s.length, at: now, hint });
      }
      if (hint) out.push(hint);
    }
    return out;
  }
}

/** A header without what changes by itself as time passes (durations): what decides whether it is sent again. */
function headerSignature(run: PresenterRun, header: RunHeader): string {
  const { link, loggedAgoMs, ...rest } = header;
  void link;
  void loggedAgoMs;
  return JSON.stringify([rest, run.feed.link ?? null, run.feed.lastLoggedAt ?? null]);
}

function trackerFor(trackers: Map<string, SeriesTracker>, key: string): SeriesTracker {
  let t = trackers.get(key);
  if (!t) {
    t = new SeriesTracker(key);
    trackers.set(key, t);
  }
  return t;
}

/** The first known wall time of a series (ms); Infinity when it has none. */
function firstTime(s: Series): number {
  if (!s.hasTime) return Infinity;
  for (let i = 0; i < s.length; i++) {
    const t = s.timeAt(i);
    if (Number.isFinite(t)) return t;
  }
  return Infinity;
}

/** The smoothed value at a step of the series' last segment (where detectPlateau looked). */
function valueAtStep(s: Series, smoothed: IncrementalEma, step: number): number {
  const seg = s.segments[s.segments.length - 1];
  for (let i = seg ? seg.start : 0; i < (seg ? seg.end : s.length); i++) if (s.xAt(i) === step && Number.isFinite(smoothed.at(i))) return smoothed.at(i);
  return smoothed.at(nearestIndex(s, step));
}

/** Index of the point whose step is nearest to x, over all segments (the later segment wins a tie). */
export function nearestIndex(s: Series, x: number): number {
  let best = 0;
  let bestDist = Infinity;
  for (const g of s.segments) {
    let lo = g.start;
    let hi = g.end;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (s.xAt(mid) < x) lo = mid + 1;
      else hi = mid;
    }
    for (const i of [lo - 1, lo]) {
      if (i < g.start || i >= g.end) continue;
      const d = Math.abs(s.xAt(i) - x);
      if (d <= bestDist) {
        best = i;
        bestDist = d;
      }
    }
  }
  return best;
}
