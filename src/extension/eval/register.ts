/**
 * Evals in VS Code: "Evaluate Checkpoint…" (tree context menu or palette, then a profile when there are several),
 * each running eval in its own terminal fed by the core's follower, "Stop Eval", and the eval state on each
 * checkpoint of the tree. The evals themselves run detached on their target (src/core/eval); this file only asks,
 * shows and re-attaches.
 *
 * Re-attach: a run's evals are listed when the tree first draws its checkpoints (also after a window reload, when
 * VS Code restores the expansion) and again while some of them run; a running eval without a terminal gets one,
 * showing its log from the start — unless the user closed that eval's terminal in this window.
 *
 * Results: every listing is published to the results hub, which the metrics views (points on the charts) and the
 * eval table ("Show Eval Results") watch; a view watching a run not listed yet gets it listed, and watched runs
 * with running evals are listed again until those end. `${localCheckpoint}` is the verified local download of the
 * checkpoint; a profile that uses it before the download says so and offers to download first.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { HostDirectory } from '../../core/hosts';
import type { RemoteRunsCore } from '../../core/service';
import type { ConnectionPool } from '../../core/ssh/pool';
import { EvalService } from '../../core/eval/service';
import { consentDetail, needsConsent, profileFingerprint, withApproval, type ConsentProfile, type SettingOrigin } from '../../core/settingsTrust';
import { profileChoices, type RunnableProfile } from '../../core/eval/profiles';
import { evaluateCheckpointWithServer, poolMeasure, type SpecCheckpointEval } from '../../core/eval/spec/server/checkpointEval';
import type { SpecServerProfile } from '../../core/eval/spec/server/profile';
import { runKey } from '../../core/eval/place';
import type { EvalPlace, EvalProfile, EvalRecord, EvalRunRef, EvalSubject } from '../../core/eval/types';
import { downloadRootFor, localCheckpointState, requireLocalCheckpoint, usesLocalCheckpoint, type LocalCheckpointState } from '../../core/eval/localCheckpoint';
import { planDownload, transferSourceFor } from '../../core/transfer';
import { isRemoteRunsError } from '../../core/types';
import { pickRun, runRefOfArg } from '../metrics/treeGlue';
import { EvalTablePanels } from './evalTableView';
import { evalRunOf, type EvalResultsHub } from './resultsHub';
import { RemoteRunsError, checkpointLabel, evalStep, formatTarget, type TargetRef } from '../../core/types';
import { checkpointsSince, queueOrder, runEvalQueue } from '../../core/eval/queue';
import { delay } from '../../core/util/delay';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import { downloadDirectory, type Settings } from '../settings';
import type { CheckpointNode, TreeNode } from '../../core/tree/nodes';
import type { RunsTreeProvider } from '../tree/treeProvider';
import { checkpointEvalText } from './decoration';
import { EvalTerminal } from './evalTerminal';
import { pickCheckpoint, quickPick } from '../pickCheckpoint';
import { withCancellation } from '../../core/util/abort';

export interface EvalDeps {
  store: DisposableStore;
  core: RemoteRunsCore;
  pool: ConnectionPool;
  hosts: HostDirectory;
  tree: RunsTreeProvider;
  log: Logger;
  context: vscode.ExtensionContext;
  /** Eval profiles are read through it, with where they came from. */
  settings: Settings;
  /** Where listings are published for the charts and the eval table. */
  results: EvalResultsHub;
  /** A run's evals were listed again (`before`: the previous listing, undefined the first time), for notifications. */
  onEvalsListed?(subject: EvalRunRef, before: readonly EvalRecord[] | undefined, after: readonly EvalRecord[]): void;
}

/** What the tree asks of evals. */
export interface EvalsHandle {
  /** The eval text for a checkpoint (undefined: none known yet; a first call starts listing its run's evals). */
  checkpointDecoration(node: CheckpointNode): string | undefined;
  /** A pending or running eval of this checkpoint is known. */
  checkpointEvalRunning(node: CheckpointNode): boolean;
}

interface RunEvals {
  subject: EvalRunRef;
  entries: { place: EvalPlace; record: EvalRecord }[];
  loadedAt: number;
  loading?: Promise<void>;
}

/** While some eval of a run runs, its listing is refreshed at most this often when the tree redraws it. */
const RELIST_RUNNING_MS = 15_000;

/** How often the eval queue reads the state of the eval it waits for. */
const QUEUE_POLL_MS = 2000;

