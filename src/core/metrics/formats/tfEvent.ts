/**
 * Decoding of TensorBoard `Event` protobufs down to scalar values. Field numbers are from tensorflow's
 * event.proto, summary.proto, tensor.proto, tensor_shape.proto and types.proto:
 *   Event:           wall_time=1 (double), step=2 (int64), summary=5
 *   Summary:         value=1 (repeated)
 *   Summary.Value:   tag=1, simple_value=2 (float), tensor=8, metadata=9
 *   SummaryMetadata: plugin_data=1 {plugin_name=1}, data_class=4
 *   TensorProto:     dtype=1, tensor_shape=2 {dim=2 {size=1}}, tensor_content=4, float_val=5, double_val=6,
 *                    int_val=7, int64_val=10, bool_val=11, half_val=13, uint32_val=16, uint64_val=17
 * TF1 writes `simple_value`; TF2 and PyTorch's SummaryWriter (new_style) write a scalar `tensor` whose first
 * occurrence per tag carries metadata with plugin `scalars`.
 */
import { WireReader, Wire } from './protoWire';

export interface ScalarValue {
  tag: string;
  value: number;
  /** Plugin named by this value's metadata, when it has some (`scalars`, `histograms`, …). */
  plugin?: string;
  /** SummaryMetadata.data_class when given (1 = scalar). */
  dataClass?: number;
}

export interface DecodedEvent {
  /** Seconds since the epoch. */
  wallTime: number;
  step: number;
  /** Values that hold one number; histograms, images, text and non-scalar tensors are left out. */
  scalars: ScalarValue[];
  /** Tags of values with metadata but no scalar (so a tag's plugin is remembered even when it is not one). */
  otherTags: Array<{ tag: string; plugin?: string; dataClass?: number }>;
}

/** Decode one Event. Throws ProtoError on malformed bytes. */
export function decodeEvent(bytes: Uint8Array): DecodedEvent {
  const r = new WireReader(bytes);
  const out: DecodedEvent = { wallTime: NaN, step: 0, scalars: [], otherTags: [] };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === Wire.Fixed64) out.wallTime = r.double();
    else if (field === 2 && wire === Wire.Varint) out.step = r.int64();
    else if (field === 5 && wire === Wire.Bytes) decodeSummary(r.sub(), out);
    else r.skip(wire);
  }
  return out;
}

function decodeSummary(r: WireReader, out: DecodedEvent): void {
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === Wire.Bytes) decodeValue(r.sub(), out);
    else r.skip(wire);
  }
}

function decodeValue(r: WireReader, out: DecodedEvent): void {
  let tag = '';
  let simple: number | undefined;
  let tensor: number | undefined;
  let plugin: string | undefined;
  let dataClass: number | undefined;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === Wire.Bytes) tag = r.string();
    else if (field === 2 && wire === Wire.Fixed32) simple = r.float();
    else if (field === 8 && wire === Wire.Bytes) tensor = decodeScalarTensor(r.sub());
    else if (field === 9 && wire === Wire.Bytes) {
      const meta = decodeMetadata(r.sub());
      plugin = meta.plugin;
      dataClass = meta.dataClass;
    } else r.skip(wire);
  }
  const value = simple ?? tensor;
  if (value !== undefined) out.scalars.push({ tag, value, plugin, dataClass });
  else if (plugin !== undefined || dataClass !== undefined) out.otherTags.push({ tag, plugin, dataClass });
}

function decodeMetadata(r: WireReader): { plugin?: string; dataClass?: number } {
  const out: { plugin?: string; dataClass?: number } = {};
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === Wire.Bytes) {
      const p = r.sub();
      while (!p.done) {
        const t = p.tag();
        if (t.field === 1 && t.wire === Wire.Bytes) out.plugin = p.string();
        else p.skip(t.wire);
      }
    } else if (field === 4 && wire === Wire.Varint) out.dataClass = r.varint();
    else r.skip(wire);
  }
  return out;
}

/** tensorflow DataType values we can read a scalar of. */
export const enum DType {
  Float = 1,
  Double = 2,
  Int32 = 3,
  Uint8 = 4,
  Int16 = 5,
  Int8 = 6,
  Int64 = 9,
  Bool = 10,
  BFloat16 = 14,
  Uint16 = 17,
  Half = 19,
  Uint32 = 22,
  Uint64 = 23,
}

