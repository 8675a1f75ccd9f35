/**
 * JSON Lines metrics logs: one object per line, e.g. `{"step": 100, "loss": 0.52, "eval": {"acc": 0.8}}`.
 *
 * - Numeric fields become series; nested objects are flattened with `/` (`eval/acc`).
 * - x is the first of X_KEYS the line has, else (while no line of the file had one of X_KEYS) the first of
 *   FALLBACK_X_KEYS (`epoch`…), or the user's pick alone (RunMetrics.xPick); a line without one takes the last
 *   x seen in this file, or its own line number when the file has none at all. RunMetrics.xKey says which.
 *   Wall time comes from TIME_KEYS.
 * - A line that is not JSON, or is JSON but not an object (an array, a number), is skipped and counted.
 * - Python's `json.dumps` writes bare `NaN` / `Infinity`, which is not JSON: such a line is still read, and
 *   those values alone are skipped and counted (see judgeValue for the full value policy).
 * - Empty lines are ignored.
 */
import { LineSplitter, stripBom, type SplitterState } from './lines';
import { GENERAL_LINE, TOO_LONG_LINE, type FlatBatch } from './flatBatch';
import type { MetricsParser } from './parser';
import type { RunMetrics } from '../series/series';
import { TIME_KEYS, chooseX, excerpt, isAxisKey, judgeValue, toTimeMs } from './fields';
import { FlatLineScanner, SlotTable } from './jsonlFlat';

/** Nesting deeper than this is not a metric layout; deeper objects are ignored. */
const MAX_DEPTH = 8;

export class JsonlParser implements MetricsParser {
  readonly format = 'jsonl' as const;
  private splitter: LineSplitter;
  /** Lines come as batches read elsewhere (detach), not from push. */
  private detached = false;
  /** The key ids of the batches since the last detach (their tokenizer's). */
  private batchSlots = new SlotTable();
  private readonly decoder = new TextDecoder('utf-8');
  private readonly flat: FlatLineScanner | undefined;
  private lastX: number | undefined;

  /**
   * `options.flatFastPath` (default true) reads flat lines of numbers without JSON.parse (see jsonlFlat.ts);
   * false parses every line the general way, which tests use as the reference the fast path must equal.
   */
  constructor(
    readonly metrics: RunMetrics,
    options: { flatFastPath?: boolean } = {},
  ) {
    this.flat = options.flatFastPath === false ? undefined : new FlatLineScanner(metrics);
    this.splitter = this.newSplitter();
  }

  private newSplitter(from?: SplitterState): LineSplitter {
    return new LineSplitter(
      {
        line: (buf, start, end, lineNo, offset) => this.line(buf, start, end, lineNo, offset, false),
        tooLong: (lineNo, offset) => this.tooLong(lineNo, offset),
      },
      from,
    );
  }

  private tooLong(lineNo: number, byteOffset: number): void {
    this.metrics.noteBadLine({ line: lineNo, byteOffset, excerpt: '', reason: 'line too long' });
  }

  get pendingBytes(): number {
    return this.splitter.pendingBytes;
  }

  push(chunk: Uint8Array): void {
    if (this.detached) throw new Error('JsonlParser.push after detach: its lines come as batches');
    this.splitter.push(chunk);
  }

  /**
   * From now on the stream's lines are read elsewhere (a FlatBatcher started from the returned state) and come
   * back through applyBatch. `resume` takes them back.
   */
  detach(): SplitterState {
    this.detached = true;
    this.batchSlots = new SlotTable();
    return this.splitter.state();
  }

  /** Read the stream again from `state` (a detach's, or a batch's end) with push. */
  resume(state: SplitterState): void {
    this.splitter = this.newSplitter(state);
    this.detached = false;
  }

  /** Add the lines of one batch (FlatBatcher.push), in order: the same points, counts and locations push gives. */
  applyBatch(batch: FlatBatch): void {
    const flat = this.flat;
    if (!flat) throw new Error('JsonlParser.applyBatch needs the flat fast path');
    const table = this.batchSlots;
    flat.addNames(table, batch.names);
    const { meta, values, raw } = batch;
    let m = 0;
    let v = 0;
    while (m < meta.length) {
      const code = meta[m];
      const lineNo = meta[m + 1];
      if (code >= 0) {
        const x = flat.emit(table, meta, m + 2, values, v, code, lineNo, this.lastX);
        if (x !== undefined) this.lastX = x;
        m += 2 + code;
        v += code;
      } else if (code === GENERAL_LINE) {
        this.general(raw, meta[m + 2], meta[m + 3], lineNo, values[v++], false);
        m += 4;
      } else if (code === TOO_LONG_LINE) {
        this.tooLong(lineNo, values[v++]);
        m += 2;
      } else throw new Error(`JsonlParser.applyBatch: unknown line code ${code}`);
    }
  }

