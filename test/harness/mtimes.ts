/**
 * File times for tests that lay checkpoints on disk. A listing takes a checkpoint whose newest file changed less than
 * FRESH_WRITE_MS before its remote clock for one being written (runTree.ts markFreshWrites): a test that lays a
 * finished checkpoint and lists it at once says when it was written, as a run would have, with `writtenAgo`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Sets the mtime (and atime) of `dir` and everything below it, symlinks themselves included, to `ms` before now. */
export function writtenAgo(dir: string, ms = 60_000): void {
  const when = new Date(Date.now() - ms);
  const walk = (p: string): void => {
    const st = fs.lstatSync(p);
    if (st.isSymbolicLink()) return fs.lutimesSync(p, when, when);
    if (st.isDirectory()) for (const n of fs.readdirSync(p)) walk(path.join(p, n));
    fs.utimesSync(p, when, when);
  };
  walk(dir);
}
