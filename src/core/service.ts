/**
 * The one façade the extension, the CLI and (later) the language server use to ask what is on a host.
 * It knows the configured hosts and turns their questions into command values run over a shared executor;
 * it holds no UI state.
 */
import {
  DEFAULT_RUN_ROOTS,
  RemoteRunsError,
  formatTarget,
  checkpointLabel,
  latestCheckpoint,
  checkpointOrder,
  parseTarget,
  type ClusterConfig,
  type HostConfig,
  type Checkpoint,
  type Run,
  type Target,
  type TargetListing,
  type TargetRef,
} from './types';
import { runCommand, type Executor } from './remote';
import type { StreamRunner } from './metrics/follow/tailStream';
import { warmParseThread } from './metrics/formats/parseOffload';
import { DEFAULT_MAX_ENTRIES, listRunsCommand } from './discovery/listScript';
import { cutShortText } from './discovery/listParse';
import { discoverTargetsCommand } from './discovery/targetsDiscovery';
import { displayName } from '../shared/display';
import type { Workload } from './kube/workloads';
import { listClusterTargets } from './kube/clusterTargets';
import { PodExecutor } from './kube/executor';
import { podTransferSource } from './transfer/podSource';
import type { PodTransferSource } from './transfer/types';
import { parsePodTargetId } from './kube/names';
import type { KubectlAccess } from './kube/kubectl';

export interface HostTargets {
  targets: Target[];
  /** Runtime problems that did not stop the listing (e.g. docker daemon refused the user). */
  problems: string[];
  /**
   * A Kubernetes cluster's pods grouped into jobs (kube/workloads.ts), whose containers are `targets`: the tree's
   * namespace → job → pod rows. Absent for an SSH host.
   */
  workloads?: Workload[];
}

export interface CoreOptions {
  /** The configured hosts, read each time (settings can change). */
  hosts(): HostConfig[];
  /** The shared executor for a host (one pooled connection per host). */
  executorFor(host: HostConfig): Executor;
  /** How a long read on a host's target runs as one stream (OpenSSH: metrics/follow/bulkLinks.ts); absent: never. */
  streamFor?(host: HostConfig, target: TargetRef): StreamRunner | undefined;
  /** Bound on records per listing, so a huge directory cannot hang a view. */
  maxEntries?: number;
  /** The configured Kubernetes clusters (entries with `"kind": "kubernetes"`), read each time; absent: none. */
  clusters?(): ClusterConfig[];
  /** The kubectl program (the machine-scoped remoteRuns.kubectlPath); undefined: `kubectl` from PATH. */
  kubectlPath?(): string | undefined;
}

export class RemoteRunsCore {
  constructor(private readonly options: CoreOptions) {}

  /** The host config by name, or a `not-found` error listing the names that exist. */
  host(name: string): HostConfig {
    const hosts = this.options.hosts();
    const found = hosts.find((h) => h.name === name);
    if (!found) {
      const names = hosts.map((h) => h.name);
      throw new RemoteRunsError(
        'not-found',
        `No host named ${JSON.stringify(name)} is configured${names.length ? ` (configured: ${names.join(', ')})` : ' (no hosts are configured)'}`,
      );
    }
    return found;
  }

  /** The shared executor of a configured host (for callers that run their own command values, e.g. metrics tails). */
  executor(hostName: string): Executor {
    return this.options.executorFor(this.host(hostName));
  }

  /** The configured Kubernetes cluster of this name, if `name` is one (hosts and clusters share one set of names). */
  cluster(name: string): ClusterConfig | undefined {
    return this.options.clusters?.().find((c) => c.name === name);
  }

  /** How kubectl reaches a cluster: its entry and the configured kubectl program. */
  kubectlAccess(cluster: ClusterConfig): KubectlAccess {
    const kubectl = this.options.kubectlPath?.();
    return { cluster, ...(kubectl ? { kubectl } : {}) };
  }

  /**
   * The executor that runs commands in `target` of a host or cluster: the host's shared one, or for a pod container
   * of a cluster, `kubectl exec` on this machine (kube/executor.ts).
   */
  targetExecutor(name: string, target: TargetRef): Executor {
    return this.podExecutor(name, target) ?? this.executor(name);
  }

