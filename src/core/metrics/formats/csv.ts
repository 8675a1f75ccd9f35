/**
 * CSV metrics logs with a header row (pandas, Lightning's CSVLogger, hand-written loggers), read incrementally
 * as RFC 4180: quoted fields may hold commas, doubled quotes and newlines; CRLF or LF line ends.
 *
 * - Each column except the x and time columns is a metric. x is the user's pick (RunMetrics.xPick), else the first
 *   of X_KEYS, else of FALLBACK_X_KEYS (`epoch` for Keras' CSVLogger, `time/total_timesteps` for
 *   Stable-Baselines3's progress.csv), by header name; without one, x is the line number. Time is from TIME_KEYS.
 * - Empty cells are skipped silently (loggers leave cells empty for metrics not logged at that step).
 * - A row with a different number of fields than the header is skipped and counted; a row repeating the header
 *   (a resumed run appending to the same file writes it again) is skipped silently; a value that is not a
 *   number follows judgeValue (`nan`, `inf` counted; text in a never-numeric column ignored).
 * - Columns with an empty name (pandas' index column) are not metrics.
 *
 * The state machine runs over bytes: every delimiter is ASCII, which never occurs inside a UTF-8 sequence, so
 * byte offsets stay exact and a chunk may end anywhere.
 */
import type { MetricsParser } from './parser';
import type { RunMetrics } from '../series/series';
import { FALLBACK_X_KEYS, X_KEYS, TIME_KEYS, excerpt, isAxisKey, judgeValue, parseDecimal, stepProblem, toTimeMs } from './fields';
import { MAX_LINE_BYTES } from './lines';

const enum State {
  FieldStart,
  Unquoted,
  Quoted,
  AfterQuote,
}

const COMMA = 0x2c;
const QUOTE = 0x22;
const NL = 0x0a;
const CR = 0x0d;

export class CsvParser implements MetricsParser {
  readonly format = 'csv' as const;
  private readonly decoder = new TextDecoder('utf-8');
  private state = State.FieldStart;
  private field = new Uint8Array(256);
  private fieldLength = 0;
  /** The field was quoted: its trailing `\r` is data, not a line end. */
  private fieldQuoted = false;
  private fields: string[] = [];
  private offset = 0;
  private recordStart = 0;
  private recordLine = 1;
  private lineNo = 1;
  private dropping = false;

  private header: string[] | undefined;
  private xCol = -1;
  private timeCol = -1;
  /** Columns that are not metrics: every x or time candidate, and unnamed columns. */
  private notMetric: boolean[] = [];
  private lastX: number | undefined;

  constructor(readonly metrics: RunMetrics) {}

  get pendingBytes(): number {
    return this.offset - this.recordStart;
  }

