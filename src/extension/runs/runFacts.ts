/**
 * What the run table and the run tooltip read of a run, over the host's one pooled connection: its config files
 * (core/runs/config.ts, one bounded command, cached a short while per run) and the last values of its metrics (the
 * same RunFeed the panels use, read once). No `vscode`.
 */
import type { RemoteRunsCore } from '../../core/service';
import { runCommand } from '../../core/remote';
import { runConfigCommand, type RunConfig } from '../../core/runs/config';
import type { RunFacts } from '../../core/runs/table';
import { RunFeed } from '../../core/metrics';
import { toRunRef } from '../../core/runRef';
import { formatTarget, isRemoteRunsError, type Run, type TargetRef } from '../../core/types';

/** A config read is kept this long (a tooltip shown again does not ask again). */
const CONFIG_TTL_MS = 30_000;
/** Runs read at once for a table (each is one or two commands on the one connection). */
const PARALLEL = 4;

export class RunFactsReader {
  private readonly configs = new Map<string, { at: number; value: Promise<RunConfig> }>();

  constructor(private readonly core: RemoteRunsCore) {}

  /** The run's config files, read (or from the cache). Rejects with the core's typed errors. */
  config(hostName: string, target: TargetRef, run: Pick<Run, 'path'>): Promise<RunConfig> {
    const key = `${hostName}\0${formatTarget(target)}\0${run.path}`;
    const hit = this.configs.get(key);
    if (hit && Date.now() - hit.at < CONFIG_TTL_MS) return hit.value;
    const value = runCommand(this.core.targetExecutor(hostName, target), target, runConfigCommand(run.path));
    this.configs.set(key, { at: Date.now(), value });
    value.catch(() => this.configs.delete(key));
    return value;
  }

  /** Config and last metric values of each run, a few runs at a time; a run that fails says why in its facts. */
  async facts(hostName: string, target: TargetRef, runs: readonly Run[], signal?: AbortSignal): Promise<RunFacts[]> {
    const out: RunFacts[] = runs.map((run) => ({ run }));
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < runs.length && !signal?.aborted) {
        const i = next++;
        const run = runs[i]!;
        const f = out[i]!;
        try {
          f.config = await this.config(hostName, target, run);
        } catch (e) {
          f.configError = `config not read: ${message(e)}`;
        }
        if (run.metrics.length === 0) continue;
        const feed = new RunFeed(toRunRef(hostName, target, run), { executor: () => this.core.targetExecutor(hostName, target), intervalMs: () => 60_000 });
        try {
          await feed.pollNow();
          const last: Record<string, number> = {};
          for (const [k, s] of feed.series()) if (s.length) last[k] = s.yAt(s.length - 1);
          f.last = last;
          const step = feed.latestStep();
          if (step !== undefined) f.latestStep = step;
        } catch (e) {
          f.metricsError = message(e);
        } finally {
          feed.dispose();
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, runs.length) }, worker));
    return out;
  }
}

function message(e: unknown): string {
  return isRemoteRunsError(e) || e instanceof Error ? e.message : String(e);
}
