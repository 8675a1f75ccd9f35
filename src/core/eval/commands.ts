/**
 * Eval commands as values: each is ONE remote command (`sh -c SCRIPT` with the values as separate argv words) plus
 * the parser of its output. Run them with `runCommand` through a target's prefix, or with a LocalExecutor.
 */
import { commandFailed, firstStderrLine, type ExecResult, type RemoteCommand } from '../remote';
import { RemoteRunsError } from '../types';
import { shellJoin } from '../shell/quote';
import {
  LAUNCH_SCRIPT,
  LIST_SCRIPT,
  MEASURED_SCRIPT,
  READ_SCRIPT,
  RECORD_SCRIPT,
  SLURM_LAUNCH_SCRIPT,
  STOP_SCRIPT,
  WRAPPER_SCRIPT,
  slurmJobScript,
} from './scripts';
import { parseEvalListing, parseReadOutput, parseStopOutput, type RawEval, type ReadHeader, type StopReport } from './records';
import type { EvalMeta } from './types';

/** What a launch needs, after template substitution. */
export interface LaunchSpec {
  /** The folder holding all evals of this place (may start with `~/` on a remote). */
  evalsDir: string;
  id: string;
  meta: EvalMeta;
  /** Shell text to run with `sh -c`. */
  command: string;
  /** Working directory (may start with `~`). */
  cwd: string;
  env: Record<string, string>;
}

export interface LaunchResult {
  /** The eval's folder as the remote side spelled it (`~` expanded). */
  dir: string;
  /** Process group id (direct evals). */
  pgid?: number;
  /** Slurm job id (Slurm evals). */
  jobId?: string;
}

/** Bytes of the log tail a listing returns for failed and lost evals. */
export const DEFAULT_TAIL_BYTES = 4096;

