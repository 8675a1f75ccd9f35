/**
 * A failure of the local file system during a download, as the RemoteRunsError the user sees: a full disk says so
 * and that the bytes written are kept. Shared by the main thread and the transfer worker threads (which write too).
 */
import { RemoteRunsError, isRemoteRunsError } from '../types';

export function localError(e: unknown, what: string): RemoteRunsError {
  if (isRemoteRunsError(e)) return e;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new RemoteRunsError('disk-full', `${what}: the disk is full. What was written is kept; free some space and download again to continue.`, { code });
  }
  if (code === 'EACCES' || code === 'EPERM') return new RemoteRunsError('permission-denied', `${what}: permission denied`, { code });
  return new RemoteRunsError('protocol', `${what}: ${(e as Error).message}`, code ? { code } : {});
}
