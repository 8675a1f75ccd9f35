/**
 * The live tail of one run: a MetricsFollower per metrics log of the run, polled through the host's shared
 * executor one command at a time (again at once while a backlog remains), with a timer between rounds that
 * never lets two rounds overlap. Views (panels, the inline view, the status bar) share one feed per run
 * through FeedRegistry. Every log of the run is followed, however many (no cap: a run restarted 10 times has
 * 10 event files, and all their steps are shown); event files that are no longer written to (an older file of
 * a folder whose newer file exists) are polled once every SETTLED_EVERY rounds after they were read whole. How
 * the logs' series are merged and named: runSeries.ts. The run's folder is listed again as the feed follows
 * (re-discovery, RELIST_EVERY), so logs that appear later are followed too: a resumed process's new event file or
 * `runs/<date>_<host>/` folder, Keras' `validation/` split, new TensorBoard sub-folders. A Hugging Face run whose only log is a checkpoint's
 * `trainer_state.json` follows the newest checkpoint's as checkpoints appear and rotate (see newestStateCommand). No `vscode` here, so integration tests drive it against a real sshd and the CLI can
 * follow a run headless: a RunRefWire (target, run path, metrics paths), an executor, then `pollNow()` /
 * `start()`, `onDidChange`, `series()`.
 */
import { MetricsFollower } from './follow';
import type { StreamRunner } from './tailStream';
import { detectFormat } from '../formats/format';
import { mlflowKeyOf } from '../formats/mlflow';
import { RunSeries, compareEventFiles } from '../series/runSeries';
import { describeRestarts, describeSkipped, describeX, type Series } from '../series/series';
import { commandFailed, runCommand, type Executor, type RemoteCommand } from '../../remote';
import { isRemoteRunsError, type TargetRef } from '../../types';
import { Emitter, type Event } from '../../util/event';
import type { Disposable } from '../../util/event';
import type { EvalPointWire, RunRefWire } from '../../../shared/metricsProtocol';
import type { ConnectionState } from '../../ssh/types';
import { initialLink, nextLink, stoppedAfterMs, type LinkState } from './liveness';
import { listRunsCommand } from '../../discovery/listScript';
import { isDefaultLogdirName, eventStreamOf } from '../../discovery/logdirNames';
import { RUN_LOG_CONTAINERS } from '../../discovery/checkpointLayout';
import { decodeFields } from '../../util/nameBytes';

/**
 * The other feed a view shows: a run's evals (the eval feature's results hub implements it). Watching a run asks
 * for its evals to be listed; the listener gets them at once when known, and again whenever they change (an eval
 * started, finished, or was found on the remote).
 */
export interface EvalSource {
  watch(ref: RunRefWire, listener: (evals: EvalPointWire[]) => void): Disposable;
}

/** An event file that a newer file of its folder has replaced is read again once every this many rounds. */
export const SETTLED_EVERY = 8;
/**
 * The run's folder is listed again (re-discovery) RELIST_EVERY rounds after its last listing, and sooner once a
 * followed log that grew has stopped growing for STOPPED_ROUNDS rounds (a writer that stopped one file has often
 * started another: a resumed process's new event file or `runs/<date>_<host>/` folder, Keras' `validation/` split),
 * though never twice within STOPPED_ROUNDS rounds. So a new log is followed at most RELIST_EVERY rounds after it
 * appears (10 s at the CLI's 2 s polls, 25 s at the panels' default 5 s), and STOPPED_ROUNDS rounds after the writer
 * left its old log. The bound keeps the listing's cost small: one `find` of the run folder per 5 rounds adds at most
 * one command to 5 rounds of tail reads; a writer that pauses between bursts (idle for a round, then writing again)
 * does not count as stopped, so it costs no more; and nothing is ever re-read (followers are kept, only new paths
 * are added).
 */
