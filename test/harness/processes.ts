/** Processes as the tests see them. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';

/** Whether a process with this pid exists (a zombie counts until it is reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids (other than this process) whose command line mentions `text`, e.g. a test's temporary folder. */
export function processesMentioning(text: string): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(text)) out.push(Number(e));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/**
 * A test's last resort in `after`: SIGKILL every process group in `pgids`, then every process whose command line
 * mentions `folder` (a child that started a group of its own, found by the test's temporary folder). Quiet about
 * what is already gone, as everything should be by then.
 */
export function killLeftovers(pgids: number[], folder: string): void {
  const kill = (pid: number): void => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  };
  for (const g of pgids) kill(-g);
  for (const pid of processesMentioning(folder)) kill(pid);
}

/** The VmHWM (peak resident set) of a running process, in kB, or undefined once it is gone. */
export function peakKb(pid: number): number | undefined {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * OpenSSH masters of this process: a master runs from its session folder (`-F FOLDER/config`), whose `owner` file names
 * the process the folder belongs to (ssh/openssh/sessionFolder.ts). Others' masters (the end-to-end suite's, run beside
 * this one) are not counted.
 */
export function opensshMasters(): number {
  const out = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return out.split('\n').filter((l) => {
    const args = l.trim().split(/\s+/).slice(1);
    if (!/(^|\/)ssh$/.test(args[0] ?? '') || !args.includes('ControlMaster=yes')) return false;
    const config = args[args.indexOf('-F') + 1];
    try {
      return args.includes('-F') && fs.readFileSync(path.join(path.dirname(config), 'owner'), 'utf8').trim() === String(process.pid);
    } catch {
      return false; // its folder is gone: the master is on its way out
    }
  }).length;
}
