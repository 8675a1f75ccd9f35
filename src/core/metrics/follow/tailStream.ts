/**
 * A long backlog read as ONE stream instead of 8 MiB replies: the same tail read (TAIL_SCRIPT, the same checks of
 * inode and head, the same status line) asked for the whole rest of the file, its output taken as it arrives.
 * Through an OpenSSH connection (transfer/bulkLinks.ts) the bytes are decrypted by `ssh` in its own process, not
 * by ssh2 in JavaScript on the extension host's thread; one stream also has no gap between replies.
 *
 * The reader here is pure: it is given the stream's pieces in order and hands out the status line once, then the
 * file's bytes in pieces of `piece` bytes (the last one shorter), never more than were asked for.
 */
import type { StreamEnd } from '../../transfer/stream';
import { RemoteRunsError } from '../../types';
import { TAIL_MARKER, parseTailOutput, type TailReadResult, type TailRequest, type TailStat } from './tail';

/**
 * Run `argv` on the run's target as one stream, each stdout piece given to `sink` in order; a sink that returns a
 * promise pauses the stream until it settles (a rejection stops it). Resolves with how it ended, or `undefined` when
 * no stream could be had (nothing was run: the caller reads as before). A stop (`signal`) kills the stream.
 */
export type StreamRunner = ((argv: readonly string[], sink: (chunk: Buffer) => void | Promise<void>, signal: AbortSignal) => Promise<StreamEnd | undefined>) & {
  /**
   * Should a stream be asked for now? Asked after each read of a backlog: false lets the reads go on (and may start
   * what a later stream needs); true where it can start at once or soon (a login just begun, which the stream then
   * waits for); absent: always.
   */
  ready?(): boolean;
  /** Start now what a stream will need (a login) beside the reads: called when a log's first read is sent. */
  prepare?(): void;
};

/** The status line's part of a tail read (its data follows as pieces). */
export type TailStreamHeader = { status: 'ok'; stat: TailStat; from: number } | { status: Exclude<TailReadResult['status'], 'ok'> };

/** What may come before the status line (a login shell's noise, the marker): more than this is not a tail read. */
const MAX_HEADER_BYTES = 64 * 1024;

export class TailStreamReader {
  private pre: Buffer[] = [];
  private preBytes = 0;
  private header: TailStreamHeader | undefined;
  private buf: Uint8Array;
  private fill = 0;
  /** Data bytes handed out or buffered so far. */
  private taken = 0;

  constructor(
    private readonly request: TailRequest,
    private readonly describe: string,
    private readonly piece: number,
    private readonly onHeader: (h: TailStreamHeader) => void,
    private readonly onPiece: (data: Uint8Array) => void,
    /**
     * Storage for the next piece, `piece` bytes long (a buffer the parse thread gave back, say), or undefined for a
     * new one. Fresh memory is paid for at its first touch, a page fault per 4 KiB (~12 µs each, bench/metrics.ts).
     */
    private readonly storage: (bytes: number) => Uint8Array | undefined = () => undefined,
  ) {
    this.buf = this.fresh();
  }

  private fresh(): Uint8Array {
    const b = this.storage(this.piece);
    return b !== undefined && b.length === this.piece ? b : new Uint8Array(this.piece);
  }

  /** The status line, once it has arrived. */
  get status(): TailStreamHeader | undefined {
    return this.header;
  }

  /** Data bytes seen so far (handed out or waiting in the current piece). */
  get dataBytes(): number {
    return this.taken;
  }

  /** The next piece of the stream's stdout. Throws a `protocol` error on output that is not a tail read. */
  push(chunk: Buffer): void {
    if (!this.header) {
      this.pre.push(chunk);
      this.preBytes += chunk.length;
      const all = Buffer.concat(this.pre);
      this.pre = [all];
      const end = statusLineEnd(all);
      if (end < 0) {
        if (this.preBytes > MAX_HEADER_BYTES) {
          throw new RemoteRunsError('protocol', `${this.describe}: no status line in the first ${MAX_HEADER_BYTES} bytes of the stream`);
        }
        return;
      }
      const r = parseTailOutput({ stdout: all.subarray(0, end), stderr: Buffer.alloc(0), code: 0, truncated: false }, { ...this.request, compressAbove: 0 }, this.describe);
      this.header = r.status === 'ok' ? { status: 'ok', stat: r.stat, from: r.from } : { status: r.status };
      this.pre = [];
      this.onHeader(this.header);
      chunk = all.subarray(end);
      if (chunk.length === 0) return;
    }
    if (this.header.status !== 'ok') throw new RemoteRunsError('protocol', `${this.describe}: bytes after a ${this.header.status} status`);
    if (this.taken + chunk.length > this.request.maxBytes) {
      throw new RemoteRunsError('protocol', `${this.describe}: the stream sent more than the ${this.request.maxBytes} bytes asked for`);
    }
    this.taken += chunk.length;
    let at = 0;
    while (at < chunk.length) {
      const n = Math.min(this.piece - this.fill, chunk.length - at);
      this.buf.set(chunk.subarray(at, at + n), this.fill);
      this.fill += n;
      at += n;
      if (this.fill === this.piece) {
        const full = this.buf;
        this.fill = 0;
        this.onPiece(full);
        this.buf = this.fresh();
      }
    }
  }

  /** The stream ended: hand out the last, shorter piece. */
  end(): void {
    if (this.fill > 0) {
      const last = this.buf.slice(0, this.fill);
      this.fill = 0;
      this.onPiece(last);
    }
  }
}

/** The offset just after the tail read's status line (the marker, then one line), or -1 while it has not all come. */
function statusLineEnd(out: Buffer): number {
  const at = out.indexOf(TAIL_MARKER);
  if (at < 0) return -1;
  const nl = out.indexOf(0x0a, at + TAIL_MARKER.length);
  return nl < 0 ? -1 : nl + 1;
}