export const RELIST_EVERY = 5;
/** Rounds a log that grew must stay unchanged to count as stopped (and the least rounds between two listings). */
export const STOPPED_ROUNDS = 2;
/** Entries of the run folder the re-discovery lists at most (a run with thousands of checkpoint files fits). */
const RELIST_MAX_ENTRIES = 20_000;
/** `<dir>/checkpoint-<N>/trainer_state.json`: Hugging Face Trainer's `_save_checkpoint` (transformers/trainer.py). */
const HF_STATE = /^(.*)\/checkpoint-(\d+)\/trainer_state\.json$/;

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
  /** A JSONL backlog of at least this many bytes is parsed in a worker thread (CatchUpOptions.workerAbove; Infinity: never). */
  workerAbove?: number;
  /**
   * How a long backlog on `target` is read as one stream (CatchUpOptions.stream: through OpenSSH where it can be,
   * metrics/follow/bulkLinks.ts); absent: reads over the executor only.
   */
  stream?(target: TargetRef): StreamRunner | undefined;
  /** A backlog of at least this many bytes after the first read is streamed (CatchUpOptions.streamAbove). */
  streamAbove?: number;
  /** Most bytes one stream asks for (CatchUpOptions.streamMaxBytes). */
  streamMaxBytes?: number;
  /** The x column to use instead of the logs' own choice (RunMetrics.xPick); can be changed with setXPick. */
  xPick?: string;
  /** The connection state of the run's host (the pool's), for the link a panel shows (liveness.ts). */
  connection?: {
    state(): ConnectionState;
    onDidChange(listener: (state: ConnectionState) => void): Disposable;
  };
  /** This process's clock (ms since the epoch); default Date.now. */
  now?: () => number;
}

/** Gaps between writes kept for the "stopped logging" threshold. */
const MAX_GAPS = 20;

export class RunFeed {
  private followers: MetricsFollower[] = [];
  private merged = new RunSeries([], '');
  private xPickKey: string | undefined;
  /** The folder whose `checkpoint-N/trainer_state.json` is the run's log, when that is its only log. */
  private readonly hfOutputDir: string | undefined;
  /**
   * An MLflow run's `metrics/` folder: listed every round, since a key first logged later is a new file, and a
   * nested key (`a/b/c`) may lie below the depth the run listing walks.
   */
  private readonly mlflowMetricsDir: string | undefined;
  /** Followers read whole and not the newest of their folder: polled only every SETTLED_EVERY rounds. */
  private readonly settled = new WeakSet<MetricsFollower>();
  /** Rounds since each follower's log last grew (counted only after it grew once): STOPPED_ROUNDS calls for a listing. */
  private readonly idleRounds = new Map<MetricsFollower, number>();
  private stoppedGrowing = false;
  /** The round of the last listing of the run's folder (the first round counts: the ref came from a listing). */
  private listedAt = 0;
  /** Re-discoveries done (tests and the bench count them). */
  private relists = 0;
  /** The run's folder as the last re-discovery found it (the run folder of `ref` until the run moved). */
  private runPathNow: string;
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
  private revisionBase = 0;
  private linkState: LinkState;
  private readonly connectionSub: Disposable | undefined;
  /** The newest mtime of the run's logs (remote clock), and when that was on this process's clock. */
  private newestWrite: number | undefined;
  private loggedAt: number | undefined;
  private readonly gaps: number[] = [];

  constructor(
    readonly ref: RunRefWire,
    private readonly options: RunFeedOptions,
  ) {
    this.xPickKey = options.xPick;
    this.runPathNow = ref.runPath;
    const hf = ref.metrics.length === 1 ? HF_STATE.exec(ref.metrics[0]) : null;
    this.hfOutputDir = hf ? hf[1] : undefined;
    const mlflow = `${ref.runPath === '/' ? '' : ref.runPath}/metrics`;
    this.mlflowMetricsDir = ref.metrics.some((p) => detectFormat(p, ref.runPath) === 'mlflow') ? mlflow : undefined;
    const now = this.now();
    this.linkState = initialLink(options.connection?.state() ?? { kind: 'idle' }, now);
    this.connectionSub = options.connection?.onDidChange((state) => {
      const before = this.linkState;
      this.linkState = nextLink(before, state, this.now());
      if (this.linkState !== before) this.changed.fire();
    });
    this.build(ref.metrics);
    if (this.followers.length === 0) {
      this.statusText = ref.metrics.length ? `no readable metrics log among ${ref.metrics.join(', ')}` : 'no metrics logs found in this run';
    }
  }

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  /** The connection to the run's host, as a panel shows it (liveness.ts). */
  get link(): LinkState {
    return this.linkState;
  }

