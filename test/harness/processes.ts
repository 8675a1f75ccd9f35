/** Processes as the tests see them. */
import * as fs from 'node:fs';

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
