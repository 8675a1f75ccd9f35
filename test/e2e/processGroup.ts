/**
 * Child processes started in their own process group, and a stop that ends the whole group. code-server forks an
 * extension host and helpers; killing only the parent leaves them up for hours (the reconnection grace time).
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** A process leading its own group, with everything it printed so far. */
export interface GroupProcess {
  child: ChildProcess;
  /** Process group id (= the leader's pid). */
  pgid: number;
  /** stdout and stderr interleaved, as received. */
  output(): string;
  /** Resolves once the leader has exited. */
  exited: Promise<number | null>;
}

const live = new Set<number>();
// If the test process dies without calling stopGroup (a crash, an uncaught error), still leave nothing running.
process.on('exit', () => {
  for (const pgid of live) killGroup(pgid, 'SIGKILL');
});

/** Spawns `command` as the leader of a new process group (setsid), collecting its output. */
export function spawnGroup(command: string, args: string[], options: SpawnOptions): GroupProcess {
  const child = spawn(command, args, { ...options, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  const pgid = child.pid;
  live.add(pgid);
  const chunks: string[] = [];
  child.stdout?.on('data', (b: Buffer) => chunks.push(b.toString()));
  child.stderr?.on('data', (b: Buffer) => chunks.push(b.toString()));
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(null));
  });
  return { child, pgid, output: () => chunks.join(''), exited };
}

/** Pids whose process group is `pgid`, read from /proc (field 5 of /proc/PID/stat). */
export function groupMembers(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited while we looked
    }
    // The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is state (field 3); zombies are already dead and only wait for their parent to reap them.
    if (Number(fields[2]) === pgid && fields[0] !== 'Z') members.push(Number(entry));
  }
  return members;
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * Ends every process of the group: SIGTERM, then SIGKILL for whatever is left after `graceMs`.
 * Resolves once no member remains, and throws if one survives SIGKILL (which would be a harness bug worth seeing).
 */
export async function stopGroup(proc: GroupProcess, graceMs = 3000): Promise<void> {
  killGroup(proc.pgid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (groupMembers(proc.pgid).length && Date.now() < deadline) await sleep(50);
  if (groupMembers(proc.pgid).length) killGroup(proc.pgid, 'SIGKILL');
  const hardDeadline = Date.now() + 5000;
  while (groupMembers(proc.pgid).length && Date.now() < hardDeadline) await sleep(50);
  live.delete(proc.pgid);
  const left = groupMembers(proc.pgid);
  if (left.length) throw new Error(`process group ${proc.pgid} still has members after SIGKILL: ${left.join(' ')}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
