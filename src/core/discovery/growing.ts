/**
 * "Still being written" across two listings: a checkpoint whose bytes changed since a listing taken shortly before is
 * being written now, whatever its names say (a torch.save straight to its final name, an rsync in progress). Pure:
 * takes the previous listing of the same target and the new one. The tree keeps its previous listing and applies
 * this on each refresh; the CLI has one listing only and cannot tell (it says nothing of growth, not "complete").
 */
import type { TargetListing } from '../types';
import { formatBytes } from '../util/format';
import { markNewest } from './runTree';

/** Two listings further apart than this say nothing about a write in progress (a run may have been resumed since). */
export const GROWING_WINDOW_MS = 10 * 60 * 1000;

/**
 * Mark, in `current`, each checkpoint whose size differs from the same path in `previous` (when the two listings'
 * remote clocks are at most `windowMs` apart) as incomplete, and pick `latest` again. A checkpoint already marked
 * keeps its own reason. Returns `current`.
 */
export function markGrowing(previous: TargetListing | undefined, current: TargetListing, windowMs = GROWING_WINDOW_MS): TargetListing {
  if (!previous) return current;
  const gap = current.remoteNow - previous.remoteNow;
  if (gap <= 0 || gap > windowMs) return current;
  const before = new Map<string, number>();
  for (const root of previous.roots) {
    if (root.state !== 'ok') continue;
    for (const run of root.runs) for (const c of run.checkpoints) before.set(`${c.kind}\u0000${c.path}`, c.bytes);
  }
  for (const root of current.roots) {
    if (root.state !== 'ok') continue;
    for (const run of root.runs) {
      let changed = false;
      for (const c of run.checkpoints) {
        const was = before.get(`${c.kind}\u0000${c.path}`);
        if (was === undefined || was === c.bytes || c.incomplete !== undefined) continue;
        c.incomplete = `still being written: ${c.bytes > was ? 'grew' : 'changed'} from ${formatBytes(was)} to ${formatBytes(c.bytes)} since the last listing`;
        changed = true;
      }
      if (changed) markNewest(run.checkpoints);
    }
  }
  return current;
}