  /**
   * For a cluster, the executor of its pod container `target` (`kubectl exec` on this machine, kube/executor.ts; a
   * target that is not a pod is `bad-address`); undefined for a host, whose executor is its caller's to choose (an
   * eval's launch asks the pool for one that never retries, eval/service.ts executorFor).
   */
  podExecutor(name: string, target: TargetRef): Executor | undefined {
    const cluster = this.cluster(name);
    if (!cluster) return undefined;
    if (target.kind !== 'pod') throw new RemoteRunsError('bad-address', `${name} is a Kubernetes cluster: its targets are pod containers (pod:NAMESPACE/POD:CONTAINER), not ${formatTarget(target)}`);
    return new PodExecutor(this.kubectlAccess(cluster), parsePodTargetId(target.id));
  }

  /**
   * The source a checkpoint download of `target` reads from when `name` is a cluster (transfer/podSource.ts: its
   * commands and byte streams through kubectl exec); undefined for a host, whose source is its pool entry (the
   * faces build that one, holding the pool).
   */
  podTransferSource(name: string, target: TargetRef): PodTransferSource | undefined {
    const cluster = this.cluster(name);
    if (!cluster) return undefined;
    if (target.kind !== 'pod') throw new RemoteRunsError('bad-address', `${name} is a Kubernetes cluster: its targets are pod containers (pod:NAMESPACE/POD:CONTAINER), not ${formatTarget(target)}`);
    return podTransferSource(name, this.kubectlAccess(cluster), target.id);
  }

  /** How a long read on `target` of a configured host runs as one stream, where it can (RunFeed's backlog). */
  stream(hostName: string, target: TargetRef): StreamRunner | undefined {
    // A cluster's containers have no SSH session to stream over: their reads are kubectl exec commands.
    if (this.cluster(hostName)) return undefined;
    return this.options.streamFor?.(this.host(hostName), target);
  }

  /**
   * Someone is about to open a run's metrics on `target` (its runs were just expanded in the tree): start what a long
   * backlog will need beside them, so the open does not wait for it. The host's OpenSSH session logs in (where
   * streams go through one) and a parse thread starts (it waits idle for a minute; parseOffload.ts). Nothing is read.
   */
  prepareMetrics(hostName: string, target: TargetRef): void {
    this.stream(hostName, target)?.prepare?.();
    warmParseThread();
  }

  /** Which targets a host has: the bare host plus discovered (or configured) containers, with their state. */
  async listTargets(hostName: string, signal?: AbortSignal): Promise<HostTargets> {
    // A cluster's targets are its pods' containers, grouped into jobs (kube/clusterTargets.ts).
    const cluster = this.cluster(hostName);
    if (cluster) return listClusterTargets(this.kubectlAccess(cluster), signal ? { signal } : {});
    const host = this.host(hostName);
    const exec = this.options.executorFor(host);
    const configured = host.targets && host.targets !== 'auto' ? host.targets.map(parseTarget) : undefined;
    const found = await runCommand(exec, { kind: 'host', id: '' }, discoverTargetsCommand(), signal);
    if (!configured) return { targets: found.targets, problems: found.problems };
    // Explicit targets keep the configured order; their state comes from discovery where it saw them.
    const targets = configured.map((ref): Target => {
      const seen = found.targets.find((t) => t.kind === ref.kind && t.id === ref.id);
      if (seen) return seen;
      return { ...ref, state: ref.kind === 'host' ? 'running' : 'unknown', label: ref.id || 'host' };
    });
    return { targets, problems: found.problems };
  }

  /** The run roots searched on the host or cluster of this name (in each container of a cluster). */
  runRootsOf(name: string): string[] {
    return this.runRoots(this.cluster(name) ?? this.host(name));
  }

  /** The run roots searched on a host (in each container of a cluster): per-host setting, else the defaults. */
  runRoots(host: Pick<HostConfig, 'runRoots'>): string[] {
    return host.runRoots && host.runRoots.length > 0 ? [...host.runRoots] : [...DEFAULT_RUN_ROOTS];
  }

