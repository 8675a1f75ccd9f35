/**
 * Metric storage for one run: per metric key, x (step), y (value) and optional wall time in growable typed
 * arrays. Where the step goes back (a process restarted from an earlier checkpoint appends to the same log, or a
 * resumed writer's new log follows the old one), the later process wins: the earlier points at steps at or after
 * the step it restarted from are superseded (dropped, counted in `replaced`, listed in `restarts`), and the
 * restart begins a new segment. That is what TensorBoard itself does with such a log: EventAccumulator
 * (tensorboard/backend/event_processing/event_accumulator.py, `_CheckForOutOfOrderStepAndMaybePurge` and `_Purge`,
 * with `purge_orphaned_data` on by default) discards a tag's events whose step is >= the out-of-order step. So a
 * resumed run reads as one timeline (each step once), and the restart stays visible as a segment boundary.
 */
import { Axis, shortestFloat32, ValueColumn } from './compact';
import { X_KEYS } from '../formats/fields';

const STEP_LIKE = new Set(X_KEYS);
function isStepLike(key: string): boolean {
  return STEP_LIKE.has(key);
}

/** Points read by index: a Series, or plain arrays through pointsOf. */
export interface Points {
  readonly length: number;
  xAt(i: number): number;
  yAt(i: number): number;
  /**
   * Optional: where the smallest and largest value of the BLOCK points from `i` (a multiple of BLOCK) are, as
   * ValueColumn.blockExtremes says (-1: read them one by one). Lets a decimation skip most points of a long series.
   */
  blockExtremes?(i: number): number;
}

/** Plain arrays as Points (tests, small tails). */
export function pointsOf(x: ArrayLike<number>, y: ArrayLike<number>): Points {
  return { length: Math.min(x.length, y.length), xAt: (i) => x[i], yAt: (i) => y[i] };
}

/** One monotonic stretch of a series: indices `[start, end)`. x never decreases inside a segment. */
export interface Segment {
  start: number;
  end: number;
}

/** Where a series' step went back (a restart): the later process's points superseded the earlier ones from `step` on. */
export interface Restart {
  /** The step the later process restarted at (its first point). */
  step: number;
  /** Index of that first point in the series (a segment starts there). */
  index: number;
  /** Earlier points at steps >= `step` that were dropped. */
  replaced: number;
}

/** Where a skipped line, record or value was, for a message the user can act on. */
export interface BadLocation {
  /** 1-based line number (JSONL/CSV), record number (TFRecord) or `log_history` entry number (trainer_state). */
  line: number;
  /** Byte offset of the line or record in the file, where known. */
  byteOffset?: number;
  /** The start of the offending text (at most ~80 characters), or a hex dump for binary records. */
  excerpt: string;
  /** Why it was skipped, e.g. `not JSON`, `non-finite value`, `data CRC mismatch`. */
  reason: string;
  /** For a skipped value: the metric key it belonged to. */
  key?: string;
}

/** What a bad unit is called in messages. */
export type RecordUnit = 'line' | 'record' | 'entry';

/**
 * The points of one metric: x (step) exact, values as float32, wall times to the millisecond (compact.ts says
 * why that is enough). The series of one log share its records' x and time (an Axis) while they have a value on
 * every record of it, and hold their own once they skip one; read points with xAt/yAt/timeAt.
 */
export class Series {
  private axis: Axis;
  private own: boolean;
  /** The axis record of point 0. */
  private start = 0;
  private values = new ValueColumn();
  private starts: number[] = [];
  /** The last x pushed (NaN before the first). */
  private last = NaN;
  private readonly restartList: Restart[] = [];
  private replacedCount = 0;

  /**
   * `shared`: the axis of the log this series belongs to (RunMetrics gives it); a series of its own otherwise.
   * `restarts`: `later-wins` (the default: x is a step, see the file comment) or `segments`, for an x the user
   * picked (RunMetrics.xPick: a learning rate, a token count), which may go back for reasons other than a restart:
   * every point is kept and a step back only starts a new segment.
   */
  constructor(
    readonly key: string,
    shared?: Axis,
    private readonly onStepBack: 'later-wins' | 'segments' = 'later-wins',
  ) {
    this.axis = shared ?? new Axis();
    this.own = shared === undefined;
  }

  get length(): number {
    return this.values.length;
  }

  xAt(i: number): number {
    return i >= 0 && i < this.values.length ? this.axis.x.at(this.start + i) : NaN;
  }

