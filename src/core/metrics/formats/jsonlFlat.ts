/**
 * The fast path of JSONL parsing: a line that is one flat object of plain numbers (`{"step":1,"loss":0.52}`,
 * what nearly every training logger writes, every line) is read straight from the bytes, without decoding
 * the line to a string, building an object, or allocating anything per value. Profiles of a 1M-line log put
 * most of the time in exactly those allocations (GC), not in JSON.parse itself.
 *
 * It is all or nothing per line: the line is scanned completely before anything is added, and anything the
 * scanner does not recognise (a string, a nested object, NaN, an escape in a key, a duplicate key, bad JSON,
 * a number it cannot convert exactly, a number past 2^53) makes it return false, so the caller parses that line with JSON.parse
 * as before. The result for an accepted line is identical to the general path's: same keys in the same
 * order, same x and time, same values (numbers are converted exactly; see readNumber).
 */
import { ALL_X_KEYS, TIME_KEYS, X_KEYS, isAxisKey, toTimeMs } from './fields';
import type { RunMetrics, Series } from '../series/series';

/** One key seen at one position of the line, remembered for the next line (logs repeat their layout). */
interface TokenSlot {
  bytes: Uint8Array;
  name: string;
  /** The key's number in this tokenizer's name table (FlatTokenizer.names): the same key, the same id. */
  id: number;
}

/** What the emitter knows of a key, by its id. */
interface Slot {
  name: string;
  /** Index among the x candidates (ALL_X_KEYS, or the user's pick alone), or -1. */
  xRank: number;
  /** One of X_KEYS or TIME_KEYS: never a metric. */
  axis: boolean;
  /** Index in TIME_KEYS, or -1. */
  timeRank: number;
  /** The metric's series, cached for RunMetrics generation `generation`. */
  series: Series | undefined;
  generation: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN = 0x7b;
const CLOSE = 0x7d;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const ZERO = 0x30;
const NINE = 0x39;
const E_LOWER = 0x65;
const E_UPPER = 0x45;

/** Exact powers of ten (every one up to 1e22 is representable exactly as a double). */
const POW10 = Array.from({ length: 23 }, (_, i) => Number(`1e${i}`));
const X_COUNT = X_KEYS.length;
const TIME_COUNT = TIME_KEYS.length;
/** Keys that JavaScript objects order before all others (array indices); the general path sees them first. */
const INDEX_KEY = /^(0|[1-9]\d{0,9})$/;
/** A line with more keys than this is not a flat metrics record worth caching. */
const MAX_SLOTS = 256;

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0d || c === 0x0a;
}

/**
 * The byte half of the fast path: reads one line as a flat object of finite numbers into `ids` (each key's id in
 * the name table, `names`) and `values`, or says it is not one. It knows nothing of metrics, so it can run in
 * another thread (parseWorker.ts) while FlatLineScanner's emitter, on the thread that owns the metrics, adds the
 * points.
 */
export class FlatTokenizer {
  private readonly slots: TokenSlot[] = [];
  /** Every key seen, in order of first appearance: a key's id is its index. */
  readonly names: string[] = [];
  private readonly ids = new Map<string, number>();
  /** The last line's keys (ids) and values, `scan`'s count of them valid. */
  lineIds = new Int32Array(16);
  values = new Float64Array(16);
  private readonly decoder = new TextDecoder('utf-8');
  private readonly latin1 = new TextDecoder('latin1');
  /** Where readNumber stopped. */
  private pos = 0;

