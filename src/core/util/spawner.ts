/**
 * Starts children from a small `sh` instead of from this process. Every start by this process forks it, and after
 * a fork every page it writes again faults once (copy-on-write, until it is its own again): on the bench's machines
 * rewriting 64 MiB took 252 ms after one spawn instead of 3 ms, and a metrics open that started one `ssh` for its
 * stream paid ~0.25 s of CPU for it (bench/metrics.ts). The helper's fork copies a few pages instead.
 *
 * One helper runs one program with fixed leading arguments (`ssh -F config -T -- target`) and a last argument per
 * child (the remote command line), its stdout appended to a file that exists already (the caller's spool file), its
 * stderr into a file of the caller's private folder, stdin /dev/null. Each child's command line goes through a file
 * there too, so no byte of it is ever parsed by the helper's shell.
 *
 * Nothing outlives its owner: the helper is in a process group of its own, and when its stdin closes (its owner
 * closed it or died, however) it kills that whole group, every child it started with it. A child is killed by pid.
 */
import { startProcess, type ChildProcess } from './processes';
import { EventEmitter } from 'node:events';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';

/**
 * The positional parameters are the program and its fixed arguments ("$@"); the child's last argument is read from
 * its command file. Each request line: `ID OUT ERR CMD` (paths without white space: the caller's own names). The
 * reply lines: `s ID PID` once the child runs with its stdout open, then `e ID STATUS` (128 + n: killed by signal n).
 */
const SPAWNER_SCRIPT = [
  'umask 077',
  'exec 3>&1',
  'while IFS=" " read -r id out err cmd; do',
  '  line=$(cat "$cmd"; printf x); line=${line%x}; rm -f "$cmd"',
  '  (',
  // (A regular builtin's failed redirection is a status; `exec`'s would end the subshell before it could say so.)
  '    if ! true >>"$out"; then echo "e $id 126" >&3; exit 0; fi',
  '    exec 4>>"$out"',
  '    "$@" "$line" </dev/null >&4 2>"$err" 4>&- 3>&- &',
  '    p=$!',
  '    exec 4>&-',
  '    echo "s $id $p" >&3',
  '    wait $p',
  '    echo "e $id $?" >&3',
  '  ) &',
  'done',
  'kill -KILL 0',
].join('\n');

/** The part of ChildProcess a spool reader uses: pid, stderr, kill, 'spawn' / 'exit' / 'close' / 'error'. */
export class SpawnedChild extends EventEmitter {
  pid: number | undefined;
  readonly stderr = new PassThrough();
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  killed = false;
  private done = false;

  constructor(private readonly errFile: string) {
    super();
  }

  /** The signal a kill asked for (sent once the pid is known, if it was not yet). */
  private wantSignal: NodeJS.Signals | undefined;

  kill(signal: NodeJS.Signals = 'SIGTERM'): boolean {
    if (this.done) return false;
    this.killed = true;
    this.wantSignal = signal;
    if (this.pid === undefined) return true; // killed once it is known (started)
    try {
      process.kill(this.pid, signal);
      return true;
    } catch {
      return false;
    }
  }

  /** @internal The helper's `s` line. */
  started(pid: number): void {
    this.pid = pid;
    if (this.wantSignal) this.kill(this.wantSignal);
    this.emit('spawn');
  }

  /** @internal The helper's `e` line (or its death: status undefined). */
  ended(status: number | undefined, error?: Error): void {
    if (this.done) return;
    this.done = true;
    let text = Buffer.alloc(0);
    try {
      text = fs.readFileSync(this.errFile);
    } catch {
      // never opened (the child did not start), or removed
    }
    fs.rmSync(this.errFile, { force: true });
    if (text.length > 0) this.stderr.write(text);
    this.stderr.end();
    if (error) this.emit('error', error);
    // Killed by us: as a ChildProcess says it (code null, the signal); 128 + n from elsewhere stays a status.
    const code = status === undefined || (this.killed && status > 128) ? null : status;
    const signal = code === null ? (this.wantSignal ?? 'SIGKILL') : null;
    this.exitCode = code;
    this.signalCode = signal;
    // After stderr's last data is read (a reader collects it on 'data').
    setImmediate(() => {
      this.emit('exit', code, signal);
      this.emit('close', code, signal);
    });
  }
}

