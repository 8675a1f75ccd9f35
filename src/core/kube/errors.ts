/**
 * kubectl's failures named: its stderr and exit status become the one RemoteRunsError kind that says the cause, with
 * kubectl's own text kept (message and `detail.kubectl`). Each rule cites where the text is made; the texts are
 * kubectl 1.32's (test/integration/kubectlErrors.test.ts runs the real kubectl for every case that needs no server;
 * the server's answers are copied from the apiserver and kubelet sources named beside each rule).
 *
 * Kinds (docs/error-kinds.md): `kube-config`, `credential-plugin`, `auth-failed` (401), `forbidden` (RBAC, with the
 * verb and resource denied), `container-missing` (pod or container not found), `container-stopped` (pod not
 * scheduled, container not started, pod completed), `unreachable` (refused, DNS, timeout, TLS), `exec-refused`,
 * `command-failed` (no `sh` in the image, or a failure none of these name). `detail.cause` says which case of a kind.
 */
import { RemoteRunsError, type ClusterConfig, type ErrorKind, type ExecResult } from '../types';
import type { PodContainer } from './names';
import { fenceEnd } from '../shell/portable';

/** Which case of its kind an error is: one per cause the issue names, never two folded into one. */
export type KubeCause =
  | 'no-server'
  | 'kubeconfig-missing'
  | 'kubeconfig-unreadable'
  | 'context-missing'
  | 'no-user'
  | 'plugin-missing'
  | 'plugin-failed'
  | 'unauthorized'
  | 'forbidden'
  | 'pod-not-found'
  | 'container-not-found'
  | 'pod-not-scheduled'
  | 'container-not-running'
  | 'pod-completed'
  | 'refused'
  | 'dns'
  | 'timeout'
  | 'tls'
  | 'unreachable'
  | 'exec-refused'
  | 'no-shell'
  | 'other';

export interface KubeFailureContext {
  cluster?: Pick<ClusterConfig, 'name' | 'context' | 'kubeconfig'>;
  pod?: PodContainer;
}

/**
 * klog lines kubectl writes beside its message (`E1205 06:30:52.922075   16216 memcache.go:265] "Unhandled Error"
 * err="…"`, k8s.io/klog/v2 klog.go formatHeader), one per retry, some spanning lines as `err=<` … ` >`: they repeat
 * the message and are dropped, the message kubectl ends with is kept.
 */
const KLOG_HEADER = /^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [^\]]+\] /;

/** kubectl's stderr without its klog lines, trimmed. */
export function kubectlText(stderr: Buffer | string): string {
  const lines = (typeof stderr === 'string' ? stderr : stderr.toString('utf8')).split('\n');
  const kept: string[] = [];
  let inBlock = false;
  for (const line of lines) {
    if (inBlock) {
      if (line === ' >') inBlock = false;
      continue;
    }
    if (KLOG_HEADER.test(line)) {
      if (/=<$/.test(line)) inBlock = true;
      continue;
    }
    kept.push(line);
  }
  return kept.join('\n').trim();
}

/**
 * The line kubectl adds when the command it ran in the container exited non-zero: `command terminated with exit
 * code N` (client-go util/exec CodeExitError.Error(); kubectl pkg/cmd/util/helpers.go checkErr prints it for a
 * utilexec.ExitError and exits with N). Its presence means the command ran: the failure is the command's own.
 */
const EXIT_LINE = /(?:^|\n)command terminated with exit code (\d+)\s*$/;

/** The command's own stderr, without kubectl's closing `command terminated with exit code N` line. */
export function commandOwnStderr(stderr: Buffer): Buffer {
  const text = stderr.toString('latin1');
  const m = EXIT_LINE.exec(text);
  return m ? stderr.subarray(0, m.index + (text[m.index] === '\n' ? 1 : 0)) : stderr;
}

/**
 * A failed `kubectl exec` in a pod container (TargetRef kind `pod`): undefined when the command itself ran and
 * failed (FENCE was printed, `shellNoise` set by unfence, or kubectl's exit line closes stderr), so it is judged as
 * every remote command is; otherwise kubectl's own failure, named.
 */