/** The single number a TensorProto holds, or undefined when it is not a numeric scalar. */
export function decodeScalarTensor(r: WireReader): number | undefined {
  let dtype = 0;
  let elements = 1;
  let content: Uint8Array | undefined;
  const vals: number[] = [];
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === Wire.Varint) dtype = r.varint();
    else if (field === 2 && wire === Wire.Bytes) elements = shapeElements(r.sub());
    else if (field === 4 && wire === Wire.Bytes) content = r.bytesField();
    else if (field === 5) readRepeated(r, wire, Wire.Fixed32, () => r.float(), vals);
    else if (field === 6) readRepeated(r, wire, Wire.Fixed64, () => r.double(), vals);
    else if (field === 7 || field === 10 || field === 13) readRepeated(r, wire, Wire.Varint, () => r.int64(), vals);
    else if (field === 11 || field === 16 || field === 17) readRepeated(r, wire, Wire.Varint, () => r.varint(), vals);
    else r.skip(wire);
  }
  if (elements !== 1) return undefined;
  if (content && content.length > 0) return fromContent(dtype, content);
  if (vals.length === 0) return undefined;
  const v = vals[0];
  switch (dtype) {
    case DType.Float:
    case DType.Double:
    case DType.Int32:
    case DType.Uint8:
    case DType.Int16:
    case DType.Int8:
    case DType.Int64:
    case DType.Uint16:
    case DType.Uint32:
    case DType.Uint64:
      return v;
    case DType.Bool:
      return v ? 1 : 0;
    case DType.Half:
      return halfToNumber(v & 0xffff);
    case DType.BFloat16:
      return bfloat16ToNumber(v & 0xffff);
    default:
      return undefined;
  }
}

/** A repeated scalar field, packed (one length-delimited run) or not (one value per tag). */
function readRepeated(r: WireReader, wire: number, unpackedWire: Wire, read: () => number, into: number[]): void {
  if (wire === Wire.Bytes) {
    const sub = r.sub();
    const readSub =
      unpackedWire === Wire.Fixed32 ? () => sub.float() : unpackedWire === Wire.Fixed64 ? () => sub.double() : () => sub.int64();
    while (!sub.done) into.push(readSub());
  } else if (wire === unpackedWire) into.push(read());
  else r.skip(wire);
}

function shapeElements(r: WireReader): number {
  let n = 1;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 2 && wire === Wire.Bytes) {
      const d = r.sub();
      let size = 0;
      while (!d.done) {
        const t = d.tag();
        if (t.field === 1 && t.wire === Wire.Varint) size = d.int64();
        else d.skip(t.wire);
      }
      n *= size;
    } else if (field === 3 && wire === Wire.Varint && r.varint() !== 0) return -1; // unknown_rank
    else r.skip(wire);
  }
  return n;
}

function fromContent(dtype: number, c: Uint8Array): number | undefined {
  const v = new DataView(c.buffer, c.byteOffset, c.byteLength);
  const need = (n: number) => c.length === n;
  switch (dtype) {
    case DType.Float:
      return need(4) ? v.getFloat32(0, true) : undefined;
    case DType.Double:
      return need(8) ? v.getFloat64(0, true) : undefined;
    case DType.Int32:
      return need(4) ? v.getInt32(0, true) : undefined;
    case DType.Uint32:
      return need(4) ? v.getUint32(0, true) : undefined;
    case DType.Int16:
      return need(2) ? v.getInt16(0, true) : undefined;
    case DType.Uint16:
      return need(2) ? v.getUint16(0, true) : undefined;
    case DType.Int8:
      return need(1) ? v.getInt8(0) : undefined;
    case DType.Uint8:
      return need(1) ? v.getUint8(0) : undefined;
    case DType.Bool:
      return need(1) ? (v.getUint8(0) ? 1 : 0) : undefined;
    case DType.Int64:
      return need(8) ? Number(v.getBigInt64(0, true)) : undefined;
    case DType.Uint64:
      return need(8) ? Number(v.getBigUint64(0, true)) : undefined;
    case DType.Half:
      return need(2) ? halfToNumber(v.getUint16(0, true)) : undefined;
    case DType.BFloat16:
      return need(2) ? bfloat16ToNumber(v.getUint16(0, true)) : undefined;
    default:
      return undefined;
  }
}

/** IEEE 754 binary16 bits to a number. */
export function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** bfloat16 bits (the top half of a float32) to a number. */
export function bfloat16ToNumber(bits: number): number {
  const v = new DataView(new ArrayBuffer(4));
  v.setUint32(0, bits << 16, false);
  return v.getFloat32(0, false);
}
