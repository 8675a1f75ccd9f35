/**
 * The live tail of one run: a MetricsFollower per metrics log of the run, polled through the host's shared
 * executor one command at a time (again at once while a backlog remains), with a timer between rounds that
 * never lets two rounds overlap. Views (panels, the inline view, the status bar) share one feed per run
 * through FeedRegistry. No `vscode` here, so integration tests drive it against a real sshd and the CLI can
 * follow a run headless: a RunRefWire (target, run path, metrics paths), an executor, then `pollNow()` /
 * `start()`, `onDidChange`, `series()`.
 */
import { MetricsFollower } from './follow';
import { detectFormat } from './format';
import { describeSkipped, type Series } from './series';
import { runCommand, type Executor } from '../remote';
import { isRemoteRunsError, type TargetRef } from '../types';
import { Emitter, type Event } from '../util/event';
import type { Disposable } from '../util/event';
import type { EvalPointWire, RunRefWire } from '../../shared/metricsProtocol';

/**
 * The other feed a view shows: a run's evals (the eval feature's results hub implements it). Watching a run asks
 * for its evals to be listed; the listener gets them at once when known, and again whenever they change (an eval
 * started, finished, or was found on the remote).
 */
export interface EvalSource {
  watch(ref: RunRefWire, listener: (evals: EvalPointWire[]) => void): Disposable;
}

/** More tfevents files than this (one per restart) are not all followed; the newest names win. */
const MAX_FILES = 8;

export interface RunFeedOptions {
  /** The host's executor, asked for anew each round (the pool reconnects behind it). */
  executor(): Executor;
  /** Pause between rounds. */
  intervalMs(): number;
  log?: (message: string) => void;
  /** Cap on bytes per remote read (default the core's DEFAULT_TAIL_MAX_BYTES); a bigger backlog takes several. */
  maxBytesPerRead?: number;
  /** Reads of at least this many bytes come gzip-compressed where the remote has gzip (default 0: never; for slow links). */
  compressAbove?: number;
}

export class RunFeed {
  private readonly followers: MetricsFollower[];
  private readonly changed = new Emitter<void>();
  /** Fired after every round in which any metric changed, and after each read of a backlog that takes several. */
  readonly onDidChange: Event<void> = this.changed.event;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running: Promise<boolean> | undefined;
  /** Not polling on a timer (pollNow still works). */
  private stopped = true;
  private abort = new AbortController();
  private statusText = 'loading…';
  private rounds = 0;
  private merged: Map<string, Series> | undefined;
  private mergedRevision = -1;

  constructor(
    readonly ref: RunRefWire,
    private readonly options: RunFeedOptions,
  ) {
    const files = ref.metrics.filter((p) => detectFormat(p) !== undefined);
    const chosen = files.length > MAX_FILES ? [...files].sort().slice(-MAX_FILES) : files;
    this.followers = chosen.map((p) => new MetricsFollower(p, detectFormat(p)!, { maxBytes: options.maxBytesPerRead, compressAbove: options.compressAbove }));
    if (this.followers.length === 0) {
      this.statusText = ref.metrics.length ? `no readable metrics log among ${ref.metrics.join(', ')}` : 'no metrics logs found in this run';
    }
  }

  /** `following`, `loading…`, or what went wrong on the last round. Remote text: show it as text. */
  get status(): string {
    return this.statusText;
  }

  /** Completed polling rounds. */
  get roundCount(): number {
    return this.rounds;
  }

  /** Sum of the followers' revisions: moves whenever any data (or bad-line count) changed. */
  get revision(): number {
    return this.followers.reduce((sum, f) => sum + f.metrics.revision, 0);
  }

  get badLines(): number {
    return this.followers.reduce((sum, f) => sum + f.metrics.badLines + f.metrics.badValues, 0);
  }

