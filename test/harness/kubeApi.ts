/**
 * A Kubernetes API server stand-in for integration tests, which the real `kubectl` on PATH talks to as to a real
 * cluster: HTTPS on 127.0.0.1 (a CA made at start with `openssl`, nothing committed), bearer tokens for identity,
 * per-identity RBAC rules, discovery, pods list/get/watch with label and field selectors, `pods/log` (with follow)
 * and `pods/exec` over the WebSocket channel protocol kubectl 1.32 speaks, each container's commands run in a
 * sandbox folder seen as `/workspace` (the pct/docker shims' mechanism: test/shims/shim-enter.sh).
 *
 * What kubectl 1.32 sends for `exec` (seen in `requests`): a GET upgrade to `websocket` offering only
 * `v5.channel.k8s.io` (client-go `NewWebSocketExecutor`), and, only when that upgrade is refused, a POST upgrade to
 * `SPDY/3.1` offering v5 down to `channel.k8s.io` (`NewFallbackExecutor`, `httpstream.IsUpgradeFailure`).
 *
 * What it is not: no SPDY (an allowed exec never reaches it; a refused one gets the same refusal on its SPDY retry), no
 * writes to objects (create/patch/delete answer 405), no OpenAPI (`/openapi/*` 404, which kubectl tolerates for
 * get/logs/exec), no TTY. Pods come from the test (`setPods`, `updatePod`) and change only when it says so.
 *
 * Texts and shapes are the real components' (each cited where it is made):
 * - 401/403 bodies: apiserver `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`
 *   (`forbiddenMessage`) and apimachinery `pkg/api/errors/errors.go` (`NewForbidden`, `NewNotFound`, `NewBadRequest`).
 * - exec checks: `pkg/registry/core/pod/strategy.go` (`streamLocation`: container not valid, no host assigned), the
 *   kubelet's `pkg/kubelet/kubelet_pods.go` (`GetExec`: `container not found ("x")`, sent as plain text by
 *   `streaming.WriteError`), `staging/src/k8s.io/kubelet/pkg/cri/streaming/remotecommand/exec.go` (`ServeExec`: the
 *   Status on channel 3), containerd `internal/cri/server/streaming.go` (`error executing command [argv], exit code N`)
 *   and `container_execsync.go` (`failed to exec in container: failed to start exec "ID": …`).
 * - logs: the kubelet's CRI log files (`pkg/kubelet/kuberuntime/logs/logs.go`: `TIMESTAMP STREAM P|F TEXT` lines,
 *   under `/var/log/pods/NS_POD_UID/CONTAINER/RESTARTS.log`, `pkg/kubelet/kuberuntime/helpers.go`) and
 *   `validateContainerLogStatus` in `kubelet_pods.go` for the refusals.
 * - exec authorization as Kubernetes 1.35 does it (`AuthorizePodWebsocketUpgradeCreatePermission`, on by default):
 *   the WebSocket upgrade (a GET) needs `get` and `create` on `pods/exec`, the SPDY POST `create`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket as NetSocket, type Socket } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import { CHANNEL, PROTOCOL_V4, PROTOCOL_V5, acceptWebSocket, isWebSocketUpgrade, offeredProtocols, type WsConnection } from './kubeWebSocket';
import { SHIMS_DIR, ensureWorkspaceMountPoint } from '../shims/shimState';

/* eslint-disable @typescript-eslint/no-explicit-any */
/** A Pod object as the API serves it (only what the tests set is required). */
export interface KubePod {
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: any };
  spec: { containers: { name: string; image?: string; [k: string]: any }[]; nodeName?: string; [k: string]: any };
  status?: { phase?: string; containerStatuses?: any[]; [k: string]: any };
  [k: string]: any;
}

/** One RBAC rule: verbs on resources (`pods`, `pods/exec`, `pods/log`, `*`) in namespaces (all if absent). */
export interface KubeRule {
  verbs: string[];
  resources: string[];
  apiGroups?: string[];
  namespaces?: string[];
}

export interface KubeIdentity {
  /** The user name RBAC messages show. */
  name: string;
  token: string;
  /** What this user may do; `'all'` for a cluster admin. */
  rules: KubeRule[] | 'all';
}

/** How a kubeconfig user authenticates. */
export type KubeconfigUser =
  | { token: string }
  /** A client-go exec credential plugin (a small script) that prints an ExecCredential with this token. */
  | { execToken: string }
  /** An exec plugin that writes `stderr` and exits 1. */
  | { execFails: string }
  /** An exec plugin whose command does not exist. */
  | { execMissing: true };

export interface KubeconfigContext {
  name: string;
  namespace?: string;
  user?: KubeconfigUser;
  /** `api` (default): this server; `closed`: a port on 127.0.0.1 nobody listens on. */
  server?: 'api' | 'closed';
  /** Make the context name a cluster or user entry that the file does not have. */
  missing?: 'cluster' | 'user';
}

/** One exec process the server started (live until it exits). */
export interface KubeExecProcess {
  namespace: string;
  pod: string;
  container: string;
  argv: string[];
  pid: number;
  /** Whether kubectl's connection is still there. */
  connected: boolean;
}

/** A container's test-side handle: its sandbox and its log. */
export interface KubeContainer {
  /** What the container's commands see as `/workspace`. */
  workspace: string;
  /** The CRI log file of the current instance. */
  logFile: string;
  /** Append `text` to the container's log (stdout), as the runtime does: one CRI line per line, `P` for a tail without newline. */
  log(text: string, stream?: 'stdout' | 'stderr'): void;
  /** The container ends with `exitCode`: its status says terminated, `logs -f` ends, exec says container not found. */
  terminate(exitCode: number): void;
  /** The container restarts: its log becomes the `--previous` one, restartCount + 1, state running again. */
  restart(): void;
  /** Make the image one without `sh` (a distroless image): exec of `sh`/`bash` fails as runc does. */
  withoutShell(): void;
}

export interface KubeApi {
  port: number;
  /** `https://127.0.0.1:PORT` */
  server: string;
  caFile: string;
  dir: string;
  /** The admin's token (identity `admin`, every rule). */
  adminToken: string;
  /** Replace every pod: pods not in `list` are deleted, the others added or modified (namespaces follow from them, plus `default`). */
  setPods(pods: KubePod[]): void;
  /** Change one pod (its whole object); watchers get MODIFIED (or ADDED/DELETED when a selector's answer changes). */
  updatePod(pod: KubePod): void;
  deletePod(namespace: string, name: string): void;
  pod(namespace: string, name: string): KubePod | undefined;
  container(namespace: string, pod: string, container: string): KubeContainer;
  /** Objects of other kinds for list/get (batch/v1 jobs, kubeflow.org/v1 pytorchjobs…), keyed `group/version/resource`. */
  setObjects(groupVersionResource: string, items: any[]): void;
  addIdentity(identity: KubeIdentity): void;
  /**
   * The API server can no longer reach the kubelet of `nodeName` (`true`) or can again: an exec into a pod on it is
   * answered as the apiserver's proxy answers a failed dial (apimachinery `pkg/util/proxy/upgradeaware.go` tryUpgrade:
   * `error dialing backend: …`, sent by the responder as a 500 Status, apiserver responsewriters ErrorNegotiated).
   */
  kubeletUnreachable(nodeName: string, unreachable?: boolean): void;
  /** The exec processes still alive, with their argv. */
  running(): KubeExecProcess[];
  /** The exec processes that have ended, with how (`signal` is e.g. `SIGPIPE` for one whose reader went away). */
  ended(): (KubeExecProcess & { code: number | null; signal: NodeJS.Signals | null })[];
  /** Request lines seen (method, path and query), for tests that ask what kubectl sent. */
  requests: string[];
  writeKubeconfig(spec: { contexts: KubeconfigContext[]; current?: string; file?: string }): string;
  stop(): Promise<void>;
}