  /**
   * List every run root of a target with ONE remote command (or only `only`, some of its run roots: the window's
   * listing cache, discovery/listings.ts, lists the roots it does not hold yet).
   */
  async listTarget(hostName: string, target: TargetRef, signal?: AbortSignal, only?: readonly string[]): Promise<TargetListing> {
    const host: Pick<HostConfig, 'runRoots'> = this.cluster(hostName) ?? this.host(hostName);
    const exec = this.targetExecutor(hostName, target);
    const roots = only ? [...only] : this.runRoots(host);
    const result = await runCommand(exec, target, listRunsCommand(roots, { maxEntries: this.options.maxEntries }), signal);
    // A root whose walk hit the budget is listed again with the budget shared among its folders (a second round trip,
    // only then): what survives no longer depends on directory order, and the folders that were too large are named.
    const cut = result.roots.map((r, i) => (r.truncated && r.state !== 'path-missing' && r.state !== 'not-a-directory' && r.state !== 'permission-denied' ? i : -1)).filter((i) => i >= 0);
    const defaults = host.runRoots && host.runRoots.length > 0 ? {} : { defaultRoots: true as const };
    if (cut.length === 0) return { target, roots: result.roots, remoteNow: result.remoteNow, ...defaults };
    const fair = await runCommand(exec, target, listRunsCommand(cut.map((i) => roots[i]), { maxEntries: this.options.maxEntries, mode: 'fair' }), signal);
    const merged = [...result.roots];
    cut.forEach((index, k) => (merged[index] = fair.roots[k]));
    return { target, roots: merged, remoteNow: result.remoteNow, ...defaults };
  }

  /**
   * The run (and checkpoint) that the parts of an address after the target name: the run by its name (its shortest
   * unique path, `expA/seed1`) or by more of its path below the root, then at most one part for the checkpoint
   * (`checkpoint: 'required'`: exactly one; `'optional'`: one or none; `'none'`: none). `not-found` names the runs
   * there; `ambiguous` lists every run the parts could mean.
   */
  async resolveRun(
    hostName: string,
    target: TargetRef,
    segments: readonly string[],
    checkpoint: 'required' | 'optional' | 'none',
    signal?: AbortSignal,
  ): Promise<{ run: Run; listing: TargetListing; checkpoint?: string; note?: string; listedInPart?: string }> {
    const listing = await this.listTarget(hostName, target, signal);
    const runs = runsOf(listing);
    const found = new Map<Run, string | undefined>();
    const readings: string[] = [];
    for (let cut = segments.length; cut >= 1; cut--) {
      const rest = segments.length - cut;
      if (rest > 1 || (rest === 1 && checkpoint === 'none') || (rest === 0 && checkpoint === 'required')) continue;
      const name = segments.slice(0, cut).join('/');
      for (const r of runs) {
        if (r.name !== name && !r.path.endsWith(`/${name}`)) continue;
        if (found.has(r)) continue;
        found.set(r, rest === 1 ? segments[cut] : undefined);
        readings.push(`${r.name} (${r.path})${rest === 1 ? ` checkpoint ${segments[cut]}` : ''}`);
      }
      // The whole path naming a run wins over a shorter run with a checkpoint only when nothing else matches.
      if (found.size > 0 && checkpoint !== 'optional') break;
    }
    const where = `${hostName}/${formatTarget(target)}`;
    if (found.size === 0 && checkpoint !== 'required') {
      // A folder that was a run and is now part of one (a Trainer's runs/<date>_<host>/ once its output_dir is the
      // run), or one that holds exactly one run: the address keeps working, with a note (never silently).
      const moved = enclosingRun(runs, segments.join('/'));
      if (moved) return { run: moved.run, listing, note: moved.note, ...inPart(listing, moved.run, this.options.maxEntries) };
    }
    if (found.size === 0) {
      const wanted = checkpoint === 'required' ? segments.slice(0, -1).join('/') : segments.join('/');
      throw new RemoteRunsError(
        'not-found',
        `No run named ${JSON.stringify(wanted)} on ${where}` + (runs.length ? ` (runs there: ${runs.slice(0, 10).map((r) => displayName(r.name)).join(', ')})` : '') + partialNote(listing, this.options.maxEntries),
        { seen: runs.slice(0, 10).map((r) => r.name) },
      );
    }
    if (found.size > 1) {
      throw new RemoteRunsError('ambiguous', `${segments.join('/')} on ${where} could mean ${found.size} things: ${readings.join('; ')}. Give more of the run's path.`, {
        candidates: [...found.keys()].map((r) => r.name),
      });
    }
    const [[run, ck]] = [...found];
    return { run, listing, ...(ck !== undefined ? { checkpoint: ck } : {}), ...inPart(listing, run, this.options.maxEntries) };
  }

