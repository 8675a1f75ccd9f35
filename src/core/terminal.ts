/**
 * The command line for an interactive terminal already inside a target (and in a run's folder): OpenSSH for a host
 * and its containers, the user's kubectl (`exec -it`) on this machine for a pod container.
 * Used by the extension's "Open Terminal Here"; kept here so it is tested without VS Code.
 */
import { shellJoin } from './shell/quote';
import { portableCommandLine } from './shell/portable';
import type { ResolvedHop } from './ssh/types';
import { RemoteRunsError, formatTarget, type TargetRef } from './types';
import { kubectlArgs, kubectlProgram, type KubectlAccess } from './kube/kubectl';
import { parsePodTargetId } from './kube/names';

/**
 * What the terminal's `sh -c` runs, the folder as `$1`: into the folder when it exists, then bash if the target has
 * it, else sh, as a login shell.
 */
const TERMINAL_SCRIPT = 'cd -- "$1" 2>/dev/null; if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi';

/** `ssh` arguments for an interactive shell inside `target`, starting in `cwd` when it exists. */
export function terminalSshArgs(
  jumps: ResolvedHop[],
  hop: ResolvedHop,
  target: TargetRef,
  cwd: string,
  options: { knownHostsFiles?: string[] } = {},
): string[] {
  // A pod container's terminal is `kubectl exec -it` on this machine, never an ssh login (kube/kubectl.ts).
  if (target.kind === 'pod') throw new RemoteRunsError('internal', `${formatTarget(target)} is a pod container: its terminal is kubectl exec on this machine, not ssh`);
  const args = ['-t', '-p', String(hop.port), '-l', hop.user];
  // The same known_hosts the extension checks, so the terminal trusts exactly what the tree trusts.
  if (options.knownHostsFiles?.length) args.push('-o', `UserKnownHostsFile=${options.knownHostsFiles.map((f) => f.replace(/ /g, '\\ ')).join(' ')}`);
  for (const key of hop.identityFiles) args.push('-i', key);
  if (jumps.length) args.push('-J', jumps.map((j) => `${j.user}@${j.hostname}:${j.port}`).join(','));
  const inner = ['sh', '-c', TERMINAL_SCRIPT, 'sh', cwd];
  const prefix = target.kind === 'pct' ? ['pct', 'exec', target.id, '--'] : target.kind === 'docker' ? ['docker', 'exec', '-it', target.id] : [];
  // Through the one portable wrapper, so a tcsh or fish login shell reads the line as sh would (a run folder's name
  // may hold `!` or a newline); unfenced: nothing parses a terminal's output.
  args.push(hop.hostname, portableCommandLine(shellJoin([...prefix, ...inner]), false));
  return args;
}

/**
 * The program and arguments of an interactive terminal in a pod container, in `cwd` when it exists: the user's
 * kubectl (remoteRuns.kubectlPath) with the cluster's own `--kubeconfig`/`--context`/`--namespace` (kube/kubectl.ts
 * kubectlArgs, as every kubectl the extension runs), `exec -it POD -c CONTAINER -- sh -c SCRIPT sh CWD`. No shell
 * sees this argv on this machine (the terminal starts kubectl itself), so the folder is passed as `$1`, verbatim.
 * No lifeline (kube/lifeline.ts) is needed: the shell is interactive, and when kubectl ends its stdin reaches EOF,
 * which ends a shell waiting at its prompt; a command left running in the foreground is the user's own.
 */
export function terminalKubectlArgs(access: KubectlAccess, target: TargetRef, cwd: string): { program: string; args: string[] } {
  if (target.kind !== 'pod') throw new RemoteRunsError('internal', `${formatTarget(target)} is not a pod container: its terminal is ssh (terminalSshArgs)`);
  const pod = parsePodTargetId(target.id);
  const verb = ['exec', '-it', pod.pod, '-c', pod.container, '--', 'sh', '-c', TERMINAL_SCRIPT, 'sh', cwd];
  return { program: kubectlProgram(access), args: kubectlArgs(access, verb, { namespace: pod.namespace }) };
}
