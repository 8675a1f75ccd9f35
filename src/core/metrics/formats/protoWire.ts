/**
 * A minimal protobuf wire-format reader: enough to walk TensorBoard's Event → Summary → Value → TensorProto and
 * skip everything else. A hand-written reader of ~100 lines beats a protobufjs dependency plus .proto files
 * here: we read five message types, a dozen fields, and never write.
 */

export const enum Wire {
  Varint = 0,
  Fixed64 = 1,
  Bytes = 2,
  Fixed32 = 5,
}

export class ProtoError extends Error {}

export class WireReader {
  private pos: number;
  private readonly view: DataView;

  constructor(
    private readonly bytes: Uint8Array,
    start = 0,
    private readonly end = bytes.length,
  ) {
    this.pos = start;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** Next field: number and wire type. */
  tag(): { field: number; wire: number } {
    const t = this.varint();
    const field = Math.floor(t / 8);
    if (field === 0) throw new ProtoError('field number 0');
    return { field, wire: t % 8 };
  }

  /** An unsigned varint as a number (exact up to 2^53). */
  varint(): number {
    const v = this.varintRaw();
    return typeof v === 'number' ? v : Number(v);
  }

  /** A varint read as a two's-complement int64 (negative int32/int64 values are sign-extended to 10 bytes). */
  int64(): number {
    const v = this.varintRaw();
    return typeof v === 'number' ? v : Number(BigInt.asIntN(64, v));
  }

  /**
   * Up to 7 bytes (49 bits) are summed exactly as a float; longer varints (huge or negative values) switch to
   * BigInt so the sign bit is not lost to rounding.
   */
  private varintRaw(): number | bigint {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError('truncated varint');
      const b = this.bytes[this.pos++];
      if (i === 7) return this.varintTail(BigInt(value), b, i);
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    throw new ProtoError('varint longer than 10 bytes');
  }

  private varintTail(value: bigint, b: number, i: number): bigint {
    for (;;) {
      value |= BigInt(b & 0x7f) << BigInt(7 * i);
      if (b < 0x80) return BigInt.asUintN(64, value);
      if (++i >= 10) throw new ProtoError('varint longer than 10 bytes');
      if (this.pos >= this.end) throw new ProtoError('truncated varint');
      b = this.bytes[this.pos++];
    }
  }

  double(): number {
    this.need(8);
    const v = this.view.getFloat64(this.pos, true);
    this.pos += 8;
    return v;
  }

  float(): number {
    this.need(4);
    const v = this.view.getFloat32(this.pos, true);
    this.pos += 4;
    return v;
  }

  fixed32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  /** A length-delimited field as [start, end) in the underlying bytes (no copy). */
  span(): [number, number] {
    const n = this.varint();
    this.need(n);
    const start = this.pos;
    this.pos += n;
    return [start, this.pos];
  }

  /** A length-delimited field's bytes (a view, no copy). */
  bytesField(): Uint8Array {
    const [s, e] = this.span();
    return this.bytes.subarray(s, e);
  }

  string(): string {
    const [s, e] = this.span();
    return new TextDecoder('utf-8').decode(this.bytes.subarray(s, e));
  }

  skip(wire: number): void {
    switch (wire) {
      case Wire.Varint:
        this.varint();
        return;
      case Wire.Fixed64:
        this.need(8);
        this.pos += 8;
        return;
      case Wire.Bytes:
        this.span();
        return;
      case Wire.Fixed32:
        this.need(4);
        this.pos += 4;
        return;
      default:
        throw new ProtoError(`unsupported wire type ${wire}`);
    }
  }

  /** A reader over a nested message. */
  sub(): WireReader {
    const [s, e] = this.span();
    return new WireReader(this.bytes, s, e);
  }

  private need(n: number): void {
    if (this.pos + n > this.end) throw new ProtoError('truncated field');
  }
}
