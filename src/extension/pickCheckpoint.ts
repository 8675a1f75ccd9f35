/**
 * host → target → run → checkpoint quick picks, shared by the palette's "Download Checkpoint…", "Download Latest
 * Checkpoint" and "Evaluate Checkpoint…"; each passes its own title.
 */
import * as vscode from 'vscode';
import type { HostDirectory } from '../core/hosts';
import type { RemoteRunsCore } from '../core/service';
import { runsOf } from '../core/service';
import { RemoteRunsError, checkpointLabel, formatTarget, latestCheckpoint, latestPhrase, type Checkpoint, type Run, type TargetRef } from '../core/types';
import { pickCheckpointWithNote as checkpointOf } from '../core/service';
import { formatAge, formatBytes, formatCheckpointBytes } from '../core/util/format';

export interface PickedCheckpoint {
  hostName: string;
  target: TargetRef;
  run: Run;
  checkpoint: Checkpoint;
  /** For `latest`: the newer checkpoints it skipped as incomplete, with why (pickCheckpointWithNote). */
  note?: string;
}

export interface Item<T> extends vscode.QuickPickItem {
  value: T;
}

/** A type-to-filter quick pick returning the picked item's value. */
export async function quickPick<T>(title: string, items: Thenable<Item<T>[]> | Item<T>[], placeHolder: string): Promise<T | undefined> {
  const picked = await vscode.window.showQuickPick(items, { title, placeHolder, matchOnDescription: true, matchOnDetail: true, ignoreFocusOut: true });
  return picked?.value;
}

/** Pick a checkpoint (newest first); a step with one choice is skipped. Undefined when the user cancels. */
export async function pickCheckpoint(
  core: RemoteRunsCore,
  hosts: HostDirectory,
  title: string,
  opts: { latestOnly?: boolean } = {},
): Promise<PickedCheckpoint | undefined> {
  const all = hosts.all();
  if (all.length === 0) throw new RemoteRunsError('bad-config', 'No hosts are configured: add one with "Remote Runs: Add Host"');
  const hostName = all.length === 1 ? all[0]!.config.name : await quickPick(`${title} (1/4): host`, all.map((h) => ({ label: h.config.name, description: h.config.host, value: h.config.name })), 'Pick a host');
  if (!hostName) return undefined;
  const targets = (await core.listTargets(hostName)).targets.filter((t) => t.state !== 'stopped');
  const target =
    targets.length === 1
      ? targets[0]
      : await quickPick(`${title} (2/4): where`, targets.map((t) => ({ label: formatTarget(t), description: t.kind === 'host' ? 'bare host' : `${t.label} · ${t.state}`, value: t as TargetRef })), 'Pick the host or a container');
  if (!target) return undefined;
  const listing = await core.listTarget(hostName, target);
  const runs = runsOf(listing).filter((r) => r.checkpoints.length > 0);
  if (runs.length === 0) {
    const why = listing.roots.map((r) => `${r.root}: ${r.state === 'ok' ? 'runs without checkpoints' : r.state}`).join('; ');
    throw new RemoteRunsError('not-found', `No run with checkpoints on ${hostName}/${formatTarget(target)} (${why})`);
  }
  const now = listing.remoteNow;
  const run = await quickPick(
    `${title} (3/4): run`,
    runs.map((r) => {
      const newest = latestCheckpoint(r);
      const latest = newest ? `${latestPhrase(newest)} · ${formatAge(newest.mtime, now)}` : 'no complete checkpoint yet';
      return { label: r.name, description: `${r.checkpoints.length} checkpoints · ${latest}${r.live ? ' · live' : ''}`, detail: r.path, value: r };
    }),
    'Pick a run',
  );
  if (!run) return undefined;
  if (opts.latestOnly) {
    const { checkpoint, note } = checkpointOf(run, 'latest');
    return { hostName, target, run, checkpoint, ...(note ? { note } : {}) };
  }
  const checkpoint = await quickPick(
    `${title} (4/4): checkpoint`,
    [...run.checkpoints].reverse().map((c) => ({ label: c.name, description: `${checkpointLabel(c)} · ${formatCheckpointBytes(c)} · ${formatAge(c.mtime, now)}${c.newest ? ' · newest' : ''}${c.incomplete ? ` · incomplete: ${c.incomplete}` : ''}`, value: c })),
    'Pick a checkpoint (newest first)',
  );
  return checkpoint ? { hostName, target, run, checkpoint } : undefined;
}