  /** One run by name within a target's listing, or a `not-found` error naming the runs that exist. */
  async findRun(hostName: string, target: TargetRef, runName: string, signal?: AbortSignal): Promise<{ run: Run; listing: TargetListing }> {
    const listing = await this.listTarget(hostName, target, signal);
    return { run: this.runNamed(hostName, listing, runName), listing };
  }

  /** One run by name within a target's listing already made (findRun without the listing), or `not-found`. */
  runNamed(hostName: string, listing: TargetListing, runName: string): Run {
    const runs = runsOf(listing);
    const run = runs.find((r) => r.name === runName);
    if (!run) {
      throw new RemoteRunsError(
        'not-found',
        `No run named ${JSON.stringify(runName)} on ${hostName}/${formatTarget(listing.target)}` +
          (runs.length ? ` (runs there: ${runs.slice(0, 10).map((r) => displayName(r.name)).join(', ')})` : '') +
          partialNote(listing, this.options.maxEntries),
        { seen: runs.slice(0, 10).map((r) => r.name) },
      );
    }
    return run;
  }
}

/**
 * The run a folder named `name` (a path suffix, as addresses name runs) now belongs to, when no run has that name:
 * the one run whose logs or checkpoints lie below such a folder (the folder is part of it), else the one run below
 * such a folder (the folder holds it). Undefined when none or several fit.
 */
export function enclosingRun(runs: readonly Run[], name: string): { run: Run; note: string } | undefined {
  const folder = `/${name}/`;
  // The folder is on the path of one of the run's files, and is not the run's folder or one above it.
  const inside = runs.filter((r) => !`${r.path}/`.includes(folder) && [...r.metrics, ...r.checkpoints.map((c) => `${c.path}/`)].some((p) => p.startsWith(`${r.path}/`) && p.includes(folder)));
  if (inside.length === 1) {
    const r = inside[0];
    return { run: r, note: `${JSON.stringify(name)} is no longer a run of its own: it is part of the run ${r.name} (${r.path}); using that run` };
  }
  if (inside.length > 1) return undefined;
  const holds = runs.filter((r) => `${r.path}/`.includes(folder));
  if (holds.length === 1) {
    const r = holds[0];
    return { run: r, note: `${JSON.stringify(name)} is not a run itself; it holds one run, ${r.name} (${r.path}); using that run` };
  }
  return undefined;
}

function inPart(listing: TargetListing, run: Run, maxEntries?: number): { listedInPart?: string } {
  const why = runListedInPart(listing, run, maxEntries);
  return why ? { listedInPart: why } : {};
}

/**
 * Why this run may be missing checkpoints or logs, when its root was listed only in part (listScript.ts: the entry
 * budget, shared fairly among the root's folders): the root's walk stopped at its budget, or a folder listed in part
 * is the run, holds it or lies inside it. Undefined when the run was listed whole. Said by `ls RUN` (text and
 * `listedInPart` in JSON) and added to a `not-found` for a checkpoint of it (pickCheckpointWithNote).
 */
export function runListedInPart(listing: TargetListing, run: Pick<Run, 'path'>, maxEntries = DEFAULT_MAX_ENTRIES): string | undefined {
  const root = listing.roots.find((r) => r.state === 'ok' && r.runs.some((x) => x.path === run.path));
  if (!root || !root.truncated) return undefined;
  const tooLarge = root.tooLarge ?? [];
  if (tooLarge.length === 0) return `the run was listed in part: ${cutShortText(root.path, tooLarge, maxEntries)}`;
  const base = root.path === '/' ? '' : root.path;
  const touching = tooLarge.filter((t) => {
    if (t.rel === '') return true;
    const p = `${base}/${t.rel}`;
    return p === run.path || p.startsWith(`${run.path}/`) || run.path.startsWith(`${p}/`);
  });
  if (touching.length === 0) return undefined;
  return `the run was listed in part: ${cutShortText(root.path, touching, maxEntries).replace(/^listed in part, runs inside may be missing: /, '')} had more entries than the listing's budget, so checkpoints or logs of it may be missing`;
}

