/**
 * Turns the list script's NUL-separated records (protocol in listScript.ts) into typed RootListings. This is
 * the edge: everything past here trusts Run and Checkpoint. Any malformed input ends in RemoteRunsError
 * ('protocol'), never in another exception.
 */
import { commandFailed, type ExecResult, type OutputReader } from '../remote';
import { RemoteRunsError, isRemoteRunsError, type LinksOut, type RootListing, type Run, type TooLarge, type Unreadable } from '../types';
import { EntryTree, findRunsInTree, nodeShapedEntry, normalizeRemotePath, type Entry } from './runTree';

import { decodeFields } from '../util/nameBytes';

/** The first bytes of the listing script's output (listScript.ts prints them); anything before them (rc-file noise) is skipped. */
export const LIST_MAGIC = Buffer.from('\0@rr-list@3\0', 'latin1');
const MAGIC = LIST_MAGIC;

/** One root's records as the script printed them: its status, entries, find's errors, and whether it ended. */
export interface RootRecord {
  status: string;
  path: string;
  entries: Entry[];
  errors: string;
  ended: boolean;
  /** Fair mode: the folder the entries being read are below ('' for the root). */
  prefix: string;
  /** N records: the path (relative to the root) of the last entry read at each depth of the current walk, up to `top`. */
  parents: string[];
  top: number;
  /** Which records its entries came in: a root's are all E or all N. */
  kind: '' | 'E' | 'N';
  /** Fair mode: folders listed only in part (B records). */
  tooLarge: TooLarge[];
  /** The folder tree of the first entries (ListRecordReader's `treeLimit`), built as they were read; they are its nodes. */
  tree?: EntryTree;
}

/** Parse the list script's result for `roots` (in the order they were passed). */
export function parseListOutput(
  result: ExecResult,
  roots: readonly string[],
  maxEntries: number,
  describe: string,
  /** The walk's depth: a folder this deep was listed, its contents were not. */
  maxDepth = Infinity,
): { roots: RootListing[]; remoteNow: number } {
  return listOutputReader(roots, maxEntries, describe, maxDepth).finish(result);
}

/** parseListOutput as an OutputReader: the records are read as the output arrives, the runs found at its end. */
export function listOutputReader(
  roots: readonly string[],
  maxEntries: number,
  describe: string,
  maxDepth = Infinity,
): OutputReader<{ roots: RootListing[]; remoteNow: number }> {
  // The tree is built while the output arrives too, from the entries the listing keeps (maxEntries).
  const reader = new ListRecordReader(roots.length, maxEntries);
  return {
    push: (chunk) => reader.push(chunk),
    finish: (result) => {
      if (result.code !== 0) throw commandFailed(describe, result);
      try {
        const { records, remoteNow: now } = reader.finish(result);
        // A root is cut when the byte cap fell inside it.
        const listings = records.map((r, index) => toRootListing(roots[index], r, maxEntries, now, !r.ended, maxDepth));
        return { roots: listings, remoteNow: now };
      } catch (e) {
        if (isRemoteRunsError(e)) throw e;
        throw protocol(`could not read the listing (${e instanceof Error ? e.message : String(e)})`);
      }
    },
  };
}

/**
 * The list script's records, checked (protocol in listScript.ts), for `rootCount` roots: the one reader of that
 * output, for the tree's runs (parseListOutput) and the language server's raw entries (lsp/listPaths.ts). Throws
 * RemoteRunsError('protocol') on anything malformed, and other errors the caller maps to it.
 */
export function readListRecords(result: ExecResult, rootCount: number): { records: RootRecord[]; remoteNow: number } {
  const reader = new ListRecordReader(rootCount);
  reader.push(result.stdout);
  return reader.finish(result);
}

/**
 * Reads the list script's output as it arrives (`push` each chunk of stdout, in order), so the records are read
 * while the remote walk is still running; `finish` checks the whole and returns what readListRecords returns.
 * `push` never throws: what is malformed is thrown by `finish`, as readListRecords would.
 */
