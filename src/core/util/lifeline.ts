/**
 * A lifeline: kills a set of processes when this process goes away, however it goes (exit, crash, SIGKILL). A small
 * `sh` in a process group of its own reads the current list of pids from a pipe; when the pipe closes (its owner
 * closed it or died) it kills them. Used by the OpenSSH transfers (their masters and streams) and by the SSH layer's
 * ProxyCommands, as the `holder` of the children they start (processes.ts startProcess).
 */
import { startProcess, type ChildProcess } from './processes';

/**
 * The lifeline's script: each line read is the current list of pids; at end of input (its owner closed the pipe or
 * died) it kills the last list. Plain POSIX sh: macOS and every Linux have it.
 */
const LIFELINE_SCRIPT =
  'p=; while IFS= read -r l; do p=$l; done; [ -n "$p" ] || exit 0; kill -KILL $p 2>/dev/null; ' +
  // Then it stays until they are gone (reaped; 2 s at most), so a process waiting for the lifeline to exit (the
  // lock's next owner) knows that nothing it killed still writes.
  'n=0; while [ $n -lt 40 ]; do a=; for x in $p; do kill -0 $x 2>/dev/null && a=1; done; [ -z "$a" ] && exit 0; n=$((n+1)); sleep 0.05; done; exit 0';

/** Kills a set of processes when this process goes away, however it goes. */
export class Lifeline {
  private readonly child: ChildProcess;
  private readonly pids = new Set<number>();

  constructor() {
    // detached: a process group of its own, so a signal to ours (Ctrl-C, kill -9 -PGID) does not take it with us.
    this.child = startProcess('sh', ['-c', LIFELINE_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    this.child.on('error', () => undefined);
    this.child.stdin?.on('error', () => undefined);
    this.child.unref();
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  add(pid: number | undefined): void {
    if (!pid) return;
    this.pids.add(pid);
    this.send();
  }

  remove(pid: number | undefined): void {
    if (!pid || !this.pids.delete(pid)) return;
    this.send();
  }

  private send(): void {
    this.child.stdin?.write(`${[...this.pids].join(' ')}\n`);
  }

  /** Kill what is left and let the lifeline go. */
  close(): void {
    this.child.stdin?.end();
  }
}
