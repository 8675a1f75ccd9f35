/**
 * The demo machine: a user + mount + pid namespace (`unshare -rmpf`, no privileges needed) whose root holds the
 * real system folders read-only and the demo's own folders in place of everything else, so the commands the demo
 * server runs are real `sh`, `find`, `cat`, `dd`… yet never see the user's files. Each command enters it with
 * `nsenter`; a holder process is its pid 1 (see HOLDER_SCRIPT), so stopping the demo, or the demo dying, ends every
 * process inside, detached evals included.
 */
import { startProcess, runProcessSync, type ChildProcess } from '../core/util/processes';
import * as fs from 'node:fs';
import { HOLDER_SCRIPT, DEMO_BIN } from './scripts';
import { shellQuote } from '../core/shell/quote';
import { withoutNpmEnv } from './launch';

/** The environment of every command, as a plain login on the demo machine would have it. */
export function machineEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    HOME: '/root',
    USER: 'root',
    LOGNAME: 'root',
    SHELL: '/bin/sh',
    PATH: `${DEMO_BIN}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    LANG: 'C.UTF-8',
    ...extra,
  };
}

/** Why namespaces cannot be used here, or undefined when `unshare -rm` works (checked by running it). */
export function namespaceProblem(): string | undefined {
  const r = runProcessSync('unshare', ['-rmpf', '/bin/sh', '-c', 'mount -t tmpfs none /mnt 2>/dev/null || mount -t tmpfs none /tmp; echo ok'], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.error) return `cannot run unshare (util-linux): ${r.error.message}`;
  if (r.status === 0 && r.stdout.trim() === 'ok') return undefined;
  return (
    `unprivileged user namespaces are not available (unshare -rmpf: ${(r.stderr || r.stdout).trim() || `exit ${r.status}`}). ` +
    'On Ubuntu 23.10+ they are restricted by AppArmor: sysctl kernel.apparmor_restrict_unprivileged_userns=0 allows them.'
  );
}

/** A started demo machine. */
export class DemoMachine {
  private stopped = false;

  private constructor(
    private readonly holder: ChildProcess,
    /** Outer pid of the namespace's pid 1. */
    readonly initPid: number,
  ) {}

  /** Start the machine over `machineDir`, mounting its root on `mountPoint` (inside its own namespace only). */
  static async start(machineDir: string, mountPoint: string): Promise<DemoMachine> {
    fs.mkdirSync(mountPoint, { recursive: true });
    const holder = startProcess('unshare', ['-rmpf', '--kill-child=SIGKILL', '/bin/sh', '-c', HOLDER_SCRIPT, 'remote-runs-demo', mountPoint, machineDir], {
      env: withoutNpmEnv(process.env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const unsharePid = holder.pid;
    let stderr = '';
    holder.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (b: Buffer): void => {
        out += b.toString();
        if (out.includes('ready\n')) {
          holder.stdout?.off('data', onData);
          resolve();
        }
      };
      holder.stdout?.on('data', onData);
      holder.once('error', reject);
      holder.once('exit', (code) => reject(new Error(`the demo machine did not start (exit ${code}): ${stderr.trim()}`)));
    });
    const initPid = unsharePid === undefined ? undefined : childOf(unsharePid);
    if (initPid === undefined) {
      holder.kill('SIGKILL');
      throw new Error('the demo machine started but its pid 1 was not found');
    }
    holder.stdout?.resume();
    return new DemoMachine(holder, initPid);
  }

  /** The machine's root as seen from outside (`/proc/PID/root`): what SFTP serves. */
  get root(): string {
    return `/proc/${this.initPid}/root`;
  }

  /**
   * Run `commandLine` with `/bin/sh -c` in the machine, from $HOME, as sshd runs an exec request. With `pty`, an
   * interactive login shell on a pseudo-terminal made by util-linux `script` instead. The process leads its own
   * process group, so `signal` reaches the whole command as sshd's killpg does.
   */
  spawn(commandLine: string | undefined, options: { env?: Record<string, string>; pty?: { rows: number; cols: number } } = {}): ChildProcess {
    if (this.stopped) throw new Error('the demo machine is stopped');
    const env = machineEnv(options.env);
    let argv: string[];
    if (options.pty) {
      const inner = `stty rows ${options.pty.rows} cols ${options.pty.cols} 2>/dev/null; cd; exec ${commandLine === undefined ? '/bin/bash -l 2>/dev/null || exec /bin/sh -l' : `/bin/sh -c ${shellQuote(commandLine)}`}`;
      argv = ['script', '-qfec', inner, '/dev/null'];
    } else {
      // Two shells: the outer one only changes to $HOME, the inner one parses the line exactly as sshd's `$SHELL -c`.
      argv = ['/bin/sh', '-c', 'cd 2>/dev/null; exec /bin/sh -c "$1"', 'sh', commandLine ?? 'exec /bin/sh -l'];
    }
    return startProcess('nsenter', ['-t', String(this.initPid), '-U', '-m', '-p', '-r', '-w', '--', ...argv], {
      env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  }

  /** End the machine and everything running in it. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    const exited = new Promise<void>((resolve) => {
      if (this.holder.exitCode !== null || this.holder.signalCode !== null) resolve();
      else this.holder.once('exit', () => resolve());
    });
    // pid 1 gone = the kernel kills the whole namespace; unshare then exits.
    try {
      process.kill(this.initPid, 'SIGKILL');
    } catch {
      // already gone
    }
    this.holder.stdin?.end();
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (this.holder.exitCode === null && this.holder.signalCode === null) this.holder.kill('SIGKILL');
  }
}

/** The one child of `pid`, from /proc (the forked pid 1 of `unshare -f`). */
function childOf(pid: number): number | undefined {
  try {
    const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    if (children.length > 0) return Number(children[0]);
  } catch {
    // no CONFIG_PROC_CHILDREN: scan
  }
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid) return Number(entry);
    } catch {
      // exited while we looked
    }
  }
  return undefined;
}