export class ListRecordReader {
  private readonly records: RootRecord[] = [];
  private remoteNow: number | undefined;
  private finished = false;
  /** Before the marker: the first bytes (for the error) and the last few (the marker may span two chunks). */
  private started = false;
  private firstBytes = Buffer.alloc(0);
  private carry = Buffer.alloc(0);
  /** After the marker: bytes after the last NUL seen (a field not yet whole), as chunks. */
  private pending: Buffer[] = [];
  /** Fields of a record not yet whole. */
  private error: unknown;
  private pushed = 0;

  /**
   * `treeLimit`: also build each ok root's folder tree from its first `treeLimit` entries as they are read
   * (RootRecord.tree; the entries become its nodes).
   */
  constructor(
    private readonly rootCount: number,
    private readonly treeLimit?: number,
  ) {}

  push(chunk: Buffer): void {
    this.pushed += chunk.length;
    if (this.error !== undefined || this.finished || chunk.length === 0) return;
    try {
      // A large chunk (a whole output read at once) is read a piece at a time, so each piece's decoded text (and
      // what is made from it and not kept) is garbage by the next piece instead of living through the whole read.
      for (let at = 0; at < chunk.length && !this.finished; at += PIECE) this.feed(chunk.length <= PIECE ? chunk : chunk.subarray(at, at + PIECE));
    } catch (e) {
      this.error = e;
    }
  }

  finish(result: ExecResult): { records: RootRecord[]; remoteNow: number } {
    // Every byte of stdout must have come through push, once: otherwise (an executor that does not stream, or a
    // command retried on a new connection after some output) the whole output is read again here.
    if (this.pushed !== result.stdout.length) {
      const again = new ListRecordReader(this.rootCount, this.treeLimit);
      again.push(result.stdout);
      return again.finish(result);
    }
    if (this.error !== undefined) throw this.error;
    if (!this.started) {
      const head = this.firstBytes.subarray(0, 120).toString('utf8').replace(/\0/g, '\\0');
      throw protocol(`the listing did not start with its marker; output began with ${JSON.stringify(head)}`);
    }
    const { records, remoteNow, finished, rootCount } = this;
    if (remoteNow === undefined) throw protocol('the listing has no remote clock');
    if (!finished || records.length !== rootCount) {
      // Only the executor's byte cap may cut the output short; anything else is a broken script.
      if (!result.truncated || records.length === 0) {
        throw protocol(`the listing ended early (${records.length} of ${rootCount} roots)`);
      }
      if (records.length < rootCount) {
        throw protocol(`the listing was cut after ${result.stdout.length} bytes, before root ${records.length + 1} of ${rootCount}`);
      }
    }
    return { records, remoteNow };
  }

  private feed(chunk: Buffer): void {
    if (!this.started) {
      if (this.firstBytes.length < 120) this.firstBytes = Buffer.concat([this.firstBytes, chunk.subarray(0, 120)]);
      const window = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
      const at = window.indexOf(MAGIC);
      if (at < 0) {
        this.carry = Buffer.from(window.subarray(Math.max(0, window.length - MAGIC.length + 1)));
        return;
      }
      this.started = true;
      this.carry = Buffer.alloc(0);
      chunk = window.subarray(at + MAGIC.length);
    }
    // Only whole fields are read: up to the chunk's last NUL, the rest waits for the next chunk.
    const last = chunk.lastIndexOf(0);
    if (last < 0) {
      if (chunk.length > 0) this.pending.push(chunk);
      return;
    }
    const data = this.pending.length > 0 ? Buffer.concat([...this.pending, chunk.subarray(0, last + 1)]) : chunk.subarray(0, last + 1);
    const tail = last + 1 < chunk.length ? Buffer.from(chunk.subarray(last + 1)) : undefined;
    const text = decodeFields(data);
    const left = this.read(text);
    // A record cut at the chunk's end is read again with the next chunk, from its bytes: they go in front of what is
    // pending (a few bytes), instead of its fields in front of the next chunk's (a copy of thousands of them).
    const cut = left >= 0 ? Buffer.from(data.subarray(fieldsStart(data, countFields(text, left)))) : undefined;
    this.pending = cut && tail ? [cut, tail] : cut ? [cut] : tail ? [tail] : [];
  }