interface GroupVersion {
  group: string;
  version: string;
  resources: { name: string; kind: string; namespaced: boolean; verbs: string[]; shortNames?: string[]; categories?: string[] }[];
}

const READ = ['get', 'list', 'watch'];
/** Discovery of the groups the fixtures use (each resource as its project's CRD or the core API declares it). */
const GROUPS: GroupVersion[] = [
  {
    group: 'batch',
    version: 'v1',
    resources: [{ name: 'jobs', kind: 'Job', namespaced: true, verbs: READ, categories: ['all'] }],
  },
  {
    // kubeflow/training-operator manifests/base/crds/kubeflow.org_pytorchjobs.yaml
    group: 'kubeflow.org',
    version: 'v1',
    resources: [{ name: 'pytorchjobs', kind: 'PyTorchJob', namespaced: true, verbs: READ }],
  },
  {
    // kubernetes-sigs/jobset config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml
    group: 'jobset.x-k8s.io',
    version: 'v1alpha2',
    resources: [{ name: 'jobsets', kind: 'JobSet', namespaced: true, verbs: READ }],
  },
  {
    // kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_workloads.yaml
    group: 'kueue.x-k8s.io',
    version: 'v1beta1',
    resources: [{ name: 'workloads', kind: 'Workload', namespaced: true, verbs: READ }],
  },
];