  /**
   * Read `buf[start, end)` (one line without its newline): the number of key/value pairs when it is a flat object
   * of finite numbers with distinct keys (in lineIds and values), else -1 and the line is for the general path.
   */
  scan(buf: Uint8Array, start: number, end: number): number {
    let i = start;
    while (i < end && isWs(buf[i])) i++;
    if (i >= end || buf[i] !== OPEN) return -1;
    i++;
    while (i < end && isWs(buf[i])) i++;
    let n = 0;
    for (;;) {
      if (i >= end || buf[i] !== QUOTE) return -1;
      const ks = ++i;
      for (;;) {
        if (i >= end) return -1;
        const c = buf[i];
        if (c === QUOTE) break;
        if (c === BACKSLASH || c < 0x20) return -1;
        i++;
      }
      const slot = this.slotAt(n, buf, ks, i);
      if (!slot) return -1;
      i++;
      while (i < end && isWs(buf[i])) i++;
      if (i >= end || buf[i] !== COLON) return -1;
      i++;
      while (i < end && isWs(buf[i])) i++;
      const v = this.readNumber(buf, i, end);
      // A number past 2^53 goes the general way too: as an x it makes the line a bad one (fields.ts stepProblem),
      // which the general path says with the line's text and offset; as a value it reads the same there.
      if (Number.isNaN(v) || Math.abs(v) > Number.MAX_SAFE_INTEGER) return -1;
      i = this.pos;
      if (n === this.values.length) {
        const grown = new Float64Array(n * 2);
        grown.set(this.values);
        this.values = grown;
        const ids = new Int32Array(n * 2);
        ids.set(this.lineIds);
        this.lineIds = ids;
      }
      this.values[n] = v;
      this.lineIds[n] = slot.id;
      n++;
      while (i < end && isWs(buf[i])) i++;
      if (i >= end) return -1;
      if (buf[i] === COMMA) {
        i++;
        while (i < end && isWs(buf[i])) i++;
        continue;
      }
      if (buf[i] !== CLOSE) return -1;
      i++;
      break;
    }
    while (i < end && isWs(buf[i])) i++;
    return i === end ? n : -1;
  }

  /** The slot for the n-th key of this line: the remembered one when the bytes match, else a new one. */
  private slotAt(n: number, buf: Uint8Array, ks: number, ke: number): TokenSlot | undefined {
    const known = this.slots[n];
    const len = ke - ks;
    if (known !== undefined && known.bytes.length === len) {
      const b = known.bytes;
      let k = 0;
      while (k < len && b[k] === buf[ks + k]) k++;
      if (k === len) return known;
    }
    if (n >= MAX_SLOTS) return undefined;
    const name = this.decoder.decode(buf.subarray(ks, ke));
    if (INDEX_KEY.test(name)) return undefined;
    // Slots before n are this line's earlier keys (they matched or were just made), and they are distinct
    // from one another: a repeated key (JSON.parse keeps its last value) goes the general way.
    for (let k = 0; k < n; k++) if (this.slots[k].name === name) return undefined;
    // Later slots were remembered alongside an older layout: forget them, so the distinctness above holds.
    this.slots.length = n;
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
    }
    const slot: TokenSlot = { bytes: buf.slice(ks, ke), name, id };
    this.slots.push(slot);
    return slot;
  }

  /**
   * A JSON number at `buf[i]`, exactly as JSON.parse reads it, or NaN when there is none (or it is not finite).
   * Sets `pos` past it. Up to 15 significant digits with a decimal exponent within ±22 are converted with one
   * correctly rounded multiplication or division of two exact doubles (Clinger's fast path), which gives the
   * correctly rounded result JSON.parse gives; anything longer goes through Number() on the text.
   */
  private readNumber(buf: Uint8Array, i: number, end: number): number {
    const from = i;
    let neg = false;
    if (i < end && buf[i] === MINUS) {
      neg = true;
      i++;
    }
    if (i >= end) return NaN;
    let c = buf[i];
    let mantissa = 0;
    let digits = 0;
    let exp = 0;
    if (c === ZERO) {
      i++;
      if (i < end && buf[i] >= ZERO && buf[i] <= NINE) return NaN; // leading zero: not JSON
    } else if (c > ZERO && c <= NINE) {
      while (i < end && (c = buf[i]) >= ZERO && c <= NINE) {
        mantissa = mantissa * 10 + (c - ZERO);
        digits++;
        i++;
      }
    } else return NaN;
    if (i < end && buf[i] === DOT) {
      i++;
      const fracStart = i;
      while (i < end && (c = buf[i]) >= ZERO && c <= NINE) {
        if (digits > 0 || c !== ZERO) {
          mantissa = mantissa * 10 + (c - ZERO);
          digits++;
        }
        exp--;
        i++;
      }
      if (i === fracStart) return NaN;
    }
    if (i < end && (buf[i] === E_LOWER || buf[i] === E_UPPER)) {
      i++;
      let expNeg = false;
      if (i < end && (buf[i] === MINUS || buf[i] === PLUS)) {
        expNeg = buf[i] === MINUS;
        i++;
      }
      const expStart = i;
      let e = 0;
      while (i < end && (c = buf[i]) >= ZERO && c <= NINE) {
        if (e < 100_000) e = e * 10 + (c - ZERO);
        i++;
      }
      if (i === expStart) return NaN;
      exp += expNeg ? -e : e;
    }
    this.pos = i;
    let v: number;
    if (digits <= 15 && exp >= -22 && exp <= 22) {
      v = exp >= 0 ? mantissa * POW10[exp] : mantissa / POW10[-exp];
      if (neg) v = -v;
    } else {
      v = Number(this.latin1.decode(buf.subarray(from, i)));
    }
    return Number.isFinite(v) ? v : NaN;
  }
}