  /**
   * Reads the records in `text` (whole fields, each ending in a NUL, fieldsText); returns where the record it left
   * unread (cut at the end, not yet whole) begins, or -1. The fields of an entry are read in place: only its name
   * becomes a string of its own, its numbers are read from the text (a split would make a string of each field, and
   * an array of them all, for one parse of a listing to collect).
   */
  private read(text: string): number {
    const records = this.records;
    const n = text.length;
    let i = 0;
    /** The next `count` fields as strings, or undefined when the text ends first (the record is cut). */
    const take = (count: number): string[] | undefined => {
      const out: string[] = [];
      let at = i;
      for (let k = 0; k < count; k++) {
        const end = text.indexOf('\0', at);
        if (end < 0) return undefined;
        out.push(text.slice(at, end));
        at = end + 1;
      }
      i = at;
      return out;
    };
    reading: while (i < n && !this.finished) {
      const whole = i;
      const tagEnd = text.indexOf('\0', i);
      const tag = text.slice(i, tagEnd); // one letter: V8's cached one-character string, nothing made
      i = tagEnd + 1;
      switch (tag) {
        case 'E': {
          const f = take(5);
          if (!f) {
            i = whole; // cut inside a record: the next chunk, or the end check, decides
            break reading;
          }
          const current = records[records.length - 1];
          if (!current || current.status !== 'ok' || current.ended) throw protocol('an entry outside any root');
          if (current.kind === 'N') throw protocol('entries by path after entries by name');
          current.kind = 'E';
          const entry = toEntry(f, 0, current.prefix);
          current.entries.push(entry);
          if (current.tree && current.entries.length <= this.treeLimit!) current.tree.add(entry);
          break;
        }
        case 'N': {
          // depth, type, size, mtime, name, detail: where each field ends.
          const e1 = text.indexOf('\0', i);
          const e2 = e1 < 0 ? -1 : text.indexOf('\0', e1 + 1);
          const e3 = e2 < 0 ? -1 : text.indexOf('\0', e2 + 1);
          const e4 = e3 < 0 ? -1 : text.indexOf('\0', e3 + 1);
          const e5 = e4 < 0 ? -1 : text.indexOf('\0', e4 + 1);
          const e6 = e5 < 0 ? -1 : text.indexOf('\0', e5 + 1);
          if (e6 < 0) {
            i = whole; // cut inside a record: the next chunk, or the end check, decides
            break reading;
          }
          const current = records[records.length - 1];
          if (!current || current.status !== 'ok' || current.ended) throw protocol('an entry outside any root');
          if (current.kind === 'E') throw protocol('entries by name after entries by path');
          current.kind = 'N';
          const digit = text.charCodeAt(i) - 0x30;
          const depth = e1 - i === 1 && digit >= 0 && digit <= 9 ? digit : e1 > i && e1 - i < 6 ? Number(text.slice(i, e1)) : NaN;
          const name = text.slice(e4 + 1, e5);
          const parents = current.parents;
          // The folder it is in: the last entry one level up (the walk's folder at depth 1).
          if (!Number.isInteger(depth) || depth < 1 || depth > current.top + 1) throw protocol(`bad entry depth ${JSON.stringify(text.slice(i, e1).slice(0, 20))} for ${JSON.stringify(name.slice(0, 80))}`);
          if (name === '' || name === '.' || name === '..' || name.includes('/')) throw protocol(`bad entry name ${JSON.stringify(name.slice(0, 80))}`);
          // parents[d]: the path of the last folder at depth d with its slash, so each path is one concatenation.
          const rel = parents[depth - 1] + name;
          parents[depth] = `${rel}/`;
          current.top = depth;
          const asNode = current.tree ? name : undefined;
          const entry =
            entryAt(text, e1 + 1, e2, e3, e4, rel, asNode) ??
            toEntryRecord(text.slice(e1 + 1, e2), text.slice(e2 + 1, e3), text.slice(e3 + 1, e4), rel, '', asNode);
          if (e6 > e5 + 1) addDetail(entry, text.slice(e5 + 1, e6));
          current.entries.push(entry);
          if (current.tree && current.entries.length <= this.treeLimit!) current.tree.addAt(depth, entry, name);
          i = e6 + 1;
          break;
        }
        case 'T': {
          const f = take(1);
          if (!f) {
            i = whole;
            break reading;
          }
          const secs = Number(f[0]);
          if (!Number.isFinite(secs) || f[0] === '') throw protocol(`bad remote clock ${JSON.stringify(f[0])}`);
          this.remoteNow = secs * 1000;
          break;
        }
        case 'R': {
          const f = take(3);
          if (!f) {
            i = whole;
            break reading;
          }
          if (Number(f[0]) !== records.length || records.length >= this.rootCount) {
            throw protocol(`root record ${JSON.stringify(f[0])} out of order`);
          }
          if (!['ok', 'missing', 'notdir', 'denied'].includes(f[1])) throw protocol(`unknown root status ${JSON.stringify(f[1])}`);
          const ok = f[1] === 'ok';
          records.push({ status: f[1], path: f[2], entries: [], errors: '', ended: !ok, prefix: '', parents: [''], top: 0, kind: '', tooLarge: [], ...(ok && this.treeLimit !== undefined ? { tree: new EntryTree(true) } : {}) });
          break;
        }
        case 'P': {
          const f = take(1);
          if (!f) {
            i = whole;
            break reading;
          }
          const current = records[records.length - 1];
          if (!current || current.status !== 'ok' || current.ended) throw protocol('a folder record outside any root');
          if (f[0].includes('/') || f[0] === '.' || f[0] === '..') throw protocol(`bad folder record ${JSON.stringify(f[0].slice(0, 80))}`);
          current.prefix = f[0];
          // A new walk, of that folder.
          current.parents[0] = f[0] === '' ? '' : `${f[0]}/`;
          current.top = 0;
          current.tree?.walkFrom(f[0]);
          break;
        }
        case 'B': {
          const f = take(2);
          if (!f) {
            i = whole;
            break reading;
          }
          const current = records[records.length - 1];
          const m = /^(\d+)(\+?)$/.exec(f[1]);
          if (!current || current.status !== 'ok' || current.ended || !m || f[0].split('/').some((p) => p === '..' || p === '.')) throw protocol('a bad too-large record');
          current.tooLarge.push({ rel: f[0], entries: Number(m[1]), ...(m[2] ? { more: true } : {}) });
          break;
        }
        case 'X': {
          const f = take(2);
          if (!f) {
            i = whole;
            break reading;
          }
          const current = records[records.length - 1];
          if (!current || Number(f[0]) !== records.length - 1 || current.status !== 'ok') throw protocol('a root end out of order');
          current.errors = f[1];
          current.ended = true;
          break;
        }
        case 'Z':
          this.finished = true;
          break;
        default:
          throw protocol(`unknown record ${JSON.stringify(tag.slice(0, 40))}`);
      }
    }
    return this.finished || i >= n ? -1 : i;
  }
}