/** When a root was listed only in part, a run not found may be in the part that was not: say where. */
function partialNote(listing: TargetListing, maxEntries = DEFAULT_MAX_ENTRIES): string {
  const cut = listing.roots.filter((r) => r.truncated);
  return cut.length ? `; ${cut.map((r) => `${r.root}: ${cutShortText(r.path, r.tooLarge ?? [], maxEntries)}`).join('; ')}` : '';
}

/**
 * A checkpoint of a run by
 * - its name (`step_20000`, `last.ckpt`, `final`);
 * - `latest` (latestCheckpoint: the complete step checkpoint with the highest step; one still being written never
 *   is; only final weights: those);
 * - a step (`20000`): the step checkpoint of that step. Two of them (`step_300/` beside `epoch=2-step=300.ckpt`, or
 *   Lightning's `-v1` of a second fit) are `ambiguous`, naming both, unless exactly one is complete: that one is the
 *   clear choice, and the note says why. Aliases holding that step are not counted: they name the same save;
 * - an alias's short name: `last`, `best` (the role of `last.ckpt`, `checkpoint_best.pt`…), when one alias has it.
 * An alias that is a symlink to a listed checkpoint gives that checkpoint (the note says so): the save it points to,
 * under its own name, not a second copy of it.
 * `not-found` errors name what is there.
 */
export function pickCheckpointWithNote(run: Run, which: string, listedInPart?: string): PickedCheckpoint {
  try {
    const picked = pickListed(run, which);
    if (!listedInPart || which !== 'latest') return picked;
    // The newest of what was listed: a newer one may be in the part that was not.
    const said = `latest is the newest of what was listed; ${listedInPart}`;
    return { ...picked, note: picked.note ? `${picked.note}; ${said}` : said };
  } catch (e) {
    // A checkpoint not found in a run listed in part may be in the part that was not listed: said, never silently.
    if (listedInPart && e instanceof RemoteRunsError && e.kind === 'not-found') throw new RemoteRunsError('not-found', `${e.message}; ${listedInPart}`, e.detail);
    throw e;
  }
}

