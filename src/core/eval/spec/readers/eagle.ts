/**
 * EAGLE's answer files (eagle/evaluation/gen_ea_answer_*.py `get_model_answers`, and gen_baseline_answer_*.py for
 * the run without speculation): one JSON line per question,
 *
 *     {"question_id", "answer_id", "model_id", "choices": [{"index", "turns", "idxs", "new_tokens", "wall_time"}], "tstamp"}
 *
 * with one entry per turn in `turns`/`idxs`/`new_tokens`/`wall_time`. Per turn, `eagenerate` (eagle/model/ea_model.py)
 * returns `new_token` and `idx`:
 * - `new_token` grows by accept_length + 1 per verify step (eagle/model/utils.py `update_inference_inputs`), where
 *   `evaluate_posterior` returns accept_length = accepted draft tokens: so new_tokens counts the bonus token;
 * - `idx` is the index of `for idx in range(max_length)` when the loop stopped, so the turn ran idx + 1 verify steps.
 * τ = Σ new_tokens / Σ (idx + 1) (TauDefinition `eagle-new-tokens-per-verify`); the ratio Σ new_tokens / Σ idx
 * that divides by one step fewer per turn is kept as `extra.tau_new_tokens_per_idx`. The baseline's
 * `naivegenerate` adds 1 per step, so its τ is exactly 1: such a file is read as the run without speculation.
 * Output tokens/s = Σ new_tokens / Σ wall_time (eagle/evaluation/speed.py takes the mean of per-question ratios, and
 * the baseline's tokens by re-tokenizing its text; both counts differ from this one slightly).
 *
 * Settings: only `model_id` is in the file; EAGLE's scripts name the answer file after it and the examples in
 * speed.py after the temperature (`…-temperature-0.0.jsonl`), which is read from the file name when given.
 * The draft tree (`--total-token`, `--depth`, `--top-k`) is a command-line option and not in the file.
 */
import type { SpecProblem, SpecRead } from '../types';
import { SettingsBuilder, inLineOrder, isObject, result, splitJsonLines } from './common';

export function looksLikeEagleAnswer(v: unknown): boolean {
  if (!isObject(v) || !Array.isArray(v.choices) || !('question_id' in v)) return false;
  const c = v.choices[0];
  return isObject(c) && Array.isArray(c.idxs) && Array.isArray(c.new_tokens);
}

function counts(v: unknown): number[] | undefined {
  if (!Array.isArray(v)) return undefined;
  return v.every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0) ? (v as number[]) : undefined;
}

/** `name` is the file's name (or path), used for the temperature of EAGLE's `…-temperature-<t>.jsonl` naming. */
export function readEagleAnswers(text: string, name?: string): SpecRead {
  const { lines, problems, incomplete } = splitJsonLines(text);
  const tool = 'eagle-answers' as const;
  let newTokens = 0;
  let idxSum = 0;
  let steps = 0;
  let wall = 0;
  let turns = 0;
  let questions = 0;
  let allNaive = true;
  const models = new Set<string>();
  for (const { line, value } of lines) {
    const bad = (message: string) => problems.push({ line, message } satisfies SpecProblem);
    if (!isObject(value) || !Array.isArray(value.choices)) {
      bad('not an EAGLE answer line (no "choices" list)');
      continue;
    }
    if (typeof value.model_id === 'string') models.add(value.model_id);
    let lineOk = true;
    const parsed: { idxs: number[]; nt: number[]; wt: number[] }[] = [];
    for (const [ci, c] of value.choices.entries()) {
      if (!isObject(c)) {
        bad(`choices[${ci}] is not an object`);
        lineOk = false;
        break;
      }
      const idxs = counts(c.idxs);
      const nt = counts(c.new_tokens);
      const wt = Array.isArray(c.wall_time) && c.wall_time.every((x) => typeof x === 'number' && Number.isFinite(x) && x >= 0) ? (c.wall_time as number[]) : undefined;
      if (!idxs || !nt) {
        bad(`choices[${ci}]: "idxs" and "new_tokens" must be lists of counts`);
        lineOk = false;
        break;
      }
      if (c.wall_time !== undefined && !wt) {
        bad(`choices[${ci}]: "wall_time" must be a list of seconds`);
        lineOk = false;
        break;
      }
      // Every pass of eagenerate's loop adds accept_length + 1 ≥ 1 token: fewer tokens than passes cannot come from it.
      const short = nt.findIndex((n, t) => n < idxs[t] + 1);
      if (short >= 0 && idxs.length === nt.length) {
        bad(`choices[${ci}] turn ${short}: ${nt[short]} new_tokens in ${idxs[short] + 1} steps (idx ${idxs[short]}); each step adds at least one token`);
        lineOk = false;
        break;
      }
      if (idxs.length !== nt.length || (wt && wt.length !== nt.length)) {
        bad(`choices[${ci}]: ${idxs.length} idxs, ${nt.length} new_tokens${wt ? `, ${wt.length} wall_time` : ''}: one per turn each`);
        lineOk = false;
        break;
      }
      parsed.push({ idxs, nt, wt: wt ?? [] });
    }
    if (!lineOk) continue;
    questions++;
    for (const p of parsed) {
      for (let t = 0; t < p.nt.length; t++) {
        newTokens += p.nt[t];
        idxSum += p.idxs[t];
        steps += p.idxs[t] + 1;
        if (p.nt[t] !== p.idxs[t] + 1) allNaive = false;
        turns++;
      }
      wall += p.wt.reduce((s, x) => s + x, 0);
    }
  }
  inLineOrder(problems);
  if (turns === 0) return { tool, results: [], problems, incomplete };
  const speculative = !allNaive;
  const temp = name ? /temperature-(\d+(?:\.\d+)?)/.exec(name) : null;
  const settings = new SettingsBuilder().set('temperature', temp ? Number(temp[1]) : undefined, 'file').set('numPrompts', questions, 'file');
  if (models.size === 1) settings.set('draftModel', [...models][0], 'file');
  const notes = ['draftModel is EAGLE\'s --model-id, a name given to the run'];
  if (models.size > 1) notes.push(`answers of ${models.size} model_ids in one file: ${[...models].join(', ')}`);
  return {
    tool,
    problems,
    incomplete,
    results: [
      result({
        tool,
        label: models.size === 1 ? [...models][0] : 'EAGLE answers',
        speculative,
        tau: speculative ? newTokens / steps : 1,
        tauDefinition: 'eagle-new-tokens-per-verify',
        outputTokensPerSec: wall > 0 ? newTokens / wall : undefined,
        counts: { verifySteps: steps, completionTokens: newTokens, requests: turns },
        extra: idxSum > 0 ? { tau_new_tokens_per_idx: newTokens / idxSum } : {},
        notes,
        settings,
      }),
    ],
  };
}
