/**
 * The one façade for evals that the extension, the CLI and tests use: start (detached, or submitted to Slurm),
 * list a place's evals as records, follow a log, stop, and record results once in the eval folder.
 *
 * Results: the log is the source of truth; `results.jsonl` is written ONCE, by whichever client first sees the eval
 * ended (a follower that read the whole log, or a listing that finds a finished eval without it), parsed with the
 * launch-time resultPattern kept in meta.json, so every client that opens the run agrees on the values. The write
 * is a hard link from a temporary file: atomic, and the loser of a race writes nothing.
 */
import { RemoteRunsError, formatTarget, isRemoteRunsError, type TargetRef } from '../types';
import { runCommand, type Executor } from '../remote';
import {
  launchEvalCommand,
  launchSlurmCommand,
  listEvalsCommand,
  recordMeasuredCommand,
  recordResultsCommand,
  readEvalLogCommand,
  stopEvalCommand,
  type LaunchResult,
} from './commands';
import { evalDir, evalPlace, evalPlaces, newEvalId } from './place';
import { renderCommand, renderLiteral } from './template';
import { compileResultPattern, formatResultsFile, parseResults } from './results';
import { toEvalRecords, type StopReport } from './records';
import { followEval, type FollowEnd, type FollowOptions } from './follow';
import { LocalExecutor } from './localExecutor';
import type { EvalMeta, EvalPlace, EvalProfile, EvalRecord, EvalResult, EvalRunRef, EvalSubject, TemplateValues } from './types';
import { put } from '../util/dict';

const HOST: TargetRef = { kind: 'host', id: '' };

export interface EvalServiceOptions {
  /**
   * The executor that reaches `target` of a configured host or cluster: a host's shared one (launches ask for
   * `idempotent: false`, as a launch must never run twice; reads for `idempotent: true`), or for a cluster's pod
   * container `kubectl exec` (service.ts podExecutor, which never retries a command).
   */
  executorFor(host: string, options: { idempotent: boolean }, target: TargetRef): Executor;
  /** Folder for local evals (`<localStateDir>/evals/<runKey>/<id>`), e.g. the extension's globalStorage. */
  localStateDir: string;
  /** Runs local evals; default a LocalExecutor (/bin/sh). */
  localExecutor?: Executor;
  /** Clock for ids and startedAt. */
  now?(): Date;
}

/** What start() returns at once (the eval keeps running on its own). */
export interface StartedEval {
  id: string;
  place: EvalPlace;
  /** The eval folder (as given to commands; `~` not expanded). */
  dir: string;
  meta: EvalMeta;
  /** Process group id of a direct eval. */
  pgid?: number;
  /** Slurm job id of a Slurm eval. */
  jobId?: string;
}

export interface StopOptions {
  /** Time between TERM and KILL. Default 10 s. */
  graceMs?: number;
  signal?: AbortSignal;
}

/** Follow options the service fills in itself. */
export type EvalFollowOptions = Omit<FollowOptions, 'executor' | 'target' | 'dir' | 'resultPattern'> & {
  /** Record results.jsonl when the follower read the whole log (from offset 0). Default true. */
  record?: boolean;
};

export interface EvalFollowEnd extends FollowEnd {
  /** Whether this follower wrote results.jsonl (false: it existed already, or recording was off). */
  wroteResults: boolean;
}

export class EvalService {
  private readonly local: Executor;

  constructor(private readonly options: EvalServiceOptions) {
    this.local = options.localExecutor ?? new LocalExecutor();
  }

  /** Where a profile puts evals of a subject. */
  place(profile: Pick<EvalProfile, 'where'>, subject: EvalRunRef): EvalPlace {
    return evalPlace(profile, subject, this.options.localStateDir);
  }

  /** Every distinct place where evals of a subject's run may be, for the given profiles (the run's own first). */
  places(profiles: readonly Pick<EvalProfile, 'where'>[], subject: EvalRunRef): EvalPlace[] {
    return evalPlaces(profiles, subject, this.options.localStateDir);
  }

  /** The template values of a subject. */
  templateValues(subject: EvalSubject): TemplateValues {
    return {
      checkpoint: subject.checkpoint.path,
      ...(subject.localCheckpoint !== undefined ? { localCheckpoint: subject.localCheckpoint } : {}),
      run: subject.run.name,
      runPath: subject.run.path,
      step: subject.checkpoint.step,
      host: subject.host,
      target: formatTarget(subject.target),
    };
  }

