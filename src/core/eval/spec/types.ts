/**
 * The typed values of speculative-decoding results: what a reader of a tool's output gives back. Readers turn each
 * tool's file into these in one place (readers/*.ts); the card and the charts trust them.
 *
 * This folder never imports `vscode` and does no I/O.
 */
import type { TauDefinition } from './definitions';

/** The tools whose output is read (one reader each, readers/*.ts). */
export type SpecTool = 'sglang-bench-speculative' | 'specforge-bench' | 'specforge-server-bench' | 'vllm-spec-decode' | 'eagle-answers' | 'aiperf' | 'speculative-server';

/** Human names, for messages. */
export const SPEC_TOOL_NAMES: Readonly<Record<SpecTool, string>> = {
  'sglang-bench-speculative': 'SGLang bench_speculative (JSONL rows)',
  'specforge-bench': 'SpecForge benchmark results (bench_eagle3.py JSON)',
  'specforge-server-bench': 'SpecForge `specforge benchmark --output-json` result',
  'vllm-spec-decode': 'vLLM examples/offline_inference/spec_decode.py output',
  'eagle-answers': 'EAGLE answer file (eagle/evaluation/gen_ea_answer_*.py JSONL)',
  aiperf: 'aiperf profile_export_aiperf.json',
  'speculative-server': 'Remote Runs speculative-server eval (requests to a running SGLang or vLLM server)',
};

/**
 * The settings that move τ, as far as the file says them. A τ measured at temperature 1 is not comparable with one at
 * 0, nor one at 4 draft tokens with one at 8: the card lists every setting that differs between compared rows.
 */
export interface SpecSettings {
  temperature?: number;
  /** Most tokens generated per request (per turn for multi-turn benchmarks). */
  maxTokens?: number;
  /** Requests in flight at once: bench_speculative's and SpecForge's batch_size, aiperf's concurrency. */
  concurrency?: number;
  /** Draft depth: SGLang `--speculative-num-steps`, EAGLE `--depth`. */
  numSteps?: number;
  /** Draft tree width per level: SGLang `--speculative-eagle-topk`, EAGLE `--top-k`. */
  topk?: number;
  /** Tokens verified per step: SGLang `--speculative-num-draft-tokens`, EAGLE `--total-token`. */
  numDraftTokens?: number;
  /** vLLM `num_speculative_tokens` (the most draft tokens per step, K). */
  numSpeculativeTokens?: number;
  /** DFlash block size. */
  blockSize?: number;
  /** Target model. */
  model?: string;
  /** Draft model (drafter checkpoint). */
  draftModel?: string;
  /** eagle, eagle3, mtp, ngram, draft_model, dflash… */
  method?: string;
  /** Thinking mode of a chat template (`enable_thinking`). */
  thinking?: boolean;
  chatTemplate?: string;
  /** Prompt set / benchmark name (mtbench, gsm8k…). */
  benchmark?: string;
  numPrompts?: number;
  /** Generation went on past the end-of-sequence token (bench_speculative: yes). */
  ignoreEos?: boolean;
}

export type SpecSettingKey = keyof SpecSettings;

/**
 * Where a setting's value came from: `file` (written in the file read), `fixed` (the tool's code sets it and no option
 * changes it, e.g. SpecForge's temperature 0), `default` (the tool's default, which a command-line option may have
 * changed: the file does not say). For the speculative-server eval: `pinned` (sent by the eval with every request:
 * temperature, max tokens, thinking, chat template, concurrency), `server` (as the server reports it: draft method,
 * steps, top-k, draft tokens, K).
 */
export type SettingSource = 'file' | 'fixed' | 'default' | 'pinned' | 'server';

/** One row of results: one configuration (and benchmark) of one run of a tool. */
export interface SpecResult {
  tool: SpecTool;
  /** What the row is, for a table: benchmark and configuration, e.g. `mtbench bs=1 steps=3 topk=1 draft=4`. */
  label: string;
  /** False for a row run with speculation off (the baseline of a sweep): its τ is 1 by definition. */
  speculative: boolean;
  /** Acceptance length, the bonus token counted (≥ 1); absent when the file does not give one. */
  tau?: number;
  /** How `tau` was computed (definitions.ts TAU_DEFINITION_TEXT). */
  tauDefinition: TauDefinition;
  /** Accepted / proposed draft tokens, 0 … 1. */
  acceptanceRate?: number;
  /** p_1 … p_K: the share of verify steps that accepted at least k draft tokens. */
  pk?: number[];
  /** Output tokens per second (what exactly: see the reader's note in `notes`). */
  outputTokensPerSec?: number;
  /** Speedup over the row with speculation off and otherwise the same settings, when the file holds one. */
  speedup?: number;
  /** The counts the numbers come from, when the file holds them. */
  counts?: { verifySteps?: number; completionTokens?: number; acceptedDraftTokens?: number; draftTokens?: number; requests?: number };
  /** Other numbers of the row (accuracy, step time, τ under another definition…), by the tool's own names. */
  extra: Record<string, number>;
  settings: SpecSettings;
  settingSources: Partial<Record<SpecSettingKey, SettingSource>>;
  /** Caveats about this row's numbers (e.g. "per-position rates are printed rounded to 2 decimals"). */
  notes: string[];
}

/** A line (or the file) that could not be read as the tool writes it. */
export interface SpecProblem {
  /** 1-based line, when the problem is one line's. */
  line?: number;
  message: string;
}

/** What reading one file gave. */
export interface SpecRead {
  tool: SpecTool;
  results: SpecResult[];
  /** Lines or parts that do not parse: each named, none dropped silently. */
  problems: SpecProblem[];
  /**
   * Set when the file ends in the middle of what its writer writes (a last line without its newline that does not
   * parse, a JSON document cut short, totals not printed yet): the file is still being written, not broken.
   */
  incomplete?: string;
}
