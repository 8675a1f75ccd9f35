/**
 * What vLLM's examples/offline_inference/spec_decode.py prints at its end (`main`), after whatever the engine logged:
 *
 *     --------------------------------------------------
 *     total_num_output_tokens: <Σ len(token_ids) over the outputs>
 *     num_drafts: <vllm:spec_decode_num_drafts>
 *     num_draft_tokens: <vllm:spec_decode_num_draft_tokens>
 *     num_accepted_tokens: <vllm:spec_decode_num_accepted_tokens>
 *     mean acceptance length: <1 + num_accepted_tokens / num_drafts, 2 decimals>
 *     --------------------------------------------------
 *     acceptance at token <i>: <num_accepted_tokens_per_pos[i] / num_drafts, 2 decimals>   (i = 0 … num_spec_tokens−1)
 *
 * The counts are the engine's counters (`llm.get_metrics()`, vllm/v1/spec_decode/metrics.py): τ is recomputed from
 * them (TauDefinition `one-plus-accepted-per-draft`, the bonus token counted, as the script's own "mean acceptance
 * length" and vLLM's "Conventionally, mean acceptance length includes the bonus token"), and checked against the
 * printed one. Per-position rates exist only as printed, rounded to 2 decimals. The script prints one
 * "acceptance at token" line per `--num-spec-tokens`, so their count is num_speculative_tokens. When the engine's
 * startup line is in the output (vllm/v1/engine/core.py logs the VllmConfig, vllm/config/vllm.py `__str__`:
 * `model='<target>', speculative_config=SpeculativeConfig(method='<m>', model='<draft>'|None, num_spec_tokens=<K>)`,
 * the repr of vllm/config/speculative.py), the models, method and K are taken from it. Temperature
 * (`--temp`, default 0) and max tokens (`--output-len`, default 256) are not printed: their defaults are recorded
 * as such. Every other line (engine logs, `--print-output` text) is ordinary output.
 */
import { acceptanceRate, tauFromAccepted } from '../definitions';
import type { SpecProblem, SpecRead, SpecResult } from '../types';
import { SettingsBuilder, result } from './common';

const COUNT_KEYS = ['total_num_output_tokens', 'num_drafts', 'num_draft_tokens', 'num_accepted_tokens'] as const;
type CountKey = (typeof COUNT_KEYS)[number];
const COUNT_RE = /^(total_num_output_tokens|num_drafts|num_draft_tokens|num_accepted_tokens): (.*)$/;
const MEAN_RE = /^mean acceptance length: (.*)$/;
const POS_RE = /^acceptance at token (\d+): (.*)$/;
const CONFIG_RE = /\bmodel='((?:[^'\\]|\\.)*)', speculative_config=SpeculativeConfig\(method='([^']*)', model=(?:'((?:[^'\\]|\\.)*)'|None), num_spec_tokens=(\d+)\)/;

/** The engine configuration a startup log line (or vLLM's `/server_info` text) states. */
export interface EngineConfig {
  model: string;
  method: string;
  draftModel?: string;
  numSpecTokens: number;
}

/**
 * The target model and speculative config in a `str(VllmConfig)` text: the engine's startup line, or the `vllm_config`
 * of vLLM's `/server_info` (route `show_server_info`, served with VLLM_SERVER_DEV_MODE=1; `config_format=text` gives `str(vllm_config)`).
 */
export function vllmEngineConfig(text: string): EngineConfig | undefined {
  const c = CONFIG_RE.exec(text);
  return c ? { model: c[1], method: c[2], draftModel: c[3], numSpecTokens: Number(c[4]) } : undefined;
}

/** True when the text holds the script's summary (detect.ts). */
export function looksLikeVllmSpecDecode(text: string): boolean {
  return /^num_drafts: /m.test(text) && /^num_accepted_tokens: /m.test(text);
}

function number(text: string): number | undefined {
  const t = text.trim();
  if (!/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t)) return undefined;
  return Number(t);
}

interface Block {
  config?: EngineConfig;
  counts: Partial<Record<CountKey, number>>;
  mean?: number;
  pos: number[];
  firstLine: number;
}