  end(): void {
    const last = this.splitter.end();
    if (last) this.line(last.bytes, 0, last.bytes.length, last.lineNo, last.byteOffset, true);
  }

  private line(buf: Uint8Array, start: number, end: number, lineNo: number, byteOffset: number, unterminated: boolean): void {
    // Most lines are flat objects of numbers: read those from the bytes (a BOM, at byte 0, goes the general way).
    const fast = this.flat ? this.flat.scan(buf, start, end, lineNo, this.lastX) : false;
    if (fast !== false) {
      if (fast !== undefined) this.lastX = fast;
      return;
    }
    this.general(buf, start, end, lineNo, byteOffset, unterminated);
  }

  /** A line that is not a flat object of numbers: JSON.parse and the value policy. */
  private general(buf: Uint8Array, start: number, end: number, lineNo: number, byteOffset: number, unterminated: boolean): void {
    const text = this.decoder.decode(stripBom(buf.subarray(start, end), byteOffset));
    if (text.trim() === '') return;
    const value = parseJsonLine(text);
    if (value === undefined) {
      // An unterminated last line that does not parse was cut off mid-write: not an error.
      if (!unterminated) this.metrics.noteBadLine({ line: lineNo, byteOffset, excerpt: excerpt(text), reason: 'not JSON' });
      return;
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      const what = Array.isArray(value) ? 'a JSON array' : value === null ? 'null' : `a JSON ${typeof value}`;
      this.metrics.noteBadLine({ line: lineNo, byteOffset, excerpt: excerpt(text), reason: `${what}, not an object` });
      return;
    }
    const obj = value as Record<string, unknown>;
    const chosen = chooseX(this.metrics, obj);
    if (chosen && 'bad' in chosen) {
      this.metrics.noteBadLine({ line: lineNo, byteOffset, excerpt: excerpt(text), reason: chosen.bad });
      return;
    }
    this.metrics.records++;
    let x: number;
    if (chosen) {
      x = this.lastX = chosen.x;
      this.metrics.noteX(chosen.key);
    } else {
      x = this.lastX ?? lineNo;
      this.metrics.xMissing++;
    }
    let t = NaN;
    for (const k of TIME_KEYS) {
      if (k in obj) {
        t = toTimeMs(obj[k]);
        if (!Number.isNaN(t)) break;
      }
    }
    this.walk(obj, '', 0, x, t, lineNo, byteOffset, text, chosen?.key);
  }

  private walk(
    obj: Record<string, unknown>,
    prefix: string,
    depth: number,
    x: number,
    t: number,
    lineNo: number,
    byteOffset: number,
    text: string,
    xKey?: string,
  ): void {
    for (const k of Object.keys(obj)) {
      if (depth === 0 && (isAxisKey(k) || k === xKey)) continue;
      const key = prefix === '' ? k : `${prefix}/${k}`;
      const v = obj[k];
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
        if (depth < MAX_DEPTH) this.walk(v as Record<string, unknown>, key, depth + 1, x, t, lineNo, byteOffset, text);
        continue;
      }
      const verdict = judgeValue(this.metrics, key, v);
      if (verdict.kind === 'number') this.metrics.add(key, x, verdict.value, t);
      else if (verdict.kind === 'bad') {
        this.metrics.noteBadValue({ line: lineNo, byteOffset, excerpt: excerpt(text), reason: verdict.reason, key });
      }
    }
  }
}

/** JSON.parse, and on failure once more with Python's bare NaN/Infinity tokens turned into strings. */
export function parseJsonLine(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    if (!/NaN|Infinity/.test(text)) return undefined;
    try {
      return JSON.parse(quoteNonFiniteTokens(text));
    } catch {
      return undefined;
    }
  }
}

/**
 * Rewrite bare `NaN`, `Infinity`, `-Infinity` outside strings as the strings `"NaN"`, … so JSON.parse accepts
 * the line and the value policy can skip just those values. Text inside JSON strings is left alone.
 */
export function quoteNonFiniteTokens(text: string): string {
  let out = '';
  let i = 0;
  let copied = 0;
  let inString = false;
  while (i < text.length) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i += 2;
      else {
        if (c === '"') inString = false;
        i++;
      }
      continue;
    }
    if (c === '"') {
      inString = true;
      i++;
      continue;
    }
    const m = /^(-?Infinity|NaN)/.exec(text.slice(i, i + 9));
    const before = i === 0 ? '' : text[i - 1];
    if (m && !/[\w.]/.test(before) && !/[\w.]/.test(text[i + m[1].length] ?? '')) {
      out += `${text.slice(copied, i)}"${m[1]}"`;
      i += m[1].length;
      copied = i;
      continue;
    }
    i++;
  }
  return out + text.slice(copied);
}
