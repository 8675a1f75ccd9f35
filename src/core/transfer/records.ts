/**
 * The state of downloads, kept out of the checkpoints: one hidden folder `.remote-runs/` at the download root (the
 * parent of the run folders), so a checkpoint folder holds exactly the files the remote has.
 *
 * - `partial/<run>/<checkpoint>/<file>.part`: the bytes of a file not yet complete; renamed into place when verified.
 * - `partial/…/<file>.part.json`: which remote file (path, size, mtime) those bytes came from, which ranges are
 *   written, and which of them were proven equal to the remote by a hash (informational: a resume proves them again).
 * - `done/<run>/<checkpoint>/<file>.json`: what a finished file was fetched from and how it was verified, so a second
 *   download can say "already there" without fetching, and a file the user changed is never taken as ours.
 * - `locks/<run>/<checkpoint>.lock`: the one process writing that checkpoint (lock.ts).
 *
 * Versions before this one kept `NAME.part`, `NAME.part.json` and `.NAME.remote-runs.json` beside the files: a done
 * record found there is still read (and moved into the folder when the file is next touched).
 */
import { localFs as fs } from '../util/localFs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { encodeName } from '../util/nameBytes';
import { pidRunning } from '../util/pids';
import type { ByteRange } from './ranges';
import type { FilePaths, VerifyMode } from './types';
import type { TargetRef } from '../types';

/** The download state folder's name, at the download root. */
export const STATE_DIR = '.remote-runs';

/** A byte range whose SHA-256 was computed on both sides and matched. */
export interface CheckedRange {
  start: number;
  end: number;
  sha256: string;
}

export interface PartRecord {
  version: 2;
  remotePath: string;
  remoteBytes: number;
  remoteMtime: number;
  /** Ranges written (a resume hashes them again on both sides). */
  done: ByteRange[];
  /** Ranges of `done` proven equal to the remote. */
  checked: CheckedRange[];
  /** What the download was of, so an interrupted one can be announced and resumed (partials.ts). */
  origin?: DownloadOrigin;
}

/** The checkpoint a download fetches, as the faces name it: host, target, run, checkpoint. */
export interface DownloadOrigin {
  host: string;
  target: TargetRef;
  run: string;
  checkpoint: string;
}

export interface DoneRecord {
  version: 1 | 2;
  remotePath: string;
  remoteBytes: number;
  remoteMtime: number;
  verified: VerifyMode;
  /** SHA-256 of the whole file, when known (one stream of it, or hashed whole on both sides). */
  sha256?: string;
  /** The local file as we left it: a change means someone else wrote it. */
  localBytes: number;
  localMtimeMs: number;
}

export type { FilePaths } from './types';

/**
 * A state file's key: the file's path below the root, its last name kept when a suffix still fits in a name
 * (`.part.json` and a temp file's `.<pid>.<random>.tmp`), else `#` and the SHA-256 of its bytes: a remote file whose
 * name is 230 bytes long has a local name, but `<name>.part.json.123.abc.tmp` would pass NAME_MAX (255) and the
 * pull would fail on its own records. Keyed on the name's bytes (nameBytes.ts) either way.
 */
function stateKey(key: string): string {
  const base = path.basename(key);
  const bytes = encodeName(base);
  if (bytes.length <= STATE_NAME_ROOM) return key;
  return path.join(path.dirname(key), `#${createHash('sha256').update(bytes).digest('hex')}`);
}

/** Bytes of a name that leave room for the longest suffix a state file adds (`.part.json.<pid>.<random>.tmp`). */
const STATE_NAME_ROOM = 200;

/** The state paths of `localPath`, a file under the download root `root`. */
export function filePaths(root: string, localPath: string): FilePaths {
  const rel = path.relative(root, localPath);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) throw new Error(`${localPath} is not under the download root ${root}`);
  const key = stateKey(rel);
  const state = path.join(root, STATE_DIR);
  return {
    local: localPath,
    part: path.join(state, 'partial', `${key}.part`),
    partRecord: path.join(state, 'partial', `${key}.part.json`),
    doneRecord: path.join(state, 'done', `${key}.json`),
    legacyDoneRecord: path.join(path.dirname(localPath), `.${path.basename(localPath)}.remote-runs.json`),
  };
}

/** The lock of one checkpoint's download (`localRoot`: its folder, or its file for a flat checkpoint). */
export function lockPath(root: string, localRoot: string): string {
  return path.join(root, STATE_DIR, 'locks', `${stateKey(path.relative(root, localRoot))}.lock`);
}

