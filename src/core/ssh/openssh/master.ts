/**
 * One OpenSSH ControlMaster and what it runs: its private 0700 folder (sessionFolder.ts), the lifeline that holds the
 * master and every `ssh` it starts (util/lifeline.ts: this process exiting, however it exits, kills them), the start
 * of the master in the foreground as our child (logged in once its control socket exists: ssh creates it after the
 * login, mux.c muxserver_listen is called from ssh.c after ssh_login), the `ssh` processes run beside it, and the end
 * of all of it. Two roles build on it and keep only what differs:
 *
 * - the transport's connection (connection.ts): the user's own ssh config through a wrapper, prompts through
 *   askpass to the user;
 * - a session beside the pool's ssh2 connection (session.ts): a config of its own, pinned host keys, the pool's
 *   secrets through a private agent.
 *
 * This folder never imports `vscode`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startProcess, type ChildProcess } from '../../util/processes';
import { Lifeline } from '../../util/lifeline';
import { createSessionFolder } from './sessionFolder';

/** How the start of a master is waited for, and what each way of failing becomes (the role's own errors). */
export interface MasterStart {
  env?: NodeJS.ProcessEnv;
  /** `pipe`: the master's stderr is read (onStderr); `ignore`: it writes where its arguments say (`-E`). */
  stderr: 'pipe' | 'ignore';
  onStderr?: (chunk: Buffer) => void;
  /** Time for the login, not counting time while `paused()` (a prompt the user is answering). */
  timeoutMs: number;
  pollMs: number;
  paused?: () => boolean;
  signal?: AbortSignal;
  cancelled: () => Error;
  timedOut: () => Error;
  /** The binary could not be started (ENOENT: there is none). */
  cannotStart: (e: NodeJS.ErrnoException) => Error;
  /** The master exited before it logged in. */
  exited: (code: number | null) => Error;
}

export class OpenSshMaster {
  /** The private folder: configs, sockets and spool files of this master, removed with it. */
  readonly folder: string;
  private readonly lifeline = new Lifeline();
  /** The `ssh` processes started by run(), while they run. */
  readonly children = new Set<ChildProcess>();
  private master: ChildProcess | undefined;

  /** A new folder in `dir` (orphans of dead processes removed first); nothing runs yet. */
  constructor(
    readonly sshPath: string,
    dir: string,
  ) {
    this.folder = createSessionFolder(dir);
  }

  /** The control socket's path. */
  get control(): string {
    return path.join(this.folder, 'cm');
  }

  /** The lifeline's pid: while it runs, a process of this master may still write (download locks name it). */
  get lifelinePid(): number | undefined {
    return this.lifeline.pid;
  }

  /** The master process, once started. */
  get process(): ChildProcess | undefined {
    return this.master;
  }

  /**
   * Start `ssh args` as the master, in a session of its own (no terminal an older OpenSSH could ask on instead of our
   * askpass), held by the lifeline; resolve once it has logged in. On any failure the master is killed (SIGKILL) and
   * the promise rejects with the role's error; the folder stays for the role to end().
   */
  start(args: string[], o: MasterStart): Promise<ChildProcess> {
    const child = startProcess(this.sshPath, args, { stdio: ['ignore', 'ignore', o.stderr], ...(o.env ? { env: o.env } : {}), detached: true, holder: this.lifeline });
    this.master = child;
    child.unref();
    if (o.onStderr) child.stderr?.on('data', o.onStderr);
    return new Promise<ChildProcess>((resolve, reject) => {
      let settled = false;
      let waited = 0;
      const done = (e?: Error): void => {
        if (settled) return;
        settled = true;
        clearInterval(poll);
        watcher?.close();
        o.signal?.removeEventListener('abort', onAbort);
        if (e) {
          child.kill('SIGKILL');
          reject(e);
        } else resolve(child);
      };
      const onAbort = (): void => done(o.cancelled());
      o.signal?.addEventListener('abort', onAbort, { once: true });
      // The socket is seen as ssh creates it (inotify, where there is one); the poll below stays for the time
      // limit and for a folder that cannot be watched. Polling alone found it 10 ms late on average (half a poll) on
      // every cold login (bench/transfer.ts `ossize`).
      let watcher: fs.FSWatcher | undefined;
      try {
        watcher = fs.watch(this.folder, (_event, name) => {
          if (name === 'cm' && fs.existsSync(this.control)) done();
        });
        watcher.on('error', () => watcher?.close());
      } catch {
        watcher = undefined;
      }
      const poll = setInterval(() => {
        if (fs.existsSync(this.control)) return done();
        if (!o.paused?.() && (waited += o.pollMs) > o.timeoutMs) done(o.timedOut());
      }, o.pollMs);
      child.once('error', (e: NodeJS.ErrnoException) => done(o.cannotStart(e)));
      child.once('close', (code) => {
        this.lifeline.remove(child.pid);
        done(o.exited(code));
      });
    });
  }

  /** Start an `ssh` beside the master (a mux client, `-O exit`), held by the lifeline and counted in `children`. */
  run(args: string[], stdio: ('ignore' | 'pipe' | number)[], env?: NodeJS.ProcessEnv, stdoutAt?: number): ChildProcess {
    return startProcess(this.sshPath, args, { stdio, ...(env ? { env } : {}), holder: this.lifeline, running: this.children, ...(stdoutAt !== undefined ? { stdoutAt } : {}) });
  }

  /** Whether the master is still running. */
  get running(): boolean {
    return this.master !== undefined && this.master.exitCode === null && this.master.signalCode === null;
  }

  /** Kill what runs beside the master with `signal`, then the master if it still runs, close the lifeline, remove the folder. */
  end(signal: 'SIGTERM' | 'SIGKILL'): void {
    for (const c of this.children) c.kill(signal);
    if (this.running) this.master!.kill(signal);
    this.lifeline.close();
    fs.rmSync(this.folder, { recursive: true, force: true });
  }
}
