/**
 * Rules shared by the text formats (JSONL, CSV, trainer_state.json): which field is the x axis, which is wall
 * time, what counts as a number, and when a non-number is a problem worth counting.
 */

/** What the field rules ask of a run's metrics (RunMetrics in series.ts has them): its x choice and its series. */
export interface FieldContext {
  /** The user's x column, the only x candidate when set. */
  readonly xPick?: string;
  /** Whether the log has not used one of X_KEYS yet, so FALLBACK_X_KEYS may still serve as x. */
  readonly fallbackXAllowed: boolean;
  /** Whether a series of this key exists. */
  has(key: string): boolean;
}

/** Candidate x-axis fields, most preferred first. They are never plotted as metrics themselves. */
export const X_KEYS: readonly string[] = ['step', 'global_step', 'iter', 'iteration', '_step'];
/**
 * x-axis fields taken only by a log that has none of X_KEYS, most preferred first: environment steps
 * (Stable-Baselines3's progress.csv writes `time/total_timesteps`: stable_baselines3/common/base_class.py,
 * `_dump_logs` → `self.logger.record("time/total_timesteps", self.num_timesteps)`), then epochs (Keras'
 * CSVLogger writes an `epoch` column and no step). Unlike X_KEYS they are metrics in a log whose x is a step
 * (`epoch` beside `step` is worth a curve); only the one that is the x of a line is not plotted for that line.
 */
export const FALLBACK_X_KEYS: readonly string[] = ['timesteps', 'time/total_timesteps', 'total_timesteps', 'epoch'];
/** Every x candidate in order: what a log's x is chosen from when the user has not picked one. */
export const ALL_X_KEYS: readonly string[] = [...X_KEYS, ...FALLBACK_X_KEYS];
/** Candidate wall-time fields, most preferred first. Never plotted as metrics either. */
export const TIME_KEYS: readonly string[] = ['time', 'timestamp', 'wall_time', '_timestamp'];

const X_KEY_SET = new Set(X_KEYS);
const TIME_KEY_SET = new Set(TIME_KEYS);

/**
 * The x of one record (a parsed JSON object, a trainer_state entry): the user's pick alone when there is one;
 * else the first of X_KEYS the record has as a finite number; else, while the log has not used one of X_KEYS
 * (RunMetrics.fallbackXAllowed), the first of FALLBACK_X_KEYS. Undefined when none applies. A candidate whose value
 * is a number no step can be (stepProblem: NaN, ±Infinity, beyond 2^53) is `bad`: the line is a bad line, counted
 * and said, never plotted at some other x.
 */
export function chooseX(metrics: FieldContext, record: Record<string, unknown>): { key: string; x: number } | { key: string; bad: string } | undefined {
  const candidates = metrics.xPick !== undefined ? [metrics.xPick] : metrics.fallbackXAllowed ? ALL_X_KEYS : X_KEYS;
  for (const key of candidates) {
    const v = record[key];
    const bad = stepProblem(v);
    if (bad !== undefined) return { key, bad: `${key} ${bad}` };
    if (typeof v === 'number') return { key, x: v };
  }
  return undefined;
}

/**
 * Why a value of the x field cannot be an x, or undefined when it can (or is not a number at all): a non-finite
 * number (`NaN`, `Infinity`; as text too, as Python's json writes them) has no place on an axis, and a number past
 * Number.MAX_SAFE_INTEGER (2^53 - 1) is not exact: two steps would print as one. Negative steps are kept (an x such
 * as a warm-up counted from -N is a real axis, and nothing about it is inexact).
 */
export function stepProblem(v: unknown): string | undefined {
  if (typeof v === 'string') return isNonFiniteText(v) ? `is ${v.trim()}` : undefined;
  if (typeof v !== 'number') return undefined;
  if (!Number.isFinite(v)) return `is ${v}`;
  if (Math.abs(v) > Number.MAX_SAFE_INTEGER) return `is ${v}, past 2^53: not exact`;
  return undefined;
}

/** Is this top-level field the x axis or the clock rather than a metric? */
export function isAxisKey(key: string): boolean {
  return X_KEY_SET.has(key) || TIME_KEY_SET.has(key);
}

/** Values at or above this are taken as milliseconds (1e11 s would be the year 5138; 1e11 ms is 1973). */
const MS_THRESHOLD = 1e11;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}/;

/**
 * A time field as milliseconds: numbers below 1e11 are seconds (epoch or elapsed, kept as the log has them),
 * larger ones milliseconds; ISO 8601 strings are parsed. NaN when it is not a time.
 */
export function toTimeMs(value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return NaN;
    return Math.abs(value) >= MS_THRESHOLD ? value : value * 1000;
  }
  if (typeof value === 'string') {
    const n = parseDecimal(value);
    if (n !== undefined) return toTimeMs(n);
    if (ISO_DATE.test(value.trim())) return Date.parse(value.trim());
  }
  return NaN;
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/**
 * A decimal number written as text (CSV cells). Stricter than `Number()`, which also reads '' and ' ' as 0 and
 * '0x10' as 16. Undefined when not a decimal; may be ±Infinity for overflowing exponents.
 */
export function parseDecimal(text: string): number | undefined {
  const t = text.trim();
  return DECIMAL.test(t) ? Number(t) : undefined;
}

const NON_FINITE_TEXT = /^[+-]?(nan|inf|infinity)$/i;

/** Text that spells a non-finite number (`NaN`, `inf`, `-Infinity`, as Python and pandas write them). */
export function isNonFiniteText(text: string): boolean {
  return NON_FINITE_TEXT.test(text.trim());
}

/** What to do with one value of one metric key. */
export type ValueVerdict = { kind: 'number'; value: number } | { kind: 'bad'; reason: string } | { kind: 'ignore' };

/**
 * The policy for a single value, shared by all text formats:
 * - a finite number is a point;
 * - a non-finite number, or text spelling one (`NaN`, `inf`), is a bad value: skipped and counted;
 * - other text for a key that already has a series (it was numeric before) is a bad value too;
 * - other text for a key never seen numeric (`"phase": "train"`), null, booleans and arrays are not metrics at
 *   all and are ignored without counting: logs carry such fields on purpose.
 * A bad value never costs the other values of its line.
 */
export function judgeValue(metrics: FieldContext, key: string, value: unknown, textIsNumber = false): ValueVerdict {
  if (typeof value === 'number') {
    return Number.isFinite(value) ? { kind: 'number', value } : { kind: 'bad', reason: 'non-finite value' };
  }
  if (typeof value === 'string') {
    if (textIsNumber) {
      const n = parseDecimal(value);
      if (n !== undefined) return Number.isFinite(n) ? { kind: 'number', value: n } : { kind: 'bad', reason: 'non-finite value' };
    }
    if (isNonFiniteText(value)) return { kind: 'bad', reason: 'non-finite value' };
    if (metrics.has(key)) return { kind: 'bad', reason: 'not a number' };
  }
  return { kind: 'ignore' };
}

/** A short, single-line excerpt of some text for messages. */
export function excerpt(text: string, max = 80): string {
  const flat = text.replace(/[\r\n\t]/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