export function podExecFailure(pod: PodContainer, result: ExecResult, cluster?: KubeFailureContext['cluster']): RemoteRunsError | undefined {
  if (result.code === 0 || result.shellNoise !== undefined) return undefined;
  if (fenceEnd(result.stdout) >= 0) return undefined;
  if (EXIT_LINE.test(result.stderr.toString('latin1'))) return undefined;
  return kubectlFailure(result, { pod, ...(cluster ? { cluster } : {}) });
}

interface Rule {
  test: RegExp;
  make(m: RegExpExecArray, c: KubeFailureContext, text: string): { kind: ErrorKind; cause: KubeCause; message: string; detail?: Record<string, string | number> };
}

const where = (c: KubeFailureContext): string => (c.cluster ? ` (cluster ${c.cluster.name}, context ${JSON.stringify(c.cluster.context)})` : '');
/** `ml-team/bert-0` from the context, else the name kubectl gave, else `the pod`. */
const podName = (c: KubeFailureContext, fallback: string): string => (c.pod ? `${c.pod.namespace}/${c.pod.pod}` : fallback || 'the pod');

function contextMissing(context: string, c: KubeFailureContext): ReturnType<Rule['make']> {
  return { kind: 'kube-config', cause: 'context-missing', message: `The kubeconfig has no context ${JSON.stringify(context)}${c.cluster?.kubeconfig ? ` (${c.cluster.kubeconfig})` : ''}: kubectl config get-contexts lists those it has`, detail: { context } };
}

/** What kubectl writes first on stdout when it asks for a username (client-go's basic-auth prompt). */
export const NO_USER_PROMPT = 'Please enter Username: ';

function noUser(c: KubeFailureContext): ReturnType<Rule['make']> {
  return { kind: 'kube-config', cause: 'no-user', message: `The kubeconfig context${c.cluster ? ` ${JSON.stringify(c.cluster.context)}` : ''} names no user, so kubectl asks for a username and password on its input${where(c)}: add a user (a token, a client certificate or an exec plugin) to the context` };
}

/** The error of a context that names no user, found before kubectl was asked to run anything (kube/executor.ts). */
export function noUserError(context: KubeFailureContext): RemoteRunsError {
  const r = noUser(context);
  return new RemoteRunsError(r.kind, r.message, { cause: r.cause });
}