  /** When the run last wrote to one of its logs (this process's clock), measured on the remote; undefined until known. */
  get lastLoggedAt(): number | undefined {
    return this.loggedAt;
  }

  /** How long without a write makes the run "stopped logging" (liveness.ts). */
  get stoppedAfterMs(): number {
    return stoppedAfterMs(this.gaps);
  }

  /** The host is no longer configured: polling stopped (hostsChanged() tries again). */
  get hostRemoved(): boolean {
    return this.linkState.state === 'removed';
  }

  /**
   * The configured hosts changed: a feed whose host was removed follows again if the host is back under its name
   * (and says nothing more while it is not).
   */
  hostsChanged(): void {
    if (this.linkState.state !== 'removed') return;
    try {
      this.options.executor();
    } catch {
      return; // still not configured: nothing new to say
    }
    this.linkState = initialLink(this.options.connection?.state() ?? { kind: 'idle' }, this.now());
    this.statusText = 'loading…';
    this.changed.fire();
    if (!this.stopped) this.schedule(0);
  }

  /** The newest write among the logs read this round, as an age on the remote's clock. */
  private noteWrites(): boolean {
    let newest: { mtime: number; age: number } | undefined;
    for (const f of this.followers) {
      const st = f.state;
      if (!st || st.remoteNowMs === undefined || !Number.isFinite(st.mtimeMs)) continue;
      if (!newest || st.mtimeMs > newest.mtime) newest = { mtime: st.mtimeMs, age: Math.max(0, st.remoteNowMs - st.mtimeMs) };
    }
    if (!newest || newest.mtime === this.newestWrite) return false;
    if (this.newestWrite !== undefined && newest.mtime > this.newestWrite) {
      this.gaps.push(newest.mtime - this.newestWrite);
      if (this.gaps.length > MAX_GAPS) this.gaps.shift();
    }
    this.newestWrite = newest.mtime;
    this.loggedAt = this.now() - newest.age;
    return true;
  }

  private follower(path: string): MetricsFollower | undefined {
    const format = detectFormat(path, this.ref.runPath);
    if (!format) return undefined;
    return new MetricsFollower(path, format, {
      maxBytes: this.options.maxBytesPerRead,
      compressAbove: this.options.compressAbove,
      key: format === 'mlflow' ? mlflowKeyOf(path, this.ref.runPath) : undefined,
      xPick: this.xPickKey,
    });
  }

  private build(paths: readonly string[]): void {
    this.replaced();
    this.followers = paths.map((p) => this.follower(p)).filter((f): f is MetricsFollower => f !== undefined);
    this.merged = new RunSeries(this.followers, this.runPathNow);
  }

  /**
   * The run's folder now: `ref.runPath` until a re-discovery found the run's logs to be part of a run in a folder
   * above it (a Trainer's `runs/<date>_<host>/` followed before the Trainer was known as a run of its own).
   */
  get runPath(): string {
    return this.runPathNow;
  }

  /** The metrics logs followed now (a Hugging Face run's moves to its newest checkpoint). */
  get paths(): string[] {
    return this.followers.map((f) => f.path);
  }

  /**
   * The run was listed again: follow the metrics logs among `paths` that are new (a restarted run's new event
   * file, a log that appeared). A log no longer listed is still followed (its data stays; a read of a file that
   * is gone says `missing`). A Hugging Face checkpoint-only run finds its newest checkpoint itself. True when a
   * log was added; the next round reads it.
   */
  addMetrics(paths: readonly string[], poll = true): boolean {
    if (this.hfOutputDir !== undefined) return false;
    const known = new Set(this.paths);
    const added = paths.filter((p) => !known.has(p)).map((p) => this.follower(p)).filter((f): f is MetricsFollower => f !== undefined);
    if (added.length === 0) return false;
    this.replaced();
    this.followers = [...this.followers, ...added];
    this.merged = new RunSeries(this.followers, this.runPathNow);
    if (this.statusText.startsWith('no ')) this.statusText = 'loading…';
    if (poll) {
      this.changed.fire();
      if (!this.stopped) this.schedule(0);
    }
    return true;
  }

  /** The user's x column, or undefined when each log chooses its own (step, …, epoch). */
  get xPick(): string | undefined {
    return this.xPickKey;
  }

