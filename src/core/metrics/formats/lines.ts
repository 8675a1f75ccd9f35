/**
 * Splits a byte stream into lines incrementally. A line is only handed on once its `\n` has arrived: the last,
 * half-written line of a log that is still being appended to stays pending until more bytes complete it.
 */

/** Lines longer than this are not metrics; they are dropped (and reported) instead of held in memory. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

export interface LineSink {
  /**
   * A complete line: `buf[start, end)`, without its `\n` (and without a trailing `\r`). `buf` may be the
   * caller's chunk (no copy): use it before returning.
   */
  line(buf: Uint8Array, start: number, end: number, lineNo: number, byteOffset: number): void;
  /** A line longer than MAX_LINE_BYTES was dropped. */
  tooLong(lineNo: number, byteOffset: number): void;
}

/**
 * Where a splitter is in its stream, to continue it elsewhere (another thread) or later: the lines handed on so far,
 * the byte offset where the line being assembled starts, and that line's bytes so far (none while dropping one
 * that is too long, whose `pendingLength` bytes are skipped).
 */
export interface SplitterState {
  lineNo: number;
  lineStart: number;
  pending: Uint8Array;
  pendingLength: number;
  dropping: boolean;
}

const NL = 0x0a;
const CR = 0x0d;

export class LineSplitter {
  private parts: Uint8Array[] = [];
  private pendingLength = 0;
  /** Byte offset of the start of the line being assembled. */
  private lineStart = 0;
  private lineNo = 0;
  /** Inside a too-long line: drop bytes until its end. */
  private dropping = false;

  /** `from`: continue a stream another splitter began (SplitterState); default its start. */
  constructor(
    private readonly sink: LineSink,
    from?: SplitterState,
  ) {
    if (!from) return;
    this.lineNo = from.lineNo;
    this.lineStart = from.lineStart;
    this.dropping = from.dropping;
    this.pendingLength = from.pendingLength;
    if (!from.dropping && from.pending.length > 0) this.parts.push(from.pending.slice());
  }

  /** Where this splitter is (a copy: the splitter can go on). */
  state(): SplitterState {
    const pending = this.dropping ? new Uint8Array(0) : this.take(true);
    return { lineNo: this.lineNo, lineStart: this.lineStart, pending, pendingLength: this.pendingLength, dropping: this.dropping };
  }

  /** Bytes of a partial last line held back. */
  get pendingBytes(): number {
    return this.pendingLength;
  }

  push(chunk: Uint8Array): void {
    let from = 0;
    while (from < chunk.length) {
      const nl = chunk.indexOf(NL, from);
      if (nl < 0) {
        this.hold(chunk.subarray(from));
        return;
      }
      if (this.pendingLength === 0 && !this.dropping && nl - from <= MAX_LINE_BYTES) {
        // The whole line is in this chunk: hand on its place in the chunk, without the copy `hold` makes or even
        // a view object (the sink uses it before push returns, so the caller reusing its buffer later cannot
        // touch it). Most lines take this path.
        this.lineNo++;
        const start = this.lineStart;
        this.lineStart += nl - from + 1;
        this.sink.line(chunk, from, nl > from && chunk[nl - 1] === CR ? nl - 1 : nl, this.lineNo, start);
      } else {
        this.hold(chunk.subarray(from, nl));
        this.finishLine();
      }
      from = nl + 1;
    }
  }

  /**
   * The stream is complete: returns the unterminated last line, if any, for the caller to try (a file whose
   * writer never wrote a final newline) or to ignore (a line cut off mid-write).
   */
  end(): { bytes: Uint8Array; lineNo: number; byteOffset: number } | undefined {
    if (this.pendingLength === 0 || this.dropping) return undefined;
    const bytes = this.take();
    return { bytes: stripCr(bytes), lineNo: this.lineNo + 1, byteOffset: this.lineStart };
  }

  private hold(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    if (this.dropping) {
      this.pendingLength += bytes.length;
      return;
    }
    // Copied: the caller may reuse its chunk buffer.
    this.parts.push(bytes.slice());
    this.pendingLength += bytes.length;
    if (this.pendingLength > MAX_LINE_BYTES) {
      this.dropping = true;
      this.parts = [];
    }
  }

  private finishLine(): void {
    this.lineNo++;
    const start = this.lineStart;
    if (this.dropping) {
      this.lineStart += this.pendingLength + 1;
      this.pendingLength = 0;
      this.dropping = false;
      this.sink.tooLong(this.lineNo, start);
      return;
    }
    const bytes = this.take();
    this.lineStart += bytes.length + 1;
    const line = stripCr(bytes);
    this.sink.line(line, 0, line.length, this.lineNo, start);
  }

  /** The held bytes as one array; `keep`: leave them held (a copy for state()). */
  private take(keep = false): Uint8Array {
    const parts = this.parts;
    const length = this.pendingLength;
    if (keep) return joined(parts, length);
    this.parts = [];
    this.pendingLength = 0;
    return parts.length === 1 ? parts[0] : joined(parts, length);
  }
}

function stripCr(bytes: Uint8Array): Uint8Array {
  return bytes.length > 0 && bytes[bytes.length - 1] === CR ? bytes.subarray(0, bytes.length - 1) : bytes;
}

/** Strip a UTF-8 byte order mark at the very start of a file (Excel writes one). */
export function stripBom(bytes: Uint8Array, byteOffset: number): Uint8Array {
  return byteOffset === 0 && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf
    ? bytes.subarray(3)
    : bytes;
}

/** The parts copied into one new array of `length` bytes. */
function joined(parts: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
