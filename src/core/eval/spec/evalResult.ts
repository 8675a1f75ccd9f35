/**
 * A speculative-decoding result as an eval result line (types.ts `EvalResult`, metric name → number), so τ over
 * checkpoints is charted and tabled as every other eval result is (docs/evals.md "Results"). Only measured numbers
 * become metrics; the settings and the τ definition stay on the SpecResult.
 */
import type { EvalResult } from '../types';
import type { SpecResult } from './types';
import { put } from '../../util/dict';

/** `tau`, `acceptance_rate`, `p_1` … `p_K`, `output_tokens_per_s`, `speedup`, whichever the result has. */
export function specEvalResult(r: SpecResult): EvalResult {
  const out: EvalResult = {};
  const add = (k: string, v: number | undefined) => {
    if (v !== undefined && Number.isFinite(v)) put(out, k, v);
  };
  add('tau', r.tau);
  add('acceptance_rate', r.acceptanceRate);
  r.pk?.forEach((p, i) => add(`p_${i + 1}`, p));
  add('output_tokens_per_s', r.outputTokensPerSec);
  add('speedup', r.speedup);
  return out;
}