  /**
   * Use `key` as the x of every text log of the run (undefined: back to each log's own choice). The logs are
   * read again from the start; event files and MLflow metrics always have their step and are not affected.
   */
  setXPick(key: string | undefined): void {
    if (key === this.xPickKey) return;
    this.xPickKey = key;
    this.abort.abort();
    this.build(this.paths);
    this.changed.fire();
    if (!this.stopped) this.schedule(0);
  }

  /**
   * What x is, for the status line: the one x field every log uses (`step`, `epoch`, `line number`), else each
   * x with its logs: `epoch (history.csv, training.log), step (event files)`. Undefined before any data.
   */
  get xAxis(): string | undefined {
    const byX = new Map<string, Set<string>>();
    for (const f of this.followers) {
      const x = describeX(f.metrics);
      if (x === undefined) continue;
      let files = byX.get(x);
      if (!files) byX.set(x, (files = new Set()));
      files.add(f.format === 'tfevents' ? 'event files' : f.format === 'mlflow' ? 'MLflow metrics' : baseName(f.path));
    }
    if (byX.size <= 1) return [...byX.keys()][0];
    return [...byX].map(([x, files]) => `${x} (${[...files].join(', ')})`).join(', ');
  }

  /**
   * Columns the user can choose as x: the text logs' numeric keys and the x fields they use (event files and
   * MLflow metrics are always by step).
   */
  xChoices(): string[] {
    const out = new Set<string>();
    for (const f of this.followers) {
      if (f.format === 'tfevents' || f.format === 'mlflow') continue;
      if (f.metrics.xKey !== undefined) out.add(f.metrics.xKey);
      for (const k of f.metrics.keys()) out.add(k);
    }
    return [...out];
  }

  /** `following`, `loading…`, or what went wrong on the last round. Remote text: show it as text. */
  get status(): string {
    return this.statusText;
  }

  /** Re-discoveries of the run's logs done so far (a listing of the run's folder each). */
  get relistCount(): number {
    return this.relists;
  }

  /** Completed polling rounds. */
  get roundCount(): number {
    return this.rounds;
  }

  /** Moves whenever any data (or bad-line count) changed, and when the followed logs were replaced. */
  get revision(): number {
    return this.revisionBase + this.followers.reduce((sum, f) => sum + f.metrics.revision, 0);
  }

  /** The followers are about to be replaced: the revision must still only grow. */
  private replaced(): void {
    this.revisionBase = this.revision + 1;
  }

  /** Bytes the run's parsed series hold (shared step/time axes included): the bench's memory figure. */
  get byteLength(): number {
    return this.followers.reduce((sum, f) => sum + f.metrics.byteLength, 0);
  }

  get badLines(): number {
    return this.followers.reduce((sum, f) => sum + f.metrics.badLines + f.metrics.badValues, 0);
  }

  /**
   * What was skipped and where the first one was, per file; and a log that was read but gave no numbers at
   * all (a `training.log` that is a text log, a CSV of names), which is not a metrics log after all.
   */
  get skipped(): string | undefined {
    const parts = this.followers
      .map((f) => {
        const noNumbers = f.metrics.records > 0 && f.metrics.series.size === 0 && f.format !== 'tfevents' ? `no numeric values in ${f.metrics.records} ${f.metrics.unit}${f.metrics.records === 1 ? '' : 's'}: not a metrics log` : undefined;
        const d = [describeSkipped(f.metrics), noNumbers].filter((x) => x !== undefined).join('; ') || undefined;
        return d ? (this.followers.length > 1 || noNumbers ? `${baseName(f.path)}: ${d}` : d) : undefined;
      })
      .filter((d): d is string => d !== undefined);
    return parts.length ? parts.join(' · ') : undefined;
  }

  /**
   * Where series restarted from an earlier step and how many earlier points the later process replaced (series.ts),
   * grouped by restart: `resumed at step 31: 5 earlier points replaced (train/loss, train/grad_norm)`; undefined
   * when no series restarted. For the panel's status line.
   */
  get resumed(): string | undefined {
    const byText = new Map<string, string[]>();
    for (const [name, s] of this.series()) {
      const text = describeRestarts(s);
      if (text === undefined) continue;
      const names = byText.get(text);
      if (names) names.push(name);
      else byText.set(text, [name]);
    }
    if (byText.size === 0) return undefined;
    const shown = (names: string[]): string => (names.length <= 3 ? names.join(', ') : `${names.slice(0, 3).join(', ')} and ${names.length - 3} more`);
    return [...byText].map(([text, names]) => `${text} (${shown(names)})`).join('; ');
  }