export async function readPartRecord(paths: Pick<FilePaths, 'partRecord'>): Promise<PartRecord | undefined> {
  const r = await readJson(paths.partRecord);
  if (!r || r.version !== 2 || typeof r.remoteBytes !== 'number' || typeof r.remoteMtime !== 'number' || !Array.isArray(r.done)) return undefined;
  const done = (r.done as unknown[]).filter(
    (x): x is [number, number] => Array.isArray(x) && x.length === 2 && x.every((n) => Number.isSafeInteger(n) && (n as number) >= 0),
  );
  const checked = (Array.isArray(r.checked) ? (r.checked as unknown[]) : []).filter(
    (x): x is CheckedRange =>
      !!x &&
      typeof x === 'object' &&
      Number.isSafeInteger((x as CheckedRange).start) &&
      Number.isSafeInteger((x as CheckedRange).end) &&
      (x as CheckedRange).end > (x as CheckedRange).start &&
      /^[0-9a-f]{64}$/.test(String((x as CheckedRange).sha256)),
  );
  const o = r.origin as Partial<DownloadOrigin> | undefined;
  const origin =
    o && typeof o.host === 'string' && typeof o.run === 'string' && typeof o.checkpoint === 'string' && o.target && typeof o.target.kind === 'string' && typeof o.target.id === 'string'
      ? { host: o.host, target: { kind: o.target.kind, id: o.target.id } as TargetRef, run: o.run, checkpoint: o.checkpoint }
      : undefined;
  return { version: 2, remotePath: String(r.remotePath), remoteBytes: r.remoteBytes, remoteMtime: r.remoteMtime, done, checked, ...(origin ? { origin } : {}) };
}

export async function readDoneRecord(paths: FilePaths): Promise<DoneRecord | undefined> {
  for (const file of [paths.doneRecord, paths.legacyDoneRecord]) {
    const r = await readJson(file);
    if (!r || (r.version !== 1 && r.version !== 2) || typeof r.remoteBytes !== 'number' || typeof r.localMtimeMs !== 'number') continue;
    return r as unknown as DoneRecord;
  }
  return undefined;
}

/** Write a done record (in the state folder) and drop a legacy one beside the file. */
/** `made`: folders already made by this caller (each is made once, not once per file: 100,000 files, 100,000 mkdirs). */
export async function writeDoneRecord(paths: FilePaths, rec: DoneRecord, made?: Set<string>): Promise<void> {
  const dir = path.dirname(paths.doneRecord);
  if (!made?.has(dir)) {
    await fs.mkdir(dir, { recursive: true });
    made?.add(dir);
  }
  await writeJsonAtomic(paths.doneRecord, rec);
  // A long name's legacy record name passes NAME_MAX: there is none to drop.
  await fs.unlink(paths.legacyDoneRecord).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== 'ENOENT' && e.code !== 'ENAMETOOLONG') throw e;
  });
}

/**
 * Write atomically (temp + rename), so a reload mid-write never leaves half a record. With `reserve`, the text is
 * padded with spaces (valid JSON) to a multiple of that many bytes, so that overwriteJsonInPlace can later write a
 * somewhat longer value without needing a single new block of a full disk.
 */
export async function writeJsonAtomic(file: string, value: unknown, reserve = 0): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`; // TEMP_NAME
  const text = JSON.stringify(value);
  await fs.writeFile(tmp, reserve > 0 ? text.padEnd(Math.ceil((text.length + 1) / reserve) * reserve, ' ') : text).catch(async (e: unknown) => {
    await fs.rm(tmp, { force: true });
    throw e;
  });
  await fs.rename(tmp, file);
}

/** A temp file of writeJsonAtomic: `<file>.<pid>.<random>.tmp`. */
const TEMP_NAME = /^.+\.(\d+)\.[0-9a-z]+\.tmp$/;

/**
 * Remove the temp files writeJsonAtomic left in `dir` (and with `recursive` the folders under it) when its process died between
 * creating one and renaming it (a window reloaded mid-download left a 0-byte `….part.json.<pid>.<rand>.tmp` for
 * good): those whose pid no longer runs. A running writer's temp is its own. Returns the paths removed; a folder
 * that cannot be read is skipped.
 */
export async function removeStaleTemps(dir: string, recursive = false): Promise<string[]> {
  const removed: string[] = [];
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && recursive) removed.push(...(await removeStaleTemps(p, true)));
    const m = e.isFile() ? TEMP_NAME.exec(e.name) : null;
    if (!m || pidRunning(Number(m[1]))) continue;
    if (await fs.rm(p, { force: true }).then(() => true, () => false)) removed.push(p);
  }
  return removed;
}

/**
 * Overwrite a JSON file in the bytes it already has (no truncation, padded with spaces): for when the disk is full
 * and a temp file cannot be written. Rejects when the value does not fit. Not atomic; a torn write fails to parse.
 */
export async function overwriteJsonInPlace(file: string, value: unknown): Promise<void> {
  const fh = await fs.open(file, 'r+');
  try {
    const { size } = await fh.stat();
    const text = Buffer.from(JSON.stringify(value));
    if (text.length > size) throw new Error(`${file}: no room for the record in place`);
    await fh.write(Buffer.concat([text, Buffer.alloc(size - text.length, ' ')]), 0, size, 0);
  } finally {
    await fh.close();
  }
}

async function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const v: unknown = JSON.parse(await fs.readFile(file, 'utf8'));
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
