/**
 * SpecForge's benchmarks/bench_eagle3.py result file (`<output-dir>/[<name>_]results_<timestamp>.jsonl`, despite
 * the name one JSON document, `json.dump(results, f, indent=4)` at the end of `main`):
 *
 *     { "model": <--speculative-draft-model-path>,
 *       "<benchmark>": [ { "batch_size", "steps", "topk", "num_draft_tokens",
 *                          "metrics": [ BenchmarkMetrics, … one per run ], "num_samples" }, … ], … }
 *
 * `steps`/`topk`/`num_draft_tokens` are null with `--skip-launch-server` (the server's own flags apply; not in the
 * file). `BenchmarkMetrics` (benchmarks/benchmarker/utils.py) is `latency, output_throughput, accept_length,
 * accuracy, num_questions, num_valid_predictions, categorical_performance`; `compute_metrics` makes
 * `accept_length` = Σ completion_tokens / Σ spec_verify_ct over every answer (TauDefinition
 * `completion-per-verify`, the bonus token counted), 1.0 when the server reported no verify step, and
 * `output_throughput` = Σ completion_tokens / wall time of the batch. Several runs are averaged as its
 * `print_results` does (mean of each).
 *
 * Settings the code fixes: temperature 0 (`Benchmarker.run`: `run_batch(temperature=0, …)`), max new tokens by
 * benchmark (`get_max_new_tokens`: 2048, humaneval and mbpp 1024, aime 32768), concurrency = batch_size
 * (`num_threads=batch_size`). The target model is a command-line option and not in the file.
 */
import type { SpecRead, SpecResult } from '../types';
import { SettingsBuilder, isCutShortJson, isObject, num, optNum, result } from './common';
import { parseJsonLine } from '../../../metrics/formats/jsonl';

/** benchmarks/benchmarker/*.py `get_max_new_tokens` overrides; the rest use base.py's 2048. */
const MAX_NEW_TOKENS: Readonly<Record<string, number>> = { humaneval: 1024, mbpp: 1024, aime: 32768 };

/** A benchmark entry: an object with a `metrics` array and a `batch_size`. */
function isEntry(v: unknown): v is Record<string, unknown> {
  return isObject(v) && Array.isArray(v.metrics) && 'batch_size' in v;
}

export function looksLikeSpecforge(v: unknown): boolean {
  if (!isObject(v) || !('model' in v)) return false;
  return Object.entries(v).some(([k, list]) => k !== 'model' && Array.isArray(list) && list.length > 0 && list.every(isEntry));
}

/** Read a whole file's text (detect.ts has already parsed it once; pass the value to skip a second parse). */
export function readSpecforgeBench(text: string, parsed?: unknown): SpecRead {
  const value = parsed ?? parseJsonLine(text.trim());
  const tool = 'specforge-bench' as const;
  if (value === undefined) {
    if (isCutShortJson(text)) return { tool, results: [], problems: [], incomplete: 'the JSON document is cut short: still being written' };
    return { tool, results: [], problems: [{ message: 'not JSON' }] };
  }
  if (!isObject(value)) return { tool, results: [], problems: [{ message: 'not a SpecForge result file: not a JSON object' }] };
  const draftModel = typeof value.model === 'string' ? value.model : undefined;
  const results: SpecResult[] = [];
  const problems: SpecRead['problems'] = [];
  for (const [bench, list] of Object.entries(value)) {
    if (bench === 'model') continue;
    if (!Array.isArray(list)) {
      problems.push({ message: `"${bench}": not a list of benchmark entries` });
      continue;
    }
    list.forEach((entry, i) => {
      const where = `"${bench}"[${i}]`;
      if (!isEntry(entry)) {
        problems.push({ message: `${where}: not a benchmark entry (no "metrics" list or "batch_size")` });
        return;
      }
      const runs = (entry.metrics as unknown[]).filter(isObject);
      const taus: number[] = [];
      const tps: number[] = [];
      const acc: number[] = [];
      let questions: number | undefined;
      for (const [j, m] of runs.entries()) {
        const a = num(m, 'accept_length');
        const o = num(m, 'output_throughput');
        if (typeof a === 'string' || typeof o === 'string') {
          problems.push({ message: `${where}.metrics[${j}]: ${typeof a === 'string' ? a : o}` });
          continue;
        }
        if (a < 1) {
          problems.push({ message: `${where}.metrics[${j}]: accept_length ${a} is below 1 (it counts the bonus token)` });
          continue;
        }
        taus.push(a);
        tps.push(o);
        const accuracy = optNum(m, 'accuracy');
        if (accuracy !== undefined) acc.push(accuracy);
        questions = optNum(m, 'num_questions') ?? questions;
      }
      if (taus.length === 0) {
        if (runs.length === 0) problems.push({ message: `${where}: no metrics` });
        return;
      }
      const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
      const bs = optNum(entry, 'batch_size');
      const steps = optNum(entry, 'steps');
      const topk = optNum(entry, 'topk');
      const ndt = optNum(entry, 'num_draft_tokens');
      const serverSet = entry.steps === null || entry.steps === undefined;
      // compute_metrics writes 1.0 when the answers carry no spec_verify_ct: on a speculative config nothing was measured.
      const unmeasured = !serverSet && !(steps === 0 && topk === 0 && ndt === 0) && taus.every((t) => t === 1);
      if (unmeasured) problems.push({ message: `${where}: accept_length is 1.0 with steps=${steps}: the server sent no spec_verify_ct, so speculative decoding did not run or its stats were missing` });
      const speculative = serverSet ? taus.some((t) => t !== 1) : !(steps === 0 && topk === 0 && ndt === 0);
      const settings = new SettingsBuilder()
        .set('benchmark', bench, 'file')
        .set('draftModel', draftModel, 'file')
        .set('concurrency', bs, 'file')
        .set('numSteps', steps, 'file')
        .set('topk', topk, 'file')
        .set('numDraftTokens', ndt, 'file')
        .set('numPrompts', optNum(entry, 'num_samples') ?? questions, 'file')
        .set('temperature', 0, 'fixed')
        .set('maxTokens', MAX_NEW_TOKENS[bench] ?? 2048, 'fixed');
      const notes: string[] = [];
      if (serverSet) notes.push('steps, topk and num_draft_tokens are null: the server was launched separately (--skip-launch-server) and its own flags apply');
      if (taus.length > 1) notes.push(`mean of ${taus.length} runs`);
      results.push(
        result({
          tool: 'specforge-bench',
          label: `${bench} bs=${bs ?? '?'}${serverSet ? '' : ` steps=${steps} topk=${topk} draft=${ndt}`}`,
          speculative,
          tau: unmeasured ? undefined : speculative ? mean(taus) : 1,
          tauDefinition: 'completion-per-verify',
          outputTokensPerSec: mean(tps),
          extra: acc.length > 0 ? { accuracy: mean(acc) } : {},
          notes,
          settings,
        }),
      );
    });
  }
  for (const r of results) {
    if (!r.speculative) continue;
    const base = results.find((o) => !o.speculative && o.settings.benchmark === r.settings.benchmark && o.settings.concurrency === r.settings.concurrency);
    if (base?.outputTokensPerSec && r.outputTokensPerSec !== undefined) r.speedup = r.outputTokensPerSec / base.outputTokensPerSec;
  }
  return { tool, results, problems };
}