  /**
   * Every series of the run by name: the event files of a folder merged in writing order, sub-folders named as
   * TensorBoard names them, a key two other logs share kept apart as `file:key` (runSeries.ts).
   */
  series(): Map<string, Series> {
    return this.merged.series();
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
    this.connectionSub?.dispose();
    this.changed.dispose();
  }

  /** Poll now (coalesced with a round in progress); resolves to whether anything changed. */
  pollNow(): Promise<boolean> {
    this.running ??= this.round().finally(() => (this.running = undefined));
    return this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped || this.hostRemoved) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.pollNow().finally(() => this.schedule(this.options.intervalMs()));
    }, ms);
  }

  private async round(): Promise<boolean> {
    const target: TargetRef = this.ref.target;
    if (this.hostRemoved) return false;
    try {
      this.options.executor();
    } catch (e) {
      // The host is no longer configured: said once (status, log), and polling stops: asking again every round
      // only repeats it.
      if (isRemoteRunsError(e) && e.kind === 'not-found') {
        this.linkState = { state: 'removed', since: this.now(), reason: e.message };
        this.statusText = `host ${this.ref.hostName} was removed from settings`;
        this.options.log?.(`metrics of ${this.ref.runName}: ${e.message}; no longer polling`);
        this.rounds++;
        this.changed.fire();
        return false;
      }
      throw e;
    }
    let changed = false;
    const problems: string[] = [];
    const abort = (this.abort = new AbortController());
    if (this.hfOutputDir !== undefined) {
      try {
        changed = (await this.followNewestCheckpoint(target, abort.signal)) || changed;
      } catch (e) {
        const message = isRemoteRunsError(e) ? `${e.kind}: ${e.message}` : e instanceof Error ? e.message : String(e);
        problems.push(`looking for newer checkpoints: ${message}`);
      }
    }
    if (this.mlflowMetricsDir !== undefined) {
      try {
        const files = await runCommand(this.options.executor(), target, filesUnderCommand(this.mlflowMetricsDir), abort.signal);
        if (this.addMetrics(files, false)) changed = true;
      } catch (e) {
        const message = isRemoteRunsError(e) ? `${e.kind}: ${e.message}` : e instanceof Error ? e.message : String(e);
        problems.push(`looking for new MLflow metrics: ${message}`);
      }
    }
    let relistProblem: string | undefined;
    if (this.hfOutputDir === undefined && this.mlflowMetricsDir === undefined && this.rounds > 0) {
      const since = this.rounds - this.listedAt;
      if (since >= RELIST_EVERY || (this.stoppedGrowing && since >= STOPPED_ROUNDS)) {
        this.listedAt = this.rounds;
        try {
          if (await this.rediscover(target, abort.signal)) changed = true;
        } catch (e) {
          const message = isRemoteRunsError(e) ? `${e.kind}: ${e.message}` : e instanceof Error ? e.message : String(e);
          relistProblem = `looking for new logs of the run: ${message}`;
          this.options.log?.(`metrics of ${this.ref.runName}: ${relistProblem}`);
        }
      }
    }
    const newest = newestPerFolder(this.followers, this.runPathNow);
    const grew = new Set<MetricsFollower>();
    for (const f of [...this.followers]) {
      if (this.settled.has(f) && this.rounds % SETTLED_EVERY !== 0) continue;
      try {
        // A backlog bigger than one read comes in several reads with the next ones already on their way while
        // one is parsed, so transfer and parsing overlap; it is shown as it arrives, not only once all is read.
        const u = await f.catchUp((command) => runCommand(this.options.executor(), target, command, abort.signal), {
          signal: abort.signal,
          ...(this.options.workerAbove !== undefined ? { workerAbove: this.options.workerAbove } : {}),
          stream: this.options.stream?.(target),
          ...(this.options.streamAbove !== undefined ? { streamAbove: this.options.streamAbove } : {}),
          ...(this.options.streamMaxBytes !== undefined ? { streamMaxBytes: this.options.streamMaxBytes } : {}),
          log: (m) => this.options.log?.(m),
          onChunk: (chunk) => {
            if (chunk.changed) this.changed.fire();
          },
        });
        changed ||= u.changed;
        if (u.changed) grew.add(f);
        if (u.status !== 'ok') problems.push(`${u.status}: ${f.path}`);
        if (u.status === 'ok' && !u.more && f.format === 'tfevents' && !newest.has(f)) this.settled.add(f);
        else this.settled.delete(f);
      } catch (e) {
        const message = isRemoteRunsError(e) ? `${e.kind}: ${e.message}` : e instanceof Error ? e.message : String(e);
        problems.push(message);
        this.options.log?.(`metrics ${f.path}: ${message}`);
      }
      if (abort.signal.aborted) break;
    }
    // A log that grew and then stayed unchanged for STOPPED_ROUNDS rounds: re-discover at the next round.
    this.stoppedGrowing = false;
    for (const f of this.followers) {
      if (grew.has(f)) this.idleRounds.set(f, 0);
      else {
        const idle = this.idleRounds.get(f);
        if (idle === undefined) continue;
        this.idleRounds.set(f, idle + 1);
        if (idle + 1 === STOPPED_ROUNDS) this.stoppedGrowing = true;
      }
    }
    // A failed listing is said when the logs read well; when they did not, their reason (the same one: a stopped
    // container, a lost connection) is said alone.
    if (relistProblem !== undefined && problems.length === 0) problems.push(relistProblem);
    const before = this.statusText;
    if (this.followers.length) this.statusText = problems.length ? problems.join('; ') : 'following';
    this.rounds++;
    const wrote = this.noteWrites();
    if (changed || wrote || before !== this.statusText) this.changed.fire();
    return changed;
  }

  /**
   * Re-discovery: list the run's folder with the one listing mechanism (listScript, listParse, runTree: the same
   * rules as the tree's listing, on the run's folder only, not the whole root) and follow the logs of the run that
   * are new. The run is the one at the run's path, or else the one that holds the logs followed now (the run moved
   * up: a Trainer's `runs/<date>_<host>/` logdir followed before the Trainer was a run of its own, so its
   * `output_dir` is listed instead of the logdir). True when a log was added.
   */
  private async rediscover(target: TargetRef, signal: AbortSignal): Promise<boolean> {
    this.relists++;
    const path = this.runPathNow;
    const slash = path.lastIndexOf('/');
    const parent = slash > 0 ? path.slice(0, slash) : '/';
    const pslash = parent.lastIndexOf('/');
    // `<output_dir>/runs/<date>_<host>`: list `<output_dir>`, where a resumed process's sibling logdir is.
    const above = isDefaultLogdirName(path.slice(slash + 1)) && RUN_LOG_CONTAINERS.includes(parent.slice(pslash + 1)) && pslash > 0 ? parent.slice(0, pslash) : undefined;
    const root = above ?? path;
    const { roots } = await runCommand(this.options.executor(), target, listRunsCommand([root], { maxEntries: RELIST_MAX_ENTRIES }), signal);
    const listing = roots[0];
    if (!listing) return false;
    if (listing.state !== 'ok') {
      this.options.log?.(`metrics of ${this.ref.runName}: listing ${root} again: ${listing.message}`);
      return false;
    }
    const mine = new Set(this.paths);
    const run = listing.runs.find((r) => r.path === path) ?? listing.runs.find((r) => r.metrics.some((m) => mine.has(m)));
    if (!run) return false;
    if (run.path !== path) {
      this.options.log?.(`metrics of ${this.ref.runName}: its logs are now part of the run at ${run.path}; following that run`);
      this.runPathNow = run.path;
      this.replaced();
      this.merged = new RunSeries(this.followers, this.runPathNow);
      this.addMetrics(run.metrics, false);
      return true;
    }
    return this.addMetrics(run.metrics, false);
  }

  /**
   * A Hugging Face run followed through `checkpoint-N/trainer_state.json`: the Trainer writes a new checkpoint
   * (with the whole log_history so far) at every save and deletes the oldest beyond `save_total_limit`, so the
   * file to follow is the newest checkpoint's. When a newer one exists, it is read, and it replaces the one
   * followed until now once it parsed (the curve never goes blank in between). True when that changed the data.
   */
  private async followNewestCheckpoint(target: TargetRef, signal: AbortSignal): Promise<boolean> {
    const newest = await runCommand(this.options.executor(), target, newestStateCommand(this.hfOutputDir!), signal);
    const current = this.followers[0];
    if (newest === undefined || current?.path === newest) return false;
    const next = this.follower(newest);
    if (!next) return false;
    const u = await next.catchUp((command) => runCommand(this.options.executor(), target, command, signal), { signal });
    if (u.status !== 'ok' || next.metrics.records === 0) return false;
    this.options.log?.(`metrics: following ${newest} (newest checkpoint) instead of ${current?.path ?? 'nothing'}`);
    this.replaced();
    this.followers = [next];
    this.merged = new RunSeries(this.followers, this.runPathNow);
    return true;
  }
}

