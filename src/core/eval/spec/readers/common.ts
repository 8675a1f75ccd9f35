/**
 * What the readers share: JSON Lines split with the half-written last line told apart from a broken one, and
 * checked access to the fields of a parsed object (a missing or mistyped field is a problem that names the field).
 */
import { parseJsonLine } from '../../../metrics/formats/jsonl';
import type { SpecProblem, SpecResult, SpecSettingKey, SpecSettings, SettingSource } from '../types';

/** One parsed JSON line, with its 1-based line number. */
export interface JsonLine {
  line: number;
  value: unknown;
}

/**
 * The lines of a JSON Lines file. A line that does not parse is a problem, except the last one when the file does not
 * end in a newline: its writer (Python's `f.write(json.dumps(x) + "\n")`) is in the middle of it, so it is
 * `incomplete`. Blank lines are skipped; Python's bare NaN/Infinity are read (jsonl.ts `parseJsonLine`).
 */
export function splitJsonLines(text: string): { lines: JsonLine[]; problems: SpecProblem[]; incomplete?: string } {
  const out: JsonLine[] = [];
  const problems: SpecProblem[] = [];
  let incomplete: string | undefined;
  const raw = text.replace(/^\uFEFF/, '').split('\n');
  const endsWithNewline = text.endsWith('\n');
  for (let i = 0; i < raw.length; i++) {
    const t = raw[i].replace(/\r$/, '').trim();
    if (t === '') continue;
    const value = parseJsonLine(t);
    const last = i === raw.length - 1;
    if (value === undefined) {
      if (last && !endsWithNewline) incomplete = `line ${i + 1} is not finished yet (the file ends without its newline): still being written`;
      else problems.push({ line: i + 1, message: `not JSON: ${excerpt(t)}` });
      continue;
    }
    out.push({ line: i + 1, value });
  }
  return { lines: out, problems, incomplete };
}

export function excerpt(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A finite number field, or a message naming what is wrong. */
export function num(o: Record<string, unknown>, key: string): number | string {
  const v = o[key];
  if (v === undefined) return `no "${key}"`;
  if (typeof v !== 'number' || !Number.isFinite(v)) return `"${key}" is ${JSON.stringify(v)}, not a number`;
  return v;
}

/** A finite number field when present and a number, else undefined (for optional fields). */
export function optNum(o: Record<string, unknown>, key: string): number | undefined {
  const v = o[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** The first of the messages, if any field came back as one. */
export function firstError(...vals: (number | string)[]): string | undefined {
  return vals.find((v): v is string => typeof v === 'string');
}

/** Settings with their sources: `set(settings, sources, key, value, source)` skips undefined values. */
export class SettingsBuilder {
  readonly settings: SpecSettings = {};
  readonly sources: Partial<Record<SpecSettingKey, SettingSource>> = {};
  set<K extends SpecSettingKey>(key: K, value: SpecSettings[K] | undefined, source: SettingSource): this {
    if (value === undefined || value === null) return this;
    this.settings[key] = value;
    this.sources[key] = source;
    return this;
  }
}

/** A result with the empty parts filled. */
export function result(r: Omit<SpecResult, 'extra' | 'notes' | 'settings' | 'settingSources'> & Partial<Pick<SpecResult, 'extra' | 'notes'>> & { settings: SettingsBuilder }): SpecResult {
  const { settings, ...rest } = r;
  return { extra: {}, notes: [], ...rest, settings: settings.settings, settingSources: settings.sources };
}

/** Problems in file order (those of the whole file, without a line, first). */
export function inLineOrder(problems: SpecProblem[]): SpecProblem[] {
  return problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
}

/**
 * True when a JSON document that does not parse is a prefix of one: its brackets are still open at the end (outside
 * strings), or it stops inside a string. That is what a reader sees of `json.dump(…)` while Python still writes it
 * (the document goes out in chunks); a closed document that does not parse is broken instead.
 */
export function isCutShortJson(text: string): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth < 0) return false;
    }
  }
  return inString || depth > 0;
}