/**
 * `specforge benchmark --output-json` (specforge/benchmarks/sglang.py `run`: `json.dump(asdict(result), indent=2,
 * sort_keys=True)`), the algorithm-agnostic runner against an existing SGLang server (DFlash, EAGLE3, target-only):
 * `BenchmarkResult` = `backend, dataset, samples, output_tokens, latency_seconds, throughput_tokens_per_second,
 * average_acceptance_length, spec_verify_count`. `output_tokens` and `spec_verify_count` are the sums of every
 * measured request's `meta_info.completion_tokens` and `meta_info.spec_verify_ct` (warmup excluded), so
 * τ = output_tokens / spec_verify_count (TauDefinition `completion-per-verify`); `average_acceptance_length` is the
 * mean of the per-request `meta_info.spec_accept_length`, kept as extra. `spec_verify_count` is null when SGLang sent
 * no verify count (a target-only server): the row is read as the run without speculation.
 *
 * Settings are command-line options and not in the file: their defaults (specforge/cli.py `benchmark`: temperature
 * 0, max new tokens 2048, concurrency 1, thinking off) are recorded as defaults.
 */
export function looksLikeSpecforgeServerBench(v: unknown): boolean {
  return isObject(v) && 'throughput_tokens_per_second' in v && 'output_tokens' in v && 'dataset' in v && 'backend' in v;
}

export function readSpecforgeServerBench(doc: Record<string, unknown>): SpecRead {
  const tool = 'specforge-server-bench' as const;
  const out = num(doc, 'output_tokens');
  const tps = num(doc, 'throughput_tokens_per_second');
  if (typeof out === 'string' || typeof tps === 'string') return { tool, results: [], problems: [{ message: `not a specforge benchmark result: ${typeof out === 'string' ? out : tps}` }] };
  const verify = optNum(doc, 'spec_verify_count');
  const avg = optNum(doc, 'average_acceptance_length');
  const dataset = typeof doc.dataset === 'string' ? doc.dataset : undefined;
  const speculative = verify !== undefined && verify > 0;
  const settings = new SettingsBuilder()
    .set('benchmark', dataset, 'file')
    .set('numPrompts', optNum(doc, 'samples'), 'file')
    .set('temperature', 0, 'default')
    .set('maxTokens', 2048, 'default')
    .set('concurrency', 1, 'default')
    .set('thinking', false, 'default');
  return {
    tool,
    problems: [],
    results: [
      result({
        tool,
        label: `${dataset ?? 'specforge benchmark'}`,
        speculative,
        tau: speculative ? out / verify : undefined,
        tauDefinition: 'completion-per-verify',
        outputTokensPerSec: tps,
        counts: { completionTokens: out, verifySteps: verify, requests: optNum(doc, 'samples') },
        extra: avg !== undefined ? { average_acceptance_length: avg } : {},
        notes: speculative ? [] : ['no spec_verify_count: a target-only server, or SGLang sent no speculative stats'],
        settings,
      }),
    ],
  };
}