/**
 * The newest `checkpoint-<N>/trainer_state.json` in `dir` (highest N), or undefined when there is none. The
 * folder is given as an argument (never put into the script text).
 */
export function newestStateCommand(dir: string): RemoteCommand<string | undefined> {
  const describe = `look for checkpoint-*/trainer_state.json in ${dir}`;
  return {
    argv: ['sh', '-c', 'cd -- "$1" || exit 3; for f in checkpoint-*/trainer_state.json; do [ -f "$f" ] && printf "%s\\n" "$f"; done; exit 0', 'sh', dir],
    describe,
    maxOutputBytes: 1024 * 1024,
    parse: (result) => {
      if (result.code !== 0) throw commandFailed(describe, result);
      let best: { step: number; name: string } | undefined;
      for (const line of result.stdout.toString('utf8').split('\n')) {
        const m = /^checkpoint-(\d+)\/trainer_state\.json$/.exec(line);
        if (m && (!best || Number(m[1]) > best.step)) best = { step: Number(m[1]), name: line };
      }
      return best ? `${dir === '/' ? '' : dir}/${best.name}` : undefined;
    },
  };
}

/** Every file below `dir` (absolute paths), for an MLflow run's `metrics/`; none when it does not exist. */
export function filesUnderCommand(dir: string): RemoteCommand<string[]> {
  const describe = `list the files below ${dir}`;
  return {
    argv: ['sh', '-c', '[ -d "$1" ] || exit 0; find "$1" -type f -print0', 'sh', dir],
    describe,
    maxOutputBytes: 8 * 1024 * 1024,
    parse: (result) => {
      if (result.code !== 0) throw commandFailed(describe, result);
      // Names are bytes: one that is not UTF-8 stays itself (nameBytes.ts), so the tail asks for the remote's file.
      return decodeFields(result.stdout)
        .split('\0')
        .filter((p) => p.startsWith(`${dir}/`))
        .sort();
    },
  };
}