  push(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i];
      this.offset++;
      switch (this.state) {
        case State.FieldStart:
          if (b === QUOTE) {
            this.state = State.Quoted;
            this.fieldQuoted = true;
          } else if (b === COMMA) this.endField();
          else if (b === NL) this.endRecord(false);
          else {
            this.append(b);
            this.state = State.Unquoted;
          }
          break;
        case State.Unquoted:
          if (b === COMMA) this.endField();
          else if (b === NL) this.endRecord(false);
          else this.append(b);
          break;
        case State.Quoted:
          if (b === QUOTE) this.state = State.AfterQuote;
          else {
            if (b === NL) this.lineNo++;
            this.append(b);
          }
          break;
        case State.AfterQuote:
          if (b === QUOTE) {
            this.append(QUOTE);
            this.state = State.Quoted;
          } else if (b === COMMA) this.endField();
          else if (b === NL) this.endRecord(false);
          else if (b !== CR) {
            // `"a"b` is not RFC 4180; keep the text rather than lose the row.
            this.append(b);
            this.state = State.Unquoted;
          }
          break;
      }
    }
  }

  end(): void {
    const open = this.fields.length > 0 || this.fieldLength > 0 || this.state !== State.FieldStart;
    // An open quote at the end is a record cut off mid-write.
    if (open && this.state !== State.Quoted) this.endRecord(true);
    this.state = State.FieldStart;
  }

  private append(b: number): void {
    if (this.dropping) return;
    if (this.fieldLength === this.field.length) {
      if (this.offset - this.recordStart > MAX_LINE_BYTES) {
        this.dropping = true;
        return;
      }
      const grown = new Uint8Array(this.field.length * 2);
      grown.set(this.field);
      this.field = grown;
    }
    this.field[this.fieldLength++] = b;
  }

  private endField(): void {
    let n = this.fieldLength;
    if (!this.fieldQuoted && n > 0 && this.field[n - 1] === CR) n--;
    let bytes = this.field.subarray(0, n);
    if (this.recordStart === 0 && this.fields.length === 0 && n >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
      bytes = bytes.subarray(3);
    }
    this.fields.push(this.decoder.decode(bytes));
    this.fieldLength = 0;
    this.fieldQuoted = false;
    this.state = State.FieldStart;
  }

  private endRecord(unterminated: boolean): void {
    this.endField();
    const fields = this.fields;
    const line = this.recordLine;
    const byteOffset = this.recordStart;
    const dropped = this.dropping;
    this.fields = [];
    this.dropping = false;
    this.lineNo++;
    this.recordLine = this.lineNo;
    this.recordStart = this.offset;
    if (dropped) {
      this.metrics.noteBadLine({ line, byteOffset, excerpt: '', reason: 'line too long' });
      return;
    }
    if (fields.length === 1 && fields[0].trim() === '') return;
    this.record(fields, line, byteOffset, unterminated);
  }

  private record(fields: string[], line: number, byteOffset: number, unterminated: boolean): void {
    const header = this.header;
    if (!header) {
      this.setHeader(fields);
      return;
    }
    const extra = fields.slice(header.length);
    if (fields.length < header.length || extra.some((f) => f.trim() !== '')) {
      // A short last row without its newline is still being written.
      if (!unterminated) {
        this.metrics.noteBadLine({
          line,
          byteOffset,
          excerpt: excerpt(fields.join(',')),
          reason: `${fields.length} fields where the header has ${header.length}`,
        });
      }
      return;
    }
    if (fields.every((f, i) => i >= header.length || f.trim() === header[i])) return;
    let x: number | undefined;
    if (this.xCol >= 0) {
      const cell = fields[this.xCol];
      const v = parseDecimal(cell);
      const bad = stepProblem(v ?? cell);
      if (bad !== undefined) {
        this.metrics.noteBadLine({ line, byteOffset, excerpt: excerpt(fields.join(',')), reason: `${header[this.xCol]} ${bad}` });
        return;
      }
      if (v !== undefined) x = v;
    }
    this.metrics.records++;
    if (x !== undefined) {
      this.lastX = x;
      this.metrics.noteX(header[this.xCol]);
    } else {
      x = this.lastX ?? line;
      this.metrics.xMissing++;
    }
    const t = this.timeCol >= 0 ? toTimeMs(fields[this.timeCol]) : NaN;
    for (let i = 0; i < header.length; i++) {
      const key = header[i];
      if (this.notMetric[i]) continue;
      const cell = fields[i];
      if (cell.trim() === '') continue;
      const verdict = judgeValue(this.metrics, key, cell, true);
      if (verdict.kind === 'number') this.metrics.add(key, x, verdict.value, t);
      else if (verdict.kind === 'bad') {
        this.metrics.noteBadValue({ line, byteOffset, excerpt: excerpt(fields.join(',')), reason: verdict.reason, key });
      }
    }
  }

  private setHeader(fields: string[]): void {
    this.header = fields.map((f) => f.trim());
    const lower = this.header.map((h) => h.toLowerCase());
    // The user's pick alone; else a step-like column; else a fallback one (`epoch`, SB3's `time/total_timesteps`).
    const pick = this.metrics.xPick;
    this.xCol = pick !== undefined ? this.header.indexOf(pick) : firstIndex(lower, X_KEYS);
    if (pick === undefined && this.xCol < 0) this.xCol = firstIndex(lower, FALLBACK_X_KEYS);
    this.timeCol = firstIndex(lower, TIME_KEYS);
    this.notMetric = lower.map((h, i) => h === '' || isAxisKey(h) || i === this.xCol);
  }
}

function firstIndex(names: string[], candidates: readonly string[]): number {
  for (const c of candidates) {
    const i = names.indexOf(c);
    if (i >= 0) return i;
  }
  return -1;
}
