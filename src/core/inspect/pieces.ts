/**
 * The parts of a file that were read (its head, its tail, a range asked for later), and the file's size. Readers ask
 * for a byte range; a range not wholly inside what was read is `need-more` with the range, which the caller reads
 * and adds; a range past the file's end is `truncated`.
 */
import { InspectError } from './errors';

export interface Piece {
  offset: number;
  data: Uint8Array;
}

export class Pieces {
  readonly pieces: Piece[];
  constructor(
    /** The file's size as stat saw it. */
    readonly size: number,
    pieces: Piece[],
  ) {
    this.pieces = [...pieces].sort((a, b) => a.offset - b.offset);
  }

  static whole(data: Uint8Array): Pieces {
    return new Pieces(data.length, [{ offset: 0, data }]);
  }

  with(piece: Piece): Pieces {
    return new Pieces(this.size, [...this.pieces, piece]);
  }

  /** Bytes [from, to) of the file. */
  range(from: number, to: number, what: string): Uint8Array {
    if (!(from >= 0 && to >= from && Number.isSafeInteger(to))) throw new InspectError('bad-format', `${what}: impossible range ${from}..${to}`);
    if (to > this.size) throw new InspectError('truncated', `${what} ends at byte ${to}, past the file's end (${this.size} bytes)`);
    for (const p of this.pieces) {
      if (p.offset <= from && to <= p.offset + p.data.length) return p.data.subarray(from - p.offset, to - p.offset);
    }
    // Two pieces that touch or overlap may cover it together.
    const parts: Uint8Array[] = [];
    let at = from;
    for (const p of this.pieces) {
      if (at >= to) break;
      const end = p.offset + p.data.length;
      if (p.offset <= at && end > at) {
        const take = Math.min(end, to);
        parts.push(p.data.subarray(at - p.offset, take - p.offset));
        at = take;
      }
    }
    if (at >= to) return Buffer.concat(parts);
    throw new InspectError('need-more', `${what} (bytes ${from}..${to}) is not inside what was read`, { from, to });
  }

  /** Where the bytes read without a gap from `from` end (`from` itself when it was not read). */
  contiguousEnd(from: number): number {
    let at = from;
    for (const p of this.pieces) if (p.offset <= at && p.offset + p.data.length > at) at = p.offset + p.data.length;
    return at;
  }

  /** The bytes read that end where the file ends (its tail), with their offset. */
  tail(): Piece | undefined {
    return this.pieces.find((p) => p.offset + p.data.length === this.size);
  }
}