/** In order: the first that matches kubectl's text names the failure. */
const RULES: Rule[] = [
  {
    // client-go tools/clientcmd/loader.go: LoadFromFile wraps a parse error as `error loading config file "F": …`.
    test: /error loading config file "([^"]*)": (.*)/,
    make: (m, c) => ({ kind: 'kube-config', cause: 'kubeconfig-unreadable', message: `kubectl cannot read the kubeconfig ${m[1]}${where(c)}: ${m[2]}`, detail: { file: m[1] } }),
  },
  {
    // client-go tools/clientcmd/loader.go ClientConfigLoadingRules.Load: an explicit --kubeconfig that does not exist
    // fails with os.Stat's error (`stat F: no such file or directory`), which kubectl prints after `error: `.
    test: /^error: stat (.+): no such file or directory$/m,
    make: (m, c) => ({ kind: 'kube-config', cause: 'kubeconfig-missing', message: `The kubeconfig ${m[1]} does not exist${where(c)}`, detail: { file: m[1] } }),
  },
  {
    // client-go tools/clientcmd/validation.go (ErrNoContext-style: `context was not found for specified context: X`),
    // printed by kubectl helpers.go checkErr as `Error in configuration: …` (clientcmd.IsConfigurationInvalid).
    test: /context was not found for specified context: (.*)/,
    make: (m, c) => contextMissing(m[1].trim(), c),
  },
  {
    // The same for verbs that read the namespace first (`exec`): kubectl 1.32 prints `error: context "X" does not
    // exist` (client-go tools/clientcmd/client_config.go, DirectClientConfig's context lookup).
    test: /^error: context "((?:[^"\\]|\\.)*)" does not exist$/m,
    make: (m, c) => contextMissing(m[1], c),
  },
  {
    // No server configured: no kubeconfig at all, or a context whose cluster is not in it. client-go
    // tools/clientcmd/client_config.go falls back to its default server, http://localhost:8080 (getDefaultServer),
    // and kubectl helpers.go StandardErrorMessage reports the refused connection.
    test: /The connection to the server localhost:8080 was refused/,
    make: (_m, c) => ({ kind: 'kube-config', cause: 'no-server', message: `kubectl found no API server for this context${where(c)}: there is no kubeconfig, or the context names a cluster the kubeconfig does not hold, so kubectl tried its default http://localhost:8080` }),
  },
  {
    // client-go plugin/pkg/client/auth/exec/exec.go: `exec: executable %s not found` plus the install hint, wrapped
    // as `getting credentials: …` (transport round tripper) and printed as `Unable to connect to the server: …`.
    test: /getting credentials: exec: executable (\S+) not found/,
    make: (m, c) => ({ kind: 'credential-plugin', cause: 'plugin-missing', message: `The kubeconfig's credential plugin ${m[1]} is not installed${where(c)}`, detail: { plugin: m[1] } }),
  },
  {
    // The same plugin named by a path that is not there: Go's os/exec finds no PATH lookup to fail, so the start
    // itself fails (`fork/exec PATH: no such file or directory`, an *fs.PathError), which exec.go wraps as
    // `exec: …` (real kubectl 1.32 against a kubeconfig whose `exec.command` is an absolute path that does not exist).
    test: /getting credentials: exec: fork\/exec (\S+): no such file or directory/,
    make: (m, c) => ({ kind: 'credential-plugin', cause: 'plugin-missing', message: `The kubeconfig's credential plugin ${m[1]} is not installed${where(c)}`, detail: { plugin: m[1] } }),
  },
  {
    // client-go plugin/pkg/client/auth/exec/exec.go: `exec: executable %s failed with exit code %d`; the plugin's own
    // stderr reaches kubectl's stderr before it (exec.go passes the plugin's stderr through), and is kept.
    test: /getting credentials: exec: executable (\S+) failed with exit code (\d+)/,
    make: (m, c, text) => {
      const said = text.split('\n').filter((l) => l.trim() && !/getting credentials:/.test(l));
      const own = [...new Set(said)].slice(0, 3).join(' / ');
      return { kind: 'credential-plugin', cause: 'plugin-failed', message: `The kubeconfig's credential plugin ${m[1]} failed (exit code ${m[2]})${where(c)}${own ? `: ${own}` : ''}`, detail: { plugin: m[1], exitCode: Number(m[2]) } };
    },
  },
  {
    // Any other failure of the plugin (bad JSON on its stdout, an expired token it returned, not executable).
    test: /getting credentials: (.*)/,
    make: (m, c) => ({ kind: 'credential-plugin', cause: 'plugin-failed', message: `The kubeconfig's credential plugin failed${where(c)}: ${m[1]}` }),
  },
  {
    // kubectl helpers.go StandardErrorMessage: a 401 Status is `error: You must be logged in to the server (MSG)`; an
    // exec upgrade answered 401 is `unable to upgrade connection: Unauthorized` (client-go transport/spdy).
    test: /You must be logged in to the server \((.*)\)|unable to upgrade connection: Unauthorized/,
    make: (m, c) => ({ kind: 'auth-failed', cause: 'unauthorized', message: `The API server did not accept your credentials (401 ${m[1] ?? 'Unauthorized'})${where(c)}: log in again (your cloud's CLI, or the kubeconfig's token or certificate)` }),
  },
  {
    // apiserver pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage (`User %q cannot %s resource %q in
    // API group %q in the namespace %q` / `at the cluster scope`, resource with its `/subresource`), inside
    // apimachinery pkg/api/errors/errors.go NewForbidden (`%s %q is forbidden: %v`), after kubectl's
    // `Error from server (Forbidden): `.
    test: /(\S+?)(?: "([^"]*)")? is forbidden: User "((?:[^"\\]|\\.)*)" cannot (\S+) resource "([^"]+)" in API group "([^"]*)" (?:in the namespace "([^"]+)"|at the cluster scope)(?:: (.*))?/,
    make: (m, c) => {
      const [, , name, user, verb, resource, group, namespace, reason] = m;
      const scope = namespace ? `in the namespace ${namespace}` : 'at the cluster scope';
      const res = group ? `${resource}.${group}` : resource;
      return {
        kind: 'forbidden',
        cause: 'forbidden',
        message: `RBAC denied ${user} "${verb}" on ${res}${name ? ` (${name})` : ''} ${scope}${where(c)}: a Role${namespace ? '' : ' (ClusterRole)'} granting verbs ["${verb}"] on resources ["${resource}"] is needed${reason ? ` (${reason})` : ''}`,
        detail: { user, verb, resource, group, ...(namespace ? { namespace } : {}) },
      };
    },
  },
  {
    // apimachinery pkg/api/errors/errors.go NewNotFound: `%s %q not found`, after `Error from server (NotFound): `.
    test: /Error from server \(NotFound\): pods "([^"]+)" not found/,
    make: (m, c) => ({ kind: 'container-missing', cause: 'pod-not-found', message: `The pod ${podName(c, m[1])} does not exist (any more)${where(c)}`, detail: { pod: m[1] } }),
  },
  {
    // kubectl pkg/cmd/exec/exec.go Run: `container %s is not valid for pod %s out of: %s` (the apiserver's
    // pkg/registry/core/pod/strategy.go validateContainer says the same without `out of`).
    test: /container (\S+) is not valid for pod (\S+?)(?: out of: (.*))?$/m,
    make: (m, c) => ({ kind: 'container-missing', cause: 'container-not-found', message: `The pod ${podName(c, m[2])} has no container ${m[1]}${m[3] ? ` (it has ${m[3]})` : ''}`, detail: { container: m[1], ...(m[3] ? { containers: m[3] } : {}) } }),
  },
  {
    // kubectl pkg/cmd/exec/exec.go Run: `cannot exec into a container in a completed pod; current phase is %s`.
    test: /cannot exec into a container in a completed pod; current phase is (\w+)/,
    make: (m, c) => ({ kind: 'container-stopped', cause: 'pod-completed', message: `${c.pod ? `The pod ${podName(c, '')}` : 'The pod'} has completed (${m[1]}): its containers no longer run, so nothing inside can be read`, detail: { phase: m[1] } }),
  },
  {
    // apiserver pkg/registry/core/pod/strategy.go streamLocation: `pod %s does not have a host assigned` (BadRequest)
    // while the pod waits for the scheduler (or for Kueue to admit it).
    test: /pod (\S+) does not have a host assigned/,
    make: (m, c) => ({ kind: 'container-stopped', cause: 'pod-not-scheduled', message: `The pod ${podName(c, m[1])} is not running yet: it is not scheduled to a node`, detail: { pod: m[1] } }),
  },
  {
    // kubelet (pkg/kubelet/server/server.go → cri streaming) when the container is not running: `container not found
    // ("C")`, as `unable to upgrade connection: …`; for logs kubelet says `container "C" in pod "P" is waiting to
    // start: REASON` (pkg/kubelet/kubelet_pods.go validateContainerLogStatus).
    test: /container not found \("([^"]+)"\)|container "([^"]+)" in pod "([^"]+)" is waiting to start: ?(.*)/,
    make: (m, c) => {
      const container = m[1] ?? m[2];
      return { kind: 'container-stopped', cause: 'container-not-running', message: `The container ${container} of ${podName(c, m[3] ?? '')} is not running (yet)${m[4] ? `: ${m[4]}` : ''}`, detail: { container } };
    },
  },
  {
    // The container runtime cannot find `sh` (a distroless image): runc/crun `exec: "sh": executable file not found
    // in $PATH`, passed on by kubelet and the CRI.
    test: /exec: "sh": executable file not found in \$PATH|"sh": executable file not found/,
    make: (_m, c) => ({ kind: 'command-failed', cause: 'no-shell', message: `${c.pod ? `The container ${c.pod.container} of ${c.pod.namespace}/${c.pod.pod}` : 'The container'} has no sh (a distroless image?): remote-runs runs its commands under /bin/sh` }),
  },
  {
    // An exec stream refused on the way: the upgrade to a stream refused (client-go transport/spdy, tools/remotecommand
    // websocket.go `unable to upgrade connection`), or the apiserver failing to reach the kubelet
    // (apimachinery pkg/util/proxy/upgradeaware.go `error dialing backend`).
    test: /(unable to upgrade connection: .*|error dialing backend: .*|Upgrade request required.*)/,
    make: (m, c) => ({ kind: 'exec-refused', cause: 'exec-refused', message: `The cluster refused to open an exec stream${where(c)}: ${m[1]}` }),
  },
  {
    // kubectl helpers.go StandardErrorMessage: a refused connection (url.Error) is `The connection to the server
    // HOST was refused - did you specify the right host or port?`.
    test: /The connection to the server (\S+) was refused/,
    make: (m, c) => ({ kind: 'unreachable', cause: 'refused', message: `The API server ${m[1]} refused the connection${where(c)}`, detail: { server: m[1] } }),
  },
  {
    // kubectl helpers.go StandardErrorMessage: any other url.Error is `Unable to connect to the server: ERR`.
    test: /Unable to connect to the server: (.*)/,
    make: (m, c) => {
      const e = m[1];
      if (/x509:|tls: /.test(e) && !/handshake timeout/.test(e)) return { kind: 'unreachable', cause: 'tls', message: `The API server's TLS certificate was not accepted${where(c)}: ${e}` };
      if (/no such host|server misbehaving/.test(e)) return { kind: 'unreachable', cause: 'dns', message: `The API server's name does not resolve${where(c)}: ${e}` };
      if (/i\/o timeout|deadline exceeded|Client\.Timeout|handshake timeout|request canceled/.test(e)) return { kind: 'unreachable', cause: 'timeout', message: `The API server did not answer in time${where(c)}: ${e}` };
      return { kind: 'unreachable', cause: 'unreachable', message: `The API server cannot be reached${where(c)}: ${e}` };
    },
  },
];

