/**
 * The one process starter. Every child process of the extension, the CLI, the language server and the demo (ssh
 * masters and their mux clients, ProxyCommands, `Match exec` tests, local evals, the lifeline and spawner helpers,
 * the demo's sandbox) starts here; a boundary test keeps `node:child_process` out of every other file.
 *
 * What a start may ask for, in one place:
 * - **its own process group** (`detached`): a signal to ours (Ctrl-C, `kill -- -PGID`) does not take it along, and
 *   signalProcess(…, { group: true }) reaches everything it started;
 * - **a holder that outlives us** (`holder`, a util/lifeline.ts Lifeline): the pid is held from the start until the
 *   child exits, so the child is killed when this process dies however it dies (SIGKILL, a reloaded extension host);
 *   with `running`, the owner's own set of live children is kept for the same span (what it kills on dispose).
 * The fork cost of a large parent (copy-on-write faults of the extension host's heap, about 0.25 s a stream) is
 * avoided by util/spawner.ts, a small `sh` started here once that starts the many short-lived children instead.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions, type SpawnSyncOptionsWithStringEncoding, type SpawnSyncReturns } from 'node:child_process';

export type { ChildProcess } from 'node:child_process';

/** What holds a child's pid while it runs (util/lifeline.ts Lifeline has this shape). */
export interface ProcessHolder {
  add(pid: number | undefined): void;
  remove(pid: number | undefined): void;
}

export interface StartOptions extends SpawnOptions {
  /** Held by this from its start until it exits (or fails to start). */
  holder?: ProcessHolder;
  /** Kept in this set for the same span: the owner's live children. */
  running?: Set<ChildProcess>;
}

/** Start `command` with `args` (never through a shell unless the command is one). See the file's comment. */
export function startProcess(command: string, args: readonly string[], options: StartOptions = {}): ChildProcess {
  const { holder, running, ...spawnOptions } = options;
  const child = spawn(command, args, spawnOptions);
  if (holder || running) {
    running?.add(child);
    holder?.add(child.pid);
    const gone = (): void => {
      running?.delete(child);
      holder?.remove(child.pid);
    };
    child.once('exit', gone);
    child.once('error', gone);
  }
  return child;
}

/** Run to the end and return what it printed (a `Match exec` test, a build step of the demo): blocks this thread. */
export function runProcessSync(command: string, args: readonly string[], options: SpawnSyncOptionsWithStringEncoding): SpawnSyncReturns<string> {
  return spawnSync(command, args, options);
}

/**
 * Send `signal` to a child that is still running; with `group`, to its whole process group (it must have been
 * started `detached`), also after the child itself exited: what it started may still run in the group. A child
 * already gone, or a group already empty, is no error.
 */
export function signalProcess(child: ChildProcess, signal: NodeJS.Signals, options: { group?: boolean } = {}): void {
  if (child.pid === undefined) return;
  if (!options.group && (child.exitCode !== null || child.signalCode !== null)) return;
  try {
    if (options.group) process.kill(-child.pid, signal);
    else child.kill(signal);
  } catch {
    // Gone between the check and the signal, or the group is empty.
  }
}
