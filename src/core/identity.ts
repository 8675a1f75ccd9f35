/**
 * The identity of a host, a target and a run: stable keys that name the same thing in the tree (its node ids), in a
 * metrics panel and on the wire (a run's key), in a restored panel and across reloads. Defined here, in the core;
 * the tree's node ids (tree/nodes.ts) and the run references of the wire (runRef.ts) are built from them.
 *
 * A key is the path from the host down, its parts joined by NUL (which no host name, target or path holds), so a
 * key is never a prefix of an unrelated one (tree/nodes.ts isAtOrBelow relies on it).
 */
import { formatTarget, type TargetRef } from './types';

export const ID_SEP = '\u0000';

export function hostId(hostName: string): string {
  return `h${ID_SEP}${hostName}`;
}

export function targetId(hostName: string, target: TargetRef): string {
  return `${hostId(hostName)}${ID_SEP}t${ID_SEP}${formatTarget(target)}`;
}

export function runId(hostName: string, target: TargetRef, runPath: string): string {
  return `${targetId(hostName, target)}${ID_SEP}r${ID_SEP}${runPath}`;
}
