/**
 * Which byte ranges of a file are already on disk. Parallel lanes write out of order, so a partial file is a set
 * of intervals, not a prefix; the sidecar stores it so a resume fetches exactly the holes.
 */

/** Half-open byte interval [start, end). */
export type ByteRange = readonly [start: number, end: number];

/** A set of disjoint, sorted, non-touching intervals. */
export class RangeSet {
  private items: [number, number][] = [];

  constructor(ranges: readonly ByteRange[] = []) {
    for (const [s, e] of ranges) this.add(s, e);
  }

  /** Mark [start, end) as present, merging with neighbours. */
  add(start: number, end: number): void {
    if (!(end > start)) return;
    const out: [number, number][] = [];
    let s = start;
    let e = end;
    let placed = false;
    for (const [a, b] of this.items) {
      if (b < s) out.push([a, b]);
      else if (a > e) {
        if (!placed) {
          out.push([s, e]);
          placed = true;
        }
        out.push([a, b]);
      } else {
        s = Math.min(s, a);
        e = Math.max(e, b);
      }
    }
    if (!placed) out.push([s, e]);
    // Exactly as long as it is: an array grown by push reserves 17 slots, and a download holds one set per file.
    this.items = out.slice();
  }

  /** Mark [start, end) as absent. */
  remove(start: number, end: number): void {
    if (!(end > start)) return;
    const out: [number, number][] = [];
    for (const [a, b] of this.items) {
      if (b <= start || a >= end) out.push([a, b]);
      else {
        if (a < start) out.push([a, start]);
        if (b > end) out.push([end, b]);
      }
    }
    this.items = out;
  }

  /** True when [start, end) is covered. */
  contains(start: number, end: number): boolean {
    if (!(end > start)) return true;
    return this.items.some(([a, b]) => a <= start && b >= end);
  }

  /** Bytes covered. */
  get total(): number {
    return this.items.reduce((n, [a, b]) => n + (b - a), 0);
  }

  /** True when [0, size) is covered. */
  covers(size: number): boolean {
    if (size === 0) return true;
    // Sorted and disjoint: the first interval alone must span [0, size).
    return this.items.length > 0 && this.items[0][0] <= 0 && this.items[0][1] >= size;
  }

  /** The holes of [0, size), in order. */
  missing(size: number): ByteRange[] {
    const holes: ByteRange[] = [];
    let pos = 0;
    for (const [a, b] of this.items) {
      if (a >= size) break;
      if (a > pos) holes.push([pos, a]);
      pos = Math.max(pos, b);
    }
    if (pos < size) holes.push([pos, size]);
    return holes;
  }

  /** A copy of the intervals (for the sidecar). */
  toJSON(): ByteRange[] {
    return this.items.map(([a, b]) => [a, b] as const);
  }
}

/** Cut ranges into pieces of at most `max` bytes (work units for lanes). */
export function splitRanges(ranges: readonly ByteRange[], max: number): ByteRange[] {
  const out: ByteRange[] = [];
  for (const [s, e] of ranges) {
    for (let p = s; p < e; p += max) out.push([p, Math.min(e, p + max)]);
  }
  return out;
}
