/**
 * The text a checkpoint shows for its evals (a tree description suffix). Pure: no `vscode`, unit tested.
 */
import type { EvalRecord, EvalResult } from '../../core/eval/types';

/** `acceptance_length=6.4 tokens_per_s=812` from the last result line (numbers shortened to 4 significant digits). */
export function formatResult(result: EvalResult | undefined): string {
  if (!result) return '';
  return Object.entries(result)
    .map(([k, v]) => `${k}=${Number.isInteger(v) ? v : Number(v.toPrecision(4))}`)
    .join(' ');
}

/** One eval's state in a few words: `eval: running`, `eval ✓ acceptance_length=6.4`, `eval ✗ exit 7`. */
export function evalStateText(r: Pick<EvalRecord, 'state' | 'exitCode' | 'results' | 'stopped' | 'profile' | 'slurm'>, withProfile = false): string {
  const who = withProfile ? ` ${r.profile}` : '';
  // A Slurm eval says it is a queued job, and a job the scheduler ended says how (TIMEOUT, OUT_OF_MEMORY, …).
  const job = r.slurm ? ` (Slurm job ${r.slurm.jobId})` : '';
  switch (r.state) {
    case 'pending':
      return `eval${who}: pending${r.slurm ? ' in the queue' : ''}${job}`;
    case 'running':
      return `eval${who}: running${job}`;
    case 'passed': {
      const values = formatResult(r.results[r.results.length - 1]);
      return `eval${who} ✓${values ? ` ${values}` : ''}`;
    }
    case 'failed':
      return `eval${who} ✗ ${r.stopped ? 'stopped' : r.exitCode !== undefined ? `exit ${r.exitCode}` : r.slurm?.state ? r.slurm.state.toLowerCase().replace(/_/g, ' ') : 'failed'}`;
    case 'lost':
      return `eval${who} ✗ lost`;
  }
}

/**
 * The suffix for a checkpoint: its newest eval per profile (records newest first), running ones first. Profiles are
 * named only when more than one has evaluated this checkpoint. Undefined when it has no evals.
 */
export function checkpointEvalText(records: readonly EvalRecord[], checkpointPath: string): string | undefined {
  const newestPerProfile = new Map<string, EvalRecord>();
  for (const r of [...records].sort((a, b) => b.startedAt - a.startedAt)) {
    if (r.checkpointPath === checkpointPath && !newestPerProfile.has(r.profile)) newestPerProfile.set(r.profile, r);
  }
  if (newestPerProfile.size === 0) return undefined;
  const live = (r: EvalRecord): number => (r.state === 'running' || r.state === 'pending' ? 0 : 1);
  const shown = [...newestPerProfile.values()].sort((a, b) => live(a) - live(b));
  return shown.map((r) => evalStateText(r, shown.length > 1)).join(' · ');
}