export class Spawner {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, SpawnedChild>();
  private nextId = 1;
  private buffered = '';
  private dead: Error | undefined;

  /** `argv`: the program and its fixed leading arguments; `dir`: the caller's private (0700) folder for its files. */
  constructor(
    argv: readonly string[],
    private readonly dir: string,
    env: NodeJS.ProcessEnv,
  ) {
    // detached: a group of its own (which it kills at the end), and no signal to ours reaches it first.
    this.child = startProcess('sh', ['-c', SPAWNER_SCRIPT, 'sh', ...argv], { stdio: ['pipe', 'pipe', 'ignore'], env, detached: true });
    this.child.on('error', (e) => this.fail(e));
    this.child.stdin?.on('error', (e) => this.fail(e));
    this.child.once('exit', (code, signal) => this.fail(new Error(`the process starter exited (${signal ?? `exit ${code}`})`)));
    this.child.stdout?.setEncoding('utf8').on('data', (s: string) => this.onData(s));
    this.child.unref();
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    (this.child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  }

  /** Why the helper is gone (killed, or it could not start), once it is: children are then started elsewhere. */
  get failed(): Error | undefined {
    return this.dead;
  }

  /** The helper's pid (a process group of its own). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Start `argv + [lastArg]` with stdout appended to `out` (which must exist) and stderr kept for the child's
   * `stderr` when it ends. Emits 'spawn' once it runs with `out` open, then 'exit' and 'close'.
   */
  run(lastArg: string, out: string): SpawnedChild {
    const id = this.nextId++;
    const err = path.join(this.dir, `err-${process.pid}-${id}`);
    const cmd = path.join(this.dir, `cmd-${process.pid}-${id}`);
    const child = new SpawnedChild(err);
    for (const p of [out, err, cmd]) {
      if (/[\s]/.test(p)) throw new Error(`a path with white space cannot be given to the process starter: ${JSON.stringify(p)}`);
    }
    if (this.dead) {
      const e = this.dead;
      setImmediate(() => child.ended(undefined, e));
      return child;
    }
    fs.writeFileSync(cmd, lastArg, { mode: 0o600 });
    this.pending.set(id, child);
    this.hold();
    this.child.stdin!.write(`${id} ${out} ${err} ${cmd}\n`);
    return child;
  }

  private onData(s: string): void {
    this.buffered += s;
    let nl: number;
    while ((nl = this.buffered.indexOf('\n')) >= 0) {
      const line = this.buffered.slice(0, nl);
      this.buffered = this.buffered.slice(nl + 1);
      const [kind, id, value] = line.split(' ');
      const child = this.pending.get(Number(id));
      if (!child) continue;
      if (kind === 's') child.started(Number(value));
      else if (kind === 'e') {
        this.pending.delete(Number(id));
        this.hold();
        child.ended(Number(value));
      }
    }
  }

  /** Keep this process alive while a child runs (as a ChildProcess does), not while the helper only waits. */
  private hold(): void {
    const out = this.child.stdout as unknown as { ref?: () => void; unref?: () => void } | null;
    if (this.pending.size > 0) out?.ref?.();
    else out?.unref?.();
  }

  private fail(e: Error): void {
    if (this.dead) return;
    this.dead = e;
    for (const c of this.pending.values()) {
      // A child it started may still run (the helper was killed alone): by pid, then.
      if (c.pid !== undefined) c.kill('SIGKILL');
      c.ended(undefined, c.pid === undefined ? e : undefined);
    }
    this.pending.clear();
    this.hold();
  }

  /** End the helper: it kills every child it started that still runs. */
  close(): void {
    this.child.stdin?.end();
  }
}
