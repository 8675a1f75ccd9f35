/**
 * The typed values of evals: a validated profile (from `remoteRuns.evalProfiles`), where an eval's folder lives,
 * and what a listing says about one eval. Settings and remote output become these in profiles.ts and records.ts;
 * everything else trusts them.
 *
 * This folder never imports `vscode`.
 */
import type { TargetRef } from '../types';
import type { SpecRecord } from './spec/record';

/** Where a profile runs: the run's own target, another configured host's target, or this machine. */
export type EvalWhere = { kind: 'target' } | { kind: 'remote'; host: string; target: TargetRef } | { kind: 'local' };

/** One validated entry of `remoteRuns.evalProfiles`. */
export interface EvalProfile {
  name: string;
  where: EvalWhere;
  /** POSIX sh text written by the user; `${var}` placeholders become single quoted words (see template.ts). */
  command: string;
  /** Working directory (placeholders substituted literally, no shell). Default: the run directory for `target`, else $HOME. */
  cwd?: string;
  /** Extra environment (values: placeholders substituted literally). */
  env?: Record<string, string>;
  /** A JS regular expression with named groups; each group that matches a number becomes a metric. */
  resultPattern?: string;
  scheduler?: 'slurm';
  /** Extra `sbatch` options (one argv word each, placeholders substituted literally), e.g. ["--gres=gpu:1"]. */
  sbatch?: string[];
}

/** The values a template may use. `localCheckpoint` exists only after a download. */
export interface TemplateValues {
  checkpoint: string;
  localCheckpoint?: string;
  run: string;
  runPath: string;
  step: number | string;
  host: string;
  target: string;
}

/** A run as evals see it: where its evals live and how they are keyed (no checkpoint needed). */
export type EvalRunRef = Pick<EvalSubject, 'host' | 'target' | 'run'>;

/** What the caller knows about the checkpoint being evaluated (from the tree or a CLI address). */
export interface EvalSubject {
  /** The configured host the run lives on. */
  host: string;
  target: TargetRef;
  run: { name: string; path: string };
  checkpoint: { path: string; step: number };
  /** Local path of the downloaded checkpoint, when there is one. */
  localCheckpoint?: string;
}

/**
 * Where evals' folders live and how to reach them. `evalsDir` holds one folder per eval id; on a remote it may
 * start with `~/` (expanded by the remote shell).
 */
export type EvalPlace =
  | { kind: 'remote'; host: string; target: TargetRef; evalsDir: string }
  | { kind: 'local'; evalsDir: string };

/**
 * running: started and not ended (a Slurm job: running). pending: a Slurm job waiting in the queue.
 * passed / failed: ended with exit status 0 / non-zero (or a scheduler failure). lost: no exit status was recorded
 * and nothing of it is alive (killed with the machine, or KILLed before its wrapper could write the status).
 */
export type EvalState = 'pending' | 'running' | 'passed' | 'failed' | 'lost';

/** One metric line: metric name → value. */
export type EvalResult = Record<string, number>;

/** What `meta.json` of an eval folder holds (written once at launch). */
export interface EvalMeta {
  id: string;
  profile: string;
  checkpoint: string;
  step: number;
  /** ISO time of the launch, from the launching machine's clock. */
  startedAt: string;
  /** The command line after substitution (shell text). */
  command: string;
  cwd: string;
  run: { host: string; target: string; name: string; path: string };
  /** Kept so whoever records the results later parses them as the launcher's profile said. */
  resultPattern?: string;
  scheduler?: 'slurm';
  /**
   * `speculative-server`: measured by the client that recorded it (no process ran in the folder's target; `command`
   * says what was measured), with its whole result in spec.json.
   */
  kind?: 'speculative-server';
}

/** One eval of a run, as its folder says. */
export interface EvalRecord {
  id: string;
  profile: string;
  checkpointPath: string;
  step: number;
  /** ms since the epoch. */
  startedAt: number;
  state: EvalState;
  /** For passed/failed evals with a recorded status. */
  exitCode?: number;
  /** Results recorded in `results.jsonl` (empty until recorded; see EvalService.recordResults). */
  results: EvalResult[];
  /** True once `results.jsonl` exists: the results above are final. */
  resultsRecorded: boolean;
  /** Stopped on purpose (the `stopped` marker exists). */
  stopped: boolean;
  /** The last bytes of the log (stdout and stderr together) of a failed or lost eval. */
  logTail?: string;
  /** Current log size in bytes. */
  logBytes: number;
  /** Slurm job id and the scheduler's own state word (PENDING, RUNNING, COMPLETED, CANCELLED, …) when known. */
  slurm?: { jobId: string; state?: string };
  /** The eval folder (inside the place's target). */
  dir: string;
  meta: EvalMeta;
  /** A speculative-server eval's spec.json (spec/record.ts), when it has one that reads. */
  spec?: SpecRecord;
  /** Why its spec.json does not read (the record is listed all the same, with its results). */
  specProblems?: string[];
}
