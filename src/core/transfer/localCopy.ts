/**
 * Whether a checkpoint is already downloaded, read from the local side only (no remote command): what the tree marks.
 *
 * A checkpoint is downloaded when every file its listing shows is at its final place under the download root (the
 * same place `buildPlan` gives it: `<root>/<run>/<checkpoint>/<file>`, or `<root>/<run>/<file>` for a flat file),
 * and for each of them the download's own completed record (`.remote-runs/done/…`, records.ts) names that remote file
 * and its size as listed now, and the local file still has exactly the size and mtime the record left it with (no
 * one changed it since it was verified). A partial file never counts: its bytes live under `.remote-runs/partial/`
 * and reach the final place only by the rename after verification, and a file at the final place without a done
 * record (copied there by hand, or an interrupted older version) is not ours. A local copy deleted since drops the
 * mark at the next check. A checkpoint not downloaded whose `.part` records hold bytes of its listed files is
 * `partial`: an interrupted download the next one resumes.
 *
 * The remote mtime is not compared: the listing reads it with another precision than the download's stat, and a
 * remote file rewritten with the same size is what the download itself notices (it asks before replacing).
 */
import { localFs as fs } from '../util/localFs';
import * as path from 'node:path';
import type { Checkpoint } from '../types';
import { checkpointLocalRoot } from './plan';
import { RangeSet } from './ranges';
import { filePaths, readDoneRecord, readPartRecord } from './records';

export type LocalCopy =
  /** Every listed file is here, complete and verified as it was fetched, untouched since. */
  | { kind: 'downloaded'; path: string }
  /**
   * An interrupted download of it can resume: `bytesHere` of the listed `bytesTotal` are here (complete files, and
   * the recorded bytes of `.part` files of the listed remote files and sizes).
   */
  | { kind: 'partial'; path: string; bytesHere: number; bytesTotal: number }
  /** Not (or not all, or not as downloaded) at `path`. */
  | { kind: 'none'; path: string };

/** What the local side holds of `checkpoint` (of run `run`) under the download root `root`. Never throws. */
export async function localCopyOf(root: string, run: string, checkpoint: Checkpoint): Promise<LocalCopy> {
  let localRoot: string;
  try {
    localRoot = checkpointLocalRoot(root, run, checkpoint);
  } catch {
    return { kind: 'none', path: path.resolve(root) }; // a name that cannot be a local path is never downloaded
  }
  const none: LocalCopy = { kind: 'none', path: localRoot };
  const files: { local: string; remote: string; bytes: number }[] = checkpoint.isDir
    ? checkpoint.files.map((f) => ({ local: path.join(localRoot, ...f.name.split('/')), remote: path.posix.join(checkpoint.path, f.name), bytes: f.bytes }))
    : [{ local: localRoot, remote: checkpoint.path, bytes: checkpoint.bytes }];
  if (files.length === 0) return none;
  const resolvedRoot = path.resolve(root);
  let complete = 0;
  let partial = 0;
  let all = true;
  for (const f of files) {
    if (await intact(resolvedRoot, f.local, f.remote, f.bytes)) {
      complete += f.bytes;
      continue;
    }
    all = false;
    partial += await partBytes(resolvedRoot, f.local, f.remote, f.bytes);
  }
  if (all) return { kind: 'downloaded', path: localRoot };
  if (partial === 0) return none;
  return { kind: 'partial', path: localRoot, bytesHere: complete + partial, bytesTotal: files.reduce((n, f) => n + f.bytes, 0) };
}

/** The recorded bytes of a `.part` of this remote file at this size (0: none, or of another version). */
async function partBytes(root: string, local: string, remote: string, bytes: number): Promise<number> {
  let paths;
  try {
    paths = filePaths(root, local);
  } catch {
    return 0;
  }
  const rec = await readPartRecord(paths);
  if (!rec || rec.remotePath !== remote || rec.remoteBytes !== bytes) return 0;
  const size = await fs.stat(paths.part).then((s) => s.size, () => -1);
  return size < 0 ? 0 : new RangeSet(rec.done.map(([s, e]) => [s, Math.min(e, size)] as const)).total;
}

async function intact(root: string, local: string, remote: string, bytes: number): Promise<boolean> {
  let st: import('node:fs').Stats;
  try {
    st = await fs.lstat(local);
  } catch {
    return false;
  }
  // A link the download kept as a link (one file of the checkpoint naming another) has no record of its own.
  if (st.isSymbolicLink()) return true;
  if (!st.isFile()) return false;
  let paths;
  try {
    paths = filePaths(root, local);
  } catch {
    return false;
  }
  const rec = await readDoneRecord(paths);
  return rec !== undefined && rec.remotePath === remote && rec.remoteBytes === bytes && rec.localBytes === st.size && rec.localMtimeMs === st.mtimeMs;
}
