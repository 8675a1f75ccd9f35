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
import { fstatSync } from 'node:fs';
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
  /**
   * With `stdio[1]` a descriptor of a regular file: place it at this offset before the command runs (this process
   * has no lseek), by starting `sh`, which runs `dd if=/dev/null bs=1 seek=OFFSET count=0 conv=notrunc` on that
   * descriptor (POSIX dd seeks its output and copies nothing) and then execs the command: one start here, the
   * command's own pid. Every copy of the descriptor shares the offset, so the command writes from OFFSET on and the
   * caller can follow how far (transfer/stream.ts openOffset). A dd that fails exits 125 with what it said.
   */
  stdoutAt?: number;
}

/** stdoutAt's shell: position stdout at $1 (dd's own stdout is fd 3, the original one), then become the command. */
const PLACE_SCRIPT =
  'exec 3>&1; e=$(dd if=/dev/null bs=1 seek="$1" count=0 conv=notrunc 2>&1 >&3) || { printf "cannot place the output at %s: %s\\n" "$1" "$e" >&2; exit 125; }; exec 3>&-; shift; exec "$@"';

/** Start `command` with `args` (never through a shell unless the command is one). See the file's comment. */
export function startProcess(command: string, args: readonly string[], options: StartOptions = {}): ChildProcess {
  const { holder, running, stdoutAt, ...spawnOptions } = options;
  // dd "seeks" an output it cannot seek by reading it: on a pipe it would wait forever.
  if (stdoutAt !== undefined && !regularFile(Array.isArray(spawnOptions.stdio) ? spawnOptions.stdio[1] : undefined)) {
    throw new Error(`stdoutAt needs the descriptor of a regular file as stdout (${command})`);
  }
  const child = stdoutAt === undefined ? spawn(command, args, spawnOptions) : spawn('sh', ['-c', PLACE_SCRIPT, 'sh', String(stdoutAt), command, ...args], spawnOptions);
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

/** Is `stdio` the descriptor of a regular file? */
function regularFile(stdio: unknown): boolean {
  try {
    return typeof stdio === 'number' && fstatSync(stdio).isFile();
  } catch {
    return false;
  }
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
