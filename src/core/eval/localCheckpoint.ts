/**
 * `${localCheckpoint}`: the local path of a checkpoint once it has been downloaded. Where a download lands is the
 * transfer's plan (`<download root>/<run>/<checkpoint name>`); whether it is all there is what the plan reads from
 * the sidecar records beside the files (every remote file complete and verified as fetched). Anything less is not
 * a local checkpoint: an eval must never read half a download.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { RemoteRunsError } from '../types';
import type { DownloadPlan } from '../transfer/types';
import { templateVariables } from './template';
import type { EvalProfile } from './types';
import { expandHome } from '../util/home';

/** Whether any field of a profile uses `${localCheckpoint}` (then a download must come first). */
export function usesLocalCheckpoint(profile: Pick<EvalProfile, 'command' | 'cwd' | 'env' | 'sbatch'>): boolean {
  const uses = (text: string, shell: boolean): boolean => templateVariables(text, { shell }).includes('localCheckpoint');
  return (
    uses(profile.command, true) ||
    (profile.cwd !== undefined && uses(profile.cwd, false)) ||
    Object.values(profile.env ?? {}).some((v) => uses(v, false)) ||
    (profile.sbatch ?? []).some((o) => uses(o, false))
  );
}

/**
 * The folder the extension's downloads of a host land under: `<downloadDirectory>/<host>` (a leading `~` is the
 * home folder; a host name is made one safe path segment). The same layout the Download command writes.
 */
export function downloadRootFor(downloadDirectory: string, hostName: string, home: string = os.homedir()): string {
  return path.join(downloadFolder(downloadDirectory, home), hostName.replace(/[/\0]/g, '_') || '_');
}

/** The download folder the setting names (a leading `~` is the home folder). */
export function downloadFolder(downloadDirectory: string, home: string = os.homedir()): string {
  return expandHome(downloadDirectory, home);
}

export type LocalCheckpointState =
  /** Every remote file is here, complete and verified as it was fetched. */
  | { kind: 'downloaded'; path: string }
  /** Some files are here (or partly), not all: `missing` files absent, `partial` begun, `differ` changed locally or remotely. */
  | { kind: 'incomplete'; path: string; missing: number; partial: number; differ: number }
  /** Nothing of it was downloaded. */
  | { kind: 'absent'; path: string };

/** What a download plan says about the checkpoint's local copy. */
export function localCheckpointState(plan: Pick<DownloadPlan, 'localRoot' | 'files'>): LocalCheckpointState {
  let done = 0;
  let missing = 0;
  let partial = 0;
  let differ = 0;
  for (const f of plan.files) {
    if (f.state.kind === 'complete-verified') done++;
    else if (f.state.kind === 'absent') missing++;
    else if (f.state.kind === 'partial' || f.state.kind === 'stale-partial') partial++;
    else differ++;
  }
  if (plan.files.length > 0 && done === plan.files.length) return { kind: 'downloaded', path: plan.localRoot };
  if (done + partial + differ === 0) return { kind: 'absent', path: plan.localRoot };
  return { kind: 'incomplete', path: plan.localRoot, missing, partial, differ };
}

/**
 * The value of `${localCheckpoint}`, or a `not-found` error saying to download the checkpoint first (and what is
 * wrong with the copy there is). `detail.localPath` names where the download would land.
 */
export function requireLocalCheckpoint(state: LocalCheckpointState, profile: string, checkpointName: string): string {
  if (state.kind === 'downloaded') return state.path;
  const why =
    state.kind === 'absent'
      ? `it has not been downloaded (nothing at ${state.path})`
      : `its download at ${state.path} is incomplete (${[
          state.missing ? `${state.missing} file(s) missing` : '',
          state.partial ? `${state.partial} partly downloaded` : '',
          state.differ ? `${state.differ} differ from the remote` : '',
        ]
          .filter(Boolean)
          .join(', ')})`;
  throw new RemoteRunsError('not-found', `The eval profile "${profile}" uses \${localCheckpoint}, but ${why}: download ${checkpointName} first`, {
    variable: 'localCheckpoint',
    localPath: state.path,
  });
}
