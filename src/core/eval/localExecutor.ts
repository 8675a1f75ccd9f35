/**
 * An Executor for this machine: runs a command line with /bin/sh, as sshd would on a host. Local evals use the very
 * same command values (launch, list, read, stop) as remote ones, so they are detached and recorded the same way.
 */
import { startProcess } from '../util/processes';
import { RemoteRunsError } from '../types';
import type { ExecOptions, ExecResult, Executor } from '../remote';

export class LocalExecutor implements Executor {
  /** `env` replaces the environment of commands (default: this process's). */
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {}

  exec(commandLine: string, options: ExecOptions = {}): Promise<ExecResult> {
    const { signal, maxOutputBytes, stdin, onStdout } = options;
    return new Promise<ExecResult>((resolve, reject) => {
      if (signal?.aborted) return reject(new RemoteRunsError('cancelled', 'Command cancelled'));
      const child = startProcess('/bin/sh', ['-c', commandLine], { env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      let bytes = 0;
      let truncated = false;
      let settled = false;
      const onAbort = (): void => {
        child.kill('SIGTERM');
        if (!settled) {
          settled = true;
          reject(new RemoteRunsError('cancelled', 'Command cancelled'));
        }
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      child.stdout!.on('data', (chunk: Buffer) => {
        if (truncated) return;
        if (maxOutputBytes !== undefined && bytes + chunk.length >= maxOutputBytes) {
          const kept = chunk.subarray(0, maxOutputBytes - bytes);
          stdout.push(kept);
          onStdout?.(kept);
          bytes = maxOutputBytes;
          truncated = true;
          child.stdout!.destroy();
          return;
        }
        stdout.push(chunk);
        onStdout?.(chunk);
        bytes += chunk.length;
      });
      child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
      child.on('error', (e) => {
        signal?.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        reject(new RemoteRunsError('command-failed', `Cannot run /bin/sh: ${e.message}`));
      });
      child.on('close', (code, sig) => {
        signal?.removeEventListener('abort', onAbort);
        if (settled) return;
        settled = true;
        resolve({
          stdout: Buffer.concat(stdout),
          stderr: Buffer.concat(stderr),
          code,
          ...(sig ? { signal: sig.replace(/^SIG/, '') } : {}),
          truncated,
        });
      });
      // A command that does not read its stdin closes the pipe early; that is not an error.
      child.stdin!.on('error', () => {});
      child.stdin!.end(stdin ?? '');
    });
  }
}
