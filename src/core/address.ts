/**
 * CLI addresses: `host`, `host/target`, `host/target/run`, `host/target/run/checkpoint`, where target is
 * spelled `host`, `pct:200` or `docker:name` (see parseTarget). The host part is a configured host's name. A run's
 * name may be a path (`expA/seed1`: a run is named by its shortest unique path below its root), so what follows the
 * target is kept as `segments`, and which of them are the run and which the checkpoint is decided against the
 * listing (service.ts resolveRun).
 *
 * A run or checkpoint part is written as `ls` shows the name (display.ts: displayName and its inverse parseShownName,
 * one escaping for both): `\\` is a backslash, `\xNN` a control byte or a byte that is not UTF-8 (0x80–0xff),
 * `\uNNNN` a C1 or bidi control. So `gpu1/host/badutf8\xff\xfe/step_1` names the folder whose name ends in the
 * bytes 0xFF 0xFE, and `gpu1/host/badutf8\\xff\\xfe/step_1` the one literally named with backslashes. A part
 * without a backslash means itself, as it always did. The host and target parts are configured names, taken as typed.
 */
import { RemoteRunsError, formatTarget, parseTarget, type TargetRef } from './types';
import { displayName, parseShownName } from '../shared/display';
import { hasLoneSurrogate } from './util/nameBytes';

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
    if (i < 2) return;
    // Names are typed as they are shown (displayName): read the escapes back into the name's own characters and bytes.
    let name: string;
    try {
      name = parseShownName(p);
    } catch (e) {
      throw bad(`in the ${label} part, ${(e as Error).message}`);
    }
    if (name.includes('\0')) throw bad(`the ${label} part holds a NUL byte, which no name can`);
    if (name.includes('/')) throw bad(`the ${label} part holds a "/", which no name can`);
    if (hasLoneSurrogate(name, false)) throw bad(`the ${label} part holds a lone surrogate that is no byte (a byte that is not UTF-8 is written \\x80 to \\xff)`);
    // `.` and `..` would walk out of the run directory once joined into a path.
    if (name === '.' || name === '..') throw bad(`"${p}" is not a ${label} name`);
    parts[i] = name;
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

/** The inverse of parseAddress: `host/target/run/checkpoint`, as far as the parts are present, names as `ls` shows them. */
export function formatAddress(a: Address): string {
  const parts = [a.host];
  if (a.target) {
    parts.push(formatTarget(a.target));
    if (a.segments) parts.push(...a.segments.map(displayName));
    else if (a.run !== undefined) {
      parts.push(displayName(a.run));
      if (a.checkpoint !== undefined) parts.push(displayName(a.checkpoint));
    }
  }
  return parts.join('/');
}
