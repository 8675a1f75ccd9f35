/**
 * One writer per checkpoint download, across processes (two CLIs, the CLI and a VS Code window, two windows): a
 * lock file in the download root's state folder (records.ts), created with link(2) so exactly one process wins.
 * It names its owner (pid, host, what it is, when it started), so a second download fails at once with `busy`
 * saying who holds it.
 *
 * A lock whose owner is gone (killed with SIGKILL, a crashed extension host) is taken over: on the same machine when
 * its pid no longer runs (or runs another program: Linux's process start time is compared), from another machine
 * (a shared file system) when its owner stopped refreshing it. A stale lock is removed under a mutex and only if it
 * is still stale then, so two processes taking over at once cannot both win; the owner also checks every few seconds
 * that the lock is still its own and stops (`busy`) if not.
 */
import { readFileSync } from 'node:fs';
import { localFs as fs } from '../util/localFs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { RemoteRunsError } from '../types';
import { localError, makeFolders } from './localErrors';
import { pidRunning } from '../util/pids';

export interface LockOwner {
  pid: number;
  host: string;
  /** What holds it, for the message: "remote-runs pull", "VS Code window". */
  what: string;
  /** ISO time. */
  since: string;
  token: string;
  /** Linux: the process's start time in clock ticks since boot (field 22 of /proc/PID/stat). */
  procStart?: string;
}

export interface DownloadLock {
  readonly path: string;
  /**
   * Name the process that kills this download's writers if this one dies (an OpenSSH session's lifeline): a process
   * that takes the lock over after a crash waits until it is gone, so nothing left of this download writes once the
   * next one has started. undefined: no writer outside this process any more.
   */
  writers(pid: number | undefined): Promise<void>;
  /** True while the lock file is still this owner's (checked by the heartbeat). */
  readonly owned: boolean;
  /** Called when the lock turns out to be someone else's (taken over while this process was stopped). */
  onLost(f: () => void): void;
  release(): Promise<void>;
}

/** How often the owner refreshes the lock's mtime and checks it is still its own. */
const HEARTBEAT_MS = 3000;
/** A lock from another machine not refreshed for this long is stale. */
const FOREIGN_STALE_MS = 60_000;

function procStart(pid: number): string | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Whether a process runs, and is the same process (a reused pid has another start time). */
function alive(owner: { pid: number; procStart?: string }): boolean {
  if (!pidRunning(owner.pid)) return false;
  // The pid runs; is it the same process? (A reused pid has another start time.)
  const now = procStart(owner.pid);
  return !(owner.procStart && now && now !== owner.procStart);
}

