/**
 * Every run with metrics on every configured host, listed on demand (for "Add run…" of a metrics panel): not only the
 * targets the tree happens to have expanded. Each host is asked in parallel over its one pooled connection (targets,
 * then one listing per running target); a host or target that cannot be listed is an entry saying why, never left
 * out. The choices are pure (tested): runs that have metrics logs, minus those already shown; then one marked entry
 * per place that could not be listed.
 */
import { runsOf } from '../service';
import { formatTarget, asRemoteRunsError, type RemoteRunsError, type Run, type Target, type TargetListing, type TargetRef } from '../types';
import { emptyStateText } from '../emptyStates';
import { runId } from './nodes';

/** What is asked of the hosts (the core service). */
export interface RunsSource {
  listTargets(hostName: string, signal?: AbortSignal): Promise<{ targets: Target[] }>;
  listTarget(hostName: string, target: TargetRef, signal?: AbortSignal): Promise<TargetListing>;
}

/** What one place (a host, or one of its targets) gave. */
export type PlaceRuns =
  | { hostName: string; target: TargetRef; ok: true; runs: Run[] }
  /** `target` undefined: the host itself could not be listed (unreachable, login refused…). */
  | { hostName: string; target?: TargetRef; ok: false; error: RemoteRunsError };

/**
 * List every host's running targets; `onPlace` gets each place as it answers (a quick pick fills in as hosts
 * answer, a slow host does not hold back the others). Resolves with all of them, in host order.
 */
export async function listRunsEverywhere(source: RunsSource, hostNames: readonly string[], onPlace?: (p: PlaceRuns) => void, signal?: AbortSignal): Promise<PlaceRuns[]> {
  const perHost = await Promise.all(
    hostNames.map(async (hostName): Promise<PlaceRuns[]> => {
      const say = (p: PlaceRuns): PlaceRuns => (onPlace?.(p), p);
      let targets: Target[];
      try {
        targets = (await source.listTargets(hostName, signal)).targets;
      } catch (e) {
        return [say({ hostName, ok: false, error: asError(e) })];
      }
      return Promise.all(
        targets
          .filter((t) => t.state !== 'stopped')
          .map(async (target): Promise<PlaceRuns> => {
            const ref: TargetRef = { kind: target.kind, id: target.id };
            try {
              return say({ hostName, target: ref, ok: true, runs: runsOf(await source.listTarget(hostName, ref, signal)) });
            } catch (e) {
              return say({ hostName, target: ref, ok: false, error: asError(e) });
            }
          }),
      );
    }),
  );
  return perHost.flat();
}

export type RunChoice =
  | { kind: 'run'; key: string; hostName: string; target: TargetRef; run: Run; label: string; description: string; detail: string }
  /** A place that could not be listed: shown, not pickable. */
  | { kind: 'unreachable'; key: string; label: string; description: string; detail: string };

/** The choices for "Add run…": runs with metrics logs not in `exclude` (run keys), then the places that failed. */
export function addRunChoices(places: readonly PlaceRuns[], exclude: readonly string[] = []): RunChoice[] {
  const skip = new Set(exclude);
  const runs: RunChoice[] = [];
  const failed: RunChoice[] = [];
  for (const p of places) {
    const where = `${p.hostName}${p.target ? `/${formatTarget(p.target)}` : ''}`;
    if (!p.ok) {
      const title = emptyStateText(p.error.kind).title.toLowerCase();
      failed.push({ kind: 'unreachable', key: `!${where}`, label: where, description: title, detail: p.error.message });
      continue;
    }
    for (const run of p.runs) {
      if (run.metrics.length === 0) continue;
      const key = runId(p.hostName, p.target, run.path);
      if (skip.has(key)) continue;
      runs.push({
        kind: 'run',
        key,
        hostName: p.hostName,
        target: p.target,
        run,
        label: run.name,
        description: `${where}${run.live ? ' · live' : ''}`,
        detail: `${run.path} · ${run.metrics.map((m) => m.slice(m.lastIndexOf('/') + 1)).join(', ')}`,
      });
    }
  }
  return [...runs, ...failed];
}

function asError(e: unknown): RemoteRunsError {
  return asRemoteRunsError(e);
}
