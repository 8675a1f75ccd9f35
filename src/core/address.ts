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
import { parsePodTargetId, podTarget } from './kube/names';

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
  decodeParts(parts, ['host', 'target'], bad);
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

/**
 * Check every part of a split address and read the run and checkpoint parts (those after `labels`) back from how
 * `ls` shows names (display.ts parseShownName), in place. The parts named by `labels` are configured or Kubernetes
 * names, taken as typed.
 */
function decodeParts(parts: string[], labels: readonly string[], bad: (why: string) => RemoteRunsError): void {
  parts.forEach((p, i) => {
    const label = labels[i] ?? 'run or checkpoint';
    if (p === '') throw bad(`the ${label} part is empty`);
    if (i < labels.length) return;
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
}

/** The first part of an address: the host or cluster it names (to choose the parser before parsing). */
export function addressHost(s: string): string {
  return s.split('/')[0];
}

/**
 * A CLI address on a Kubernetes cluster (docs/kubernetes.md "Targets and addresses"):
 * `CLUSTER/NAMESPACE/JOB/RANK[:CONTAINER]/RUN/CHECKPOINT`, NAMESPACE left out when the cluster's entry names one, any
 * tail left out to name less (`ls` of a cluster, a namespace, a job, a pod). A container may also be named exactly
 * by its target, `CLUSTER/pod:NAMESPACE/POD:CONTAINER/RUN/CHECKPOINT` (how the CLI prints a place it found, and a
 * way to reach a pod by its own name whatever its job). Which pod and container the parts mean is decided against
 * the cluster's listing (kube/podAddress.ts resolveClusterAddress).
 */
export interface ClusterAddress {
  host: string;
  /** The `pod:NAMESPACE/POD:CONTAINER` form: the container named exactly. */
  target?: TargetRef;
  namespace?: string;
  job?: string;
  /** `master-0`, `workers-0-2`, `3`, `rank3`, or a pod's own name. */
  rank?: string;
  /** After `:` in the rank part. */
  container?: string;
  /** Every part after the container: the run (its name or path) and the checkpoint. */
  segments?: string[];
}

const CLUSTER_FORMS = 'CLUSTER[/NAMESPACE[/JOB[/RANK[:CONTAINER][/RUN[/CHECKPOINT]]]]] (NAMESPACE left out when the cluster\'s entry names one), e.g. prod/ml-team/bert/worker-0:pytorch/bert-run/latest, or CLUSTER/pod:NAMESPACE/POD:CONTAINER/RUN/CHECKPOINT';

/**
 * Parse a CLI address on a cluster whose entry names a namespace (`namespaced`: the address has no namespace part)
 * or not. Throws RemoteRunsError('bad-address') saying what is wrong and the forms expected.
 */
export function parseClusterAddress(s: string, namespaced: boolean): ClusterAddress {
  const bad = (why: string): RemoteRunsError =>
    new RemoteRunsError('bad-address', `Bad address ${JSON.stringify(s)}: ${why}. Expected ${CLUSTER_FORMS}`, { address: s });
  if (s.includes('\0')) throw bad('it contains a NUL byte');
  const text = s.endsWith('/') ? s.slice(0, -1) : s;
  if (text === '') throw bad('it is empty');
  const raw = text.split('/');
  if (raw.length > 1 && raw[1].startsWith('pod:')) {
    // pod:NAMESPACE/POD:CONTAINER spans two parts: a Kubernetes name holds no `/` (kube/names.ts).
    if (raw.length < 3) throw bad('a pod target is pod:NAMESPACE/POD:CONTAINER');
    const parts = [raw[0], `${raw[1]}/${raw[2]}`, ...raw.slice(3)];
    decodeParts(parts, ['cluster', 'target'], bad);
    let target: TargetRef;
    try {
      target = podTarget(parsePodTargetId(parts[1].slice('pod:'.length)));
    } catch (e) {
      throw bad((e as Error).message);
    }
    return { host: parts[0], target, ...(parts.length > 2 ? { segments: parts.slice(2) } : {}) };
  }
  const labels = namespaced ? ['cluster', 'job', 'rank'] : ['cluster', 'namespace', 'job', 'rank'];
  decodeParts(raw, labels, bad);
  const at = (label: string): string | undefined => {
    const i = labels.indexOf(label);
    return i >= 0 ? raw[i] : undefined;
  };
  const address: ClusterAddress = { host: raw[0] };
  const namespace = at('namespace');
  if (namespace !== undefined) address.namespace = namespace;
  const job = at('job');
  if (job !== undefined) address.job = job;
  const rank = at('rank');
  if (rank !== undefined) {
    const colon = rank.indexOf(':');
    if (colon === 0) throw bad('the rank part is empty before ":"');
    if (colon > 0) {
      if (colon === rank.length - 1) throw bad('the container after ":" is empty');
      address.container = rank.slice(colon + 1);
      address.rank = rank.slice(0, colon);
    } else address.rank = rank;
  }
  if (raw.length > labels.length) address.segments = raw.slice(labels.length);
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
