/**
 * A failure of the local file system during a download, as the RemoteRunsError the user sees, with the path: a full
 * disk says so and that the bytes written are kept; a read-only file system or a folder not ours to write is a
 * permission kind; a path where a part is a file is `not-a-directory`. Shared by the main thread and the transfer
 * worker threads (which write too).
 */
import { localFs as fs } from '../util/localFs';
import * as path from 'node:path';
import { RemoteRunsError, isRemoteRunsError } from '../types';
import { displayName } from '../../shared/display';
import { hasLoneSurrogate } from '../util/nameBytes';

export function localError(e: unknown, what: string, where?: string): RemoteRunsError {
  if (isRemoteRunsError(e)) return e;
  const err = e as NodeJS.ErrnoException;
  const code = err.code;
  const at = where ?? err.path;
  const detail = { ...(code ? { code } : {}), ...(at ? { path: at } : {}) };
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new RemoteRunsError('disk-full', `${what}: the disk is full. What was written is kept; free some space and download again to continue.`, detail);
  }
  if (code === 'EROFS') return new RemoteRunsError('permission-denied', `${what}: ${at ?? 'the destination'} is on a read-only file system`, detail);
  if (code === 'EACCES' || code === 'EPERM') return new RemoteRunsError('permission-denied', `${what}: permission denied${at ? ` (${at})` : ''}`, detail);
  // mkdir -p over a file: ENOTDIR below it, EEXIST at it.
  if (code === 'ENOTDIR' || (code === 'EEXIST' && err.syscall === 'mkdir')) {
    return new RemoteRunsError('not-a-directory', `${what}: ${at ?? 'a part of the path'} is a file, not a folder`, detail);
  }
  // A file system that holds only UTF-8 names (or normalises them) refuses a name with other bytes: EILSEQ on Linux
  // (vfat, exfat, ntfs3 and the like; ZFS with utf8only), EINVAL from some FUSE and network file systems. Too long:
  // ENAMETOOLONG. Refused with the name, never written under another one.
  if (code === 'EILSEQ' || code === 'ENAMETOOLONG' || (code === 'EINVAL' && at !== undefined && hasLoneSurrogate(at))) {
    const why = code === 'ENAMETOOLONG' ? 'a name in it is too long for the local file system' : 'the local file system cannot hold a name in it (it holds bytes that are not UTF-8)';
    return new RemoteRunsError('local-name', `${what}: ${at !== undefined ? `${displayName(at)}: ` : ''}${why}; nothing was written under another name`, detail);
  }
  return new RemoteRunsError('protocol', `${what}: ${err.message}`, detail);
}

/**
 * `mkdir -p` whose failure names its real cause: Node's recursive mkdir reports ENOENT on a read-only file system,
 * so on ENOENT the first missing folder is created alone, which fails with the true code (EROFS, EACCES, ENOTDIR).
 */
export async function makeFolders(dir: string, what: string): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true });
    return;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw localError(e, what, dir);
    let missing = dir;
    while (path.dirname(missing) !== missing && !(await exists(path.dirname(missing)))) missing = path.dirname(missing);
    try {
      await fs.mkdir(missing);
    } catch (inner) {
      throw localError(inner, what, missing);
    }
    throw localError(e, what, dir);
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.stat(p).then(
    () => true,
    () => false,
  );
}