/** globalState key: fingerprints of workspace eval profiles the user said yes to (src/core/settingsTrust.ts). */
export const APPROVED_PROFILES_KEY = 'remoteRuns.approvedEvalProfiles';

/**
 * A profile from a workspace's settings (a cloned repository's `.vscode/settings.json`) runs a command the user
 * has not written: its command line is shown and it runs only after "Run", remembered for exactly this content.
 */
async function confirmWorkspaceProfile(context: vscode.ExtensionContext, profile: ConsentProfile, origin: SettingOrigin, log: Logger): Promise<boolean> {
  const approved = context.globalState.get<string[]>(APPROVED_PROFILES_KEY, []);
  if (!needsConsent(profile, origin, approved)) return true;
  const run = 'Run';
  const answer = await vscode.window.showWarningMessage(
    `Remote Runs: run the eval profile "${profile.name}" from this workspace's settings?`,
    { modal: true, detail: consentDetail(profile) },
    run,
  );
  if (answer !== run) {
    log.info(`eval profile ${profile.name} from workspace settings: not run (not confirmed)`);
    return false;
  }
  await context.globalState.update(APPROVED_PROFILES_KEY, withApproval(approved, profile));
  log.info(`eval profile ${profile.name} from workspace settings: confirmed (${profileFingerprint(profile).slice(0, 12)})`);
  return true;
}

/** A checkpoint as the tree or the palette's picks give it. */
type PickedRef = Pick<CheckpointNode, 'hostName' | 'target' | 'run' | 'checkpoint'>;

function subjectOf(node: Pick<CheckpointNode, 'hostName' | 'target' | 'run' | 'checkpoint'>): EvalSubject {
  return {
    host: node.hostName,
    target: node.target,
    run: { name: node.run.name, path: node.run.path },
    checkpoint: { path: node.checkpoint.path, step: evalStep(node.checkpoint) },
  };
}

/** The run a tree checkpoint belongs to, as its evals are kept (by run; the step only picks a checkpoint's records). */
function runSubjectOf(node: Pick<CheckpointNode, 'hostName' | 'target' | 'run'>): EvalRunRef {
  return { host: node.hostName, target: node.target, run: { name: node.run.name, path: node.run.path } };
}

function sameTarget(a: TargetRef, b: TargetRef): boolean {
  return formatTarget(a) === formatTarget(b);
}

