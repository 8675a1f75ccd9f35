/**
 * `kubectl get pods -o json` and `kubectl get namespaces -o json` read defensively: the JSON is the edge where a
 * cluster's answer becomes typed values. A field of the wrong type is left out (never trusted), a pod without a valid
 * namespace, name or container names is reported in `problems` and not used (a Kubernetes API server accepts only
 * those names: kube/names.ts), and an answer that is not a List at all is `protocol`. Field paths follow the core/v1
 * Pod (kubernetes `staging/src/k8s.io/api/core/v1/types.go`: PodStatus, ContainerStatus, PodCondition,
 * PodSchedulingGate).
 */
import { RemoteRunsError } from '../types';
import { isDns1123Label, isDns1123Subdomain } from './names';

export interface OwnerRef {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export type ContainerRunState = 'waiting' | 'running' | 'terminated' | 'unknown';

export interface ContainerInfo {
  name: string;
  image?: string;
  ready: boolean;
  restarts: number;
  state: ContainerRunState;
  /** `state.waiting.reason` or `state.terminated.reason` (ContainerCreating, ImagePullBackOff, OOMKilled, Error…). */
  reason?: string;
  message?: string;
  exitCode?: number;
  /** `lastState.terminated`: why the previous run ended (a restarted container). */
  last?: { reason?: string; exitCode?: number };
  /** Env values set literally in the pod spec (RANK, PET_NODE_RANK, WORLD_SIZE, MASTER_ADDR…); valueFrom ones are not read. */
  env: Record<string, string>;
}

export interface PodInfo {
  namespace: string;
  name: string;
  uid?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** The owner reference with `controller: true`. */
  controller?: OwnerRef;
  /** `metadata.deletionTimestamp` is set: the pod is being deleted. */
  deleting: boolean;
  phase: string;
  /** `status.reason` (e.g. `Evicted`, `DeadlineExceeded`) and `status.message`. */
  reason?: string;
  message?: string;
  nodeName?: string;
  schedulingGates: string[];
  conditions: PodCondition[];
  containers: ContainerInfo[];
  initContainers: ContainerInfo[];
  /** `metadata.creationTimestamp`, as written. */
  created?: string;
}

/** Read `kubectl get pods -o json` (a v1 List or PodList). */
export function parsePodList(json: string | Buffer): { pods: PodInfo[]; problems: string[] } {
  const items = listItems(json, 'pods');
  const pods: PodInfo[] = [];
  const problems: string[] = [];
  items.forEach((item, i) => {
    const r = parsePod(item);
    if (typeof r === 'string') problems.push(`item ${i}: ${r}; left out`);
    else pods.push(r);
  });
  return { pods, problems };
}

/** Read `kubectl get namespaces -o json`: the names, in the order listed (a name that is not one is reported). */
export function parseNamespaceList(json: string | Buffer): { namespaces: { name: string; phase?: string }[]; problems: string[] } {
  const namespaces: { name: string; phase?: string }[] = [];
  const problems: string[] = [];
  listItems(json, 'namespaces').forEach((item, i) => {
    const name = str(obj(obj(item)?.metadata)?.name);
    if (name === undefined || !isDns1123Label(name)) {
      problems.push(`item ${i}: no valid namespace name (${shown(name)}); left out`);
      return;
    }
    const phase = str(obj(obj(item)?.status)?.phase);
    namespaces.push(phase ? { name, phase } : { name });
  });
  return { namespaces, problems };
}

/** The `items` of a List; anything else is the API server answering what we do not understand. */
export function listItems(json: string | Buffer, what: string): unknown[] {
  let data: unknown;
  try {
    data = JSON.parse(typeof json === 'string' ? json : json.toString('utf8'));
  } catch (e) {
    throw new RemoteRunsError('protocol', `kubectl get ${what} printed something that is not JSON (${(e as Error).message})`);
  }
  const items = obj(data)?.items;
  if (!Array.isArray(items)) throw new RemoteRunsError('protocol', `kubectl get ${what} printed JSON without an items list (kind ${shown(str(obj(data)?.kind))})`);
  return items;
}

/** One Pod object, or why it cannot be used. */
export function parsePod(item: unknown): PodInfo | string {
  const o = obj(item);
  const meta = obj(o?.metadata);
  const spec = obj(o?.spec);
  const status = obj(o?.status);
  const namespace = str(meta?.namespace);
  const name = str(meta?.name);
  if (namespace === undefined || !isDns1123Label(namespace)) return `not a namespace name: ${shown(namespace)}`;
  if (name === undefined || !isDns1123Subdomain(name)) return `not a pod name: ${shown(name)}`;
  const specContainers = arr(spec?.containers).map(obj);
  const names = specContainers.map((c) => str(c?.name));
  const bad = names.find((n) => n === undefined || !isDns1123Label(n));
  if (names.length === 0 || bad !== undefined || names.some((n) => n === undefined)) return `pod ${namespace}/${name} has no valid container names (${names.map(shown).join(', ') || 'none'})`;
  const controller = arr(meta?.ownerReferences).map(obj).find((r) => r?.controller === true);
  const pod: PodInfo = {
    namespace,
    name,
    labels: strMap(meta?.labels),
    annotations: strMap(meta?.annotations),
    deleting: str(meta?.deletionTimestamp) !== undefined,
    phase: str(status?.phase) ?? 'Unknown',
    schedulingGates: arr(spec?.schedulingGates).map((g) => str(obj(g)?.name)).filter((g): g is string => g !== undefined),
    conditions: arr(status?.conditions).flatMap((c) => {
      const type = str(obj(c)?.type);
      const st = str(obj(c)?.status);
      if (type === undefined || st === undefined) return [];
      return [{ type, status: st, ...opt('reason', str(obj(c)?.reason)), ...opt('message', str(obj(c)?.message)) }];
    }),
    containers: containers(specContainers, arr(status?.containerStatuses)),
    initContainers: containers(arr(spec?.initContainers).map(obj), arr(status?.initContainerStatuses)),
  };
  const uid = str(meta?.uid);
  if (uid) pod.uid = uid;
  const created = str(meta?.creationTimestamp);
  if (created) pod.created = created;
  const reason = str(status?.reason);
  if (reason) pod.reason = reason;
  const message = str(status?.message);
  if (message) pod.message = message;
  const nodeName = str(spec?.nodeName);
  if (nodeName) pod.nodeName = nodeName;
  if (controller) {
    const kind = str(controller.kind);
    const ownerName = str(controller.name);
    if (kind && ownerName) pod.controller = { apiVersion: str(controller.apiVersion) ?? '', kind, name: ownerName, ...opt('uid', str(controller.uid)) };
  }
  return pod;
}

/** Spec containers with their statuses (by name; a status for no spec container is ignored). */
function containers(spec: (Record<string, unknown> | undefined)[], statuses: unknown[]): ContainerInfo[] {
  const byName = new Map<string, Record<string, unknown>>();
  for (const s of statuses.map(obj)) {
    const n = str(s?.name);
    if (n !== undefined && s) byName.set(n, s);
  }
  return spec.flatMap((c) => {
    const name = str(c?.name);
    if (name === undefined || !isDns1123Label(name)) return [];
    const s = byName.get(name);
    const state = obj(s?.state);
    const waiting = obj(state?.waiting);
    const running = obj(state?.running);
    const terminated = obj(state?.terminated);
    const lastTerminated = obj(obj(s?.lastState)?.terminated);
    const info: ContainerInfo = {
      name,
      ready: s?.ready === true,
      restarts: nonNegative(s?.restartCount),
      state: waiting ? 'waiting' : running ? 'running' : terminated ? 'terminated' : 'unknown',
      env: {},
    };
    const image = str(c?.image);
    if (image) info.image = image;
    const detail = waiting ?? terminated;
    const reason = str(detail?.reason);
    if (reason) info.reason = reason;
    const message = str(detail?.message);
    if (message) info.message = message;
    const exitCode = terminated?.exitCode;
    if (typeof exitCode === 'number' && Number.isInteger(exitCode)) info.exitCode = exitCode;
    if (lastTerminated) {
      info.last = { ...opt('reason', str(lastTerminated.reason)), ...(typeof lastTerminated.exitCode === 'number' ? { exitCode: lastTerminated.exitCode } : {}) };
    }
    for (const e of arr(c?.env).map(obj)) {
      const k = str(e?.name);
      const v = str(e?.value);
      if (k !== undefined && v !== undefined) info.env[k] = v;
    }
    return [info];
  });
}

function obj(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function strMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, x] of Object.entries(obj(v) ?? {})) if (typeof x === 'string') out[k] = x;
  return out;
}

function nonNegative(v: unknown): number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0;
}

function opt<K extends string>(key: K, v: string | undefined): { [P in K]?: string } {
  return (v === undefined ? {} : { [key]: v }) as { [P in K]?: string };
}

/** A short, safe rendering of an untrusted name for problems. */
function shown(v: string | undefined): string {
  if (v === undefined) return 'missing';
  return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
}