/** The most bytes of output split into fields at once (ListRecordReader.push). */
const PIECE = 64 * 1024;

/** Where the last `count` NUL-terminated fields of `data` (which ends with a NUL) begin. */
function fieldsStart(data: Buffer, count: number): number {
  let at = data.length - 1; // the last field's NUL
  for (let k = 0; k < count; k++) {
    at = data.lastIndexOf(0, at - 1);
    if (at < 0) return 0;
  }
  return at + 1;
}

/** How many NUL-ended fields `text` holds from `from` on. */
function countFields(text: string, from: number): number {
  let count = 0;
  for (let at = text.indexOf('\0', from); at >= 0; at = text.indexOf('\0', at + 1)) count++;
  return count;
}

/** The E record whose fields start at `fields[i]`; `prefix` (fair mode) is the root's folder it lies below. */
function toEntry(fields: readonly string[], i: number, prefix: string): Entry {
  const rawRel = fields[i + 3];
  if (rawRel === '') throw protocol(`bad entry ${JSON.stringify(fields.slice(i, i + 4).join(' ').slice(0, 80))}`);
  const rel = prefix === '' ? rawRel : `${prefix}/${rawRel}`;
  if (!safeRel(rel)) throw protocol(`bad entry path ${JSON.stringify(rel.slice(0, 80))}`);
  return toEntryRecord(fields[i], fields[i + 1], fields[i + 2], rel, fields[i + 4]);
}

