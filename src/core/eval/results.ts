/**
 * Which lines of an eval's output are results. A line that is a JSON object whose values are all finite numbers
 * (`{"acceptance_length": 3.41, "tokens_per_s": 812}`) is one result; any other JSON is ordinary output. With a
 * profile `resultPattern`, a line that is not such JSON is also matched against that regex: every named group that
 * matched a number becomes a metric (a match with no numeric group is not a result).
 */
import { RemoteRunsError } from '../types';
import type { EvalResult } from './types';
import { put } from '../util/dict';

/** Compile a profile's resultPattern, or throw bad-config saying why it cannot be used. */
export function compileResultPattern(pattern: string, field = 'resultPattern'): RegExp {
  let re: RegExp;
  try {
    re = new RegExp(pattern);
  } catch (e) {
    throw new RemoteRunsError('bad-config', `${field}: not a valid regular expression: ${(e as Error).message}`, { field });
  }
  if (!/\(\?<[A-Za-z_$][\w$]*>/.test(pattern)) {
    throw new RemoteRunsError('bad-config', `${field}: has no named group; name each number to extract, e.g. "acc=(?<accuracy>[0-9.]+)"`, {
      field,
    });
  }
  return re;
}

/** The result a JSON line holds, or undefined when it is not a result line. */
export function parseJsonResult(line: string): EvalResult | undefined {
  const text = line.trim();
  if (!text.startsWith('{') || !text.endsWith('}')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return undefined;
  const result: EvalResult = {};
  for (const [k, v] of entries) {
    if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
    put(result, k, v);
  }
  return result;
}

/** The metrics a regex with named groups extracts from a line, or undefined. */
export function parsePatternResult(line: string, pattern: RegExp): EvalResult | undefined {
  const m = pattern.exec(line);
  if (!m?.groups) return undefined;
  const result: EvalResult = {};
  let any = false;
  for (const [k, v] of Object.entries(m.groups)) {
    if (v === undefined) continue;
    const t = v.trim();
    if (t === '') continue;
    const n = Number(t);
    if (!Number.isFinite(n)) continue;
    put(result, k, n);
    any = true;
  }
  return any ? result : undefined;
}

/** A line's result: JSON first, else the pattern (if any). A trailing `\r` is ignored. */
export function parseResultLine(line: string, pattern?: RegExp): EvalResult | undefined {
  const text = line.endsWith('\r') ? line.slice(0, -1) : line;
  return parseJsonResult(text) ?? (pattern ? parsePatternResult(text, pattern) : undefined);
}

/** Every result in a whole log text, in order. */
export function parseResults(text: string, pattern?: RegExp): EvalResult[] {
  const out: EvalResult[] = [];
  for (const line of text.split('\n')) {
    const r = parseResultLine(line, pattern);
    if (r) out.push(r);
  }
  return out;
}

/** `results.jsonl` text → results; lines that are not valid result objects are skipped (the file is ours, but shared). */
export function parseResultsFile(text: string): EvalResult[] {
  const out: EvalResult[] = [];
  for (const line of text.split('\n')) {
    const r = parseJsonResult(line);
    if (r) out.push(r);
  }
  return out;
}

/** Results → `results.jsonl` text (one JSON object per line). */
export function formatResultsFile(results: readonly EvalResult[]): string {
  return results.map((r) => JSON.stringify(r) + '\n').join('');
}