const CORE_RESOURCES = [
  { name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: READ, shortNames: ['ns'] },
  { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: READ, shortNames: ['po'], categories: ['all'] },
  { name: 'pods/exec', singularName: '', namespaced: true, kind: 'PodExecOptions', verbs: ['create', 'get'] },
  { name: 'pods/log', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get'] },
];

interface ContainerState {
  namespace: string;
  pod: string;
  name: string;
  dir: string;
  rootfs: string;
  workspace: string;
  restarts: number;
  noShell: boolean;
}

interface PodEvent {
  rv: number;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  old?: KubePod;
  pod: KubePod;
}

interface Watcher {
  matches(pod: KubePod): boolean;
  send(type: string, pod: KubePod): void;
}

interface ExecRecord extends KubeExecProcess {
  child: ChildProcess;
  /** The read ends of the process's stdout and stderr pipes. */
  stdout: NetSocket;
  stderr: NetSocket;
  exit?: { code: number | null; signal: NodeJS.Signals | null };
}

function status(code: number, reason: string, message: string, details?: Record<string, unknown>): Record<string, unknown> {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

/**
 * Start the server. `dir` (default a new temp folder) holds the CA, the sandboxes and the logs. `onDisconnect` says
 * what an exec process meets when kubectl's connection ends (it is never killed): `close-pipes` (default) its
 * stdin ends and its stdout/stderr lose their reader, so its next write gets SIGPIPE; `stop-reading` its output
 * is no longer read, so it blocks once the pipe buffer is full.
 */
export async function startKubeApi(options: { dir?: string; onDisconnect?: 'close-pipes' | 'stop-reading' } = {}): Promise<KubeApi> {
  const onDisconnect = options.onDisconnect ?? 'close-pipes';
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'rr-kubeapi-'));
  fs.mkdirSync(dir, { recursive: true });
  const tls = makeTls(path.join(dir, 'pki'));
  ensureWorkspaceMountPoint();
  const mnt = path.join(dir, '.mnt');
  fs.mkdirSync(mnt, { recursive: true });

  const identities = new Map<string, KubeIdentity>();
  const adminToken = randomBytes(16).toString('hex');
  identities.set(adminToken, { name: 'admin', token: adminToken, rules: 'all' });

  let rv = 1000;
  const pods = new Map<string, KubePod>();
  const history: PodEvent[] = [];
  const watchers = new Set<Watcher>();
  const containers = new Map<string, ContainerState>();
  const objects = new Map<string, any[]>();
  const execs = new Set<ExecRecord>();
  const requests: string[] = [];
  const sockets = new Set<Duplex>();
  const openResponses = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const startedAt = new Date();
  const key = (ns: string, name: string): string => `${ns}/${name}`;

  const normalise = (p: KubePod): KubePod => {
    const pod: KubePod = JSON.parse(JSON.stringify(p));
    pod.apiVersion = 'v1';
    pod.kind = 'Pod';
    pod.metadata.namespace ??= 'default';
    pod.metadata.uid ??= cryptoUid(pod.metadata.namespace, pod.metadata.name);
    pod.metadata.creationTimestamp ??= startedAt.toISOString().replace(/\.\d+Z$/, 'Z');
    pod.metadata.resourceVersion = String(++rv);
    pod.status ??= {};
    pod.status.phase ??= 'Pending';
    return pod;
  };
  const notify = (ev: PodEvent): void => {
    history.push(ev);
    for (const w of watchers) {
      const type = eventFor(ev, w.matches);
      if (type) w.send(type, ev.pod);
    }
  };
  const putPod = (p: KubePod): void => {
    const pod = normalise(p);
    const k = key(pod.metadata.namespace!, pod.metadata.name);
    const old = pods.get(k);
    pods.set(k, pod);
    notify({ rv: rv, type: old ? 'MODIFIED' : 'ADDED', old, pod });
  };

  const containerState = (ns: string, podName: string, name: string): ContainerState => {
    const k = `${ns}/${podName}/${name}`;
    let c = containers.get(k);
    if (!c) {
      const cdir = path.join(dir, 'pods', `${ns}_${podName}`, name);
      const rootfs = path.join(cdir, 'rootfs');
      const workspace = path.join(rootfs, 'workspace');
      fs.mkdirSync(workspace, { recursive: true });
      c = { namespace: ns, pod: podName, name, dir: cdir, rootfs, workspace, restarts: 0, noShell: false };
      containers.set(k, c);
    }
    return c;
  };
  /** Nodes whose kubelet the apiserver cannot dial (kubeletUnreachable). */
  const deadKubelets = new Set<string>();
  const logPath = (c: ContainerState, restarts = c.restarts): string => path.join(c.dir, `${restarts}.log`);

  /** The container's status entry in its pod, made if the test gave none. */
  const changeContainerStatus = (ns: string, podName: string, name: string, change: (s: any) => void): void => {
    const pod = pods.get(key(ns, podName));
    if (!pod) throw new Error(`kubeApi: no pod ${ns}/${podName}`);
    const next: KubePod = JSON.parse(JSON.stringify(pod));
    next.status ??= {};
    next.status.containerStatuses ??= [];
    let s = next.status.containerStatuses.find((x: any) => x.name === name);
    if (!s) {
      s = { name, ready: true, restartCount: 0, state: { running: { startedAt: new Date().toISOString() } } };
      next.status.containerStatuses.push(s);
    }
    change(s);
    putPod(next);
  };

  const containerRunning = (pod: KubePod, name: string): boolean => {
    const s = pod.status?.containerStatuses?.find((x: any) => x.name === name);
    if (s) return Boolean(s.state?.running);
    return pod.status?.phase === 'Running';
  };

  const api: KubeApi = {
    port: 0,
    server: '',
    caFile: tls.caFile,
    dir,
    adminToken,
    requests,
    setPods(list) {
      const keep = new Set(list.map((p) => key(p.metadata.namespace ?? 'default', p.metadata.name)));
      for (const old of [...pods.values()]) if (!keep.has(key(old.metadata.namespace!, old.metadata.name))) api.deletePod(old.metadata.namespace!, old.metadata.name);
      for (const p of list) putPod(p);
    },
    updatePod: (p) => putPod(p),
    deletePod(ns, name) {
      const old = pods.get(key(ns, name));
      if (!old) return;
      pods.delete(key(ns, name));
      rv++;
      notify({ rv, type: 'DELETED', pod: { ...old, metadata: { ...old.metadata, resourceVersion: String(rv) } } });
    },
    pod: (ns, name) => pods.get(key(ns, name)),
    container(ns, podName, name) {
      const c = containerState(ns, podName, name);
      return {
        workspace: c.workspace,
        get logFile() {
          return logPath(c);
        },
        log(text, stream = 'stdout') {
          const lines = text.split('\n');
          const tail = lines.pop()!;
          let out = '';
          const ts = (): string => criTimestamp(new Date());
          for (const l of lines) out += `${ts()} ${stream} F ${l}\n`;
          if (tail) out += `${ts()} ${stream} P ${tail}\n`;
          fs.appendFileSync(logPath(c), out);
        },
        terminate(exitCode) {
          changeContainerStatus(ns, podName, name, (s) => {
            const startedAt = s.state?.running?.startedAt ?? new Date().toISOString();
            s.ready = false;
            s.state = {
              terminated: { exitCode, reason: exitCode === 0 ? 'Completed' : 'Error', startedAt, finishedAt: new Date().toISOString(), containerID: s.containerID },
            };
          });
        },
        restart() {
          changeContainerStatus(ns, podName, name, (s) => {
            s.lastState = s.state?.terminated ? { terminated: s.state.terminated } : { terminated: { exitCode: 137, reason: 'Error' } };
            s.restartCount = (s.restartCount ?? 0) + 1;
            s.state = { running: { startedAt: new Date().toISOString() } };
            s.ready = true;
          });
          c.restarts++;
        },
        withoutShell() {
          c.noShell = true;
        },
      };
    },
    setObjects(gvr, items) {
      objects.set(gvr, items.map((o) => ({ ...o, metadata: { namespace: 'default', resourceVersion: String(++rv), ...o.metadata } })));
    },
    addIdentity(identity) {
      identities.set(identity.token, identity);
    },
    kubeletUnreachable(nodeName, unreachable = true) {
      if (unreachable) deadKubelets.add(nodeName);
      else deadKubelets.delete(nodeName);
    },
    running: () => [...execs].filter((e) => !e.exit).map(({ child: _c, exit: _e, stdout: _o, stderr: _r, ...rest }) => ({ ...rest })),
    ended: () => [...execs].filter((e) => e.exit).map(({ child: _c, exit, stdout: _o, stderr: _r, ...rest }) => ({ ...rest, ...exit! })),
    writeKubeconfig: (spec) => writeKubeconfig(api, spec),
    stop: async () => {
      for (const t of timers) clearInterval(t);
      for (const e of execs) {
        try {
          // The whole session's group (it leads one, see startExec), so a command's children go with it.
          if (e.child.pid) process.kill(-e.child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      for (const r of openResponses) r.destroy();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };

  // ---- authentication and authorization ----
  const identify = (req: IncomingMessage): KubeIdentity | undefined => {
    const m = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''));
    return m ? identities.get(m[1].trim()) : undefined;
  };
  interface Attributes {
    verb: string;
    resource: string;
    subresource?: string;
    namespace?: string;
    name?: string;
    apiGroup: string;
  }
  const allowed = (who: KubeIdentity, a: Attributes): boolean => {
    if (who.rules === 'all') return true;
    const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    return who.rules.some(
      (r) =>
        (r.verbs.includes('*') || r.verbs.includes(a.verb)) &&
        (r.resources.includes('*') || r.resources.includes(res)) &&
        (r.apiGroups ?? ['']).some((g) => g === '*' || g === a.apiGroup) &&
        (!r.namespaces || (a.namespace !== undefined && r.namespaces.includes(a.namespace))),
    );
  };
  /** apiserver responsewriters/errors.go forbiddenMessage + apimachinery NewForbidden. */
  const forbidden = (who: KubeIdentity, a: Attributes): Record<string, unknown> => {
    const res = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    const scope = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope';
    const why = `User "${who.name}" cannot ${a.verb} resource "${res}" in API group "${a.apiGroup}" ${scope}`;
    const qualified = a.apiGroup ? `${a.resource}.${a.apiGroup}` : a.resource;
    const message = a.name ? `${qualified} "${a.name}" is forbidden: ${why}` : `${qualified} is forbidden: ${why}`;
    return status(403, 'Forbidden', message, { ...(a.name ? { name: a.name } : {}), ...(a.apiGroup ? { group: a.apiGroup } : {}), kind: a.resource });
  };

  // ---- responses ----
  const json = (res: ServerResponse, code: number, body: unknown): void => {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-cache, private' });
    res.end(text);
  };
  const notFoundStatus = (resource: string, name: string, group = ''): Record<string, unknown> =>
    status(404, 'NotFound', `${group ? `${resource}.${group}` : resource} "${name}" not found`, { name, ...(group ? { group } : {}), kind: resource });
  const badRequest = (message: string): Record<string, unknown> => status(400, 'BadRequest', message);

  const wantsTable = (req: IncomingMessage): boolean => /as=Table/.test(String(req.headers.accept ?? ''));

  const podTable = (list: KubePod[], listRv: string): Record<string, unknown> => ({
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: listRv },
    // The apiserver's pod columns (pkg/printers/internalversion/printers.go AddHandlers, podColumnDefinitions); the
    // cells a simplified printPod: reason, else a waiting or terminated container's reason, else the phase.
    columnDefinitions: [
      { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0 },
      { name: 'Ready', type: 'string', format: '', description: 'The aggregate readiness state of this pod for accepting traffic.', priority: 0 },
      { name: 'Status', type: 'string', format: '', description: 'The aggregate status of the containers in this pod.', priority: 0 },
      { name: 'Restarts', type: 'string', format: '', description: 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.', priority: 0 },
      { name: 'Age', type: 'string', format: '', description: 'CreationTimestamp', priority: 0 },
      { name: 'IP', type: 'string', format: '', description: 'IP address allocated to the pod.', priority: 1 },
      { name: 'Node', type: 'string', format: '', description: 'Name of the node this pod is scheduled on.', priority: 1 },
    ],
    rows: list.map((p) => {
      const cs: any[] = p.status?.containerStatuses ?? [];
      const ready = cs.filter((s) => s.ready).length;
      const restarts = cs.reduce((n, s) => n + (s.restartCount ?? 0), 0);
      const waiting = cs.find((s) => s.state?.waiting?.reason)?.state.waiting.reason;
      const term = cs.find((s) => s.state?.terminated?.reason)?.state.terminated.reason;
      return {
        cells: [p.metadata.name, `${ready}/${p.spec.containers.length}`, p.status?.reason ?? waiting ?? term ?? p.status?.phase ?? 'Unknown', restarts, age(p.metadata.creationTimestamp), p.status?.podIP ?? '<none>', p.spec.nodeName ?? '<none>'],
        object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: p.metadata },
      };
    }),
  });

  // ---- pods: list, get, watch ----
  const servePods = (req: IncomingMessage, res: ServerResponse, url: URL, ns: string | undefined, name: string | undefined): void => {
    let labelSel: (l: Record<string, string>) => boolean;
    let fieldSel: (p: KubePod) => boolean;
    try {
      labelSel = parseLabelSelector(url.searchParams.get('labelSelector') ?? '');
      fieldSel = parseFieldSelector(url.searchParams.get('fieldSelector') ?? '');
    } catch (e) {
      json(res, 400, badRequest((e as Error).message));
      return;
    }
    const matches = (p: KubePod): boolean => (!ns || p.metadata.namespace === ns) && labelSel(p.metadata.labels ?? {}) && fieldSel(p);
    const watch = ['1', 'true'].includes(url.searchParams.get('watch') ?? '');
    if (name && !watch) {
      const p = pods.get(key(ns!, name));
      if (!p) return json(res, 404, notFoundStatus('pods', name));
      return json(res, 200, wantsTable(req) ? podTable([p], p.metadata.resourceVersion) : p);
    }
    const nameMatch = (p: KubePod): boolean => matches(p) && (!name || p.metadata.name === name);
    if (!watch) {
      const items = [...pods.values()].filter(nameMatch).sort((a, b) => key(a.metadata.namespace!, a.metadata.name).localeCompare(key(b.metadata.namespace!, b.metadata.name)));
      if (wantsTable(req)) return json(res, 200, podTable(items, String(rv)));
      return json(res, 200, { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items });
    }
    // A watch: one JSON event per line over a chunked response (apiserver endpoints/handlers/watch.go).
    const table = wantsTable(req);
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    openResponses.add(res);
    const w: Watcher = {
      matches: nameMatch,
      send: (type, pod) => {
        res.write(`${JSON.stringify({ type, object: table ? podTable([pod], pod.metadata.resourceVersion) : pod })}\n`);
      },
    };
    const from = url.searchParams.get('resourceVersion');
    if (!from || from === '0') {
      for (const p of pods.values()) if (nameMatch(p)) w.send('ADDED', p);
    } else {
      for (const ev of history) {
        const type = ev.rv > Number(from) ? eventFor(ev, nameMatch) : undefined;
        if (type) w.send(type, ev.pod);
      }
    }
    watchers.add(w);
    const timeout = Number(url.searchParams.get('timeoutSeconds') ?? 0);
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      watchers.delete(w);
      openResponses.delete(res);
      if (timer) clearTimeout(timer);
    };
    if (timeout > 0) timer = setTimeout(() => res.end(), timeout * 1000);
    res.on('close', done);
  };

  // ---- pods/log ----
  const serveLog = (res: ServerResponse, url: URL, ns: string, name: string): void => {
    const pod = pods.get(key(ns, name));
    if (!pod) return json(res, 404, notFoundStatus('pods', name));
    const names = pod.spec.containers.map((c) => c.name);
    let cname = url.searchParams.get('container') ?? '';
    if (!cname) {
      // apiserver pkg/registry/core/pod/strategy.go LogLocation
      if (names.length !== 1) return json(res, 400, badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`));
      cname = names[0];
    }
    if (!names.includes(cname)) return json(res, 400, badRequest(`container ${cname} is not valid for pod ${name}`));
    if (!pod.spec.nodeName) return json(res, 400, badRequest(`pod ${name} does not have a host assigned`));
    const c = containerState(ns, name, cname);
    const previous = ['1', 'true'].includes(url.searchParams.get('previous') ?? '');
    const cs = pod.status?.containerStatuses?.find((s: any) => s.name === cname);
    // kubelet pkg/kubelet/kubelet_pods.go validateContainerLogStatus
    if (previous) {
      if (!cs?.lastState?.terminated || c.restarts === 0) {
        return json(res, 400, badRequest(`previous terminated container "${cname}" in pod "${name}" not found`));
      }
    } else if (cs?.state?.waiting) {
      return json(res, 400, badRequest(`container "${cname}" in pod "${name}" is waiting to start: ${cs.state.waiting.reason ?? 'ContainerCreating'}`));
    }
    const file = previous ? logPath(c, c.restarts - 1) : logPath(c);
    const timestamps = ['1', 'true'].includes(url.searchParams.get('timestamps') ?? '');
    const follow = !previous && ['1', 'true'].includes(url.searchParams.get('follow') ?? '');
    const sinceTime = url.searchParams.get('sinceTime');
    const sinceSeconds = url.searchParams.get('sinceSeconds');
    const since = sinceTime ? Date.parse(sinceTime) : sinceSeconds ? Date.now() - Number(sinceSeconds) * 1000 : undefined;
    const tail = url.searchParams.has('tailLines') ? Number(url.searchParams.get('tailLines')) : undefined;
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked', 'Cache-Control': 'no-cache, private' });
    res.flushHeaders();
    let offset = 0;
    let pending = '';
    let atLineStart = true;
    const render = (line: string): string | undefined => {
      // CRI format: TIMESTAMP STREAM TAG CONTENT (kubelet kuberuntime/logs/logs.go parseCRILog)
      const m = /^(\S+) (stdout|stderr) ([PF]) (.*)$/.exec(line);
      if (!m) return undefined;
      if (since !== undefined && Date.parse(m[1]) < since) return undefined;
      const text = m[3] === 'F' ? `${m[4]}\n` : m[4];
      // The timestamp goes only in front of a line's first part (kubelet logs.go ReadLogs: isNewLine).
      const stamp = timestamps && atLineStart ? `${m[1]} ` : '';
      atLineStart = m[3] === 'F';
      return `${stamp}${text}`;
    };
    const readNew = (): string => {
      let size = 0;
      try {
        size = fs.statSync(file).size;
      } catch {
        return '';
      }
      if (size <= offset) return '';
      const fd = fs.openSync(file, 'r');
      const b = Buffer.alloc(size - offset);
      fs.readSync(fd, b, 0, b.length, offset);
      fs.closeSync(fd);
      offset = size;
      pending += b.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      return lines.map(render).filter((x) => x !== undefined).join('');
    };
    let first = readNew();
    if (tail !== undefined) {
      const parts = first.split(/(?<=\n)/);
      first = tail <= 0 ? '' : parts.slice(-tail).join('');
    }
    if (first) res.write(first);
    if (!follow) {
      res.end();
      return;
    }
    // Follow until the container is no longer running and everything written has been sent (the kubelet's
    // ReadLogs with Follow: it stops at EOF once the container has exited, kuberuntime/logs/logs.go).
    openResponses.add(res);
    const t = setInterval(() => {
      const more = readNew();
      if (more) res.write(more);
      const now = pods.get(key(ns, name));
      if (!now || !containerRunning(now, cname) || c.restarts > 0 && file !== logPath(c)) {
        const last = readNew();
        if (last) res.write(last);
        clearInterval(t);
        timers.delete(t);
        openResponses.delete(res);
        res.end();
      }
    }, 50);
    timers.add(t);
    res.on('close', () => {
      clearInterval(t);
      timers.delete(t);
      openResponses.delete(res);
    });
  };

  // ---- pods/exec ----
  /** The refusal of an exec before any stream is made, or undefined when it may start. */
  const execRefusal = (ns: string, name: string, cname: string): { code: number; body: Record<string, unknown> | string } | undefined => {
    const pod = pods.get(key(ns, name));
    if (!pod) return { code: 404, body: notFoundStatus('pods', name) };
    const names = pod.spec.containers.map((c) => c.name);
    // apiserver pkg/registry/core/pod/strategy.go streamLocation
    if (!cname) {
      if (names.length !== 1) return { code: 400, body: badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`) };
    } else if (!names.includes(cname)) {
      return { code: 400, body: badRequest(`container ${cname} is not valid for pod ${name}`) };
    }
    if (!pod.spec.nodeName) return { code: 400, body: badRequest(`pod ${name} does not have a host assigned`) };
    // The apiserver dials the kubelet (port 10250) before any stream: a dial that fails is a 500 Status, reason
    // Unknown (apimachinery errors.go ErrorToAPIStatus of a plain error).
    if (deadKubelets.has(pod.spec.nodeName)) return { code: 500, body: status(500, '', `error dialing backend: dial tcp 10.0.3.7:10250: connect: connection refused`) };
    // kubelet GetExec: only a running container is found; streaming.WriteError sends the text with a 500.
    if (!containerRunning(pod, cname || names[0])) return { code: 500, body: `container not found ("${cname || names[0]}")` };
    return undefined;
  };

  const startExec = (req: IncomingMessage, socket: Duplex, head: Buffer, url: URL, ns: string, name: string): void => {
    const cname = url.searchParams.get('container') || pods.get(key(ns, name))!.spec.containers[0].name;
    const argv = url.searchParams.getAll('command');
    const wantStdin = ['1', 'true'].includes(url.searchParams.get('stdin') ?? '');
    const offered = offeredProtocols(req);
    const protocol = offered.includes(PROTOCOL_V5) ? PROTOCOL_V5 : offered.includes(PROTOCOL_V4) ? PROTOCOL_V4 : undefined;
    if (!protocol) {
      rawResponse(socket, 400, 'text/plain', `unable to upgrade: no supported protocol in ${JSON.stringify(offered)}`);
      return;
    }
    const c = containerState(ns, name, cname);
    let ws: WsConnection | undefined;
    let rec: ExecRecord | undefined;
    const writeStatus = (body: Record<string, unknown>): void => {
      ws?.send(CHANNEL.error, Buffer.from(JSON.stringify(body)));
      ws?.close();
    };
    ws = acceptWebSocket(req, socket, head, protocol, {
      onMessage: (channel, data) => {
        if (!rec) return;
        if (channel === CHANNEL.stdin && wantStdin) {
          // Take no more from kubectl than the process reads (the socket's own backpressure then holds kubectl).
          if (rec.child.stdin && !rec.child.stdin.write(data)) socket.pause();
        }
        else if (channel === CHANNEL.close && data[0] === CHANNEL.stdin) rec.child.stdin?.end();
      },
      onEnd: () => {
        if (!rec) return;
        rec.connected = false;
        // The runtime's copy loops end with the connection: the process's stdin sees EOF and its stdout/stderr
        // pipes lose their reader, so it lives on until it next writes (SIGPIPE) or ends by itself. The process is
        // not killed (containerd internal/cri/server/container_execsync.go, the comment on execInContainer).
        rec.child.stdin?.destroy();
        if (onDisconnect === 'close-pipes') {
          rec.stdout.destroy();
          rec.stderr.destroy();
        } else {
          // The other reading of the runtime: its copy blocks on the dead stream, so the pipe fills and the process
          // blocks in its next write once the pipe buffer is full, for ever.
          rec.stdout.pause();
          rec.stderr.pause();
        }
      },
    });
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const shell = /^(?:\/usr)?(?:\/bin\/)?(?:ba)?sh$/;
    if (argv.length === 0) {
      writeStatus(status(500, 'InternalError', 'Internal error occurred: error executing command in container: failed to exec in container: failed to create exec: process args must not be empty', { causes: [{ message: 'error executing command in container: failed to exec in container: failed to create exec: process args must not be empty' }] }));
      return;
    }
    if (c.noShell && shell.test(argv[0])) {
      // containerd: failed to start exec "ID": OCI runtime exec failed (runc's text for a missing executable).
      const err = `error executing command in container: failed to exec in container: failed to start exec "${randomBytes(32).toString('hex')}": OCI runtime exec failed: exec failed: unable to start container process: exec: "${argv[0]}": executable file not found in $PATH: unknown`;
      writeStatus(status(500, 'InternalError', `Internal error occurred: ${err}`, { causes: [{ message: err }] }));
      return;
    }
    // stdout and stderr are real pipes, as the runtime's are (containerd's exec IO is FIFOs): Node's own stdio
    // 'pipe' is a socketpair, where a write after the reader closed with unread data fails with ECONNRESET and no
    // SIGPIPE, which no container process meets.
    const out = realPipe(dir);
    const err = realPipe(dir);
    // `detached`: the process leads a new session, as every process runc starts does (runc
    // libcontainer/nsenter/nsexec.c, stage-2 `runc:[2:INIT]` calls setsid() before it execs the command).
    const child = spawn('unshare', ['-rm', '/bin/sh', path.join(SHIMS_DIR, 'shim-enter.sh'), c.rootfs, mnt, ...argv], {
      detached: true,
      stdio: ['pipe', out.writeFd, err.writeFd],
      env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', HOSTNAME: name },
    });
    fs.closeSync(out.writeFd);
    fs.closeSync(err.writeFd);
    const stdout = new NetSocket({ fd: out.readFd, readable: true, writable: false });
    const stderr = new NetSocket({ fd: err.readFd, readable: true, writable: false });
    rec = { namespace: ns, pod: name, container: cname, argv, pid: child.pid ?? -1, connected: true, child, stdout, stderr };
    execs.add(rec);
    child.stdin!.on('error', () => undefined);
    // Reading from kubectl resumes once the process has taken what was written (see onMessage).
    child.stdin!.on('drain', () => socket.resume()).on('close', () => socket.resume());
    if (!wantStdin) child.stdin!.end();
    const pump = (stream: NodeJS.ReadableStream, channel: number): Promise<void> =>
      new Promise((resolve) => {
        stream.on('data', (d: Buffer) => {
          if (!rec!.connected || !ws) return;
          let full = false;
          for (let i = 0; i < d.length; i += 32 * 1024) full = !ws.send(channel, d.subarray(i, i + 32 * 1024));
          // Read no more than kubectl takes: the process blocks in write as it would behind a slow reader.
          if (full) {
            stream.pause();
            socket.once('drain', () => rec!.connected && stream.resume());
          }
        });
        stream.on('end', resolve);
        stream.on('close', resolve);
        stream.on('error', () => resolve());
      });
    const outs = Promise.all([pump(stdout, CHANNEL.stdout), pump(stderr, CHANNEL.stderr)]);
    child.on('exit', (code, signal) => {
      rec!.exit = { code, signal };
      void outs.then(() => {
        if (!rec!.connected) return;
        if (code === 0) writeStatus({ metadata: {}, status: 'Success' });
        else {
          const rc = code ?? 128 + (os.constants.signals[signal as NodeJS.Signals] ?? 0);
          writeStatus({
            metadata: {},
            status: 'Failure',
            message: `command terminated with non-zero exit code: error executing command [${argv.join(' ')}], exit code ${rc}`,
            reason: 'NonZeroExitCode',
            details: { causes: [{ reason: 'ExitCode', message: String(rc) }] },
          });
        }
      });
    });
  };

  const rawResponse = (socket: Duplex, code: number, type: string, body: string): void => {
    const text = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error' }[code] ?? 'Error';
    socket.end(`HTTP/1.1 ${code} ${text}\r\nContent-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  };

  // ---- routing ----
  const discovery = (path_: string): unknown => {
    if (path_ === '/version') {
      return { major: '1', minor: '32', gitVersion: 'v1.32.4', gitCommit: 'test', gitTreeState: 'clean', buildDate: startedAt.toISOString(), goVersion: 'go1.23', compiler: 'gc', platform: 'linux/amd64' };
    }
    if (path_ === '/api') {
      return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${api.port}` }] };
    }
    if (path_ === '/apis') {
      return {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: GROUPS.map((g) => ({ name: g.group, versions: [{ groupVersion: `${g.group}/${g.version}`, version: g.version }], preferredVersion: { groupVersion: `${g.group}/${g.version}`, version: g.version } })),
      };
    }
    if (path_ === '/api/v1') return { kind: 'APIResourceList', groupVersion: 'v1', resources: CORE_RESOURCES };
    for (const g of GROUPS) {
      if (path_ === `/apis/${g.group}/${g.version}`) {
        return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: `${g.group}/${g.version}`, resources: g.resources.map((r) => ({ ...r, singularName: r.kind.toLowerCase() })) };
      }
      if (path_ === `/apis/${g.group}`) {
        return { kind: 'APIGroup', apiVersion: 'v1', name: g.group, versions: [{ groupVersion: `${g.group}/${g.version}`, version: g.version }], preferredVersion: { groupVersion: `${g.group}/${g.version}`, version: g.version } };
      }
    }
    return undefined;
  };

  interface Route {
    attrs: Attributes;
    kind: 'pods' | 'namespaces' | 'log' | 'exec' | 'objects';
    gvr?: string;
  }
  const route = (method: string, url: URL): Route | undefined => {
    const p = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const watch = ['1', 'true'].includes(url.searchParams.get('watch') ?? '');
    const readVerb = (named: boolean): string => (watch ? 'watch' : named ? 'get' : 'list');
    const verb = (named: boolean): string => (method === 'GET' ? readVerb(named) : method === 'POST' ? 'create' : method.toLowerCase());
    if (p[0] === 'api' && p[1] === 'v1') {
      const rest = p.slice(2);
      if (rest[0] === 'namespaces' && rest.length === 1) return { kind: 'namespaces', attrs: { verb: verb(false), resource: 'namespaces', apiGroup: '' } };
      if (rest[0] === 'namespaces' && rest.length === 2 && method === 'GET') return { kind: 'namespaces', attrs: { verb: verb(true), resource: 'namespaces', name: rest[1], apiGroup: '' } };
      if (rest[0] === 'pods' && rest.length === 1) return { kind: 'pods', attrs: { verb: verb(false), resource: 'pods', apiGroup: '' } };
      if (rest[0] === 'namespaces' && rest[2] === 'pods') {
        const ns = rest[1];
        if (rest.length === 3) return { kind: 'pods', attrs: { verb: verb(false), resource: 'pods', namespace: ns, apiGroup: '' } };
        if (rest.length === 4) return { kind: 'pods', attrs: { verb: verb(true), resource: 'pods', namespace: ns, name: rest[3], apiGroup: '' } };
        if (rest.length === 5 && rest[4] === 'log') return { kind: 'log', attrs: { verb: 'get', resource: 'pods', subresource: 'log', namespace: ns, name: rest[3], apiGroup: '' } };
        if (rest.length === 5 && rest[4] === 'exec') return { kind: 'exec', attrs: { verb: method === 'GET' ? 'get' : 'create', resource: 'pods', subresource: 'exec', namespace: ns, name: rest[3], apiGroup: '' } };
      }
      return undefined;
    }
    if (p[0] === 'apis' && p.length >= 4) {
      const g = GROUPS.find((x) => x.group === p[1] && x.version === p[2]);
      if (!g) return undefined;
      const rest = p.slice(3);
      let ns: string | undefined;
      let resource: string;
      let name: string | undefined;
      if (rest[0] === 'namespaces' && rest.length >= 3) [ns, resource, name] = [rest[1], rest[2], rest[3]];
      else [resource, name] = [rest[0], rest[1]];
      if (!g.resources.some((r) => r.name === resource)) return undefined;
      return { kind: 'objects', gvr: `${g.group}/${g.version}/${resource}`, attrs: { verb: verb(Boolean(name)), resource, namespace: ns, name, apiGroup: g.group } };
    }
    return undefined;
  };

  const handle = (req: IncomingMessage, res: ServerResponse | undefined, upgrade?: { socket: Duplex; head: Buffer }): void => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    const method = req.method ?? 'GET';
    requests.push(`${method} ${url.pathname}${url.search}${upgrade ? ` (upgrade: ${String(req.headers.upgrade)}; protocols: ${String(req.headers['sec-websocket-protocol'] ?? req.headers['x-stream-protocol-version'] ?? '')})` : ''}`);
    const reply = (code: number, body: unknown): void => {
      if (res) return typeof body === 'string' ? (res.writeHead(code, { 'Content-Type': 'text/plain' }), void res.end(body)) : json(res, code, body);
      rawResponse(upgrade!.socket, code, typeof body === 'string' ? 'text/plain; charset=utf-8' : 'application/json', typeof body === 'string' ? body : JSON.stringify(body));
    };
    const who = identify(req);
    // Unknown or absent credentials: 401 (apiserver endpoints/handlers/responsewriters/errors.go, the unauthorized handler).
    if (!who) return reply(401, status(401, 'Unauthorized', 'Unauthorized'));
    const disc = method === 'GET' ? discovery(url.pathname) : undefined;
    if (disc) return reply(200, disc);
    const r = route(method, url);
    if (!r) return reply(404, status(404, 'NotFound', 'the server could not find the requested resource', { }));
    // Exec over WebSocket (a GET) needs `create` too (AuthorizePodWebsocketUpgradeCreatePermission).
    const checks = r.kind === 'exec' && r.attrs.verb === 'get' ? [r.attrs, { ...r.attrs, verb: 'create' }] : [r.attrs];
    for (const a of checks) if (!allowed(who, a)) return reply(403, forbidden(who, a));
    if (r.kind === 'exec') {
      const refusal = execRefusal(r.attrs.namespace!, r.attrs.name!, url.searchParams.get('container') ?? '');
      if (refusal) return reply(refusal.code, refusal.body);
      if (!upgrade || !isWebSocketUpgrade(req)) return reply(400, badRequest('the test API server speaks only the WebSocket exec protocol (v5.channel.k8s.io, v4.channel.k8s.io), not SPDY'));
      return startExec(req, upgrade.socket, upgrade.head, url, r.attrs.namespace!, r.attrs.name!);
    }
    if (upgrade) return reply(400, badRequest('upgrade not supported here'));
    if (method !== 'GET') return reply(405, status(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`));
    if (r.kind === 'pods') return servePods(req, res!, url, r.attrs.namespace, r.attrs.name);
    if (r.kind === 'log') return serveLog(res!, url, r.attrs.namespace!, r.attrs.name!);
    if (r.kind === 'namespaces') {
      const names = [...new Set(['default', ...[...pods.values()].map((p) => p.metadata.namespace!)])].sort();
      const item = (n: string): Record<string, unknown> => ({ kind: 'Namespace', apiVersion: 'v1', metadata: { name: n, uid: cryptoUid('ns', n), resourceVersion: '1', creationTimestamp: startedAt.toISOString().replace(/\.\d+Z$/, 'Z') }, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } });
      if (r.attrs.name) return names.includes(r.attrs.name) ? reply(200, item(r.attrs.name)) : reply(404, notFoundStatus('namespaces', r.attrs.name));
      return reply(200, { kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items: names.map(item) });
    }
    // Other kinds: list/get of what the test set.
    const [group, version, resource] = r.gvr!.split('/');
    const g = GROUPS.find((x) => x.group === group)!;
    const kind = g.resources.find((x) => x.name === resource)!.kind;
    const all = (objects.get(r.gvr!) ?? []).filter((o) => !r.attrs.namespace || o.metadata.namespace === r.attrs.namespace).map((o) => ({ apiVersion: `${group}/${version}`, kind, ...o }));
    if (r.attrs.name) {
      const o = all.find((x) => x.metadata.name === r.attrs.name);
      return o ? reply(200, o) : reply(404, notFoundStatus(resource, r.attrs.name, group));
    }
    let labelSel: (l: Record<string, string>) => boolean;
    try {
      labelSel = parseLabelSelector(url.searchParams.get('labelSelector') ?? '');
    } catch (e) {
      return reply(400, badRequest((e as Error).message));
    }
    return reply(200, { apiVersion: `${group}/${version}`, kind: `${kind}List`, metadata: { resourceVersion: String(rv) }, items: all.filter((o) => labelSel(o.metadata.labels ?? {})) });
  };

  // A request line and headers of up to 1 MiB, as the apiserver takes them (apiserver pkg/server/secure_serving.go
  // and the kubelet's pkg/kubelet/server/server.go set MaxHeaderBytes: 1 << 20, Go's DefaultMaxHeaderBytes): an exec's
  // command travels in its URL (`command=` per argument), and the listing script's is about 21 KB encoded, past
  // Node's default of 16 KiB, which answers 431 and leaves kubectl saying only `Error from server:`.
  const server: Server = createHttpsServer({ key: fs.readFileSync(tls.keyFile), cert: fs.readFileSync(tls.certFile), maxHeaderSize: 1 << 20 }, (req, res) => handle(req, res));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => handle(req, undefined, { socket, head }));
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api.port = (server.address() as { port: number }).port;
  api.server = `https://127.0.0.1:${api.port}`;
  return api;
}

/**
 * What a watcher whose selector is `matches` sees of a change, as the apiserver's watch filter says it
 * (apiserver pkg/storage/cacher/cache_watcher.go convertToWatchEvent): an object that starts matching is ADDED,
 * one that stops matching is DELETED, one that matched before and after is MODIFIED, anything else nothing.
 */
function eventFor(ev: PodEvent, matches: (p: KubePod) => boolean): PodEvent['type'] | undefined {
  if (ev.type === 'DELETED') return matches(ev.pod) ? 'DELETED' : undefined;
  const was = ev.old ? matches(ev.old) : false;
  const is = matches(ev.pod);
  return is ? (was ? 'MODIFIED' : 'ADDED') : was ? 'DELETED' : undefined;
}

/** A kubeconfig file for `spec`: one cluster per context (this server with its CA, or a closed port), one user each. */
function writeKubeconfig(api: KubeApi, spec: { contexts: KubeconfigContext[]; current?: string; file?: string }): string {
  const file = spec.file ?? path.join(api.dir, `kubeconfig-${randomBytes(4).toString('hex')}`);
  const clusters: unknown[] = [];
  const users: unknown[] = [];
  const contexts: unknown[] = [];
  for (const c of spec.contexts) {
    const server = c.server === 'closed' ? `https://127.0.0.1:${closedPort()}` : api.server;
    if (c.missing !== 'cluster') clusters.push({ name: c.name, cluster: { server, 'certificate-authority': api.caFile } });
    const u = c.user ?? { token: api.adminToken };
    if (c.missing !== 'user') users.push({ name: c.name, user: userEntry(api.dir, c.name, u) });
    contexts.push({
      name: c.name,
      context: { cluster: c.missing === 'cluster' ? `${c.name}-missing` : c.name, user: c.missing === 'user' ? `${c.name}-missing` : c.name, ...(c.namespace ? { namespace: c.namespace } : {}) },
    });
  }
  const doc = { apiVersion: 'v1', kind: 'Config', clusters, users, contexts, 'current-context': spec.current ?? spec.contexts[0]?.name ?? '', preferences: {} };
  fs.writeFileSync(file, JSON.stringify(doc, null, 2), { mode: 0o600 });
  return file;
}

/** A kubeconfig user entry; exec plugins are small sh scripts (client.authentication.k8s.io/v1 ExecCredential). */
function userEntry(dir: string, name: string, u: KubeconfigUser): Record<string, unknown> {
  if ('token' in u) return { token: u.token };
  const exec = (command: string): Record<string, unknown> => ({
    exec: { apiVersion: 'client.authentication.k8s.io/v1', command, args: [], interactiveMode: 'Never', provideClusterInfo: false },
  });
  if ('execMissing' in u) return exec(path.join(dir, 'plugins', `${name}-no-such-plugin`));
  const script = path.join(dir, 'plugins', `${name}-credential`);
  fs.mkdirSync(path.dirname(script), { recursive: true });
  if ('execToken' in u) {
    const cred = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: u.execToken } };
    fs.writeFileSync(script, `#!/bin/sh\ncat <<'EOF'\n${JSON.stringify(cred)}\nEOF\n`, { mode: 0o755 });
  } else {
    fs.writeFileSync(script, `#!/bin/sh\nprintf '%s\\n' ${shQuote(u.execFails)} >&2\nexit 1\n`, { mode: 0o755 });
  }
  return exec(script);
}

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** An anonymous-like pipe: a FIFO opened at both ends (the reader first, non-blocking) and unlinked at once. */
function realPipe(dir: string): { readFd: number; writeFd: number } {
  const fifo = path.join(dir, `.fifo-${randomBytes(6).toString('hex')}`);
  execFileSync('mkfifo', ['-m', '600', fifo]);
  const readFd = fs.openSync(fifo, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  const writeFd = fs.openSync(fifo, fs.constants.O_WRONLY);
  fs.unlinkSync(fifo);
  return { readFd, writeFd };
}

/** A port on 127.0.0.1 that nobody listens on (bound, then closed at once). */
function closedPort(): number {
  const out = execFileSync(process.execPath, ['-e', "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"], { encoding: 'utf8' });
  return Number(out.trim());
}

/** A CA and a server certificate for 127.0.0.1, made with openssl, valid for a day. */
function makeTls(pki: string): { caFile: string; keyFile: string; certFile: string } {
  fs.mkdirSync(pki, { recursive: true });
  const f = (n: string): string => path.join(pki, n);
  const run = (args: string[]): void => void execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run(['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '1', '-subj', '/CN=remote-runs-test-ca']);
  run(['req', ...ec, '-keyout', f('apiserver.key'), '-out', f('apiserver.csr'), '-subj', '/CN=kube-apiserver']);
  fs.writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  run(['x509', '-req', '-in', f('apiserver.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('apiserver.crt'), '-days', '1', '-extfile', f('ext.cnf')]);
  return { caFile: f('ca.crt'), keyFile: f('apiserver.key'), certFile: f('apiserver.crt') };
}

/** Label selectors as apimachinery pkg/labels/selector.go parses them: =, ==, !=, in, notin, exists, !exists. */
export function parseLabelSelector(text: string): (labels: Record<string, string>) => boolean {
  const tests: ((l: Record<string, string>) => boolean)[] = [];
  const parts = text.match(/(?:[^,(]+|\([^)]*\))+/g) ?? [];
  for (const raw of parts) {
    const part = raw.trim();
    if (!part) continue;
    let m: RegExpExecArray | null;
    if ((m = /^([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part))) {
      const [, k, op, vs] = m;
      const set = vs.split(',').map((s) => s.trim());
      tests.push(op === 'in' ? (l) => k in l && set.includes(l[k]) : (l) => !(k in l) || !set.includes(l[k]));
    } else if ((m = /^([\w./-]+)\s*(==|=|!=)\s*([\w.-]*)$/.exec(part))) {
      const [, k, op, v] = m;
      tests.push(op === '!=' ? (l) => l[k] !== v : (l) => l[k] === v);
    } else if ((m = /^!([\w./-]+)$/.exec(part))) {
      const k = m[1];
      tests.push((l) => !(k in l));
    } else if ((m = /^([\w./-]+)$/.exec(part))) {
      const k = m[1];
      tests.push((l) => k in l);
    } else {
      throw new Error(`unable to parse requirement: found '${part}', expected: identifier`);
    }
  }
  return (l) => tests.every((t) => t(l));
}

/** The pod field selectors the apiserver supports (pkg/registry/core/pod/strategy.go ToSelectableFields), the ones tests use. */
const POD_FIELDS: Record<string, (p: KubePod) => string> = {
  'metadata.name': (p) => p.metadata.name,
  'metadata.namespace': (p) => p.metadata.namespace ?? '',
  'spec.nodeName': (p) => p.spec.nodeName ?? '',
  'spec.restartPolicy': (p) => p.spec.restartPolicy ?? '',
  'spec.schedulerName': (p) => p.spec.schedulerName ?? '',
  'spec.serviceAccountName': (p) => p.spec.serviceAccountName ?? '',
  'status.phase': (p) => p.status?.phase ?? '',
  'status.podIP': (p) => p.status?.podIP ?? '',
  'status.nominatedNodeName': (p) => p.status?.nominatedNodeName ?? '',
};

export function parseFieldSelector(text: string): (pod: KubePod) => boolean {
  const tests: ((p: KubePod) => boolean)[] = [];
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (!part) continue;
    const m = /^([^=!]+)(==|=|!=)(.*)$/.exec(part);
    if (!m) throw new Error(`invalid selector: '${text}'; can't understand '${part}'`);
    const [, field, op, value] = m;
    const get = POD_FIELDS[field];
    if (!get) throw new Error(`field label not supported: ${field}`);
    tests.push(op === '!=' ? (p) => get(p) !== value : (p) => get(p) === value);
  }
  return (p) => tests.every((t) => t(p));
}

/** RFC 3339 with nanoseconds, as the CRI log lines carry (time.RFC3339Nano). */
function criTimestamp(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, (_, ms: string) => `.${ms}000000Z`);
}

function age(created: string | undefined): string {
  if (!created) return '<unknown>';
  const s = Math.max(0, Math.floor((Date.now() - Date.parse(created)) / 1000));
  return s < 120 ? `${s}s` : s < 7200 ? `${Math.floor(s / 60)}m` : `${Math.floor(s / 3600)}h`;
}

function cryptoUid(a: string, b: string): string {
  const h = createHash('sha1').update(`${a}/${b}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
