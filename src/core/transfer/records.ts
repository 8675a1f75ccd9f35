/**
 * The small JSON files beside downloads. `NAME.part.json` says which remote file (size + mtime) the bytes of
 * `NAME.part` came from and which ranges are written, so a resume never mixes two versions of a file.
 * `.NAME.remote-runs.json` remembers what a finished file was fetched from and how it was verified, so a second
 * download can say "already there" without fetching, and a file the user changed is never taken as ours.
 */
import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import type { ByteRange } from './ranges';
import type { VerifyMode } from './types';

export interface PartRecord {
  version: 1;
  remotePath: string;
  remoteBytes: number;
  remoteMtime: number;
  done: ByteRange[];
}

export interface DoneRecord {
  version: 1;
  remotePath: string;
  remoteBytes: number;
  remoteMtime: number;
  verified: VerifyMode;
  sha256?: string;
  /** The local file as we left it: a change means someone else wrote it. */
  localBytes: number;
  localMtimeMs: number;
}

export const partPath = (localPath: string): string => `${localPath}.part`;
export const partRecordPath = (localPath: string): string => `${localPath}.part.json`;
export const doneRecordPath = (localPath: string): string => path.join(path.dirname(localPath), `.${path.basename(localPath)}.remote-runs.json`);

export async function readPartRecord(localPath: string): Promise<PartRecord | undefined> {
  const r = await readJson(partRecordPath(localPath));
  if (!r || r.version !== 1 || typeof r.remoteBytes !== 'number' || typeof r.remoteMtime !== 'number' || !Array.isArray(r.done)) return undefined;
  const done = (r.done as unknown[]).filter(
    (x): x is [number, number] => Array.isArray(x) && x.length === 2 && x.every((n) => Number.isSafeInteger(n) && (n as number) >= 0),
  );
  return { version: 1, remotePath: String(r.remotePath), remoteBytes: r.remoteBytes, remoteMtime: r.remoteMtime, done };
}

export async function readDoneRecord(localPath: string): Promise<DoneRecord | undefined> {
  const r = await readJson(doneRecordPath(localPath));
  if (!r || r.version !== 1 || typeof r.remoteBytes !== 'number' || typeof r.localMtimeMs !== 'number') return undefined;
  return r as unknown as DoneRecord;
}

/**
 * Write atomically (temp + rename), so a reload mid-write never leaves half a record. With `reserve`, the text is
 * padded with spaces (valid JSON) to a multiple of that many bytes, so that overwriteJsonInPlace can later write a
 * somewhat longer value without needing a single new block of a full disk.
 */
export async function writeJsonAtomic(file: string, value: unknown, reserve = 0): Promise<void> {
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const text = JSON.stringify(value);
  await fs.writeFile(tmp, reserve > 0 ? text.padEnd(Math.ceil((text.length + 1) / reserve) * reserve, ' ') : text).catch(async (e: unknown) => {
    await fs.rm(tmp, { force: true });
    throw e;
  });
  await fs.rename(tmp, file);
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
