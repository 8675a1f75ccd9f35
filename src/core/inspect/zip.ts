/**
 * The parts of a zip archive a torch checkpoint needs: the end-of-central-directory record (and its zip64 form,
 * which torch writes for archives over 4 GiB), the central directory, and one entry's data range. Layout from
 * PKWARE's APPNOTE.TXT (4.3.12 central header, 4.3.14–4.3.16 zip64 end records, 4.5.3 zip64 extra field).
 * torch's PyTorchStreamWriter (caffe2/serialize/inline_container.cc) stores every entry uncompressed and writes the
 * pickle (`<archive>/data.pkl`) first, the storages (`<archive>/data/<key>`) after it, the central directory last.
 */
import { InspectError } from './errors';
import type { Pieces } from './pieces';

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflate, … */
  method: number;
  compressedSize: number;
  size: number;
  localOffset: number;
}

export interface ZipDirectory {
  cdOffset: number;
  cdSize: number;
  count: number;
  zip64: boolean;
}

const EOCD = 0x06054b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP64_EOCD = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

function dv(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

function u64(view: DataView, at: number, what: string): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new InspectError('absurd-length', `${what} is ${v}, beyond any real file`);
  return Number(v);
}

/**
 * The end record, searched for in the bytes read at the file's end. Undefined when it is not there: an archive
 * still being written (or cut short) has none, since the central directory and the end record are written last.
 */
export function findEndRecord(src: Pieces): ZipDirectory | undefined {
  const tail = src.tail();
  if (!tail) throw new InspectError('need-more', 'the end of the archive was not read', { from: Math.max(0, src.size - 65_557), to: src.size });
  const b = tail.data;
  const view = dv(b);
  // The record is 22 bytes plus a comment of at most 65535; search from the end.
  for (let i = b.length - 22; i >= 0 && i >= b.length - 65_557; i--) {
    if (view.getUint32(i, true) !== EOCD) continue;
    const commentLength = view.getUint16(i + 20, true);
    if (i + 22 + commentLength !== b.length) continue; // a signature inside data, not the record
    let count = view.getUint16(i + 10, true);
    let cdSize = view.getUint32(i + 12, true);
    let cdOffset = view.getUint32(i + 16, true);
    let zip64 = false;
    if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
      const locAt = tail.offset + i - 20;
      const loc = dv(src.range(locAt, locAt + 20, 'zip64 end locator'));
      if (loc.getUint32(0, true) !== ZIP64_LOCATOR) throw new InspectError('bad-format', 'a zip64 archive without its zip64 end locator');
      const at = u64(loc, 8, 'zip64 end record offset');
      const rec = dv(src.range(at, at + 56, 'zip64 end record'));
      if (rec.getUint32(0, true) !== ZIP64_EOCD) throw new InspectError('bad-format', 'the zip64 end locator points at no zip64 end record');
      count = u64(rec, 32, 'zip64 entry count');
      cdSize = u64(rec, 40, 'zip64 central directory size');
      cdOffset = u64(rec, 48, 'zip64 central directory offset');
      zip64 = true;
    }
    if (cdOffset + cdSize > src.size) throw new InspectError('truncated', `the central directory (${cdOffset}+${cdSize}) ends past the file's end (${src.size})`);
    return { cdOffset, cdSize, count, zip64 };
  }
  return undefined;
}

