/**
 * The private folders the system ssh runs from (a config, askpass, a control socket; the transfers' pinned
 * known_hosts and public keys): one per OpenSSH session, 0700, with an `owner` file naming the process it belongs
 * to, so a folder left behind by a killed process is removed by the next one. Used by the OpenSSH transport
 * (connection.ts) and the transfers' OpenSSH sessions (session.ts).
 *
 * This folder never imports `vscode`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pidRunning } from '../../util/pids';

/** A new session folder in `parent` (orphans of dead processes removed first). */
export function createSessionFolder(parent: string): string {
  removeOrphanedSessions(parent);
  const folder = fs.mkdtempSync(path.join(parent, 'rr-ssh-'));
  fs.chmodSync(folder, 0o700);
  fs.writeFileSync(path.join(folder, 'owner'), String(process.pid), { mode: 0o600 });
  return folder;
}

/**
 * Remove session folders in `parent` whose process is gone (killed mid-download, before it could clean up): they
 * hold no secret (config, pinned known_hosts, public keys, dead sockets), but nothing of ours should stay behind.
 * A folder is another live process's while the pid in its `owner` file runs; without that file it is left alone.
 */
export function removeOrphanedSessions(parent: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = fs.readdirSync(parent).filter((n) => n.startsWith('rr-ssh-'));
  } catch {
    return 0;
  }
  for (const name of names) {
    const folder = path.join(parent, name);
    try {
      const st = fs.lstatSync(folder);
      if (!st.isDirectory() || (typeof process.getuid === 'function' && st.uid !== process.getuid())) continue;
      const pid = Number(fs.readFileSync(path.join(folder, 'owner'), 'utf8'));
      if (!Number.isSafeInteger(pid) || pid <= 0 || pidRunning(pid)) continue;
      fs.rmSync(folder, { recursive: true, force: true });
      removed++;
    } catch {
      // no owner file, or gone meanwhile: not ours to judge
    }
  }
  return removed;
}
