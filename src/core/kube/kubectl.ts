/**
 * The one way kubectl runs: its argv built here (the cluster's `--kubeconfig`, `--context`, `-n`, `--request-timeout`
 * in front of the verb) and started on this machine through the one process starter (util/processes.ts). kubectl is
 * the user's own, so exec credential plugins, OIDC and the EKS/GKE auth plugins work as they do in a terminal.
 *
 * No shell sees kubectl's own argv (it is started without one), so its arguments are passed as they are, each a flag
 * in its `--flag=value` form: a context or selector that starts with `-` is then a value, never a flag. What runs
 * inside a pod container is `sh -c LINE`, LINE built by the same quoting as every remote command (shell/quote.ts
 * shellJoin, then shell/portable.ts portableCommandLine), exactly as `pct exec 200 --` is for Proxmox.
 */
import { startProcess, signalProcess, type ProcessHolder } from '../util/processes';
import { expandHome } from '../util/home';
import { shellJoin } from '../shell/quote';
import { portableCommandLine } from '../shell/portable';
import { RemoteRunsError, type ClusterConfig } from '../types';
import type { PodContainer } from './names';
import { NO_USER_PROMPT, kubectlFailure } from './errors';
import { podShellArgv, type PodShellOptions } from './lifeline';

/** How to reach a cluster: its config, and the kubectl program (the machine-scoped `remoteRuns.kubectlPath`). */
export interface KubectlAccess {
  cluster: ClusterConfig;
  /** The kubectl program; default `kubectl` from PATH. */
  kubectl?: string;
  /** For `~` in `kubeconfig`; default the user's home folder. */
  home?: string;
}

export interface KubectlArgsOptions {
  /** `-n NS`; `null`: none (`--all-namespaces` is the caller's verb argument); default the cluster's namespace. */
  namespace?: string | null;
  /** `--request-timeout`, in seconds (kubectl's own deadline for each request to the API server). */
  requestTimeoutSeconds?: number;
}

/** The program to start: the configured kubectl (trimmed), or `kubectl` from PATH. */
export function kubectlProgram(access: Pick<KubectlAccess, 'kubectl'>): string {
  const p = access.kubectl?.trim();
  return p ? p : 'kubectl';
}

/**
 * kubectl's argv (without the program): `[--kubeconfig=F] --context=CTX [-n NS] [--request-timeout=Ns] VERB…`. The
 * global flags go first, where every kubectl verb (and `exec … --`, whose command comes after `--`) reads them.
 */
export function kubectlArgs(access: KubectlAccess, verb: readonly string[], options: KubectlArgsOptions = {}): string[] {
  const { cluster } = access;
  const args: string[] = [];
  if (cluster.kubeconfig) args.push(`--kubeconfig=${expandHome(cluster.kubeconfig, access.home)}`);
  args.push(`--context=${cluster.context}`);
  const ns = options.namespace === undefined ? cluster.namespace : options.namespace;
  if (ns) args.push(`--namespace=${ns}`);
  if (options.requestTimeoutSeconds !== undefined) {
    if (!(options.requestTimeoutSeconds > 0)) throw new RemoteRunsError('internal', `a request timeout must be positive, not ${options.requestTimeoutSeconds}`);
    args.push(`--request-timeout=${Math.ceil(options.requestTimeoutSeconds)}s`);
  }
  return [...args, ...verb];
}

/** `exec -i POD -c CONTAINER --`: what runs a command inside a pod's container (after kubectlArgs' global flags). */
export function podExecVerb(p: PodContainer): string[] {
  return ['exec', '-i', p.pod, '-c', p.container, '--'];
}

/**
 * kubectl's argv that runs `argv` inside the pod container under /bin/sh: `… exec -i POD -c CONTAINER -- sh -c
 * LIFELINE sh LINE` (kube/lifeline.ts: the command ends when kubectl's stdin does, so hold it open with `holdStdin`),
 * or `… -- sh -c LINE` with `input` (a command that reads its stdin). LINE is the portable command line
 * (shell/portable.ts, the same as over SSH: FENCE first on stdout and stderr when `fence`, so the command's output is
 * told from kubectl's own messages, kube/errors.ts). `sh` is looked up on the container's PATH: an image without it
 * fails with the runtime's own words (classified by kubectlFailure).
 */
export function podCommandArgs(access: KubectlAccess, p: PodContainer, argv: readonly string[], fence = true, options: PodShellOptions = {}): string[] {
  return podLineArgs(access, p, portableCommandLine(shellJoin(argv), fence), options);
}

/** kubectl's argv that runs the command line `line` (shell/portable.ts) in the pod container, as podCommandArgs. */
export function podLineArgs(access: KubectlAccess, p: PodContainer, line: string, options: PodShellOptions = {}): string[] {
  return kubectlArgs(access, [...podExecVerb(p), ...podShellArgv(line, options)], { namespace: p.namespace });
}

/** What a kubectl run gave back. */
export interface KubectlResult {
  stdout: Buffer;
  stderr: Buffer;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** stdout was cut at maxOutputBytes (and kubectl stopped). */
  truncated: boolean;
}