  yAt(i: number): number {
    return this.values.at(i);
  }

  blockExtremes(i: number): number {
    return this.values.blockExtremes(i);
  }

  /** Values `from` to `to` (0 ≤ from ≤ to ≤ length) into `out` from index 0, as yAt reads them. */
  readY(from: number, to: number, out: Float64Array): void {
    this.values.read(from, to, out);
  }

  /** The value as the log wrote it, to the precision held (shortestFloat32): for what is shown, printed or sent. */
  yShown(i: number): number {
    return shortestFloat32(this.values.at(i));
  }

  /** Wall time in ms since the epoch, NaN where the point had none. */
  timeAt(i: number): number {
    return i >= 0 && i < this.values.length ? this.axis.timeAt(this.start + i) : NaN;
  }

  /** Did any point (of this series' log) have a wall time? */
  get hasTime(): boolean {
    return this.axis.hasTime;
  }

  /** Steps as a new array: O(n), for tests and small series; hot paths read xAt. */
  get x(): Float64Array {
    const out = new Float64Array(this.length);
    for (let i = 0; i < out.length; i++) out[i] = this.xAt(i);
    return out;
  }

  /** Values as shown (yShown), as a new array (see `x`). */
  get y(): Float64Array {
    const out = new Float64Array(this.length);
    for (let i = 0; i < out.length; i++) out[i] = this.yShown(i);
    return out;
  }

  /** Wall times as a new array (see `x`); undefined when no point had one. */
  get time(): Float64Array | undefined {
    if (!this.hasTime) return undefined;
    const out = new Float64Array(this.length);
    for (let i = 0; i < out.length; i++) out[i] = this.timeAt(i);
    return out;
  }

  /** Monotonic stretches, in file order. Empty for an empty series. */
  get segments(): Segment[] {
    const out: Segment[] = [];
    for (let i = 0; i < this.starts.length; i++) {
      out.push({ start: this.starts[i], end: i + 1 < this.starts.length ? this.starts[i + 1] : this.length });
    }
    return out;
  }

  /** Indices where segments begin, ascending (a copy). */
  get segmentStarts(): number[] {
    return this.starts.slice();
  }

  get lastX(): number {
    return this.xAt(this.length - 1);
  }

  /** Bytes allocated for this series (its share of a log's axis is counted by RunMetrics). */
  get byteLength(): number {
    return this.values.byteLength + (this.own ? this.axis.byteLength : 0);
  }

  /** Holds an axis of its own (for tests and the memory figures). */
  get ownsAxis(): boolean {
    return this.own;
  }

  /** The restarts met so far, in order (a copy): where the step went back and how many points that replaced. */
  get restarts(): Restart[] {
    return this.restartList.slice();
  }

  /** How many restarts were met: grows whenever points were superseded (a view's copy must be sent whole again). */
  get restartCount(): number {
    return this.restartList.length;
  }

  /** Points superseded by restarts (not held, not shown, not exported). */
  get replaced(): number {
    return this.replacedCount;
  }

  /**
   * Append a point. A step lower than the previous one is a restart (see the file comment): the points at steps
   * >= x are dropped and a new segment starts with this point.
   */
  push(x: number, y: number, timeMs = NaN): void {
    let n = this.values.length;
    // `!(x >= last)` rather than `x < last`: the first point (last is NaN) starts a segment too.
    if (!(x >= this.last)) {
      if (n > 0 && !Number.isNaN(x) && this.onStepBack === 'later-wins') n = this.restartAt(x);
      this.starts.push(n);
    }
    this.last = x;
    const t = Number.isNaN(timeMs) ? NaN : Math.round(timeMs);
    const a = this.axis;
    if (this.own) a.push(x, t);
    else if (n === 0) {
      // The first point: the record another series of the line already added, or a new one.
      const l = a.length;
      if (l > 0 && a.matches(l - 1, x, t)) this.start = l - 1;
      else {
        this.start = l;
        a.push(x, t);
      }
    } else {
      const pos = this.start + n;
      if (pos === a.length) a.push(x, t);
      else if (!(pos === a.length - 1 && a.matches(pos, x, t))) this.leaveAxis(x, t);
    }
    this.values.push(y);
  }