/** An entry from its fields (E or N record), `rel` checked already; with `name`, in the shape of a tree node. */
function toEntryRecord(type: string, size: string, mtime: string, rel: string, extra: string, name?: string): Entry {
  const bytes = Number(size);
  let ms = millis(mtime);
  if (Number.isNaN(ms)) ms = mtime === '' ? NaN : Math.round(Number(mtime) * 1000);
  const t = type.length === 1 ? type.charCodeAt(0) | 0x20 : 0; // one ASCII letter, either case
  if (t < 0x61 || t > 0x7a || size === '' || !Number.isFinite(bytes) || bytes < 0 || !Number.isFinite(ms)) {
    throw protocol(`bad entry ${JSON.stringify([type, size, mtime, rel].join(' ').slice(0, 80))}`);
  }
  const entry: Entry = name === undefined ? { type, bytes, mtime: ms, rel } : nodeShapedEntry(type, bytes, ms, rel, name);
  if (extra !== '') addDetail(entry, extra);
  return entry;
}

/**
 * An N record's entry read in place, its type, size and mtime the text's fields [type, sizeAt), [sizeAt + 1, mtimeAt),
 * [mtimeAt + 1, end) as find prints them (one letter, digits, digits with a point), or undefined for anything else,
 * which toEntryRecord then reads (or rejects) from the fields as strings.
 */
function entryAt(text: string, type: number, sizeAt: number, mtimeAt: number, end: number, rel: string, name: string | undefined): Entry | undefined {
  if (sizeAt !== type + 1) return undefined;
  const t = text.charCodeAt(type) | 0x20; // one ASCII letter, either case
  if (t < 0x61 || t > 0x7a) return undefined;
  const from = sizeAt + 1;
  if (mtimeAt === from || mtimeAt - from > 15) return undefined; // no digits, or more than a double holds exactly
  let bytes = 0;
  for (let k = from; k < mtimeAt; k++) {
    const d = text.charCodeAt(k) - 0x30;
    if (d < 0 || d > 9) return undefined;
    bytes = bytes * 10 + d;
  }
  const ms = millisAt(text, mtimeAt + 1, end);
  if (Number.isNaN(ms)) return undefined;
  const letter = text.slice(type, sizeAt); // one character: V8's cached string
  return name === undefined ? { type: letter, bytes, mtime: ms, rel } : nodeShapedEntry(letter, bytes, ms, rel, name);
}

/** An entry's detail field: `K` and a symlink's target, or `C` and a pointer file's contents. */
function addDetail(entry: Entry, extra: string): void {
  if (extra.charCodeAt(0) === 0x4b /* K */) entry.link = extra.slice(1);
  else if (extra.charCodeAt(0) === 0x43 /* C */) entry.text = extra.slice(1);
  else throw protocol(`bad entry detail ${JSON.stringify(extra.slice(0, 40))}`);
}

/**
 * Milliseconds from find's seconds (`1796157636.5431444980`: digits, a point, digits) read digit by digit, rounded
 * half up at the fourth decimal; NaN for any other text (read then as Number() reads it). Number() on such a string
 * takes V8's slow path for doubles, once per entry.
 */
function millis(text: string): number {
  return millisAt(text, 0, text.length);
}

