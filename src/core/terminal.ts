/**
 * The OpenSSH command line for an interactive terminal already inside a target (and in a run's folder).
 * Used by the extension's "Open Terminal Here"; kept here so it is tested without VS Code.
 */
import { shellJoin } from './shell/quote';
import { portableCommandLine } from './shell/portable';
import type { ResolvedHop } from './ssh/types';
import { RemoteRunsError, formatTarget, type TargetRef } from './types';

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
  const inner = ['sh', '-c', 'cd -- "$1" 2>/dev/null; if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi', 'sh', cwd];
  const prefix = target.kind === 'pct' ? ['pct', 'exec', target.id, '--'] : target.kind === 'docker' ? ['docker', 'exec', '-it', target.id] : [];
  // Through the one portable wrapper, so a tcsh or fish login shell reads the line as sh would (a run folder's name
  // may hold `!` or a newline); unfenced: nothing parses a terminal's output.
  args.push(hop.hostname, portableCommandLine(shellJoin([...prefix, ...inner]), false));
  return args;
}
