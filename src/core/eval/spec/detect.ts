/**
 * One entry point for a speculative-decoding result file: recognise which tool wrote it by its shape, read it with
 * that tool's reader, and say plainly when no tool's shape fits (with the first lines seen), when lines do not parse
 * (SpecRead.problems) and when the file is still being written (SpecRead.incomplete). Nothing is dropped silently.
 *
 * Shapes (each reader's header cites the tool's source):
 * - vLLM spec_decode.py output: lines `num_drafts: N` and `num_accepted_tokens: N` (text, not JSON);
 * - one JSON document: SpecForge bench_eagle3 (`model` + lists of entries with `metrics`), SpecForge
 *   `specforge benchmark --output-json` (`backend`, `dataset`, `output_tokens`, `throughput_tokens_per_second`), aiperf summary
 *   (`pooled_spec_decode_acceptance_histogram`, `total_spec_decode_steps`, or `schema_version` + `aiperf_version`);
 * - JSON Lines, by the first line that parses: SGLang bench_speculative rows (batch_size, steps, topk,
 *   num_draft_tokens, acc_length, step_time, speed), EAGLE answers (question_id + choices[].idxs/new_tokens),
 *   aiperf records (metadata + metrics).
 */
import { parseJsonLine } from '../../metrics/formats/jsonl';
import type { SpecRead } from './types';
import { excerpt, isCutShortJson, isObject } from './readers/common';
import { looksLikeVllmSpecDecode, readVllmSpecDecode } from './readers/vllm';
import { looksLikeSpecforge, looksLikeSpecforgeServerBench, readSpecforgeBench, readSpecforgeServerBench } from './readers/specforge';
import { looksLikeAiperfRecord, looksLikeAiperfSummary, readAiperfRecords, readAiperfSummary } from './readers/aiperf';
import { looksLikeSglangRow, readSglangBenchSpeculative } from './readers/sglang';
import { looksLikeEagleAnswer, readEagleAnswers } from './readers/eagle';

/** No reader's shape fits: why, and the first lines seen. */
export interface SpecUnrecognised {
  tool: undefined;
  reason: string;
  /** Up to 3 non-empty first lines, shortened. */
  seen: string[];
  /** The file is empty or a JSON document cut short: it may still be being written. */
  incomplete?: string;
}

export type SpecReadOutcome = SpecRead | SpecUnrecognised;

const SHAPES =
  'SGLang bench_speculative JSONL, SpecForge bench_eagle3 or `specforge benchmark` JSON, vLLM spec_decode.py output, EAGLE answer JSONL, aiperf profile_export_aiperf.json or profile_export.jsonl';

/**
 * Read a file's text as the output of whichever tool wrote it. `name` (the file's name or path) is used only for
 * what a tool puts in the name (EAGLE's `…-temperature-<t>.jsonl`).
 */
export function readSpecOutput(text: string, name?: string): SpecReadOutcome {
  const body = text.replace(/^\uFEFF/, '');
  const seen = body
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .slice(0, 3)
    .map((l) => excerpt(l));
  if (body.trim() === '') return { tool: undefined, reason: 'the file is empty', seen, incomplete: 'nothing written yet' };
  if (looksLikeVllmSpecDecode(body)) return readVllmSpecDecode(body);

  const whole = body.trim().includes('\n') ? parseJsonLine(body.trim()) : undefined;
  if (isObject(whole)) {
    if (looksLikeSpecforge(whole)) return readSpecforgeBench(body, whole);
    if (looksLikeAiperfSummary(whole)) return readAiperfSummary(whole);
    if (looksLikeSpecforgeServerBench(whole)) return readSpecforgeServerBench(whole);
    return { tool: undefined, reason: `a JSON document of none of the known shapes (${SHAPES})`, seen };
  }
  const firstLine = body.split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
  if (firstLine === '{' || firstLine === '[') {
    // A pretty-printed document (json.dump(…, indent=4)) that does not parse: cut short while being written, or broken.
    if (/^\{\s*"model"\s*:/.test(body.trim())) return readSpecforgeBench(body);
    const cut = isCutShortJson(body);
    return { tool: undefined, reason: cut ? 'a JSON document cut short (still being written?) of no known shape so far' : 'a JSON document that does not parse', seen, incomplete: cut ? 'the document is cut short' : undefined };
  }

  // JSON Lines: the first line that parses decides.
  const lines = body.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const t = lines[i].trim();
    if (t === '') continue;
    const v = parseJsonLine(t);
    if (v === undefined) {
      if (i === lines.length - 1 && !body.endsWith('\n') && t.startsWith('{')) {
        return { tool: undefined, reason: 'only a line still being written, no whole line yet', seen, incomplete: `line ${i + 1} is not finished yet` };
      }
      continue;
    }
    if (looksLikeSglangRow(v)) return readSglangBenchSpeculative(body);
    if (looksLikeEagleAnswer(v)) return readEagleAnswers(body, name);
    if (looksLikeAiperfRecord(v)) return readAiperfRecords(body);
    if (isObject(v) && looksLikeAiperfSummary(v)) return readAiperfSummary(v);
    if (isObject(v) && looksLikeSpecforge(v)) return readSpecforgeBench(body, v);
    if (isObject(v) && looksLikeSpecforgeServerBench(v)) return readSpecforgeServerBench(v);
    return { tool: undefined, reason: `line ${i + 1} is JSON of none of the known shapes (${SHAPES})`, seen };
  }
  return { tool: undefined, reason: `no line is JSON and the text is not vLLM spec_decode.py output (${SHAPES})`, seen };
}
