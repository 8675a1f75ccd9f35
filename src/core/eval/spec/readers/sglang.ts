/**
 * SGLang's scripts/playground/bench_speculative.py output: one JSON line per configuration, appended after each
 * (`main`: `fout.write(json.dumps(record) + "\n")`), with the fields
 * `batch_size, steps, topk, num_draft_tokens` (the sweep point) and
 * `acc_length, step_time, speed, completion_tokens` (from `send_one_batch`):
 * - `acc_length` = bench_serving's `accept_length` (python/sglang/bench_serving.py `benchmark`: the server's
 *   `/get_server_info` `internal_states[0].avg_spec_accept_length`), which the scheduler keeps as
 *   Σ (accepted draft tokens + 1) / Σ requests per decode step since the server started
 *   (python/sglang/srt/managers/scheduler.py; TauDefinition `one-plus-accepted-per-draft`, the bonus token
 *   counted). bench_speculative starts one server per configuration and sends a warmup batch first, so the value
 *   covers the warmup too. `or 1.0` when the server has none (speculation off); rounded to 3 decimals;
 * - `step_time`: the 20th percentile of the server's `step_time_dict[batch_size]` (seconds per decode step);
 * - `speed` = acc_length / step_time: tokens/s of one request, not the server's throughput;
 * - `completion_tokens`: output tokens per request (mean).
 * A row with `steps == topk == num_draft_tokens == 0` ran with speculation off (`main` skips every other zero).
 *
 * Settings the script fixes: 512 new tokens per request (`DatasetRow(p, 0, 512)`), temperature 0 and ignore_eos
 * (bench_serving's `async_request_sglang_generate` sends `"temperature": 0.0`, `ignore_eos: not disable_ignore_eos`
 * with `disable_ignore_eos=False`), its 8 built-in prompts, `--max-running-requests batch_size`. The models are
 * command-line options and not in the file.
 */
import type { SpecRead, SpecResult } from '../types';
import { SettingsBuilder, inLineOrder, firstError, isObject, num, optNum, result, splitJsonLines } from './common';

/** The fields that make a line a bench_speculative row (detect.ts recognises the file by them). */
export const SGLANG_ROW_KEYS = ['batch_size', 'steps', 'topk', 'num_draft_tokens', 'acc_length', 'step_time', 'speed'] as const;

export function looksLikeSglangRow(v: unknown): boolean {
  return isObject(v) && SGLANG_ROW_KEYS.every((k) => k in v);
}

export function readSglangBenchSpeculative(text: string): SpecRead {
  const { lines, problems, incomplete } = splitJsonLines(text);
  const results: SpecResult[] = [];
  for (const { line, value } of lines) {
    if (!isObject(value)) {
      problems.push({ line, message: 'not a bench_speculative row (not a JSON object)' });
      continue;
    }
    const bs = num(value, 'batch_size');
    const steps = num(value, 'steps');
    const topk = num(value, 'topk');
    const ndt = num(value, 'num_draft_tokens');
    const acc = num(value, 'acc_length');
    const stepTime = num(value, 'step_time');
    const speed = num(value, 'speed');
    const bad = firstError(bs, steps, topk, ndt, acc, stepTime, speed);
    if (bad !== undefined) {
      problems.push({ line, message: `not a bench_speculative row: ${bad}` });
      continue;
    }
    const [b, s, t, d, a, st, sp] = [bs, steps, topk, ndt, acc, stepTime, speed] as number[];
    if (a < 1) {
      problems.push({ line, message: `acc_length ${a} is below 1: bench_speculative's accept length counts the bonus token, so it is at least 1` });
      continue;
    }
    const speculative = !(s === 0 && t === 0 && d === 0);
    // `results["accept_length"] or 1.0`: exactly 1.0 on a speculative config means the server reported no accept length.
    const unmeasured = speculative && a === 1;
    if (unmeasured) problems.push({ line, message: `acc_length is 1.0 with steps=${s}: the server reported no accept length (bench_speculative writes 1.0 then), so speculative decoding did not run or its stats were missing` });
    const settings = new SettingsBuilder()
      .set('concurrency', b, 'file')
      .set('numSteps', s, 'file')
      .set('topk', t, 'file')
      .set('numDraftTokens', d, 'file')
      .set('temperature', 0, 'fixed')
      .set('maxTokens', 512, 'fixed')
      .set('ignoreEos', true, 'fixed');
    const completion = optNum(value, 'completion_tokens');
    results.push(
      result({
        tool: 'sglang-bench-speculative',
        label: `bs=${b} steps=${s} topk=${t} draft=${d}`,
        speculative,
        tau: unmeasured ? undefined : speculative ? a : 1,
        tauDefinition: 'one-plus-accepted-per-draft',
        outputTokensPerSec: sp,
        extra: { step_time: st, ...(completion !== undefined ? { completion_tokens: completion } : {}) },
        notes: ['speed = acc_length / step_time (20th percentile of the server step time): decode tokens/s of one request', 'acc_length is the server-wide average since its launch, the warmup batch included'],
        settings,
      }),
    );
  }
  // Speedup of each speculative row over the speculation-off row of the same batch size (the sweep's own baseline).
  for (const r of results) {
    if (!r.speculative) continue;
    const base = results.find((o) => !o.speculative && o.settings.concurrency === r.settings.concurrency);
    if (base?.outputTokensPerSec && r.outputTokensPerSec !== undefined) r.speedup = r.outputTokensPerSec / base.outputTokensPerSec;
  }
  return { tool: 'sglang-bench-speculative', results, problems: inLineOrder(problems), incomplete };
}