export function readVllmSpecDecode(text: string): SpecRead {
  const problems: SpecProblem[] = [];
  const blocks: Block[] = [];
  let cur: Block | undefined;
  const lines = text.split('\n');
  const unfinished = !text.endsWith('\n') && lines[lines.length - 1] !== '';
  let incomplete: string | undefined;
  let config: EngineConfig | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, '');
    config = vllmEngineConfig(line) ?? config;
    if (unfinished && i === lines.length - 1) {
      if (COUNT_RE.test(line) || MEAN_RE.test(line) || POS_RE.test(line) || (cur && line.trim() !== '')) incomplete = `line ${i + 1} is not finished yet (no newline): still being written`;
      break;
    }
    let m = COUNT_RE.exec(line);
    if (m) {
      const key = m[1] as CountKey;
      if (key === 'total_num_output_tokens' || !cur || cur.mean !== undefined) {
        cur = { counts: {}, pos: [], firstLine: i + 1, config };
        blocks.push(cur);
      }
      const v = number(m[2]);
      if (v === undefined || v < 0) problems.push({ line: i + 1, message: `${key}: ${JSON.stringify(m[2])} is not a count` });
      else cur.counts[key] = v;
      continue;
    }
    m = MEAN_RE.exec(line);
    if (m && cur) {
      const v = number(m[1]);
      if (v === undefined) problems.push({ line: i + 1, message: `mean acceptance length: ${JSON.stringify(m[1])} is not a number` });
      else cur.mean = v;
      continue;
    }
    m = POS_RE.exec(line);
    if (m && cur) {
      const pos = Number(m[1]);
      const v = number(m[2]);
      if (v === undefined || v < 0 || v > 1) problems.push({ line: i + 1, message: `acceptance at token ${pos}: ${JSON.stringify(m[2])} is not a rate` });
      else if (pos !== cur.pos.length) problems.push({ line: i + 1, message: `acceptance at token ${pos} follows token ${cur.pos.length - 1}: positions out of order` });
      else cur.pos.push(v);
    }
  }
  const results: SpecResult[] = [];
  for (const [bi, b] of blocks.entries()) {
    const missing = COUNT_KEYS.filter((k) => b.counts[k] === undefined);
    const last = bi === blocks.length - 1;
    if (b.mean === undefined) {
      if (last) {
        incomplete ??= `the summary from line ${b.firstLine} has no "mean acceptance length" yet: still being written`;
      } else problems.push({ line: b.firstLine, message: 'a summary without its "mean acceptance length" line' });
      continue;
    }
    if (missing.length > 0) {
      problems.push({ line: b.firstLine, message: `the summary lacks ${missing.join(', ')}` });
      continue;
    }
    const drafts = b.counts.num_drafts!;
    const accepted = b.counts.num_accepted_tokens!;
    const draftTokens = b.counts.num_draft_tokens!;
    if (accepted > draftTokens) {
      problems.push({ line: b.firstLine, message: `num_accepted_tokens (${accepted}) exceeds num_draft_tokens (${draftTokens})` });
      continue;
    }
    const tau = tauFromAccepted(accepted, drafts);
    const notes = ['per-position rates are printed rounded to 2 decimals'];
    if (drafts === 0) {
      // The script prints "mean acceptance length: 1.00" by its own rule when no draft was made: nothing was measured.
      problems.push({ line: b.firstLine, message: 'num_drafts is 0: no step ran with a draft, so speculative decoding did not run (the printed mean 1.00 is the script’s default, not a measurement)' });
    }
    if (tau !== undefined && Math.abs(tau - b.mean) > 0.0051) {
      problems.push({ line: b.firstLine, message: `printed mean acceptance length ${b.mean} does not match 1 + ${accepted}/${drafts} = ${tau.toFixed(4)}` });
    }
    // The script prints one line per position and num_spec_tokens ≥ 1: none yet means it is still printing.
    if (last && b.pos.length === 0) incomplete ??= 'no "acceptance at token" line yet: still being written';
    if (b.config && b.pos.length > 0 && b.config.numSpecTokens !== b.pos.length) {
      problems.push({ line: b.firstLine, message: `the engine was started with num_spec_tokens=${b.config.numSpecTokens} but ${b.pos.length} "acceptance at token" lines follow` });
    }
    const settings = new SettingsBuilder()
      .set('numSpeculativeTokens', b.config?.numSpecTokens ?? (b.pos.length > 0 ? b.pos.length : undefined), 'file')
      .set('model', b.config?.model, 'file')
      .set('method', b.config?.method, 'file')
      .set('draftModel', b.config?.draftModel, 'file')
      .set('temperature', 0, 'default')
      .set('maxTokens', 256, 'default');
    results.push(
      result({
        tool: 'vllm-spec-decode',
        label: blocks.length > 1 ? `run ${bi + 1}` : 'spec_decode.py',
        speculative: drafts > 0,
        tau,
        tauDefinition: 'one-plus-accepted-per-draft',
        acceptanceRate: acceptanceRate(accepted, draftTokens),
        pk: b.pos.length > 0 ? b.pos : undefined,
        counts: { verifySteps: drafts, draftTokens, acceptedDraftTokens: accepted, completionTokens: b.counts.total_num_output_tokens },
        notes,
        settings,
      }),
    );
  }
  return { tool: 'vllm-spec-decode', results, problems, incomplete };
}
