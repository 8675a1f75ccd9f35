/**
 * How a command reaches inside a target, and how a container runtime's failure is told apart from the
 * command's own. The argv is quoted exactly once (sshd hands the line to the login shell; `pct exec --` and
 * `docker exec` pass their argv on without another shell). A pod container is the exception in where the prefix
 * runs: `kubectl … exec -i POD -c CONTAINER --` runs on this machine (kube/executor.ts), and the line after it is
 * the same portable line every remote command is, given to the container's `sh -c`.
 */
import { RemoteRunsError, formatTarget, type ExecResult, type TargetRef } from './types';
import { shellJoin } from './shell/quote';
import { portableCommandLine } from './shell/portable';
import { kubectlArgs, kubectlProgram, podExecVerb, type KubectlAccess } from './kube/kubectl';
import { parsePodTargetId } from './kube/names';
import { podExecFailure } from './kube/errors';

/**
 * The argv prefix that runs a command inside the target: on its host for `pct` and `docker`; for `pod`, on this
 * machine, `kubectl [--kubeconfig=F] --context=CTX --namespace=NS exec -i POD -c CONTAINER --` (needs the cluster's
 * `access`; kube/executor.ts runs it with `sh -c LINE` after it).
 */
export function targetPrefix(target: TargetRef, access?: KubectlAccess): string[] {
  switch (target.kind) {
    case 'host':
      return [];
    case 'pct':
      return ['pct', 'exec', target.id, '--'];
    case 'docker':
      return ['docker', 'exec', '-i', target.id];
    case 'pod': {
      if (!access) throw new RemoteRunsError('internal', `${formatTarget(target)} is a pod container: it is reached through kubectl on this machine, never over SSH`);
      const pod = parsePodTargetId(target.id);
      return [kubectlProgram(access), ...kubectlArgs(access, podExecVerb(pod), { namespace: pod.namespace })];
    }
  }
}

/**
 * The command line (for the host's login shell, whichever it is) that runs `argv` inside `target` under /bin/sh
 * (shell/portable.ts). With `fence` (the default) its stdout and stderr start with FENCE, which `runCommand` and the
 * stream sources drop with whatever the rc files printed before; `fence: false` for a stream written straight into
 * a file. For a `pod`, the line the container's `sh -c` runs (its prefix is kubectl's argv on this machine).
 */
export function wrapForTarget(target: TargetRef, argv: readonly string[], fence = true): string {
  const prefix = target.kind === 'pod' ? [] : targetPrefix(target);
  return portableCommandLine(shellJoin([...prefix, ...argv]), fence);
}

/**
 * Recognise the container runtime's own errors (missing or stopped container, runtime absent) so they are
 * never reported as the command's failure or as an empty listing. Returns undefined when the result is the
 * command's own.
 */
export function classifyTargetFailure(target: TargetRef, result: ExecResult): RemoteRunsError | undefined {
  if (target.kind === 'host' || result.code === 0) return undefined;
  // kubectl's own failures (kube/errors.ts): the pod, the cluster, the credentials; the command's own are left alone.
  if (target.kind === 'pod') return podExecFailure(parsePodTargetId(target.id), result);
  const stderr = result.stderr.toString('utf8');
  const name = formatTarget(target);
  if (result.code === 127 && new RegExp(`\\b${target.kind}: (command )?not found`).test(stderr)) {
    return new RemoteRunsError('command-failed', `${target.kind} is not installed on this host, so ${name} cannot be reached`, {
      exitCode: 127,
      stderr: stderr.trim().split('\n')[0] ?? '',
    });
  }
  if (target.kind === 'pct') {
    if (/Configuration file '[^']*\/lxc\/\d+\.conf' does not exist/.test(stderr)) {
      return new RemoteRunsError('container-missing', `Container ${target.id} does not exist on this host (pct)`, { stderr: firstLine(stderr) });
    }
    // pve-container since 2021: "container '200' not running!"; older releases: "CT 200 not running".
    if (/container '\d+' not running!|CT \d+ not running/.test(stderr)) {
      return new RemoteRunsError('container-stopped', `Container ${target.id} is stopped (pct)`, { stderr: firstLine(stderr) });
    }
  } else {
    if (/No such container/i.test(stderr)) {
      return new RemoteRunsError('container-missing', `Container ${target.id} does not exist on this host (docker)`, { stderr: firstLine(stderr) });
    }
    if (/container \S+ is (not running|paused)/i.test(stderr)) {
      return new RemoteRunsError('container-stopped', `Container ${target.id} is stopped (docker)`, { stderr: firstLine(stderr) });
    }
    // Only a refused socket is a permission problem; a daemon that is down stays a command failure (exit code
    // and its message shown), never folded into "permission denied".
    if (/permission denied while trying to connect to the Docker daemon/i.test(stderr)) {
      return new RemoteRunsError('permission-denied', `The Docker daemon refused this user: ${firstLine(stderr)}`, { stderr: firstLine(stderr) });
    }
  }
  return undefined;
}

function firstLine(s: string): string {
  return s.split('\n').map((l) => l.trim()).find((l) => l) ?? '';
}