function envPairs(env: Record<string, string>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

function launchFailure(describe: string, result: ExecResult): RemoteRunsError {
  const line = firstStderrLine(result);
  if (result.code === 97) return new RemoteRunsError('command-failed', line || `${describe}: a required tool is missing`, { exitCode: 97, stderr: line });
  if (result.code === 98 && /Permission denied/i.test(result.stderr.toString('utf8'))) {
    return new RemoteRunsError('permission-denied', `${describe}: ${line}`, { exitCode: 98, stderr: line });
  }
  return commandFailed(describe, result);
}

/**
 * Start a direct eval detached: creates the folder, writes meta.json, starts the wrapper in its own session and
 * returns once the eval's pid is recorded. NOT idempotent: run it over an executor that never retries.
 */
export function launchEvalCommand(spec: LaunchSpec): RemoteCommand<LaunchResult> {
  const describe = `Starting eval ${spec.id}`;
  return {
    argv: ['sh', '-c', LAUNCH_SCRIPT, 'remote-runs-launch', spec.evalsDir, spec.id, JSON.stringify(spec.meta), spec.command, spec.cwd, WRAPPER_SCRIPT, ...envPairs(spec.env)],
    describe,
    parse(result) {
      const m = /^started (\d+) (.*)$/m.exec(result.stdout.toString('utf8'));
      if (result.code !== 0 || !m) throw launchFailure(describe, result);
      return { pgid: Number(m[1]), dir: m[2] };
    },
  };
}

/** Submit a Slurm eval with `sbatch --parsable` (the profile's options appended). NOT idempotent. */
export function launchSlurmCommand(spec: LaunchSpec & { sbatch: string[] }): RemoteCommand<LaunchResult> {
  const describe = `Submitting eval ${spec.id} to Slurm`;
  const run = [...(Object.keys(spec.env).length ? ['env', ...envPairs(spec.env)] : []), 'sh', '-c', spec.command];
  const job = slurmJobScript(shellJoin(run));
  return {
    argv: ['sh', '-c', SLURM_LAUNCH_SCRIPT, 'remote-runs-submit', spec.evalsDir, spec.id, JSON.stringify(spec.meta), job, spec.cwd, ...spec.sbatch],
    describe,
    parse(result) {
      const m = /^submitted (\S+) (.*)$/m.exec(result.stdout.toString('utf8'));
      if (result.code !== 0 || !m) throw launchFailure(describe, result);
      return { jobId: m[1], dir: m[2] };
    },
  };
}

/** List every eval folder under evalsDir in one command (missing folder: none). */
export function listEvalsCommand(evalsDir: string, tailBytes = DEFAULT_TAIL_BYTES): RemoteCommand<RawEval[]> {
  const describe = `Listing evals in ${evalsDir}`;
  return {
    argv: ['sh', '-c', LIST_SCRIPT, 'remote-runs-evals', evalsDir, String(tailBytes)],
    describe,
    parse(result) {
      if (result.code === 94) throw new RemoteRunsError('permission-denied', firstStderrLine(result), { path: evalsDir });
      if (result.code !== 0) throw commandFailed(describe, result);
      return parseEvalListing(result.stdout);
    },
  };
}

/** Read up to maxBytes of an eval's log from offset, with its status, size and liveness. Idempotent. */
export function readEvalLogCommand(dir: string, offset: number, maxBytes: number): RemoteCommand<{ header: ReadHeader; data: Buffer }> {
  const describe = `Reading the log of eval ${dir}`;
  return {
    argv: ['sh', '-c', READ_SCRIPT, 'remote-runs-read', dir, String(offset), String(maxBytes)],
    describe,
    // Header line plus data; a little slack so a full read is never cut.
    maxOutputBytes: maxBytes + 4096,
    parse(result) {
      if (result.code === 96) throw new RemoteRunsError('not-found', firstStderrLine(result) || `No eval at ${dir}`, { path: dir });
      if (result.code !== 0) throw commandFailed(describe, result);
      return parseReadOutput(result.stdout);
    },
  };
}

/** Stop an eval: TERM to its process group (or scancel), KILL after graceMs, then verify. */
export function stopEvalCommand(dir: string, graceMs: number): RemoteCommand<StopReport> {
  const describe = `Stopping eval ${dir}`;
  return {
    argv: ['sh', '-c', STOP_SCRIPT, 'remote-runs-stop', dir, String(Math.max(0, Math.ceil(graceMs / 100)))],
    describe,
    parse(result) {
      if (result.code === 96) throw new RemoteRunsError('not-found', firstStderrLine(result) || `No eval at ${dir}`, { path: dir });
      if (result.code !== 0) throw commandFailed(describe, result);
      return parseStopOutput(result.stdout.toString('utf8'));
    },
  };
}

/** Write results.jsonl unless it exists (the first writer wins). Idempotent. */
export function recordResultsCommand(dir: string, text: string): RemoteCommand<'written' | 'exists'> {
  const describe = `Recording the results of eval ${dir}`;
  return {
    argv: ['sh', '-c', RECORD_SCRIPT, 'remote-runs-record', dir],
    describe,
    stdin: text,
    parse(result) {
      if (result.code === 96) throw new RemoteRunsError('not-found', firstStderrLine(result) || `No eval at ${dir}`, { path: dir });
      const out = result.stdout.toString('utf8').trim();
      if (result.code !== 0 || (out !== 'written' && out !== 'exists')) throw commandFailed(describe, result);
      return out;
    },
  };
}

/** What an eval measured by this client leaves in its folder (MEASURED_SCRIPT). */
export interface MeasuredSpec {
  evalsDir: string;
  id: string;
  meta: EvalMeta;
  /** The log's text: what was measured, ending with the result line (so the log stays the source of truth). */
  log: string;
  /** results.jsonl text. */
  results: string;
  /** spec.json text (one JSON document). */
  spec: string;
}

/** Write an ended, measured eval's folder whole (one rename). NOT idempotent: an existing id fails. */
export function recordMeasuredCommand(spec: MeasuredSpec): RemoteCommand<{ dir: string }> {
  const describe = `Recording eval ${spec.id}`;
  return {
    argv: ['sh', '-c', MEASURED_SCRIPT, 'remote-runs-measured', spec.evalsDir, spec.id, JSON.stringify(spec.meta), spec.log, spec.results, spec.spec],
    describe,
    parse(result) {
      const m = /^recorded (.*)$/m.exec(result.stdout.toString('utf8'));
      if (result.code !== 0 || !m) throw launchFailure(describe, result);
      return { dir: m[1] };
    },
  };
}
