/**
 * The executor of a pod container: runs the line a remote command is (targets.ts wrapForTarget) as
 * `kubectl … exec -i POD -c CONTAINER -- sh -c LIFELINE sh LINE` on this machine (kube/lifeline.ts: the command ends
 * when kubectl ends, is killed or loses its connection, since kubectl's stdin is held open as its lifeline; a command
 * with an input runs as `sh -c LINE`), so the one runner (remote.ts runCommand) and
 * its parsers work in a pod as over SSH. kubectl's own failures are named by kube/errors.ts (through
 * classifyTargetFailure); the command's own exit status is kubectl's exit status (kubectl pkg/cmd/util/helpers.go
 * checkErr exits with a utilexec.ExitError's code); kubectl's closing `command terminated with exit code N` line is
 * left on stderr, where kube/errors.ts podExecFailure reads it as "the command ran" (commandOwnStderr takes it off).
 */
import type { Executor, ExecOptions } from '../remote';
import type { ExecResult } from '../types';
import type { ProcessHolder } from '../util/processes';
import { kubectlArgs, podLineArgs, runKubectl, type KubectlAccess } from './kubectl';
import type { PodShellOptions } from './lifeline';
import { noUserError } from './errors';
import type { PodContainer } from './names';

export class PodExecutor implements Executor {
  constructor(
    private readonly access: KubectlAccess,
    private readonly pod: PodContainer,
    private readonly holder?: ProcessHolder,
  ) {}

  /**
   * The whole argv (without the program) that runs `line` in the container. Without `input`, the command's lifeline
   * is kubectl's stdin (kube/lifeline.ts): start kubectl with its stdin held open and unwritten (runKubectl
   * `holdStdin`) for as long as the command should run; closing it, or kubectl's end, ends the command.
   */
  argsFor(line: string, options: PodShellOptions = {}): string[] {
    return podLineArgs(this.access, this.pod, line, options);
  }

  async exec(commandLine: string, options: ExecOptions = {}): Promise<ExecResult> {
    // kubectl reads a username and password from its stdin when the context names no user (kube/errors.ts, rule
    // `no-user`): a command's input (an eval's results) would be sent to the API server as credentials, and a stdin
    // held open as a lifeline would leave kubectl waiting at its prompt for ever. Asked first, for every command.
    await contextHasUser(this.access, options.signal);
    const input = options.stdin !== undefined;
    const r = await runKubectl(this.access, this.argsFor(commandLine, { input }), {
      ...(input ? {} : { holdStdin: true }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.maxOutputBytes !== undefined ? { maxOutputBytes: options.maxOutputBytes } : {}),
      ...(options.stdin !== undefined ? { input: Buffer.from(options.stdin) } : {}),
      ...(options.onStdout ? { onStdout: options.onStdout } : {}),
      ...(this.holder ? { holder: this.holder } : {}),
    });
    return {
      stdout: r.stdout,
      stderr: r.stderr,
      code: r.code,
      ...(r.signal ? { signal: r.signal } : {}),
      truncated: r.truncated,
    };
  }
}

/** Contexts found to name a user (by kubeconfig and context): asked once per process, as a user is rarely taken away. */
const withUser = new Set<string>();

/**
 * Resolve when the cluster's context names a user (`kubectl config view --minify`: the context as kubectl resolves it,
 * from `--kubeconfig` or kubectl's own default files, no server asked); reject `kube-config` (`no-user`) when it names
 * none, as kubectl's own prompt would be named.
 */
export async function contextHasUser(access: KubectlAccess, signal?: AbortSignal): Promise<void> {
  const key = JSON.stringify([access.cluster.kubeconfig ?? '', access.cluster.context]);
  if (withUser.has(key)) return;
  const r = await runKubectl(access, kubectlArgs(access, ['config', 'view', '--minify', '-o', 'jsonpath={.contexts[0].context.user}'], { namespace: null }), signal ? { signal } : {});
  if (r.code !== 0) {
    // A context naming a user the kubeconfig does not have: `error: cannot locate user U` (client-go clientcmd
    // validation); kubectl exec would then prompt for a username and password as for no user at all.
    if (/cannot locate user/.test(r.stderr.toString('utf8'))) throw noUserError({ cluster: access.cluster });
    // A context or kubeconfig kubectl cannot read at all (`cannot locate context`, a file that is not there): the
    // command's own kubectl fails on it before any prompt, in its fuller words (kube/errors.ts), so it is left to say it.
    return;
  }
  if (r.stdout.toString('utf8').trim() === '') throw noUserError({ cluster: access.cluster });
  withUser.add(key);
}