  /**
   * Start an eval of a checkpoint with a profile. Returns as soon as the eval is running detached (or submitted):
   * it survives the connection dropping. Template errors are `bad-config` and nothing is started.
   */
  async start(profile: EvalProfile, subject: EvalSubject, signal?: AbortSignal): Promise<StartedEval> {
    const values = this.templateValues(subject);
    const command = renderCommand(profile.command, values);
    const cwd = profile.cwd !== undefined ? renderLiteral(profile.cwd, values, 'cwd') : profile.where.kind === 'target' ? subject.run.path : '~';
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(profile.env ?? {})) put(env, k, renderLiteral(v, values, `env.${k}`));
    const sbatch = (profile.sbatch ?? []).map((o, i) => renderLiteral(o, values, `sbatch[${i}]`));
    if (profile.resultPattern) compileResultPattern(profile.resultPattern);

    const place = this.place(profile, subject);
    const meta = this.newMeta(profile.name, subject, {
      command,
      cwd,
      ...(profile.resultPattern ? { resultPattern: profile.resultPattern } : {}),
      ...(profile.scheduler ? { scheduler: profile.scheduler } : {}),
    });
    const id = meta.id;
    const spec = { evalsDir: place.evalsDir, id, meta, command, cwd, env };
    const cmd = profile.scheduler === 'slurm' ? launchSlurmCommand({ ...spec, sbatch }) : launchEvalCommand(spec);
    const { executor, target } = this.reach(place, false);
    const launched = await runCommand(executor, target, cmd, signal).catch((e: unknown) => {
      if (!(isRemoteRunsError(e) && e.kind === 'unreachable' && e.detail.dropped === 'after-open')) throw e;
      return this.recoverLaunch(place, id, () => runCommand(executor, target, cmd, signal), signal);
    });
    return {
      id,
      place,
      dir: evalDir(place, id),
      meta,
      ...(launched.pgid !== undefined ? { pgid: launched.pgid } : {}),
      ...(launched.jobId !== undefined ? { jobId: launched.jobId } : {}),
    };
  }

  /**
   * Record an eval this client measured itself (a speculative-server eval: the measuring is done, nothing runs in
   * the target) as an ended eval of the subject's checkpoint, in the run's own place, in the layout of every eval:
   * meta.json, a log (what was measured, ending with the result line), results.jsonl, status 0, and `spec.json`
   * beside them. The folder appears whole (scripts.ts MEASURED_SCRIPT), so the tree, the eval table and the metrics
   * panel list it as they list a command eval that passed. Not retried: an id is written once.
   */
  async recordMeasured(
    subject: EvalSubject,
    m: { profile: string; kind: 'speculative-server'; command: string; log: string; results: readonly EvalResult[]; spec: string },
    signal?: AbortSignal,
  ): Promise<StartedEval> {
    const place = this.place({ where: { kind: 'target' } }, subject);
    const meta = this.newMeta(m.profile, subject, { command: m.command, cwd: '', kind: m.kind });
    const id = meta.id;
    const log = m.log.endsWith('\n') || m.log === '' ? m.log : `${m.log}\n`;
    const { executor, target } = this.reach(place, false);
    await runCommand(executor, target, recordMeasuredCommand({ evalsDir: place.evalsDir, id, meta, log, results: formatResultsFile(m.results), spec: m.spec }), signal);
    return { id, place, dir: evalDir(place, id), meta };
  }

  /** A new eval's meta.json: a fresh id, started now, of the subject's checkpoint and run, with what the kind adds. */
  private newMeta(profile: string, subject: EvalSubject, what: Pick<EvalMeta, 'command' | 'cwd' | 'resultPattern' | 'scheduler' | 'kind'>): EvalMeta {
    const { command, cwd, ...rest } = what;
    const now = this.options.now?.() ?? new Date();
    return {
      id: newEvalId(profile, subject.checkpoint.step, now),
      profile,
      checkpoint: subject.checkpoint.path,
      step: subject.checkpoint.step,
      startedAt: now.toISOString(),
      command,
      cwd,
      run: { host: subject.host, target: formatTarget(subject.target), name: subject.run.name, path: subject.run.path },
      ...rest,
    };
  }

  /**
   * The connection dropped after the launch was sent: it may or may not have started. Its id is new and its folder
   * is created exclusively (a repeat fails at mkdir), so look for it over the reconnected pool and launch again
   * only when it is not there: the user gets one eval, never two and never an unknown.
   */
  private async recoverLaunch(place: EvalPlace, id: string, launch: () => Promise<LaunchResult>, signal?: AbortSignal): Promise<LaunchResult> {
    const found = (await this.list(place, { record: false, signal })).find((r) => r.id === id);
    if (!found) return launch();
    return found.slurm ? { jobId: found.slurm.jobId, dir: found.dir } : { dir: found.dir };
  }

  /**
   * Every eval in a place, newest first, in ONE command. With `record` (default true), finished evals whose results
   * were never recorded get them recorded now (one read of their log each, once ever), so the records carry results.
   */
  async list(place: EvalPlace, options: { record?: boolean; signal?: AbortSignal } = {}): Promise<EvalRecord[]> {
    const { executor, target } = this.reach(place, true);
    const raw = await runCommand(executor, target, listEvalsCommand(place.evalsDir), options.signal);
    const records = toEvalRecords(raw, (id) => evalDir(place, id));
    if (options.record === false) return records;
    for (const r of records) {
      if (r.resultsRecorded || r.state === 'running' || r.state === 'pending') continue;
      r.results = await this.recordResults(place, r, options.signal);
      r.resultsRecorded = true;
    }
    return records;
  }

  /** One eval's record, or `not-found`. */
  async get(place: EvalPlace, id: string, options: { record?: boolean; signal?: AbortSignal } = {}): Promise<EvalRecord> {
    const found = (await this.list(place, options)).find((r) => r.id === id);
    if (!found) throw new RemoteRunsError('not-found', `No eval ${id} in ${place.evalsDir}`, { id });
    return found;
  }

  /**
   * Follow an eval's log (see followEval) from the start, or `fromOffset`. When the whole log was read (from 0) and
   * the eval ended, the results are recorded in its folder (first writer wins).
   */
  async follow(place: EvalPlace, id: string, meta: Pick<EvalMeta, 'resultPattern'>, options: EvalFollowOptions = {}): Promise<EvalFollowEnd> {
    const { executor, target } = this.reach(place, true);
    const dir = evalDir(place, id);
    const end = await followEval({ ...options, executor, target, dir, ...(meta.resultPattern ? { resultPattern: meta.resultPattern } : {}) });
    let wroteResults = false;
    if ((options.record ?? true) && (options.fromOffset ?? 0) === 0) {
      wroteResults = (await runCommand(executor, target, recordResultsCommand(dir, formatResultsFile(end.results)), options.signal)) === 'written';
    }
    return { ...end, wroteResults };
  }

  /** Stop an eval: TERM to its process group (scancel for Slurm), KILL after the grace period, verified. */
  async stop(place: EvalPlace, id: string, options: StopOptions = {}): Promise<StopReport> {
    // Not idempotent in spirit (it signals), but a second TERM/KILL to a dead group is harmless.
    const { executor, target } = this.reach(place, false);
    const report = await runCommand(executor, target, stopEvalCommand(evalDir(place, id), options.graceMs ?? 10_000), options.signal);
    if (report.left) {
      throw new RemoteRunsError('command-failed', `Eval ${id} did not stop: processes of its group survived KILL`, { id });
    }
    return report;
  }

  /**
   * Record an ended eval's results in its folder (once; if another client did first, theirs stand) and return what
   * the folder holds. Reads the whole log and parses it with the launch-time resultPattern.
   */
  async recordResults(place: EvalPlace, record: Pick<EvalRecord, 'id' | 'results' | 'resultsRecorded' | 'meta'>, signal?: AbortSignal): Promise<EvalResult[]> {
    if (record.resultsRecorded) return record.results;
    const { executor, target } = this.reach(place, true);
    const dir = evalDir(place, record.id);
    const text = await this.readLog(place, record.id, signal);
    const pattern = record.meta.resultPattern ? compileResultPattern(record.meta.resultPattern) : undefined;
    const results = parseResults(text.toString('utf8'), pattern);
    const outcome = await runCommand(executor, target, recordResultsCommand(dir, formatResultsFile(results)), signal);
    if (outcome === 'written') return results;
    const again = (await this.list(place, { record: false, signal })).find((r) => r.id === record.id);
    return again?.results ?? results;
  }

  /** The whole log of an eval as it is now (several bounded reads for a big one). */
  async readLog(place: EvalPlace, id: string, signal?: AbortSignal, maxBytesPerRead = 8 << 20): Promise<Buffer> {
    const { executor, target } = this.reach(place, true);
    const dir = evalDir(place, id);
    const parts: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const { header, data } = await runCommand(executor, target, readEvalLogCommand(dir, offset, maxBytesPerRead), signal);
      parts.push(data);
      offset += data.length;
      if (data.length === 0 || offset >= header.size) return Buffer.concat(parts);
    }
  }

  /** The executor and target that reach a place. */
  reach(place: EvalPlace, idempotent: boolean): { executor: Executor; target: TargetRef } {
    if (place.kind === 'local') return { executor: this.local, target: HOST };
    return { executor: this.options.executorFor(place.host, { idempotent }, place.target), target: place.target };
  }
}