async function readOwner(file: string): Promise<{ owner?: LockOwner; mtimeMs: number } | undefined> {
  try {
    const [text, st] = await Promise.all([fs.readFile(file, 'utf8'), fs.stat(file)]);
    let owner: LockOwner | undefined;
    try {
      const v = JSON.parse(text) as LockOwner;
      if (Number.isSafeInteger(v.pid) && typeof v.token === 'string') owner = v;
    } catch {
      // torn or foreign: judged by age alone
    }
    return { owner, mtimeMs: st.mtimeMs };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function isStale(held: { owner?: LockOwner; mtimeMs: number }): boolean {
  const o = held.owner;
  if (o && o.host === os.hostname()) return !alive(o);
  return Date.now() - held.mtimeMs > FOREIGN_STALE_MS;
}

/** Whether a live process holds the lock `file` (a download runs): a lock of a dead owner, or none, is not held. */
export async function lockHeld(file: string): Promise<boolean> {
  const held = await readOwner(file);
  return held !== undefined && !isStale(held);
}

export function busyError(lockFile: string, what: string, o: LockOwner | undefined): RemoteRunsError {
  const who = o ? `${o.what} (pid ${o.pid}${o.host !== os.hostname() ? ` on ${o.host}` : ''}, since ${o.since})` : 'another process';
  return new RemoteRunsError('busy', `${what} is being downloaded by ${who}; wait for it to finish or stop it, then try again`, {
    lock: lockFile,
    ...(o ? { pid: o.pid, host: o.host } : {}),
  });
}

function localLockError(e: unknown, file: string): RemoteRunsError {
  return localError(e, `Cannot lock the download (${file})`);
}

/** A takeover that has held its mutex this long died in it (the critical section takes milliseconds). */
const TAKEOVER_STALE_MS = 10_000;

/**
 * Remove a stale lock, under a mutex (`FILE.takeover`, made with link(2) like the lock), and only if it is still
 * stale once the mutex is held: of several processes finding the same stale lock, one removes it, and none can
 * remove a lock another has just taken. The caller then competes for the lock again.
 */
async function takeOver(file: string, tmp: string): Promise<void> {
  const mutex = `${file}.takeover`;
  try {
    await fs.link(tmp, mutex);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw localLockError(e, file);
    const st = await fs.stat(mutex).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > TAKEOVER_STALE_MS) await fs.rm(mutex, { force: true });
    await new Promise((r) => setTimeout(r, 10 + Math.random() * 20));
    return;
  }
  try {
    const held = await readOwner(file);
    if (held && isStale(held)) await fs.rm(file, { force: true });
  } finally {
    await fs.rm(mutex, { force: true });
  }
}

/** How long a new owner waits for an earlier owner's writers to be killed by its lifeline (it takes milliseconds). */
const WRITERS_WAIT_MS = 10_000;

interface WritersRecord {
  pid: number;
  host: string;
  procStart?: string;
}

function writersFile(lockFile: string): string {
  return `${lockFile}.writers`;
}

/**
 * Before a new owner touches anything: wait until the writers an earlier owner left (its lifeline, which kills its
 * `ssh` streams when that owner dies) are gone, or fail `busy` naming them.
 */
async function waitForWriters(lockFile: string, what: string): Promise<void> {
  const file = writersFile(lockFile);
  let rec: WritersRecord | undefined;
  try {
    const v = JSON.parse(await fs.readFile(file, 'utf8')) as WritersRecord;
    if (Number.isSafeInteger(v.pid) && v.pid > 0 && v.host === os.hostname()) rec = v;
  } catch {
    // none (the usual case), or torn: nothing to wait for
  }
  if (rec) {
    const until = Date.now() + WRITERS_WAIT_MS;
    while (alive(rec)) {
      if (Date.now() > until) {
        throw new RemoteRunsError('busy', `${what}: the streams of an earlier download (their lifeline, pid ${rec.pid}) are still running; stop them, then try again`, {
          lock: lockFile,
          pid: rec.pid,
        });
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  await fs.rm(file, { force: true });
}

/** Take the lock of one download, or fail at once with `busy` naming its holder. `what` names the checkpoint. */
export async function acquireLock(file: string, what: string, holder: string): Promise<DownloadLock> {
  const token = randomBytes(12).toString('hex');
  const me: LockOwner = { pid: process.pid, host: os.hostname(), what: holder, since: new Date().toISOString(), token, ...(procStart(process.pid) ? { procStart: procStart(process.pid) } : {}) };
  const tmp = `${file}.${token}.tmp`;
  try {
    await makeFolders(path.dirname(file), `Cannot write the download's state in ${path.dirname(path.dirname(path.dirname(file)))}`);
    await fs.writeFile(tmp, JSON.stringify(me));
  } catch (e) {
    throw localLockError(e, file);
  }
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await fs.link(tmp, file);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw localLockError(e, file);
      }
      const held = await readOwner(file);
      if (!held) continue; // released meanwhile
      if (!isStale(held) || attempt >= 50) throw busyError(file, what, held.owner);
      await takeOver(file, tmp);
    }
  } finally {
    await fs.rm(tmp, { force: true });
  }

  try {
    await waitForWriters(file, what);
  } catch (e) {
    await fs.rm(file, { force: true });
    throw e;
  }

  let owned = true;
  let released = false;
  const lost: (() => void)[] = [];
  const timer = setInterval(() => {
    void (async () => {
      // Only a lock file that is gone, or names another owner, is lost. A read that fails (EMFILE while a pull of
      // 100,000 files had every descriptor busy, EIO) says nothing about the owner: the next beat asks again. Taking
      // such a failure for a loss made a pull stop itself with `busy` while no other process existed.
      let held: Awaited<ReturnType<typeof readOwner>>;
      try {
        held = await readOwner(file);
      } catch {
        return;
      }
      if (released) return;
      if (held?.owner?.token !== token) {
        owned = false;
        clearInterval(timer);
        for (const f of lost) f();
        return;
      }
      const now = new Date();
      await fs.utimes(file, now, now).catch(() => undefined);
    })();
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    path: file,
    get owned() {
      return owned;
    },
    onLost(f) {
      lost.push(f);
    },
    async writers(pid) {
      const wf = writersFile(file);
      if (pid === undefined) {
        await fs.rm(wf, { force: true });
        return;
      }
      const start = procStart(pid);
      const rec: WritersRecord = { pid, host: os.hostname(), ...(start ? { procStart: start } : {}) };
      const tmp = `${wf}.${token}.tmp`;
      try {
        await fs.writeFile(tmp, JSON.stringify(rec));
        await fs.rename(tmp, wf);
      } catch (e) {
        await fs.rm(tmp, { force: true });
        throw localLockError(e, file);
      }
    },
    async release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      const held = await readOwner(file).catch(() => undefined);
      if (held?.owner?.token === token) await fs.rm(file, { force: true });
    },
  };
}
