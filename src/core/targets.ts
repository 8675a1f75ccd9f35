/**
 * How a command reaches inside a target, and how a container runtime's failure is told apart from the
 * command's own. The argv is quoted exactly once (sshd hands the line to the login shell; `pct exec --` and
 * `docker exec` pass their argv on without another shell).
 */
import { RemoteRunsError, formatTarget, type ExecResult, type TargetRef } from './types';
import { shellJoin } from './shell/quote';
import { portableCommandLine } from './shell/portable';

/** The argv prefix that runs a command inside the target, on its host. */
export function targetPrefix(target: TargetRef): string[] {
  switch (target.kind) {
    case 'host':
      return [];
    case 'pct':
      return ['pct', 'exec', target.id, '--'];
    case 'docker':
      return ['docker', 'exec', '-i', target.id];
  }
}

/**
 * The command line (for the host's login shell, whichever it is) that runs `argv` inside `target` under /bin/sh
 * (shell/portable.ts). With `fence` (the default) its stdout and stderr start with FENCE, which `runCommand` and the
 * stream sources drop with whatever the rc files printed before; `fence: false` for a stream written straight into
 * a file.
 */
export function wrapForTarget(target: TargetRef, argv: readonly string[], fence = true): string {
  return portableCommandLine(shellJoin([...targetPrefix(target), ...argv]), fence);
}

/**
 * Recognise the container runtime's own errors (missing or stopped container, runtime absent) so they are
 * never reported as the command's failure or as an empty listing. Returns undefined when the result is the
 * command's own.
 */
export function classifyTargetFailure(target: TargetRef, result: ExecResult): RemoteRunsError | undefined {
  if (target.kind === 'host' || result.code === 0) return undefined;
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