/** The emitter's view of one tokenizer's key ids (each tokenizer numbers its keys from 0). */
export class SlotTable {
  readonly slots: Slot[] = [];
}

/**
 * The fast path whole: FlatTokenizer reads a line, the emitter adds its points to the metrics. The emitter also
 * takes lines a tokenizer read elsewhere (another thread): `emit` with a SlotTable of that tokenizer's names.
 */
export class FlatLineScanner {
  private readonly tokens = new FlatTokenizer();
  private readonly own = new SlotTable();
  private readonly candidates: readonly string[];

  constructor(private readonly metrics: RunMetrics) {
    this.candidates = metrics.xPick !== undefined ? [metrics.xPick] : ALL_X_KEYS;
  }

  /**
   * Read `buf[start, end)` (one line without its newline) into the metrics if it is a flat object of finite
   * numbers; `lastX` is the x of the last line that had one. Returns the x used (or undefined when this line
   * had no x key), or false when the line is not for this path and nothing was added.
   */
  scan(buf: Uint8Array, start: number, end: number, lineNo: number, lastX: number | undefined): number | undefined | false {
    const t = this.tokens;
    const n = t.scan(buf, start, end);
    if (n < 0) return false;
    const names = t.names;
    const table = this.own;
    if (table.slots.length < names.length) this.addNames(table, names.slice(table.slots.length));
    return this.emit(table, t.lineIds, 0, t.values, 0, n, lineNo, lastX);
  }

  /** The next key ids' names (a tokenizer gives its ids in order, from 0). */
  addNames(table: SlotTable, names: readonly string[]): void {
    for (const name of names) {
      table.slots.push({ name, xRank: this.candidates.indexOf(name), axis: isAxisKey(name), timeRank: TIME_KEYS.indexOf(name), series: undefined, generation: -1 });
    }
  }

  /**
   * Add one flat line: `n` pairs, key ids (of `table`'s tokenizer) from `ids[io]`, values from `values[vo]`. Returns
   * the x used, or undefined when the line had no x key.
   */
  emit(table: SlotTable, ids: Int32Array, io: number, values: Float64Array, vo: number, n: number, lineNo: number, lastX: number | undefined): number | undefined {
    const m = this.metrics;
    const slots = table.slots;
    let x: number | undefined;
    // The same choice as fields.ts chooseX: fallback keys (`epoch`) only while the log has used no step-like one.
    let xRank = m.xPick !== undefined || m.fallbackXAllowed ? this.candidates.length : X_COUNT;
    let xSlot = -1;
    let t = NaN;
    let tRank = TIME_COUNT;
    for (let k = 0; k < n; k++) {
      const s = slots[ids[io + k]];
      if (s.xRank >= 0 && s.xRank < xRank) {
        xRank = s.xRank;
        x = values[vo + k];
        xSlot = k;
      } else if (s.timeRank >= 0 && s.timeRank < tRank) {
        tRank = s.timeRank;
        t = values[vo + k];
      }
    }
    if (xSlot >= 0) m.noteX(slots[ids[io + xSlot]].name);
    else m.xMissing++;
    const px = x ?? lastX ?? lineNo;
    const time = tRank < TIME_COUNT ? toTimeMs(t) : NaN;
    m.records++;
    let added = false;
    // The line's values share one record of the log's axis: found (or added) once, not once per value.
    let recordAt = -1;
    for (let k = 0; k < n; k++) {
      const s = slots[ids[io + k]];
      if (s.axis || k === xSlot) continue;
      let series = s.series;
      if (series === undefined || s.generation !== m.generation) {
        series = s.series = m.seriesFor(s.name);
        s.generation = m.generation;
      }
      recordAt = series.pushInRecord(px, values[vo + k], time, recordAt);
      added = true;
    }
    if (added) m.revision++;
    return x;
  }
}