/**
 * kubectl's failure (exit status not 0) as the error that names its cause. Never undefined: a text no rule knows is
 * `command-failed` with kubectl's exit status and its own words.
 */
export function kubectlFailure(result: Pick<ExecResult, 'stderr' | 'code'> & { stdout?: Buffer; signal?: string | null }, context: KubeFailureContext = {}): RemoteRunsError {
  // A context that names no user: client-go's interactive client config (tools/clientcmd auth_loaders.go, its
  // basic-auth prompt) writes `Please enter Username: ` to stdout and reads the answer from stdin, pipe or not; on a
  // closed input kubectl 1.32 then says only `error: EOF` (with input, `error reading input for Password`).
  if (result.stdout?.subarray(0, NO_USER_PROMPT.length).toString('latin1') === NO_USER_PROMPT) return noUserError(context);
  const text = kubectlText(result.stderr);
  const kept = text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
  for (const rule of RULES) {
    const m = rule.test.exec(text);
    if (!m) continue;
    const r = rule.make(m, context, text);
    const said = firstLine(kept);
    const message = r.message.includes(said) ? r.message : `${r.message} — kubectl said: ${said}`;
    return new RemoteRunsError(r.kind, message, { cause: r.cause, kubectl: kept, exitCode: result.code ?? -1, ...(r.detail ?? {}) });
  }
  const how = result.code === null ? `was stopped by ${result.signal ?? 'a signal'}` : `failed (exit code ${result.code})`;
  return new RemoteRunsError('command-failed', `kubectl ${how}${where(context)}${kept ? `: ${firstLine(kept)}` : ', and said nothing'}`, { cause: 'other', kubectl: kept, exitCode: result.code ?? -1 });
}

function firstLine(s: string): string {
  return s.split('\n').map((l) => l.trim()).find((l) => l) ?? '';
}
