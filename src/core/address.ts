/**
 * CLI addresses: `host`, `host/target`, `host/target/run`, `host/target/run/checkpoint`, where target is
 * spelled `host`, `pct:200` or `docker:name` (see parseTarget). The host part is a configured host's name. A run's
 * name may be a path (`expA/seed1`: a run is named by its shortest unique path below its root), so what follows the
 * target is kept as `segments`, and which of them are the run and which the checkpoint is decided against the
 * listing (service.ts resolveRun).
 */
import { RemoteRunsError, formatTarget, parseTarget, type TargetRef } from './types';

export interface Address {
  host: string;
  target?: TargetRef;
  /** The third part (the run, when its name holds no `/`). */
  run?: string;
  /** The fourth part (the checkpoint, when the run's name holds no `/`). */
  checkpoint?: string;
  /** Every part after the target. */
  segments?: string[];
}

const FORMS = 'host[/target[/run[/checkpoint]]], e.g. gpu1/pct:200/llama-7b/step_1000 or gpu1/host/expA/seed1/latest (target: host, pct:<vmid> or docker:<name>)';

/**
 * Parse a CLI address. Run and checkpoint names may hold anything but `/` (spaces, quotes, unicode…);
 * one trailing `/` is allowed. Throws RemoteRunsError('bad-address') saying what is wrong and what is expected.
 */
export function parseAddress(s: string): Address {
  const bad = (why: string): RemoteRunsError =>
    new RemoteRunsError('bad-address', `Bad address ${JSON.stringify(s)}: ${why}. Expected ${FORMS}`, { address: s });
  if (s.includes('\0')) throw bad('it contains a NUL byte');
  const text = s.endsWith('/') ? s.slice(0, -1) : s;
  if (text === '') throw bad('it is empty');
  const parts = text.split('/');
  const labels = ['host', 'target'];
  parts.forEach((p, i) => {
    const label = labels[i] ?? 'run or checkpoint';
    if (p === '') throw bad(`the ${label} part is empty`);
    // `.` and `..` would walk out of the run directory once joined into a path.
    if (i >= 2 && (p === '.' || p === '..')) throw bad(`"${p}" is not a ${label} name`);
  });
  const [host, targetSpec, run, checkpoint] = parts;
  const address: Address = { host };
  if (targetSpec !== undefined) {
    try {
      address.target = parseTarget(targetSpec);
    } catch (e) {
      const hint = /^\d+$/.test(targetSpec) ? ` (did you mean pct:${targetSpec}?)` : '';
      throw bad(`${(e as Error).message}${hint}`);
    }
  }
  if (run !== undefined) address.run = run;
  if (checkpoint !== undefined) address.checkpoint = checkpoint;
  if (parts.length > 2) address.segments = parts.slice(2);
  return address;
}

/** The inverse of parseAddress: `host/target/run/checkpoint`, as far as the parts are present. */
export function formatAddress(a: Address): string {
  const parts = [a.host];
  if (a.target) {
    parts.push(formatTarget(a.target));
    if (a.segments) parts.push(...a.segments);
    else if (a.run !== undefined) {
      parts.push(a.run);
      if (a.checkpoint !== undefined) parts.push(a.checkpoint);
    }
  }
  return parts.join('/');
}
