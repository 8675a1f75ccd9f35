/**
 * Downloads that were interrupted (a reload, a crash, a cancel, a killed CLI) and can resume, found from the local
 * side only: the `.part` records under `<root>/.remote-runs/partial/` (records.ts), each naming the checkpoint it
 * belongs to. A checkpoint whose download runs now (its lock held by a live process, lock.ts) is not interrupted.
 * Looking also removes the record temps of writers that died (removeStaleTemps).
 */
import { localFs as fs } from '../util/localFs';
import * as path from 'node:path';
import { RemoteRunsError } from '../types';
import { lockHeld } from './lock';
import { checkpointLocalRoot } from './plan';
import { RangeSet } from './ranges';
import { lockPath, readPartRecord, removeStaleTemps, STATE_DIR, type DownloadOrigin } from './records';

export interface PartialDownload {
  origin: DownloadOrigin;
  /** The download root it lies under. */
  root: string;
  /** Bytes the `.part` files hold, as recorded, of the sizes of those files. */
  bytesHere: number;
  bytesTotal: number;
  /** Each file's `.part` and its record. */
  parts: { part: string; record: string }[];
  /** Its download runs now (in another window or process): not interrupted, unless that one ends without it. */
  running: boolean;
}

/**
 * The partial downloads under the download root `root`, largest share first, each saying whether its download runs
 * now (`running`); the others are interrupted. Never throws.
 */
export async function findPartialDownloads(root: string): Promise<PartialDownload[]> {
  const state = path.join(root, STATE_DIR);
  await removeStaleTemps(state, true);
  const records = await recordsUnder(path.join(state, 'partial'));
  const byOrigin = new Map<string, PartialDownload>();
  for (const record of records) {
    const rec = await readPartRecord({ partRecord: record });
    if (!rec?.origin) continue;
    const part = record.slice(0, -'.json'.length);
    const size = await fs.stat(part).then((s) => s.size, () => -1);
    if (size < 0) continue;
    const here = new RangeSet(rec.done.map(([s, e]) => [s, Math.min(e, size)] as const)).total;
    const key = JSON.stringify(rec.origin);
    const p = byOrigin.get(key) ?? { origin: rec.origin, root, bytesHere: 0, bytesTotal: 0, parts: [], running: false };
    p.bytesHere += here;
    p.bytesTotal += rec.remoteBytes;
    p.parts.push({ part, record });
    byOrigin.set(key, p);
  }
  const out: PartialDownload[] = [];
  for (const p of byOrigin.values()) {
    if (p.bytesHere === 0) continue;
    p.running = await running(p);
    out.push(p);
  }
  return out.sort((a, b) => b.bytesHere / b.bytesTotal - a.bytesHere / a.bytesTotal);
}

/** Remove what an interrupted download left (its `.part` files and records); `busy` while its download runs. */
export async function discardPartialDownload(p: PartialDownload): Promise<void> {
  if (await running(p)) {
    throw new RemoteRunsError('busy', `${p.origin.run}/${p.origin.checkpoint} is being downloaded; it was not discarded`);
  }
  for (const { part, record } of p.parts) {
    await fs.rm(part, { force: true });
    await fs.rm(record, { force: true });
  }
}

/** "14%" of an interrupted download (floored: 99.9% is not yet 100%). */
export function partialPercent(bytesHere: number, bytesTotal: number): string {
  return `${bytesTotal > 0 ? Math.floor((100 * bytesHere) / bytesTotal) : 0}%`;
}

async function running(p: PartialDownload): Promise<boolean> {
  try {
    return await lockHeld(lockPath(p.root, checkpointLocalRoot(p.root, p.origin.run, { name: p.origin.checkpoint })));
  } catch {
    return false; // a name that cannot be a local path has no lock
  }
}

async function recordsUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  const out: string[] = [];
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await recordsUnder(p)));
    else if (e.isFile() && e.name.endsWith('.part.json')) out.push(p);
  }
  return out;
}