function pickListed(run: Run, which: string): PickedCheckpoint {
  if (run.checkpoints.length === 0) {
    throw new RemoteRunsError('not-found', `Run ${JSON.stringify(run.name)} at ${run.path} has no checkpoints yet`);
  }
  const names = run.checkpoints.map((c) => c.name);
  const followAlias = (c: Checkpoint): { checkpoint: Checkpoint; note?: string } => {
    const to = c.alias?.of !== undefined ? run.checkpoints.find((x) => x.name === c.alias?.of && x !== c) : undefined;
    return to ? { checkpoint: to, note: `${c.name} is a symlink to ${to.name}: taking ${to.name}` } : { checkpoint: c };
  };
  if (which === 'latest') {
    const latest = latestCheckpoint(run);
    if (latest) {
      const skipped = skippedForLatest(run, latest);
      if (skipped.length === 0) return { checkpoint: latest };
      return { checkpoint: latest, skipped, note: skippedNote(latest, skipped) };
    }
    const last = [...run.checkpoints].reverse().find((c) => c.kind !== 'alias') ?? run.checkpoints[run.checkpoints.length - 1];
    throw new RemoteRunsError(
      'not-found',
      `Run ${JSON.stringify(run.name)} has no complete checkpoint yet: ${last.name} ${last.incomplete ?? 'is incomplete'} (name it to take it anyway)`,
      { seen: names.slice(-8) },
    );
  }
  const byName = run.checkpoints.find((c) => c.name === which);
  if (byName) {
    const picked = followAlias(byName);
    // Named, so taken; but never silently: a save still being written may miss its weights or optimizer.
    const c = picked.checkpoint;
    if (c.incomplete === undefined) return picked;
    const warning = `${c.name} is incomplete (${c.incomplete}): taking it because it was named`;
    return { ...picked, note: picked.note ? `${picked.note}; ${warning}` : warning };
  }
  if (/^\d+$/.test(which)) {
    const byStep = run.checkpoints.filter((c) => c.kind === 'step' && c.step === Number(which));
    if (byStep.length === 1) return { checkpoint: byStep[0] };
    if (byStep.length > 1) {
      const complete = byStep.filter((c) => c.incomplete === undefined);
      if (complete.length === 1) {
        const others = byStep.filter((c) => c !== complete[0]).map((c) => `${c.name} (${c.incomplete})`);
        return { checkpoint: complete[0], note: `step ${which} is also ${others.join(', ')}: taking ${complete[0].name}, the only complete one` };
      }
      const both = byStep.map((c) => c.name);
      throw new RemoteRunsError('ambiguous', `Step ${which} of run ${JSON.stringify(run.name)} is ${byStep.length} checkpoints: ${both.join(', ')}; name the one you mean`, {
        candidates: both,
      });
    }
    // No step checkpoint has it; say what does carry that number instead of taking it silently.
    const others = run.checkpoints.filter((c) => (c.kind === 'epoch' && c.epoch === Number(which)) || (c.kind === 'save' && c.save === Number(which)) || c.alias?.step === Number(which));
    if (others.length > 0) {
      throw new RemoteRunsError(
        'not-found',
        `No checkpoint of run ${JSON.stringify(run.name)} is at step ${which}; the number is in ${others.map((c) => `${c.name} (${checkpointLabel(c)})`).join(', ')}: name it to take it`,
        { seen: others.map((c) => c.name) },
      );
    }
  }
  const byRole = run.checkpoints.filter((c) => c.alias?.role === which);
  if (byRole.length === 1) return followAlias(byRole[0]);
  if (byRole.length > 1) {
    const all = byRole.map((c) => c.name);
    throw new RemoteRunsError('ambiguous', `${which} in run ${JSON.stringify(run.name)} is ${byRole.length} checkpoints: ${all.map(displayName).join(', ')}; name the one you mean`, { candidates: all });
  }
  throw new RemoteRunsError(
    'not-found',
    `No checkpoint ${JSON.stringify(which)} in run ${JSON.stringify(run.name)} (there: ${names.slice(-8).map(displayName).join(', ')}${names.length > 8 ? ', …' : ''}; or "latest")`,
    { seen: names.slice(-8) },
  );
}

/** What pickCheckpointWithNote chose, and what a face must say about it. */
export interface PickedCheckpoint {
  checkpoint: Checkpoint;
  /** Said to the user beside the result (stderr in the CLI, a notification in the extension). */
  note?: string;
  /** For `latest`: the checkpoints newer than the one taken that were passed over as incomplete, with why. */
  skipped?: { name: string; incomplete: string }[];
}

/**
 * The checkpoints `latest` passed over: incomplete ones (not aliases) of the same kind with a higher number, or of
 * any kind written after it (an accelerate save in progress beside finished saves, a Trainer checkpoint without its
 * trainer_state.json).
 */
export function skippedForLatest(run: Pick<Run, 'checkpoints'>, latest: Checkpoint): { name: string; incomplete: string }[] {
  return run.checkpoints
    .filter((c) => c !== latest && c.kind !== 'alias' && c.incomplete !== undefined && ((c.kind === latest.kind && checkpointOrder(c) > checkpointOrder(latest)) || c.mtime > latest.mtime))
    .map((c) => ({ name: c.name, incomplete: c.incomplete! }));
}

/** How `latest` says what it passed over: `latest is checkpoint-10; skipped checkpoint-20: trainer_state.json not written yet: …`. */
export function skippedNote(latest: Pick<Checkpoint, 'name'>, skipped: readonly { name: string; incomplete: string }[]): string {
  return `latest is ${latest.name}; skipped ${skipped.map((c) => `${c.name}: ${c.incomplete}`).join('; ')}`;
}

/** pickCheckpointWithNote without the note (callers that have nowhere to say it). */
export function pickCheckpoint(run: Run, which: string): Checkpoint {
  return pickCheckpointWithNote(run, which).checkpoint;
}

/** All runs of a listing across its roots, in root order. */
export function runsOf(listing: TargetListing): Run[] {
  return listing.roots.flatMap((r) => (r.state === 'ok' ? r.runs : []));
}