/**
 * The newest event file of each stream (the one a writer still appends to): a resumed Trainer's older
 * `runs/<date>_<host>/` folder is settled once the newer one exists (eventStreamOf).
 */
function newestPerFolder(followers: readonly MetricsFollower[], runPath: string): Set<MetricsFollower> {
  const best = new Map<string, MetricsFollower>();
  for (const f of followers) {
    if (f.format !== 'tfevents') continue;
    const folder = eventStreamOf(runPath, f.path.slice(0, f.path.lastIndexOf('/')));
    const b = best.get(folder);
    if (!b || compareEventFiles(b.path, f.path) < 0) best.set(folder, f);
  }
  return new Set(best.values());
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

  /**
   * After the runs were listed again: each feed follows the new metrics logs of its run (`lookup` gives a run's
   * current ref by its key, undefined when it is not listed now).
   */
  refresh(lookup: (key: string) => RunRefWire | undefined): void {
    for (const [key, { feed }] of this.feeds) {
      const ref = lookup(key);
      if (ref) feed.addMetrics(ref.metrics);
    }
  }

  /** The configured hosts changed: feeds whose host was removed try again (RunFeed.hostsChanged). */
  hostsChanged(): void {
    for (const { feed } of this.feeds.values()) feed.hostsChanged();
  }

  /** The feeds in use now (a panel, the inline view or the status bar shows their runs). */
  active(): RunFeed[] {
    return [...this.feeds.values()].map((e) => e.feed);
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
