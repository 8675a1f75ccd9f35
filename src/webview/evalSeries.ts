/**
 * Which of an eval's printed values are charted, and the lines through its points. An eval prints its results and,
 * often, how it measured them (`{"acceptance_length": 6.4, "prompts": 200}`): a count is not a metric, so it gets no
 * chart and no point (it stays in the point's tooltip and in the eval table). A value is a count when
 *  - its name says so (`prompts`, `samples`, `n`, `num_prompts`, `total_tokens`, `seed`, …) and every eval gives it
 *    as an integer, or
 *  - at least two evals of the run give it and it is the same integer in all of them (`max_new_tokens: 128`).
 * Pure, unit-tested in node.
 */
import type { EvalPointWire } from '../shared/metricsProtocol';
import type { Point } from './points';

// The last path part: a word of counting (n, num, count, total, size), or a plural of what evals count.
const COUNT_NAME =
  /^(n|num|number|count|total)([_\-.]|$)|(^|[_\-.])(n|num|count|total|size|seed|prompts|samples|examples|items|questions|tasks|problems|episodes|sequences|seqs|documents|docs|instances|cases|tests|files|batches|images|queries|tokens|steps)$/;

/** Whether a value's name reads like a count (see the module's comment). */
export function namedLikeCount(key: string): boolean {
  return COUNT_NAME.test(key.slice(key.lastIndexOf('/') + 1).toLowerCase());
}

/** The keys of a run's eval values that are counts, not metrics. */
export function countFields(evals: readonly EvalPointWire[]): Set<string> {
  const values = new Map<string, number[]>();
  for (const e of evals) {
    for (const [k, v] of Object.entries(e.values)) {
      let list = values.get(k);
      if (!list) values.set(k, (list = []));
      list.push(v);
    }
  }
  const out = new Set<string>();
  for (const [k, list] of values) {
    if (!list.every(Number.isInteger)) continue;
    if (namedLikeCount(k) || (list.length >= 2 && list.every((v) => v === list[0]))) out.add(k);
  }
  return out;
}

/**
 * The lines an eval metric's points form: one per profile (two profiles measure differently), through the newest
 * result at each step, in step order. Only lines of two points or more.
 */
export function evalLines(marks: readonly (Point & { eval: EvalPointWire })[]): { profile: string; points: Point[] }[] {
  const byProfile = new Map<string, Map<number, Point & { eval: EvalPointWire }>>();
  for (const m of marks) {
    let steps = byProfile.get(m.eval.profile);
    if (!steps) byProfile.set(m.eval.profile, (steps = new Map()));
    const have = steps.get(m.x);
    if (!have || m.eval.startedAt >= have.eval.startedAt) steps.set(m.x, m);
  }
  const out: { profile: string; points: Point[] }[] = [];
  for (const [profile, steps] of byProfile) {
    const points = [...steps.values()].sort((a, b) => a.x - b.x).map(({ x, y }) => ({ x, y }));
    if (points.length >= 2) out.push({ profile, points });
  }
  return out;
}
