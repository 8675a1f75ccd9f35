/**
 * What a download asks of its source, whichever it is: the name its records keep, and the executor its remote
 * commands (the checkpoint's listing and stats, range hashes, small-file batches) run through. A host's is the pool's
 * shared connection (idempotent commands, retried once on a dropped connection); a pod container's is its PodExecutor
 * (kubectl exec on this machine).
 */
import type { Executor } from '../remote';
import type { TransferSource } from './types';

/** The host's or the cluster's name (a download's records and lock name it). */
export function sourceName(source: TransferSource): string {
  return source.kind === 'pod' ? source.name : source.host.name;
}

/** The executor the download's remote commands run through. */
export function sourceExecutor(source: TransferSource): Executor {
  return source.kind === 'pod' ? source.executor : source.pool.executor(source.host, { idempotent: true });
}
