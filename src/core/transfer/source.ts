/**
 * What a download asks of its source, whichever it is: the name its records keep, and the executor its remote
 * commands (the checkpoint's listing and stats, range hashes, small-file batches) run through. A host's is the pool's
 * shared connection (idempotent commands, retried once on a dropped connection); a pod container's is its PodExecutor
 * (kubectl exec on this machine).
 */
import type { Executor } from '../remote';
import type { ConnectionPool, PoolHost } from '../ssh/pool';
import type { HostConfig, TargetRef } from '../types';
import type { PodTransferSource, TransferSource } from './types';

/** The host's or the cluster's name (a download's records and lock name it). */
export function sourceName(source: TransferSource): string {
  return source.kind === 'pod' ? source.name : source.host.name;
}

/** The executor the download's remote commands run through. */
export function sourceExecutor(source: TransferSource): Executor {
  return source.kind === 'pod' ? source.executor : source.pool.executor(source.host, { idempotent: true });
}

/**
 * The source of a download from `target` of the host or cluster `name`, the one place each face makes it: a cluster's
 * pod container through kubectl exec (core.podTransferSource), else the host's pool entry.
 */
export function transferSourceFor(
  core: { podTransferSource(name: string, target: TargetRef): PodTransferSource | undefined; host(name: string): HostConfig },
  pool: ConnectionPool,
  resolve: (host: HostConfig) => PoolHost,
  name: string,
  target: TargetRef,
): TransferSource {
  return core.podTransferSource(name, target) ?? { pool, host: resolve(core.host(name)), target };
}