export function registerEvals(deps: EvalDeps): EvalsHandle {
  const { store, core, pool, hosts, tree, log, context, results, settings } = deps;
  const profilesFromSettings = (): EvalProfile[] => {
    const { profiles, problems } = settings.evalProfiles();
    for (const p of problems) log.warn(p);
    return profiles;
  };
  const evals = new EvalService({
    // Launches ask for idempotent: false, so the pool never runs one twice after a drop.
    // A cluster's pod container through kubectl exec (service.ts podExecutor), else the host's pooled executor.
    executorFor: (name, { idempotent }, target) => core.podExecutor(name, target) ?? pool.executor(hosts.resolve(core.host(name)), { idempotent }),
    localStateDir: context.globalStorageUri.fsPath,
  });
  const runs = new Map<string, RunEvals>();
  const terminals = new Map<string, EvalTerminal>();
  /** Evals whose terminal the user closed (kept running): not re-attached in this window. */
  const letGo = new Set<string>();
  store.register({ dispose: () => [...terminals.values()].forEach((t) => t.dispose()) });
  store.register(
    vscode.window.onDidCloseTerminal((closed) => {
      for (const [id, t] of terminals) if (t.terminal === closed) terminals.delete(id);
    }),
  );

  const redrawRun = (subject: EvalRunRef): void => {
    for (const r of tree.knownRuns()) {
      if (r.hostName === subject.host && sameTarget(r.target, subject.target) && r.run.path === subject.run.path) tree.redraw(r);
    }
  };

  const load = (key: string, subject: EvalRunRef): Promise<void> => {
    const entry = runs.get(key) ?? { subject, entries: [], loadedAt: 0 };
    runs.set(key, entry);
    if (entry.loading) return entry.loading;
    entry.loading = (async () => {
      const found: RunEvals['entries'] = [];
      for (const place of evals.places(profilesFromSettings(), subject)) {
        try {
          for (const record of await evals.list(place)) found.push({ place, record });
        } catch (e) {
          // One unreadable place (a host down, a folder we may not read) must not hide the others' evals.
          log.warn(`evals of ${subject.run.path} in ${place.kind === 'local' ? 'local' : `${place.host}/${formatTarget(place.target)}`}:${place.evalsDir}: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      const before = entry.loadedAt > 0 ? entry.entries.map((e) => e.record) : undefined;
      entry.entries = found;
      entry.loadedAt = Date.now();
      deps.onEvalsListed?.(subject, before, found.map((e) => e.record));
      results.publish(subject, found.map((e) => e.record));
      for (const { place, record } of found) {
        if ((record.state === 'running' || record.state === 'pending') && !terminals.has(record.id) && !letGo.has(record.id)) {
          attach(place, record.id, record.meta, key, false);
        }
      }
      redrawRun(subject);
    })().finally(() => {
      entry.loading = undefined;
    });
    return entry.loading;
  };

  // A chart or table watching a run nobody listed yet: list it (also the ones watched before this registration).
  store.register(results.onDidRequest((run) => void load(runKey(run), run)));
  for (const run of results.watchedRuns()) void load(runKey(run), run);
  // Watched runs with evals still running are listed again until they end, so results appear without a terminal.
  const relist = setInterval(() => {
    for (const run of results.watchedRuns()) {
      const entry = runs.get(runKey(run));
      if (entry && !entry.loading && entry.entries.some((e) => e.record.state === 'running' || e.record.state === 'pending')) void load(runKey(run), run);
    }
  }, RELIST_RUNNING_MS);
  store.register({ dispose: () => clearInterval(relist) });
  const tables = store.register(new EvalTablePanels(context.extensionUri, results, log));

  /** Where a checkpoint's download lands and whether all of it is there (one remote listing of its files). */
  const localCheckpointOf = async (ref: PickedRef): Promise<LocalCheckpointState> => {
    const dir = downloadDirectory();
    if (!dir) return { kind: 'absent', path: `<remoteRuns.downloadDirectory>/${ref.hostName}/${ref.run.name}/${ref.checkpoint.name}` };
    const source = transferSourceFor(core, pool, (h) => hosts.resolve(h), ref.hostName, ref.target);
    const plan = await planDownload(source, ref.checkpoint, { root: downloadRootFor(dir, ref.hostName), run: ref.run.name });
    return localCheckpointState(plan);
  };

  /** The local path for `${localCheckpoint}`; before a complete download, offer to download first (undefined: not now). */
  const resolveLocalCheckpoint = async (ref: PickedRef, profile: EvalProfile): Promise<string | undefined> => {
    try {
      return requireLocalCheckpoint(await localCheckpointOf(ref), profile.name, ref.checkpoint.name);
    } catch (e) {
      if (!isRemoteRunsError(e) || e.kind !== 'not-found') throw e;
      const choice = await vscode.window.showWarningMessage(`Remote Runs: ${e.message}.`, 'Download Checkpoint');
      if (choice !== 'Download Checkpoint') return undefined;
    }
    const node: TreeNode = { type: 'checkpoint', id: '', hostName: ref.hostName, target: ref.target, run: ref.run, checkpoint: ref.checkpoint };
    await vscode.commands.executeCommand(CommandIds.downloadCheckpoint, node);
    // Still not all there (cancelled, or a file kept): the error says what is missing.
    return requireLocalCheckpoint(await localCheckpointOf(ref), profile.name, ref.checkpoint.name);
  };

  const stop = async (place: EvalPlace, id: string, key: string): Promise<void> => {
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Stopping eval ${id}` }, () => evals.stop(place, id));
    const entry = runs.get(key);
    if (entry) await load(key, entry.subject);
  };

  const attach = (place: EvalPlace, id: string, meta: EvalRecord['meta'], key: string, show: boolean): EvalTerminal => {
    const existing = terminals.get(id);
    if (existing) {
      if (show) existing.terminal.show();
      return existing;
    }
    const terminal = new EvalTerminal({
      evals,
      place,
      id,
      meta,
      name: `eval ${path.posix.basename(meta.checkpoint)} · ${meta.profile}`,
      log,
      onEnded: () => {
        const entry = runs.get(key);
        if (entry) void load(key, entry.subject);
      },
      // pending → running of a Slurm eval: list again so the tree (and the table) show the new queue state.
      onQueueState: () => {
        const entry = runs.get(key);
        if (entry) void load(key, entry.subject);
      },
      onStopRequested: () => {
        void (async () => {
          const answer = await vscode.window.showWarningMessage(
            `The eval ${meta.profile} of ${path.posix.basename(meta.checkpoint)} is still running on its target. Stop it?`,
            'Stop Eval',
            'Keep Running',
          );
          if (answer === 'Stop Eval') await stop(place, id, key).catch((e) => void vscode.window.showErrorMessage(`Remote Runs: ${e instanceof Error ? e.message : String(e)}`));
          else if (!terminals.has(id)) letGo.add(id);
        })();
      },
    });
    terminals.set(id, terminal);
    if (show) terminal.terminal.show();
    return terminal;
  };

  /**
   * The profile to run, a command one or a speculative-server one (asked when there are several), once the user said
   * yes to a workspace's; undefined: not now.
   */
  const chooseProfile = async (title: string): Promise<RunnableProfile | undefined> => {
    const { profiles, serverProfiles, origin, problems } = settings.evalProfiles();
    for (const p of problems) log.warn(p);
    const choices = profileChoices(profiles, serverProfiles);
    if (choices.length === 0) {
      throw new RemoteRunsError('bad-config', 'No eval profiles: add one to the remoteRuns.evalProfiles setting (problems, if any, are in the log)');
    }
    const chosen = choices.length === 1 ? choices[0].value : await quickPick(`${title}: profile`, choices, 'Pick an eval profile');
    if (!chosen) return undefined;
    return (await confirmWorkspaceProfile(context, chosen.profile, origin, log)) ? chosen : undefined;
  };

  /**
   * Measure a speculative-server profile's server for one checkpoint and record it, through the core path the CLI
   * takes (checkpointEval.ts); the run is listed again, so the tree, the eval table and the metrics panel show it.
   */
  const measureWithServer = async (ref: PickedRef, profile: SpecServerProfile, signal: AbortSignal, onProgress: (done: number, total: number) => void): Promise<SpecCheckpointEval> => {
    const done = await evaluateCheckpointWithServer(
      { evals, measure: poolMeasure(pool, (name) => hosts.resolve(core.host(name))), isCluster: (name) => core.cluster(name) !== undefined },
      profile,
      { host: ref.hostName, target: ref.target, run: ref.run, checkpoint: ref.checkpoint },
      { signal, onProgress, onStart: (line) => log.info(line), onSummary: (lines) => lines.forEach((line) => log.info(line)) },
    );
    log.info(`eval ${done.recorded.id} recorded in ${done.recorded.dir}`);
    const subject = subjectOf(ref);
    await load(runKey(subject), subject);
    return done;
  };

  /** The result line of a server eval, for its notification. */
  const serverResultText = (done: SpecCheckpointEval): string => {
    const r = done.outcome.result;
    const tau = r.tau === undefined ? '?' : String(Number(r.tau.toFixed(3)));
    const acc = r.acceptanceRate === undefined ? '' : `, acceptance ${Number(r.acceptanceRate.toFixed(3))}`;
    return `τ ${tau}${acc} (${done.outcome.engine}, ${done.outcome.model}, ${r.counts?.requests ?? '?'} requests)${done.otherDrafter ? `. Note: ${done.otherDrafter}` : ''}`;
  };

  /** Start one eval (its terminal shown, its run listed again); undefined when a download it needs was declined. */
  const startEval = async (ref: PickedRef, profile: EvalProfile, signal: AbortSignal, show: boolean): Promise<{ place: EvalPlace; id: string } | undefined> => {
    let subject: EvalSubject = subjectOf(ref);
    if (usesLocalCheckpoint(profile)) {
      const localCheckpoint = await resolveLocalCheckpoint(ref, profile);
      if (localCheckpoint === undefined) return undefined;
      subject = { ...subject, localCheckpoint };
    }
    const started = await evals.start(profile, subject, signal);
    log.info(`eval ${started.id} started in ${started.dir}${started.pgid ? ` (process group ${started.pgid})` : ''}${started.jobId ? ` (Slurm job ${started.jobId})` : ''}`);
    const key = runKey(subject);
    attach(started.place, started.id, started.meta, key, show);
    await load(key, subject);
    return { place: started.place, id: started.id };
  };

  /** Resolves when the eval is no longer pending or running (its record read every few seconds). */
  const evalEnded = async (started: { place: EvalPlace; id: string }, signal: AbortSignal): Promise<void> => {
    for (;;) {
      const r = await evals.get(started.place, started.id, { record: false, signal });
      if (r.state !== 'running' && r.state !== 'pending') return;
      await delay(QUEUE_POLL_MS, signal);
    }
  };

  /**
   * Several checkpoints, one profile, one queue: each eval starts when the one before it ended, through the same
   * path as a single one (consent, \${localCheckpoint} downloads), and its result shows (tree, charts, table) as it
   * finishes. Cancel stops the queue; the eval running then goes on on its target.
   */
  const evaluateMany = async (refs: PickedRef[], title: string): Promise<void> => {
    const items = queueOrder(refs);
    const chosen = await chooseProfile(title);
    if (!chosen) return;
    const server = chosen.kind === 'server';
    const profile = chosen.profile;
    const report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Evaluating ${items.length} checkpoints with ${profile.name}`, cancellable: true },
      (progress, token) =>
        withCancellation(token, (signal) => {
          let at = '';
          return runEvalQueue<PickedRef, { place: EvalPlace; id: string }>(items, {
            // A server eval is measured here and now (nothing runs on after it): it has ended when it is recorded.
            start: async (ref, signal) => {
              if (chosen.kind === 'command') return startEval(ref, chosen.profile, signal, false);
              const done = await measureWithServer(ref, chosen.profile, signal, (d, t) => progress.report({ message: `${at}: requests ${d} of ${t}` }));
              return { place: done.recorded.place, id: done.recorded.id };
            },
            ended: (started, signal) => (server ? Promise.resolve() : evalEnded(started, signal)),
            onItem: (ref, i, n) => {
              at = `${ref.checkpoint.name} (${i + 1} of ${n})`;
              progress.report({ message: at, increment: i === 0 ? 0 : 100 / n });
            },
            onDone: (ref, { error }) => {
              if (error) void vscode.window.showErrorMessage(`Remote Runs: eval of ${ref.checkpoint.name}: ${error instanceof Error ? error.message : String(error)}`);
              const r = [...runs.values()].find((e) => e.subject.host === ref.hostName && sameTarget(e.subject.target, ref.target) && e.subject.run.path === ref.run.path);
              if (r) void load(runKey(r.subject), r.subject);
            },
          }, signal);
        }),
    );
    log.info(`eval queue of ${items.length} with ${profile.name}: ${report.started} ran, ${report.skipped} skipped, ${report.failed} failed, ${report.notReached} not reached`);
    const parts = [`${report.started} of ${items.length} evaluated with ${profile.name}`, report.skipped ? `${report.skipped} skipped` : '', report.failed ? `${report.failed} could not start` : '', report.notReached ? `${report.notReached} not started (cancelled${server ? '' : '; the running eval goes on'})` : ''];
    void vscode.window.showInformationMessage(`Remote Runs: ${parts.filter(Boolean).join(', ')}.`);
  };

  store.register(
    registerCommand(CommandIds.evaluateCheckpoint, async (node?: TreeNode, selected?: readonly TreeNode[]) => {
      // A multi-select in the tree: the checkpoints selected (the one right-clicked among them).
      const many = (Array.isArray(selected) ? selected : []).filter((n): n is CheckpointNode => n?.type === 'checkpoint');
      if (many.length > 1 && (node?.type !== 'checkpoint' || many.some((n) => n.id === node.id))) {
        await evaluateMany(many, `Evaluate ${many.length} checkpoints`);
        return;
      }
      const ref = node?.type === 'checkpoint' ? node : await pickCheckpoint(core, hosts, 'Evaluate Checkpoint');
      if (!ref) return;
      const chosen = await chooseProfile(`Evaluate ${ref.run.name}/${ref.checkpoint.name}`);
      if (!chosen) return;
      if (chosen.kind === 'command') {
        const profile = chosen.profile;
        await vscode.window.withProgress(
          { location: vscode.ProgressLocation.Notification, title: `Starting eval ${profile.name} of ${ref.checkpoint.name}`, cancellable: true },
          (_progress, token) => withCancellation(token, (signal) => startEval(ref, profile, signal, true)),
        );
        return;
      }
      // A server eval runs here, request after request: its progress and Cancel are the notification's; an error
      // (unreachable, no speculative stats, model mismatch, bad prompt set) says what to do, through the command wrapper.
      const profile = chosen.profile;
      const done = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Evaluating ${ref.checkpoint.name} with ${profile.name}`, cancellable: true },
        (progress, token) => {
          let last = 0;
          return withCancellation(token, (signal) =>
            measureWithServer(ref, profile, signal, (d, t) => {
              progress.report({ message: `requests ${d} of ${t}`, increment: t > 0 ? ((d - last) * 100) / t : 0 });
              last = d;
            }),
          );
        },
      );
      const results = 'Show Eval Results';
      void vscode.window.showInformationMessage(`Remote Runs: ${profile.name} of ${ref.checkpoint.name}: ${serverResultText(done)}; recorded as eval ${done.recorded.id}.`, results).then((c) => {
        if (c !== results) return;
        const shown: TreeNode = { type: 'checkpoint', id: '', hostName: ref.hostName, target: ref.target, run: ref.run, checkpoint: ref.checkpoint };
        void vscode.commands.executeCommand(CommandIds.showEvalResults, shown);
      });
    }, log),
  );

  store.register(
    registerCommand(CommandIds.evaluateCheckpointsSince, async (node?: TreeNode) => {
      // From a checkpoint: it and every later one; from a run (or the palette): pick the first.
      let ref: PickedRef | undefined = node?.type === 'checkpoint' ? node : undefined;
      if (!ref && node?.type === 'run') {
        const stepOnes = [...node.run.checkpoints].filter((c) => c.kind === 'step' && c.incomplete === undefined).reverse();
        if (stepOnes.length === 0) throw new RemoteRunsError('not-found', `${node.run.name} has no complete step checkpoint to evaluate`);
        const first = await quickPick(`Evaluate every checkpoint of ${node.run.name} since…`, stepOnes.map((c) => ({ label: c.name, description: checkpointLabel(c), value: c })), 'Pick the first checkpoint (newest first)');
        if (!first) return;
        ref = { hostName: node.hostName, target: node.target, run: node.run, checkpoint: first };
      }
      if (!ref) ref = await pickCheckpoint(core, hosts, 'Evaluate every checkpoint since');
      if (!ref) return;
      const from = evalStep(ref.checkpoint);
      const since = checkpointsSince(ref.run, from);
      if (since.length === 0) throw new RemoteRunsError('not-found', `${ref.run.name} has no complete step checkpoint from step ${from} on`);
      const { hostName, target, run } = ref;
      await evaluateMany(since.map((checkpoint) => ({ hostName, target, run, checkpoint })), `Evaluate ${since.length} checkpoints of ${run.name} since step ${from}`);
    }, log),
  );

  store.register(
    registerCommand(CommandIds.stopEval, async (node?: TreeNode) => {
      if (node?.type === 'checkpoint') await load(runKey(subjectOf(node)), subjectOf(node));
      const running: { place: EvalPlace; record: EvalRecord; key: string }[] = [];
      for (const [key, entry] of runs) {
        for (const e of entry.entries) {
          if (e.record.state !== 'running' && e.record.state !== 'pending') continue;
          if (node?.type === 'checkpoint' && e.record.checkpointPath !== node.checkpoint.path) continue;
          running.push({ ...e, key });
        }
      }
      if (running.length === 0) {
        void vscode.window.showInformationMessage(`Remote Runs: no running eval${node?.type === 'checkpoint' ? ` of ${node.checkpoint.name}` : ' is known (expand a run to list its evals)'}.`);
        return;
      }
      const pick =
        running.length === 1
          ? running[0]
          : await quickPick(
              'Stop Eval',
              running.map((r) => ({ label: `${path.posix.basename(r.record.checkpointPath)} · ${r.record.profile}`, description: r.record.state, detail: r.record.id, value: r })),
              'Pick the eval to stop',
            );
      if (pick) await stop(pick.place, pick.record.id, pick.key);
    }, log),
  );

  store.register(
    registerCommand(CommandIds.showEvalResults, async (arg?: unknown) => {
      const ref = runRefOfArg(arg) ?? (await pickRun(tree, 'Show the eval results of a run'));
      if (ref) tables.show(evalRunOf(ref));
    }, log),
  );

  return {
    checkpointDecoration(node: CheckpointNode): string | undefined {
      // The run's evals (a checkpoint without a step, such as final weights, has none of its own, and its row is
      // drawn all the same: subjectOf would throw for it, and a throw here loses every row of the run).
      const subject = runSubjectOf(node);
      const key = runKey(subject);
      const entry = runs.get(key);
      const live = entry?.entries.some((e) => e.record.state === 'running' || e.record.state === 'pending');
      if (!entry || (live && !entry.loading && Date.now() - entry.loadedAt > RELIST_RUNNING_MS)) void load(key, subject);
      return entry ? checkpointEvalText(entry.entries.map((e) => e.record), node.checkpoint.path) : undefined;
    },
    checkpointEvalRunning(node: CheckpointNode): boolean {
      const entry = runs.get(runKey(runSubjectOf(node)));
      return entry?.entries.some((e) => (e.record.state === 'running' || e.record.state === 'pending') && e.record.checkpointPath === node.checkpoint.path) ?? false;
    },
  };
}
