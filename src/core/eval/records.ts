/**
 * Parsers for what the eval scripts print: the framed listing (→ EvalRecord[]), the log-read header, the stop
 * report. Remote output is validated here; a folder whose meta.json is not ours is skipped, never guessed at.
 */
import { RemoteRunsError } from '../types';
import { parseResultsFile } from './results';
import { isEvalId } from './place';
import { parseSpecRecord } from './spec/record';
import type { EvalMeta, EvalRecord, EvalState } from './types';

/** One eval folder as the listing framed it, before interpretation. */
export interface RawEval {
  id: string;
  files: Record<string, Buffer>;
  logBytes: number;
  alive: boolean;
  slurmState?: string;
}

/** Split the LIST_SCRIPT output into raw evals. Throws `protocol` when the framing is broken. */
export function parseEvalListing(out: Buffer): RawEval[] {
  const evals: RawEval[] = [];
  let pos = 0;
  let cur: RawEval | undefined;
  const bad = (why: string): RemoteRunsError => new RemoteRunsError('protocol', `Unexpected eval listing output (${why}) at byte ${pos}`);
  while (pos < out.length) {
    const nl = out.indexOf(0x0a, pos);
    if (nl < 0) throw bad('unterminated line');
    const line = out.subarray(pos, nl).toString('utf8');
    pos = nl + 1;
    if (line === 'N' || line === '') continue;
    const tag = line.slice(0, 2);
    const rest = line.slice(2);
    if (tag === 'E ') {
      cur = { id: rest, files: {}, logBytes: 0, alive: false };
      evals.push(cur);
      continue;
    }
    if (!cur) throw bad(`"${line.slice(0, 40)}" before any eval`);
    if (tag === 'F ') {
      const m = /^(\w+) (\d+)$/.exec(rest);
      if (!m) throw bad(`bad file header "${line.slice(0, 60)}"`);
      const n = Number(m[2]);
      if (pos + n + 1 > out.length || out[pos + n] !== 0x0a) throw bad(`file ${m[1]} of ${n} bytes is cut short`);
      cur.files[m[1]] = out.subarray(pos, pos + n);
      pos += n + 1;
    } else if (tag === 'L ') {
      cur.logBytes = Number(rest) || 0;
    } else if (tag === 'A ') {
      cur.alive = rest === '1';
    } else if (tag === 'Q ') {
      if (rest !== '-' && rest !== '') cur.slurmState = rest;
    } else {
      throw bad(`unknown line "${line.slice(0, 40)}"`);
    }
  }
  return evals;
}

/** Validate a meta.json; undefined when it is not an eval meta of ours. */
export function parseEvalMeta(text: string): EvalMeta | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const m = v as Record<string, unknown>;
  const str = (k: string): boolean => typeof m[k] === 'string';
  if (!str('id') || !str('profile') || !str('checkpoint') || !str('startedAt') || !str('command') || !str('cwd')) return undefined;
  if (typeof m.step !== 'number' || typeof m.run !== 'object' || m.run === null) return undefined;
  return m as unknown as EvalMeta;
}

/** Slurm states that mean the job ended badly (no exit status of ours may exist then). */
const SLURM_FAILED = new Set(['FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'BOOT_FAIL', 'DEADLINE', 'REVOKED']);
const SLURM_PENDING = new Set(['PENDING', 'REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED']);

/**
 * The state of an eval from what its folder and the scheduler say. An exit status wins over everything; without
 * one: alive → pending/running; a Slurm failure state → failed; else lost.
 */
export function evalState(status: number | undefined, alive: boolean, slurmState?: string): EvalState {
  if (status !== undefined) return status === 0 ? 'passed' : 'failed';
  if (alive) return slurmState && SLURM_PENDING.has(slurmState) ? 'pending' : 'running';
  if (slurmState && SLURM_FAILED.has(slurmState)) return 'failed';
  return 'lost';
}

/** Parse an exit-status file: an integer, else undefined. */
export function parseStatus(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = text.trim();
  return /^-?\d+$/.test(t) ? Number(t) : undefined;
}

/** Raw evals → records (newest first); folders without a valid meta are skipped. `dirOf(id)` names the folder. */
export function toEvalRecords(raw: readonly RawEval[], dirOf: (id: string) => string): EvalRecord[] {
  const records: EvalRecord[] = [];
  for (const r of raw) {
    if (!isEvalId(r.id)) continue;
    const meta = r.files.meta ? parseEvalMeta(r.files.meta.toString('utf8')) : undefined;
    if (!meta) continue;
    const status = parseStatus(r.files.status?.toString('utf8'));
    const state = evalState(status, r.alive, r.slurmState);
    const jobId = r.files.jobid?.toString('utf8').trim();
    const startedAt = Date.parse(meta.startedAt);
    const record: EvalRecord = {
      id: r.id,
      profile: meta.profile,
      checkpointPath: meta.checkpoint,
      step: meta.step,
      startedAt: Number.isFinite(startedAt) ? startedAt : 0,
      state,
      results: r.files.results ? parseResultsFile(r.files.results.toString('utf8')) : [],
      resultsRecorded: r.files.results !== undefined,
      stopped: r.files.stopped !== undefined,
      logBytes: r.logBytes,
      dir: dirOf(r.id),
      meta,
    };
    if (status !== undefined) record.exitCode = status;
    if (r.files.spec) {
      const spec = parseSpecRecord(r.files.spec.toString('utf8'));
      if ('record' in spec) record.spec = spec.record;
      else record.specProblems = spec.problems;
    }
    if (jobId) record.slurm = { jobId, ...(r.slurmState ? { state: r.slurmState } : {}) };
    if ((state === 'failed' || state === 'lost') && r.files.tail) record.logTail = r.files.tail.toString('utf8');
    records.push(record);
  }
  return records.sort((a, b) => b.startedAt - a.startedAt || (a.id < b.id ? 1 : -1));
}

/** The header of a log read (READ_SCRIPT). */
export interface ReadHeader {
  status?: number;
  size: number;
  alive: boolean;
  slurmState?: string;
}

/** Split a READ_SCRIPT result into its header and the log bytes. */
export function parseReadOutput(out: Buffer): { header: ReadHeader; data: Buffer } {
  const nl = out.indexOf(0x0a);
  if (nl < 0) throw new RemoteRunsError('protocol', 'Unexpected eval log read output (no header line)');
  const m = /^(-|-?\d+) (\d+) ([01]) (\S+)$/.exec(out.subarray(0, nl).toString('utf8'));
  if (!m) throw new RemoteRunsError('protocol', `Unexpected eval log read header ${JSON.stringify(out.subarray(0, Math.min(nl, 80)).toString('utf8'))}`);
  const header: ReadHeader = { size: Number(m[2]), alive: m[3] === '1' };
  if (m[1] !== '-') header.status = Number(m[1]);
  if (m[4] !== '-') header.slurmState = m[4];
  return { header, data: out.subarray(nl + 1) };
}

/** What a stop did. */
export interface StopReport {
  /** KILL was needed after the grace period. */
  killed: boolean;
  /** Something of the process group (or the Slurm job) is still there even after KILL. */
  left: boolean;
  exitCode?: number;
}

export function parseStopOutput(text: string): StopReport {
  const m = /^stopped ([01]) ([01]) (-|-?\d+)\s*$/m.exec(text);
  if (!m) throw new RemoteRunsError('protocol', `Unexpected eval stop output ${JSON.stringify(text.slice(0, 80))}`);
  const report: StopReport = { killed: m[1] === '1', left: m[2] === '1' };
  if (m[3] !== '-') report.exitCode = Number(m[3]);
  return report;
}
