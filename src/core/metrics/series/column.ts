/**
 * A growable column of float64 values. Metric logs of a million steps or more are common; one object per point
 * (`{x, y}` ≈ 40–60 bytes plus a pointer in an array) would cost several times the 8 bytes per value here.
 */

/** Grow by doubling while small, by half as much again once large, so the slack stays bounded. */
function nextCapacity(capacity: number): number {
  return capacity < 1 << 20 ? capacity * 2 : Math.ceil(capacity * 1.5);
}

/** The column over any typed array type: one implementation, the array type chosen by `make`. */
export class TypedColumn<A extends Float64Array | Float32Array | Int32Array | Uint8Array> {
  private buf: A;
  private len = 0;

  constructor(
    private readonly make: (length: number) => A,
    initialCapacity = 64,
  ) {
    this.buf = make(Math.max(1, initialCapacity));
  }

  get length(): number {
    return this.len;
  }

  /** Bytes allocated (capacity), not just used. */
  get byteLength(): number {
    return this.buf.byteLength;
  }

  /**
   * The values as a view over the column's storage: no copy. A later `push` may reallocate, after which an
   * old view no longer sees new values (it stays valid for the values it had).
   */
  get values(): A {
    return this.buf.subarray(0, this.len) as A;
  }

  push(value: number): void {
    if (this.len === this.buf.length) {
      const grown = this.make(nextCapacity(this.buf.length));
      grown.set(this.buf);
      this.buf = grown;
    }
    this.buf[this.len++] = value;
  }

  /**
   * Lengthen the column to `length` (no-op when already that long) and return its storage, so a caller that
   * computes many values at once writes them straight in instead of pushing one by one. The caller writes every new
   * place: they hold zeros in new storage, but old values in storage a `handOff` reused. The returned array is valid
   * until the next push or resize.
   */
  resize(length: number): A {
    if (length > this.buf.length) {
      const grown = this.make(Math.max(length, nextCapacity(this.buf.length)));
      grown.set(this.buf.subarray(0, this.len));
      this.buf = grown;
    }
    if (length > this.len) this.len = length;
    return this.buf;
  }

  /** Append `count` copies of `value` (used to backfill a column created after its first rows). */
  fill(value: number, count: number): void {
    for (let i = 0; i < count; i++) this.push(value);
  }

  at(index: number): number {
    return index >= 0 && index < this.len ? this.buf[index] : NaN;
  }

  clear(): void {
    this.len = 0;
    this.buf = this.make(64);
  }

  /**
   * The values, as a view from the start of the column's own storage (its ArrayBuffer can be transferred to another
   * thread), and the column emptied onto `next` when that holds as many values (storage handed back after such a
   * transfer), else onto new storage a quarter bigger than what was handed off. Handed off again and again with its
   * storage given back, a column allocates nothing: new memory costs a page fault per 4 KiB at its first touch.
   * (New storage is sized by the values, not the capacity: one large batch does not make every later one large.)
   */
  handOff(next?: A): A {
    const out = this.buf.subarray(0, this.len) as A;
    this.buf = next !== undefined && next.length >= this.len ? next : this.make(Math.max(64, this.len + (this.len >>> 2)));
    this.len = 0;
    return out;
  }
}
