/**
 * aiperf's speculative-decoding results, from either of the files `aiperf profile` writes:
 *
 * - `profile_export_aiperf.json` (src/aiperf/common/models/export_models.py `JsonExportData`; shape in
 *   docs/reference/json-export-schema.md): one block `{unit, avg, …}` per metric tag. The spec-decode tags
 *   (src/aiperf/metrics/types/spec_decode_metrics.py) read here: `total_spec_decode_steps`,
 *   `total_accepted_draft_tokens`, `total_draft_tokens` (run totals, value in `avg`),
 *   `spec_decode_token_weighted_acceptance_length` (1 + Σ accepted / Σ steps), `spec_decode_acceptance_length`
 *   (the mean of per-request τ, kept as extra), `spec_decode_overall_draft_acceptance_rate` (percent),
 *   `output_token_throughput`; and the top-level `pooled_spec_decode_acceptance_histogram` `{j: steps}` for p_k.
 *   Settings come from `input_config` (the resolved BenchmarkConfig) and `run_info.cli_command`.
 * - `profile_export.jsonl` (src/aiperf/common/models/record_models.py `MetricRecordInfo`): one record per request,
 *   whose `spec_decode_acceptance` is a `SpecDecodeAcceptanceRecord` (src/aiperf/common/models/spec_decode_models.py:
 *   `num_accepted_draft_tokens`, `num_draft_tokens`, `num_spec_steps`, `acceptance_histogram` {j: steps}, all
 *   without the bonus token). The profiling-phase records are pooled (`metadata.benchmark_phase`), warmup skipped.
 *
 * τ is 1 + Σ accepted / Σ steps (TauDefinition `one-plus-accepted-per-draft`, aiperf's "token-weighted acceptance
 * length", the bonus token counted), p_k from the pooled histogram (p_k = Σ_{j≥k} h[j] / Σ h).
 */
import { acceptanceRate, denseHistogram, pkFromHistogram, tauFromAccepted } from '../definitions';
import type { SpecRead, SpecResult } from '../types';
import { SettingsBuilder, inLineOrder, isObject, result, splitJsonLines } from './common';

const TOOL = 'aiperf' as const;

/** profile_export_aiperf.json: an object with spec-decode metric blocks or the pooled histogram. */
export function looksLikeAiperfSummary(v: unknown): boolean {
  return isObject(v) && ('pooled_spec_decode_acceptance_histogram' in v || 'total_spec_decode_steps' in v || ('schema_version' in v && 'aiperf_version' in v));
}

/** A profile_export.jsonl record: `metadata` and `metrics` objects. */
export function looksLikeAiperfRecord(v: unknown): boolean {
  return isObject(v) && isObject(v.metadata) && isObject(v.metrics);
}