/** millis() of text[from, n). */
function millisAt(text: string, from: number, n: number): number {
  let whole = 0;
  let k = from;
  for (; k < n; k++) {
    const d = text.charCodeAt(k) - 0x30;
    if (d < 0 || d > 9) break;
    whole = whole * 10 + d;
  }
  if (k === from || k - from > 15) return NaN; // no digits, or more than a double holds exactly
  if (k === n) return whole * 1000;
  if (text.charCodeAt(k) !== 0x2e || k + 1 === n) return NaN;
  let frac = 0;
  let digits = 0;
  for (k++; k < n; k++) {
    const d = text.charCodeAt(k) - 0x30;
    if (d < 0 || d > 9) return NaN;
    if (digits < 4) {
      frac = frac * 10 + d;
      digits++;
    }
  }
  for (; digits < 4; digits++) frac *= 10;
  return whole * 1000 + Math.floor((frac + 5) / 10);
}

/** Relative, `/`-separated, no empty part and no `..` part (the same as splitting on `/`, without the arrays). */
function safeRel(rel: string): boolean {
  if (rel === '' || rel.charCodeAt(0) === 0x2f || rel.charCodeAt(rel.length - 1) === 0x2f || rel.includes('//')) return false;
  if (!rel.includes('..')) return true;
  return rel !== '..' && !rel.startsWith('../') && !rel.endsWith('/..') && !rel.includes('/../');
}

/**
 * The entries a root's listing was read from (for an ok root: its runs were found in them), kept beside the listing
 * for as long as the listing lives, so the language server's questions about the folders of a run root are answered
 * from the listing the tree made (discovery/listings.ts) instead of listing the root again. Not part of the listing's
 * JSON (`ls --json` prints the runs, not every file).
 */
const ENTRIES = new WeakMap<RootListing, readonly Entry[]>();

/** The entries `root` was read from; undefined for a root that could not be listed (missing, denied, not a folder). */
export function rootEntries(root: RootListing): readonly Entry[] | undefined {
  return ENTRIES.get(root);
}

function toRootListing(root: string, r: RootRecord, maxEntries: number, now: number, cut: boolean, maxDepth: number): RootListing {
  const listing = readRoot(root, r, maxEntries, now, cut, maxDepth);
  if (r.status === 'ok') ENTRIES.set(listing, r.entries.length > maxEntries ? r.entries.slice(0, maxEntries) : r.entries);
  return listing;
}

function readRoot(root: string, r: RootRecord, maxEntries: number, now: number, cut: boolean, maxDepth: number): RootListing {
  const path = r.path;
  const base = { root, path, truncated: false, seen: [] as string[] };
  switch (r.status) {
    case 'missing':
      return { ...base, state: 'path-missing', message: `${path} does not exist` };
    case 'notdir':
      return { ...base, state: 'not-a-directory', message: `${path} is a file, not a directory` };
    case 'denied':
      return { ...base, state: 'permission-denied', message: `${path} cannot be read by this user (permission denied)` };
  }
  const truncated = cut || r.entries.length > maxEntries || r.tooLarge.length > 0;
  const entries = r.entries.length > maxEntries ? r.entries.slice(0, maxEntries) : r.entries;
  const unreadable = parseErrors(r.errors);
  const extra: { unreadable?: Unreadable; tooLarge?: TooLarge[]; linksOut?: LinksOut } = { ...(unreadable ? { unreadable } : {}), ...(r.tooLarge.length ? { tooLarge: r.tooLarge } : {}) };
  const cutNote = truncated ? ` (${cutShortText(path, r.tooLarge, maxEntries)})` : '';
  const note = (unreadable ? ` (${unreadable.count} place${unreadable.count === 1 ? '' : 's'} could not be read: ${unreadable.messages[0] ?? ''})` : '') + cutNote;
  if (entries.length === 0) {
    return { ...base, ...extra, truncated, state: 'empty', message: `${path} is an empty directory${note}` };
  }
  // The tree of the entries kept was built while they were read (the entries are its nodes).
  let tree = r.tree;
  if (!tree) {
    tree = new EntryTree(true);
    for (const e of entries) tree.add(e);
  }
  const runs = findRunsInTree(path, tree, now, maxDepth);
  const linksOut = linksOutOf(path, entries, runs);
  if (linksOut) extra.linksOut = linksOut;
  if (runs.length === 0) {
    const seen = entries
      .filter((e) => !e.rel.includes('/'))
      .map((e) => e.rel)
      .sort()
      .slice(0, 5);
    const count = entries.filter((e) => !e.rel.includes('/')).length;
    return {
      ...base,
      ...extra,
      truncated,
      seen,
      state: 'no-checkpoints',
      message:
        `${path} holds ${count} entr${count === 1 ? 'y' : 'ies'} but no run was recognised: no step_N, checkpoint-N, ` +
        `global_stepN, ckpt_N or iter_N folders, no checkpoint files with a step number, no metrics log${note}${linksOut ? ` (${linksOutText(linksOut)})` : ''}`,
    };
  }
  return { root, path, state: 'ok', runs, truncated, ...extra };
}