/** The central directory's entries. Bounded by its size: at most one entry per 46 bytes. */
export function readCentralDirectory(src: Pieces, dir: ZipDirectory): ZipEntry[] {
  const b = src.range(dir.cdOffset, dir.cdOffset + dir.cdSize, 'the central directory');
  const view = dv(b);
  const entries: ZipEntry[] = [];
  let p = 0;
  while (p + 46 <= b.length && entries.length < dir.count) {
    if (view.getUint32(p, true) !== CENTRAL) throw new InspectError('bad-format', `no central directory header at byte ${dir.cdOffset + p}`);
    const method = view.getUint16(p + 10, true);
    let compressedSize = view.getUint32(p + 20, true);
    let size = view.getUint32(p + 24, true);
    const nameLength = view.getUint16(p + 28, true);
    const extraLength = view.getUint16(p + 30, true);
    const commentLength = view.getUint16(p + 32, true);
    let localOffset = view.getUint32(p + 42, true);
    const end = p + 46 + nameLength + extraLength + commentLength;
    if (end > b.length) throw new InspectError('truncated', 'the central directory ends inside an entry');
    const name = Buffer.from(b.buffer, b.byteOffset + p + 46, nameLength).toString('utf8');
    // zip64 extra: the 8-byte values, in this order, of the fields that are 0xFFFFFFFF above.
    let e = p + 46 + nameLength;
    const extraEnd = e + extraLength;
    while (e + 4 <= extraEnd) {
      const id = view.getUint16(e, true);
      const len = view.getUint16(e + 2, true);
      if (e + 4 + len > extraEnd) break;
      if (id === 0x0001) {
        let q = e + 4;
        const take = (): number => {
          if (q + 8 > e + 4 + len) throw new InspectError('bad-format', `a short zip64 extra field in ${name}`);
          const v = u64(view, q, `a zip64 size of ${name}`);
          q += 8;
          return v;
        };
        if (size === 0xffffffff) size = take();
        if (compressedSize === 0xffffffff) compressedSize = take();
        if (localOffset === 0xffffffff) localOffset = take();
      }
      e += 4 + len;
    }
    entries.push({ name, method, compressedSize, size, localOffset });
    p = end;
  }
  if (entries.length < dir.count) throw new InspectError('truncated', `the central directory lists ${entries.length} of the ${dir.count} entries its end record counts`);
  return entries;
}

/** Where an entry's data lies (after its local header, whose name and extra lengths may differ from the central one). */
export function entryDataRange(src: Pieces, entry: ZipEntry): { from: number; to: number } {
  const h = dv(src.range(entry.localOffset, entry.localOffset + 30, `the local header of ${entry.name}`));
  if (h.getUint32(0, true) !== LOCAL) throw new InspectError('bad-format', `no local header for ${entry.name} at byte ${entry.localOffset}`);
  const from = entry.localOffset + 30 + h.getUint16(26, true) + h.getUint16(28, true);
  return { from, to: from + entry.compressedSize };
}

/**
 * The first entry's name and where its data starts, from its local header alone (no central directory): torch writes
 * data.pkl first, so an archive still being written (no end record yet) can still say what it holds. `to` is
 * undefined when the header carries no sizes: torch's streaming writer sets flag bit 3 and writes the sizes in a data
 * descriptor after the data (a pickle ends itself at STOP, so it can be read without them).
 */
export function firstLocalEntry(src: Pieces): { name: string; from: number; to: number | undefined; method: number } | undefined {
  const h = dv(src.range(0, 30, 'the first local header'));
  if (h.getUint32(0, true) !== LOCAL) return undefined;
  const flags = h.getUint16(6, true);
  const method = h.getUint16(8, true);
  let size = h.getUint32(18, true);
  const nameLength = h.getUint16(26, true);
  const extraLength = h.getUint16(28, true);
  const nameBytes = src.range(30, 30 + nameLength, 'the first entry name');
  const name = Buffer.from(nameBytes.buffer, nameBytes.byteOffset, nameBytes.byteLength).toString('utf8');
  if (size === 0xffffffff) {
    const extra = src.range(30 + nameLength, 30 + nameLength + extraLength, 'the first entry extra field');
    const x = dv(extra);
    let e = 0;
    while (e + 4 <= extra.length) {
      const id = x.getUint16(e, true);
      const len = x.getUint16(e + 2, true);
      if (id === 0x0001 && len >= 16 && e + 4 + 16 <= extra.length) size = u64(x, e + 12, 'a zip64 size');
      e += 4 + len;
    }
  }
  const from = 30 + nameLength + extraLength;
  return { name, from, to: flags & 0x08 && size === 0 ? undefined : from + size, method };
}
