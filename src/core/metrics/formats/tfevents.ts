/**
 * TensorBoard `events.out.tfevents.*` files, read incrementally. TFRecord framing per record:
 *   uint64 length (LE) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
 * Each record's data is one `Event` protobuf; every scalar value becomes a point at the event's step and
 * wall time, under its tag.
 *
 * - A record whose data CRC does not match is skipped and counted (its length was verified, so framing holds).
 * - A length whose CRC does not match means framing is lost: counted once, then the reader slides forward a
 *   byte at a time until a header verifies again.
 * - A record that is not complete yet is held back: the writer may still be appending to it.
 * - Values whose tag's metadata names another plugin than `scalars` (histograms, text, hparams…) are left out.
 *   TF2 writes metadata only with a tag's first value, so the verdict is remembered per tag.
 */
import { crc32c, maskCrc } from './crc32c';
import type { MetricsParser } from './parser';
import type { RunMetrics } from '../series/series';
import { decodeEvent } from './tfEvent';

const HEADER = 12;
const FOOTER = 4;
/** A larger length is taken as corrupt framing (graph defs and images are big, but not this big). */
const MAX_RECORD = 256 * 1024 * 1024;

export class TfEventsParser implements MetricsParser {
  readonly format = 'tfevents' as const;
  private buf = new Uint8Array(64 * 1024);
  private start = 0;
  private stop = 0;
  /** File offset of buf[start]. */
  private fileOffset = 0;
  private recordNo = 0;
  private resyncing = false;
  private readonly tagIsScalar = new Map<string, boolean>();

  constructor(readonly metrics: RunMetrics) {}

  get pendingBytes(): number {
    return this.stop - this.start;
  }

  push(chunk: Uint8Array): void {
    this.append(chunk);
    this.drain();
  }

  /** A partial last record is dropped: it was cut off mid-write, not corrupt. */
  end(): void {
    this.fileOffset += this.stop - this.start;
    this.start = this.stop = 0;
  }

  private append(chunk: Uint8Array): void {
    const held = this.stop - this.start;
    if (this.stop + chunk.length > this.buf.length) {
      const target = held + chunk.length;
      if (target > this.buf.length) {
        let cap = this.buf.length;
        while (cap < target) cap *= 2;
        const grown = new Uint8Array(cap);
        grown.set(this.buf.subarray(this.start, this.stop));
        this.buf = grown;
      } else {
        this.buf.copyWithin(0, this.start, this.stop);
      }
      this.start = 0;
      this.stop = held;
    }
    this.buf.set(chunk, this.stop);
    this.stop += chunk.length;
  }

  private consume(n: number): void {
    this.start += n;
    this.fileOffset += n;
    if (this.start === this.stop) this.start = this.stop = 0;
  }

  private drain(): void {
    const b = this.buf;
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    while (this.stop - this.start >= HEADER) {
      const s = this.start;
      const length = view.getUint32(s, true) + view.getUint32(s + 4, true) * 2 ** 32;
      const lengthOk = view.getUint32(s + 8, true) === maskCrc(crc32c(b, s, s + 8)) && length <= MAX_RECORD;
      if (!lengthOk) {
        if (!this.resyncing) {
          this.resyncing = true;
          this.recordNo++;
          this.metrics.noteBadLine({
            line: this.recordNo,
            byteOffset: this.fileOffset,
            excerpt: hex(b.subarray(s, s + HEADER)),
            reason: 'length CRC mismatch (skipping to the next valid record)',
          });
        }
        this.consume(1);
        continue;
      }
      const total = HEADER + length + FOOTER;
      if (this.stop - s < total) return;
      this.recordNo++;
      this.resyncing = false;
      const dataStart = s + HEADER;
      const dataEnd = dataStart + length;
      const offset = this.fileOffset;
      if (view.getUint32(dataEnd, true) !== maskCrc(crc32c(b, dataStart, dataEnd))) {
        this.metrics.noteBadLine({
          line: this.recordNo,
          byteOffset: offset,
          excerpt: hex(b.subarray(dataStart, Math.min(dataEnd, dataStart + 16))),
          reason: 'data CRC mismatch',
        });
      } else {
        this.record(b.subarray(dataStart, dataEnd), offset);
      }
      this.consume(total);
    }
  }

  private record(data: Uint8Array, byteOffset: number): void {
    let event;
    try {
      event = decodeEvent(data);
    } catch (e) {
      this.metrics.noteBadLine({
        line: this.recordNo,
        byteOffset,
        excerpt: hex(data.subarray(0, 16)),
        reason: `not an Event protobuf (${(e as Error).message})`,
      });
      return;
    }
    this.metrics.records++;
    if (event.scalars.length > 0) this.metrics.noteX('step');
    for (const o of event.otherTags) this.remember(o.tag, o.plugin, o.dataClass);
    const t = event.wallTime * 1000;
    for (const v of event.scalars) {
      this.remember(v.tag, v.plugin, v.dataClass);
      if (this.tagIsScalar.get(v.tag) === false) continue;
      if (!Number.isFinite(v.value)) {
        this.metrics.noteBadValue({ line: this.recordNo, byteOffset, excerpt: '', reason: 'non-finite value', key: v.tag });
        continue;
      }
      this.metrics.add(v.tag, event.step, v.value, t);
    }
  }

  private remember(tag: string, plugin: string | undefined, dataClass: number | undefined): void {
    if (plugin === undefined && dataClass === undefined) return;
    this.tagIsScalar.set(tag, dataClass === 1 || plugin === 'scalars' || (plugin === '' && dataClass === undefined));
  }
}

function hex(bytes: Uint8Array): string {
  return [...bytes].map((x) => x.toString(16).padStart(2, '0')).join(' ');
}