  /**
   * push(x, y, timeMs) for one of the values of a record whose values are pushed in a row (the metrics of one JSONL
   * line), without asking the shared axis again for each: `recordAt` is where the record is on the log's shared axis
   * so far (-1 before its first value); returns it for the next value. The same points as push.
   */
  pushInRecord(x: number, y: number, timeMs: number, recordAt: number): number {
    const n = this.values.length;
    if (!this.own && n > 0) {
      const a = this.axis;
      const pos = this.start + n;
      const fresh = recordAt < 0 && pos === a.length;
      // A step back (a restart) takes push's way, which drops the superseded points.
      if ((fresh || (pos === recordAt && recordAt === a.length - 1)) && (x >= this.last || this.onStepBack === 'segments')) {
        if (!(x >= this.last)) this.starts.push(n);
        this.last = x;
        if (fresh) a.push(x, Number.isNaN(timeMs) ? NaN : Math.round(timeMs));
        this.values.push(y);
        return pos;
      }
    }
    this.push(x, y, timeMs);
    return this.own ? recordAt : this.axis.length - 1;
  }

  /**
   * The later-wins rule for a point at step `x` below the last one: keep only the points at steps < x (a prefix:
   * the series is non-decreasing, since every earlier restart was resolved the same way), in columns of their own.
   * Returns the new length. O(kept): restarts are rare.
   */
  private restartAt(x: number): number {
    const n = this.values.length;
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.xAt(mid) < x) lo = mid + 1;
      else hi = mid;
    }
    const keep = lo;
    const axis = new Axis();
    const values = new ValueColumn();
    for (let k = 0; k < keep; k++) {
      axis.push(this.xAt(k), this.timeAt(k));
      values.push(this.values.at(k));
    }
    this.axis = axis;
    this.own = true;
    this.start = 0;
    this.values = values;
    this.starts = this.starts.filter((s) => s < keep);
    this.restartList.push({ step: x, index: keep, replaced: n - keep });
    this.replacedCount += n - keep;
    return keep;
  }

  /** This series skipped a record of its log (or took one no other did): copy its x and times into an axis of its own. */
  private leaveAxis(x: number, t: number): void {
    const shared = this.axis;
    const own = new Axis();
    const n = this.values.length;
    for (let k = 0; k < n; k++) own.push(shared.x.at(this.start + k), shared.timeAt(this.start + k));
    own.push(x, t);
    this.axis = own;
    this.own = true;
    this.start = 0;
  }
}

/** Everything parsed from one metrics log: series per key, and what was skipped and where. */
export class RunMetrics {
  readonly series = new Map<string, Series>();
  /** The records' x and time, shared by the series that have a value on each (Series). */
  private axis = new Axis();
  /** Lines / records / entries that produced data or were at least well-formed. */
  records = 0;
  /** Lines (records, entries) skipped whole. */
  badLines = 0;
  /** Single values skipped (NaN, Infinity, text where a number belongs) while the rest of the line was kept. */
  badValues = 0;
  firstBadLine: BadLocation | undefined;
  firstBadValue: BadLocation | undefined;
  /** Grows on every change, so a view can tell whether to send a new snapshot. */
  revision = 0;
  /** Grows on every reset, so a parser caching Series objects knows they are gone. */
  generation = 0;

  /**
   * The key the x of this log's points came from (`step`, `global_step`, `time/total_timesteps`, `epoch`, …);
   * undefined while no record had one, and then x is each record's line (entry) number. See describeX.
   */
  xKey: string | undefined;
  /** Records that had no x of their own and took the previous record's x, or their line number. */
  xMissing = 0;

  /**
   * `xPick` is the user's choice of x column: the only x candidate, wherever it is found. Undefined: the
   * parsers choose by X_KEYS, then FALLBACK_X_KEYS (fields.ts). Kept across reset().
   */
  constructor(
    readonly unit: RecordUnit = 'line',
    readonly xPick?: string,
  ) {}

  /** A record took its x from `key`. A step-like key replaces a fallback one (`epoch`) seen before it. */
  noteX(key: string): void {
    if (this.xKey === key) return;
    if (this.xKey === undefined || (!isStepLike(this.xKey) && isStepLike(key))) {
      this.xKey = key;
      this.revision++;
    }
  }

  /** May a fallback x key (`epoch`…) be a record's x? Not once a step-like key has been one in this log. */
  get fallbackXAllowed(): boolean {
    // Asked once per line: the key's kind is looked up when the key changes, not each time.
    if (this.fallbackFor !== this.xKey) {
      this.fallbackFor = this.xKey;
      this.fallbackOk = this.xKey === undefined || !isStepLike(this.xKey);
    }
    return this.fallbackOk;
  }
  private fallbackFor: string | undefined;
  private fallbackOk = true;