  /** What was skipped and where the first one was, per file. */
  get skipped(): string | undefined {
    const parts = this.followers
      .map((f) => {
        const d = describeSkipped(f.metrics);
        return d ? (this.followers.length > 1 ? `${baseName(f.path)}: ${d}` : d) : undefined;
      })
      .filter((d): d is string => d !== undefined);
    return parts.length ? parts.join(' · ') : undefined;
  }

  /**
   * Every series of the run by key. A key logged by more than one file keeps its name in the first file and
   * is `file:key` in the others.
   */
  series(): Map<string, Series> {
    const rev = this.revision;
    if (this.merged && rev === this.mergedRevision) return this.merged;
    const out = new Map<string, Series>();
    for (const f of this.followers) {
      for (const [key, s] of f.metrics.series) out.set(out.has(key) ? `${baseName(f.path)}:${key}` : key, s);
    }
    this.merged = out;
    this.mergedRevision = rev;
    return out;
  }

  /** Highest step of any series (the run's progress). */
  latestStep(): number | undefined {
    let best: number | undefined;
    for (const s of this.series().values()) if (s.length && (best === undefined || s.lastX > best)) best = s.lastX;
    return best;
  }

  /** Start polling (first round at once). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Stop the timer and cancel a round in flight (its ssh channel is closed). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.abort.abort();
  }

  dispose(): void {
    this.stop();
    this.changed.dispose();
  }

  /** Poll now (coalesced with a round in progress); resolves to whether anything changed. */
  pollNow(): Promise<boolean> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pollNow().finally(() => this.schedule(this.options.intervalMs()));
    }, ms);
  }

  private async round(): Promise<boolean> {
    const target: TargetRef = this.ref.target;
    let changed = false;
    const problems: string[] = [];
    const abort = (this.abort = new AbortController());
    for (const f of this.followers) {
      try {
        // A backlog bigger than one read comes in several reads with the next ones already on their way while
        // one is parsed, so transfer and parsing overlap; it is shown as it arrives, not only once all is read.
        const u = await f.catchUp((command) => runCommand(this.options.executor(), target, command, abort.signal), {
          signal: abort.signal,
          onChunk: (chunk) => {
            if (chunk.changed) this.changed.fire();
          },
        });
        changed ||= u.changed;
        if (u.status !== 'ok') problems.push(`${u.status}: ${f.path}`);
      } catch (e) {
        const message = isRemoteRunsError(e) ? `${e.kind}: ${e.message}` : e instanceof Error ? e.message : String(e);
        problems.push(message);
        this.options.log?.(`metrics ${f.path}: ${message}`);
      }
      if (abort.signal.aborted) break;
    }
    const before = this.statusText;
    if (this.followers.length) this.statusText = problems.length ? problems.join('; ') : 'following';
    this.rounds++;
    if (changed || before !== this.statusText) this.changed.fire();
    return changed;
  }
}

function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

/** Feeds shared by every view of a run, started on first use and stopped when the last user lets go. */
export class FeedRegistry {
  private readonly feeds = new Map<string, { feed: RunFeed; users: number }>();

  constructor(private readonly create: (ref: RunRefWire) => RunFeed) {}

  /** The run's feed (started), and the function to call when done with it. */
  acquire(key: string, ref: RunRefWire): { feed: RunFeed; release(): void } {
    let entry = this.feeds.get(key);
    if (!entry) {
      entry = { feed: this.create(ref), users: 0 };
      this.feeds.set(key, entry);
      entry.feed.start();
    }
    entry.users++;
    let released = false;
    const e = entry;
    return {
      feed: entry.feed,
      release: () => {
        if (released) return;
        released = true;
        if (--e.users === 0) {
          e.feed.dispose();
          if (this.feeds.get(key) === e) this.feeds.delete(key);
        }
      },
    };
  }

  /** Poll every feed now (after a Refresh). */
  pollAll(): void {
    for (const { feed } of this.feeds.values()) void feed.pollNow();
  }

  dispose(): void {
    for (const { feed } of this.feeds.values()) feed.dispose();
    this.feeds.clear();
  }
}