/** How many links out of the root, the first three: entries the listing did not walk into. */
export function linksOutText(l: LinksOut, show: (name: string) => string = (s) => s): string {
  const shown = l.links.slice(0, 3).map((x) => `${show(x.rel)} -> ${show(x.link)}`);
  return `${l.count} link${l.count === 1 ? '' : 's'} to folders outside the root not followed: ${shown.join(', ')}${l.count > 3 ? ` and ${l.count - 3} more` : ''}`;
}

/**
 * Links to folders leading out of the root (absolute, or climbing above it), except checkpoints that are such links and
 * what lies inside a checkpoint (Checkpoint.linkOutside, Checkpoint.skipped say those).
 */
function linksOutOf(rootPath: string, entries: readonly Entry[], runs: readonly Run[]): LinksOut | undefined {
  let count = 0;
  const links: { rel: string; link: string }[] = [];
  let checkpointPaths: Set<string> | undefined;
  const base = rootPath === '/' ? '' : rootPath;
  for (const e of entries) {
    if (e.type !== 'd' || e.link === undefined) continue;
    const at = `${base}/${e.rel}`;
    const to = e.link.startsWith('/') ? normalizeRemotePath(e.link) : normalizeRemotePath(`${at.slice(0, at.lastIndexOf('/'))}/${e.link}`);
    // Inside the root, or the root itself (a loop): what it leads to is listed where it is.
    if (to === rootPath || to.startsWith(`${base}/`)) continue;
    checkpointPaths ??= new Set(runs.flatMap((r) => r.checkpoints.filter((c) => c.isDir && !c.fileGroup && c.kind !== 'final').map((c) => c.path)));
    // The link is a checkpoint, or lies in one: a lookup per level above it (the walk is a few levels deep).
    let inCheckpoint = false;
    for (let p = at; p.length > base.length && !inCheckpoint; p = p.slice(0, p.lastIndexOf('/'))) inCheckpoint = checkpointPaths.has(p);
    if (inCheckpoint) continue;
    count++;
    if (links.length < 20) links.push({ rel: e.rel, link: e.link });
  }
  return count > 0 ? { count, links } : undefined;
}


/**
 * What a cut-short listing says: which folders were too large, or (a plain listing, before the fair one replaced it)
 * that the walk stopped at its budget.
 */
export function cutShortText(path: string, tooLarge: readonly TooLarge[], maxEntries: number): string {
  if (tooLarge.length === 0) return `the listing stopped after ${maxEntries.toLocaleString('en-US')} entries; some runs may be missing`;
  const shown = tooLarge.slice(0, 3).map((t) => `${t.rel === '' ? path : `${path === '/' ? '' : path}/${t.rel}`} (${t.more ? 'over ' : ''}${t.entries.toLocaleString('en-US')} entries)`);
  const more = tooLarge.length > 3 ? ` and ${tooLarge.length - 3} more` : '';
  return `listed in part, runs inside may be missing: ${shown.join(', ')}${more}`;
}

function parseErrors(text: string): Unreadable | undefined {
  const [first, ...messages] = text.split('\n');
  const count = Number(first);
  if (!first || !Number.isInteger(count) || count <= 0) return undefined;
  return { count, messages: messages.filter((m) => m.length > 0).slice(0, 3) };
}

function protocol(message: string): RemoteRunsError {
  return new RemoteRunsError('protocol', `Unexpected output from the run listing: ${message}`);
}