export interface RunKubectlOptions {
  signal?: AbortSignal;
  /** Stop kubectl and fail when stdout passes this (default 256 MiB: a list of 100,000 pods is about 1 GiB of JSON, so huge lists should be selected or paged). */
  maxOutputBytes?: number;
  /** Held while kubectl runs (a lifeline, so it dies with us). */
  holder?: ProcessHolder;
  /** Written to stdin, then closed; default: stdin closed at once. */
  input?: Buffer;
  /**
   * Keep kubectl's stdin open, unwritten, until kubectl ends (or the run is cancelled, which closes it first): the
   * lifeline of a command run by podCommandArgs without `input` (kube/lifeline.ts). Not with `input`.
   */
  holdStdin?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Each stdout chunk as it arrives (the bytes that end up in the result's stdout). */
  onStdout?: (chunk: Buffer) => void;
  /**
   * `false`: stdout goes to onStdout only and the result's stdout is empty, without a bound (`logs -f`, which runs
   * as long as the container writes); default true.
   */
  keepStdout?: boolean;
}

const DEFAULT_MAX_OUTPUT = 256 * 1024 * 1024;

/**
 * Run kubectl with `args` (from kubectlArgs) to its end. A kubectl that could not start is `kubectl-missing`
 * (ENOENT, EACCES: the path is named); a cancel kills it and rejects with `cancelled`. The exit status is returned,
 * not judged: kubectlFailure (kube/errors.ts) says what a failure was.
 */
export function runKubectl(access: Pick<KubectlAccess, 'kubectl'>, args: readonly string[], options: RunKubectlOptions = {}): Promise<KubectlResult> {
  const program = kubectlProgram(access);
  const max = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT;
  if (options.holdStdin && options.input !== undefined) return Promise.reject(new RemoteRunsError('internal', 'kubectl\'s stdin is either an input or a lifeline, not both'));
  return new Promise((resolve, reject) => {
    if (options.signal?.aborted) {
      reject(new RemoteRunsError('cancelled', 'cancelled before kubectl started'));
      return;
    }
    // Its own process group: kubectl's children (an exec credential plugin still running) are not ended with kubectl
    // itself, so a stop goes to the whole group (test/integration/kubectlErrors.test.ts leaves none behind).
    const child = startProcess(program, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true, ...(options.env ? { env: options.env } : {}), ...(options.holder ? { holder: options.holder } : {}) });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let truncated = false;
    let settled = false;
    const onAbort = (): void => {
      child.stdin?.end(); // the remote command's lifeline (kube/lifeline.ts), whatever kubectl does with SIGTERM
      signalProcess(child, 'SIGTERM', { group: true });
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const done = (f: () => void): void => {
      if (settled) return;
      settled = true;
      options.signal?.removeEventListener('abort', onAbort);
      f();
    };
    child.stdout?.on('data', (b: Buffer) => {
      if (options.keepStdout === false) {
        options.onStdout?.(b);
        return;
      }
      if (truncated) return;
      // A held stdin is never an answer: kubectl asking for a username (a user entry that cannot identify anyone) gets
      // EOF at once and fails as itself (kube/errors.ts names it `no-user`), instead of waiting for ever.
      if (options.holdStdin && outBytes < NO_USER_PROMPT.length && Buffer.concat([...out, b]).subarray(0, NO_USER_PROMPT.length).toString('latin1') === NO_USER_PROMPT) child.stdin?.end();
      if (outBytes + b.length > max) {
        const part = b.subarray(0, max - outBytes);
        out.push(part);
        options.onStdout?.(part);
        outBytes = max;
        truncated = true;
        child.stdin?.end();
        signalProcess(child, 'SIGTERM', { group: true });
        return;
      }
      out.push(b);
      options.onStdout?.(b);
      outBytes += b.length;
    });
    child.stderr?.on('data', (b: Buffer) => err.push(b));
    child.stdin?.on('error', () => undefined); // kubectl that ended before reading its input: its exit says why
    if (!options.holdStdin) child.stdin?.end(options.input ?? undefined);
    child.on('error', (e: NodeJS.ErrnoException) =>
      done(() => reject(kubectlStartError(program, e))),
    );
    child.on('close', (code, signal) =>
      done(() => {
        child.stdin?.destroy();
        if (options.signal?.aborted) reject(new RemoteRunsError('cancelled', 'cancelled; kubectl was stopped'));
        else resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), code, signal, truncated });
      }),
    );
  });
}

/** A kubectl that did not start: missing or not executable is `kubectl-missing`, naming the path and the setting. */
export function kubectlStartError(program: string, e: NodeJS.ErrnoException): RemoteRunsError {
  if (e.code === 'ENOENT' || e.code === 'EACCES' || e.code === 'ENOTDIR') {
    const what = e.code === 'ENOENT' ? 'was not found' : 'cannot be run';
    return new RemoteRunsError('kubectl-missing', `kubectl ${what} (${JSON.stringify(program)}: ${e.code}); install kubectl or set remoteRuns.kubectlPath to it`, { program, code: e.code });
  }
  return new RemoteRunsError('internal', `kubectl (${JSON.stringify(program)}) could not be started: ${e.message}`, { program });
}

/**
 * Run a kubectl verb that must succeed (get, config…) and return its stdout; a failure becomes the RemoteRunsError
 * that names its cause, with kubectl's own text (kubectlFailure).
 */
export async function kubectlOutput(access: KubectlAccess, verb: readonly string[], options: KubectlArgsOptions & RunKubectlOptions = {}): Promise<Buffer> {
  const result = await runKubectl(access, kubectlArgs(access, verb, options), options);
  if (result.truncated) throw new RemoteRunsError('too-large', `kubectl ${verb[0] ?? ''} printed more than ${options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT} bytes; narrow it with a namespace or selector`);
  if (result.code === 0) return result.stdout;
  throw kubectlFailure(result, { cluster: access.cluster });
}