  has(key: string): boolean {
    return this.series.has(key);
  }

  get(key: string): Series | undefined {
    return this.series.get(key);
  }

  /** Metric keys in the order they first appeared. */
  keys(): string[] {
    return [...this.series.keys()];
  }

  add(key: string, x: number, y: number, timeMs = NaN): void {
    this.seriesFor(key).push(x, y, timeMs);
    this.revision++;
  }

  /**
   * The series of `key`, created (empty) when new. For parsers that push points straight into it: they must
   * bump `revision` themselves, and drop the Series they hold when `generation` moves (a reset).
   */
  seriesFor(key: string): Series {
    let s = this.series.get(key);
    if (!s) {
      // An x the user picked is drawn as logged; a log's own x (a step) resolves restarts (Series).
      s = new Series(key, this.axis, this.xPick === undefined ? 'later-wins' : 'segments');
      this.series.set(key, s);
    }
    return s;
  }

  noteBadLine(location: BadLocation): void {
    this.badLines++;
    this.firstBadLine ??= location;
    this.revision++;
  }

  noteBadValue(location: BadLocation): void {
    this.badValues++;
    this.firstBadValue ??= location;
    this.revision++;
  }

  /** Forget everything (the file was truncated or replaced and is read again from the start). */
  reset(): void {
    this.series.clear();
    this.axis = new Axis();
    this.records = 0;
    this.badLines = 0;
    this.badValues = 0;
    this.firstBadLine = undefined;
    this.firstBadValue = undefined;
    this.xKey = undefined;
    this.xMissing = 0;
    this.revision++;
    this.generation++;
  }

  /** Bytes allocated by all series. */
  get byteLength(): number {
    let total = this.axis.byteLength;
    for (const s of this.series.values()) total += s.byteLength;
    return total;
  }
}

/**
 * One sentence about what was skipped, for a status line; undefined when nothing was.
 * E.g. `Skipped 2 bad lines (first at line 17, byte 2034: not JSON: {"loss": 0.3`).
 */
export function describeSkipped(m: RunMetrics): string | undefined {
  const parts: string[] = [];
  if (m.badLines > 0 && m.firstBadLine) {
    parts.push(`Skipped ${m.badLines} bad ${m.unit}${m.badLines === 1 ? '' : 's'} (first ${where(m.unit, m.firstBadLine)})`);
  }
  if (m.badValues > 0 && m.firstBadValue) {
    const key = m.firstBadValue.key !== undefined ? ` of ${JSON.stringify(m.firstBadValue.key)}` : '';
    parts.push(`skipped ${m.badValues} value${m.badValues === 1 ? '' : 's'} (first${key} ${where(m.unit, m.firstBadValue)})`);
  }
  if (parts.length === 0) return undefined;
  const text = parts.join('; ');
  return text[0].toUpperCase() + text.slice(1);
}

function where(unit: RecordUnit, loc: BadLocation): string {
  const byte = loc.byteOffset !== undefined ? `, byte ${loc.byteOffset}` : '';
  return `at ${unit} ${loc.line}${byte}: ${loc.reason}${loc.excerpt ? `: ${loc.excerpt}` : ''}`;
}

/**
 * What restarts replaced in a series, for a status line or stderr, e.g. `resumed at step 33: 3 earlier points
 * replaced`; undefined when nothing was.
 */
export function describeRestarts(s: Series): string | undefined {
  const r = s.restarts;
  if (r.length === 0) return undefined;
  const one = (x: Restart): string => `resumed at step ${x.step}: ${x.replaced} earlier point${x.replaced === 1 ? '' : 's'} replaced`;
  if (r.length <= 3) return r.map(one).join('; ');
  return `${r.length} restarts (${one(r[0])}; …; ${one(r[r.length - 1])}), ${s.replaced} earlier points replaced in all`;
}

/**
 * What the x axis of a log is, for a status line: `step`, `epoch`, `time/total_timesteps`, or `line number`
 * (no record had an x field), with the user's pick named when the log does not have it. Undefined before the
 * first record.
 */
export function describeX(m: RunMetrics): string | undefined {
  if (m.xKey !== undefined) return m.xKey;
  if (m.records === 0) return undefined;
  if (m.xPick !== undefined) return `${m.unit} number (no ${JSON.stringify(m.xPick)} in this log)`;
  return `${m.unit} number`;
}