function blockValue(o: Record<string, unknown>, tag: string): number | undefined {
  const b = o[tag];
  if (!isObject(b)) return undefined;
  const v = b.avg;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** The first value under `key` anywhere in a JSON value (the config's nesting changes between aiperf versions). */
function deepFind(v: unknown, key: string, depth = 0): unknown {
  if (depth > 8 || (typeof v !== 'object' || v === null)) return undefined;
  if (!Array.isArray(v) && key in v) return (v as Record<string, unknown>)[key];
  for (const child of Object.values(v)) {
    const found = deepFind(child, key, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** `--flag value` / `--flag=value` of a command line (aiperf writes it redacted in run_info.cli_command). */
function cliValues(cli: string, flags: readonly string[]): string[] {
  const words = cli.match(/'[^']*'|"[^"]*"|\S+/g) ?? [];
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    for (const f of flags) {
      if (words[i] === f && i + 1 < words.length) out.push(words[i + 1].replace(/^['"]|['"]$/g, ''));
      else if (words[i].startsWith(`${f}=`)) out.push(words[i].slice(f.length + 1).replace(/^['"]|['"]$/g, ''));
    }
  }
  return out;
}

function settingsOf(doc: Record<string, unknown>): SettingsBuilder {
  const s = new SettingsBuilder();
  const cfg = doc.input_config;
  const asNum = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v)) ? Number(v) : undefined);
  const names = deepFind(cfg, 'model_names');
  if (Array.isArray(names) && typeof names[0] === 'string') s.set('model', names[0], 'file');
  s.set('concurrency', asNum(deepFind(cfg, 'concurrency')), 'file');
  s.set('temperature', asNum(deepFind(cfg, 'temperature')), 'file');
  s.set('maxTokens', asNum(deepFind(cfg, 'max_tokens')), 'file');
  const thinking = deepFind(cfg, 'enable_thinking');
  if (typeof thinking === 'boolean') s.set('thinking', thinking, 'file');
  const runInfo = doc.run_info;
  const cli = isObject(runInfo) && typeof runInfo.cli_command === 'string' ? runInfo.cli_command : undefined;
  if (cli) {
    if (s.settings.model === undefined) s.set('model', cliValues(cli, ['--model', '-m', '--model-names'])[0], 'file');
    if (s.settings.concurrency === undefined) s.set('concurrency', asNum(cliValues(cli, ['--concurrency'])[0]), 'file');
    for (const extra of cliValues(cli, ['--extra-inputs'])) {
      const m = /^([A-Za-z_]+):(.*)$/.exec(extra);
      if (!m) continue;
      if (m[1] === 'temperature' && s.settings.temperature === undefined) s.set('temperature', asNum(m[2]), 'file');
      if ((m[1] === 'max_tokens' || m[1] === 'max_completion_tokens') && s.settings.maxTokens === undefined) s.set('maxTokens', asNum(m[2]), 'file');
    }
  }
  return s;
}

/** profile_export_aiperf.json (already parsed by detect.ts). */
export function readAiperfSummary(doc: Record<string, unknown>): SpecRead {
  const problems: SpecRead['problems'] = [];
  const total = (tag: string): number | undefined => {
    const v = blockValue(doc, tag);
    if (v === undefined || v >= 0) return v;
    problems.push({ message: `${tag} is ${v}, not a count` });
    return undefined;
  };
  const steps = total('total_spec_decode_steps');
  let accepted = total('total_accepted_draft_tokens');
  let drafts = total('total_draft_tokens');
  if (accepted !== undefined && drafts !== undefined && accepted > drafts) {
    problems.push({ message: `total_accepted_draft_tokens (${accepted}) exceeds total_draft_tokens (${drafts})` });
    accepted = drafts = undefined;
  }
  const hist = doc.pooled_spec_decode_acceptance_histogram;
  let pk: number[] | undefined;
  let histTau: number | undefined;
  if (isObject(hist)) {
    try {
      pk = pkFromHistogram(hist as Record<string, number>);
      const dense = denseHistogram(hist as Record<string, number>);
      const n = dense.reduce((a, b) => a + b, 0);
      histTau = tauFromAccepted(dense.reduce((a, b, j) => a + j * b, 0), n);
      if (steps !== undefined && n !== steps) problems.push({ message: `pooled_spec_decode_acceptance_histogram counts ${n} steps, total_spec_decode_steps says ${steps}` });
    } catch (e) {
      problems.push({ message: `pooled_spec_decode_acceptance_histogram: ${(e as Error).message}` });
    }
  }
  const weighted = blockValue(doc, 'spec_decode_token_weighted_acceptance_length');
  const tau = (steps !== undefined && accepted !== undefined ? tauFromAccepted(accepted, steps) : undefined) ?? (weighted !== undefined && weighted >= 1 ? weighted : undefined) ?? histTau;
  if (tau === undefined) {
    return {
      tool: TOOL,
      results: [],
      problems: [...problems, { message: 'an aiperf summary without speculative-decoding metrics: the server sent no per-request spec-decode stats (for vLLM, start it with --per-request-spec-decode-metrics)' }],
    };
  }
  const rate = accepted !== undefined && drafts !== undefined ? acceptanceRate(accepted, drafts) : (() => {
    const p = blockValue(doc, 'spec_decode_overall_draft_acceptance_rate');
    return p === undefined || p < 0 || p > 100 ? undefined : p / 100;
  })();
  const perRequest = blockValue(doc, 'spec_decode_acceptance_length');
  const r: SpecResult = result({
    tool: TOOL,
    label: typeof doc.benchmark_id === 'string' ? `aiperf ${doc.benchmark_id}` : 'aiperf',
    speculative: true,
    tau,
    tauDefinition: 'one-plus-accepted-per-draft',
    acceptanceRate: rate,
    pk,
    outputTokensPerSec: blockValue(doc, 'output_token_throughput'),
    counts: { verifySteps: steps, acceptedDraftTokens: accepted, draftTokens: drafts, requests: blockValue(doc, 'request_count') },
    extra: perRequest !== undefined ? { per_request_mean_acceptance_length: perRequest } : {},
    notes: doc.was_cancelled === true ? ['the run was cancelled before it finished'] : [],
    settings: settingsOf(doc),
  });
  return { tool: TOOL, results: [r], problems, incomplete: doc.is_complete === false ? `aiperf marked the run incomplete${typeof doc.incomplete_reason === 'string' ? `: ${doc.incomplete_reason}` : ''}` : undefined };
}

/** profile_export.jsonl: pool the profiling records' SpecDecodeAcceptanceRecord. */
export function readAiperfRecords(text: string): SpecRead {
  const { lines, problems, incomplete } = splitJsonLines(text);
  let steps = 0;
  let accepted = 0;
  let drafts = 0;
  let requests = 0;
  let without = 0;
  const pooled: number[] = [];
  for (const { line, value } of lines) {
    if (!looksLikeAiperfRecord(value)) {
      problems.push({ line, message: 'not an aiperf record (no "metadata" and "metrics" objects)' });
      continue;
    }
    const rec = value as Record<string, unknown>;
    const meta = rec.metadata as Record<string, unknown>;
    if (meta.benchmark_phase === 'warmup') continue;
    const s = rec.spec_decode_acceptance;
    if (s === undefined || s === null) {
      without++;
      continue;
    }
    if (!isObject(s)) {
      problems.push({ line, message: 'spec_decode_acceptance is not an object' });
      continue;
    }
    const n = s.num_spec_steps;
    const a = s.num_accepted_draft_tokens;
    const d = s.num_draft_tokens;
    if (![n, a, d].every((x) => typeof x === 'number' && Number.isInteger(x) && x >= 0)) {
      problems.push({ line, message: 'spec_decode_acceptance: num_spec_steps, num_accepted_draft_tokens and num_draft_tokens must be counts' });
      continue;
    }
    if ((a as number) > (d as number)) {
      problems.push({ line, message: `spec_decode_acceptance: ${a} accepted draft tokens of ${d} proposed` });
      continue;
    }
    let h: number[];
    try {
      h = isObject(s.acceptance_histogram) ? denseHistogram(s.acceptance_histogram as Record<string, number>) : [];
    } catch (e) {
      problems.push({ line, message: `spec_decode_acceptance.acceptance_histogram: ${(e as Error).message}` });
      continue;
    }
    steps += n as number;
    accepted += a as number;
    drafts += d as number;
    requests++;
    h.forEach((c, j) => (pooled[j] = (pooled[j] ?? 0) + c));
  }
  inLineOrder(problems);
  if (requests === 0) {
    if (lines.length > 0 && without > 0) problems.push({ message: `none of the ${without} profiling records has spec_decode_acceptance: the server sent no per-request spec-decode stats (for vLLM, start it with --per-request-spec-decode-metrics)` });
    return { tool: TOOL, results: [], problems, incomplete };
  }
  const dense = Array.from(pooled, (v) => v ?? 0);
  const r = result({
    tool: TOOL,
    label: 'aiperf records',
    speculative: true,
    tau: tauFromAccepted(accepted, steps) ?? 1,
    tauDefinition: 'one-plus-accepted-per-draft',
    acceptanceRate: acceptanceRate(accepted, drafts),
    pk: dense.length > 0 ? pkFromHistogram(dense) : undefined,
    counts: { verifySteps: steps, acceptedDraftTokens: accepted, draftTokens: drafts, requests },
    notes: without > 0 ? [`${without} profiling records carried no spec-decode stats and are not counted`] : [],
    settings: new SettingsBuilder(),
  });
  return { tool: TOOL, results: [r], problems, incomplete };
}
