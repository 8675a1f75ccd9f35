/** Run identities on the wire and their stable keys (the same ids the tree gives its run nodes). */
import type { RunRefWire } from '../shared/metricsProtocol';
import type { Run, TargetRef } from './types';
import { formatTarget } from './types';
import { runId } from './identity';

/** The run as the protocol and a restored panel carry it. */
export function toRunRef(hostName: string, target: TargetRef, run: Run): RunRefWire {
  return {
    hostName,
    target: { kind: target.kind, id: target.id },
    runPath: run.path,
    runName: run.name,
    metrics: [...run.metrics],
    // The chart marks checkpoints on its step axis: one without a step (an alias, final weights, an epoch- or
    // save-numbered one) has no place there and is shown in the tree instead.
    checkpoints: run.checkpoints.flatMap((c) => (c.step !== null ? [{ step: c.step, name: c.name, path: c.path }] : [])),
  };
}

/** The run's key (identity.ts runId): the same as its tree node's id. */
export function runKeyOf(ref: RunRefWire): string {
  return runId(ref.hostName, ref.target, ref.runPath);
}

/** `host/pct:200`, for legends and quick picks. */
export function whereOf(ref: RunRefWire): string {
  return `${ref.hostName}/${formatTarget(ref.target)}`;
}
