/**
 * `spec.json`: a speculative-server eval's whole SpecResult (τ with its definition, p_k, counts, settings with their
 * sources, notes), kept in the eval folder beside results.jsonl (scripts.ts MEASURED_SCRIPT) so the card can say how
 * each checkpoint's τ was measured. results.jsonl holds the numbers every eval has (evalResult.ts); this file holds
 * what only a speculative eval has.
 *
 * The file is read back from a remote folder anyone could edit: parseSpecRecord validates it and says what is wrong.
 *
 * Pure: no I/O, no vscode.
 */
import { TAU_DEFINITION_TEXT, type TauDefinition } from './definitions';
import { SPEC_TOOL_NAMES, type SpecResult, type SpecTool } from './types';
import { parseSettingSources, parseSpecSettings } from './settings';

/** What spec.json holds: the result, and how it was measured. */
export interface SpecRecord {
  version: 1;
  /** The engine and served model the eval measured, and where its stats came from. */
  engine?: string;
  model?: string;
  server?: string;
  source?: string;
  result: SpecResult;
}

export function formatSpecRecord(r: SpecRecord): string {
  return JSON.stringify(r);
}

const COUNT_KEYS = ['verifySteps', 'completionTokens', 'acceptedDraftTokens', 'draftTokens', 'requests'] as const;

function finite(v: unknown): v is number {
  return typeof v === 'number' && Number.isFinite(v);
}

/** spec.json text → the record, or the problems that make it unusable (each naming its field). */
export function parseSpecRecord(text: string): { record: SpecRecord } | { problems: string[] } {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { problems: [`spec.json is not JSON: ${(e as Error).message}`] };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { problems: ['spec.json is not an object'] };
  const o = v as Record<string, unknown>;
  if (o.version !== 1) return { problems: [`spec.json: version ${JSON.stringify(o.version)} is not one this version reads (1)`] };
  const r = o.result as Record<string, unknown> | null;
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return { problems: ['spec.json: no "result" object'] };
  const problems: string[] = [];
  if (typeof r.tool !== 'string' || !Object.prototype.hasOwnProperty.call(SPEC_TOOL_NAMES, r.tool)) problems.push(`spec.json: result.tool ${JSON.stringify(r.tool)} is not a known tool`);
  if (typeof r.tauDefinition !== 'string' || !Object.prototype.hasOwnProperty.call(TAU_DEFINITION_TEXT, r.tauDefinition)) problems.push(`spec.json: result.tauDefinition ${JSON.stringify(r.tauDefinition)} is not a known definition`);
  if (typeof r.label !== 'string') problems.push('spec.json: result.label must be a string');
  for (const k of ['tau', 'acceptanceRate', 'outputTokensPerSec', 'speedup'] as const) {
    if (r[k] !== undefined && !finite(r[k])) problems.push(`spec.json: result.${k} must be a number`);
  }
  if (r.pk !== undefined && !(Array.isArray(r.pk) && r.pk.every(finite))) problems.push('spec.json: result.pk must be a list of numbers');
  const counts: SpecResult['counts'] = {};
  if (r.counts !== undefined) {
    const c = r.counts as Record<string, unknown> | null;
    if (typeof c !== 'object' || c === null) problems.push('spec.json: result.counts must be an object');
    else for (const k of COUNT_KEYS) if (c[k] !== undefined) finite(c[k]) ? (counts[k] = c[k]) : problems.push(`spec.json: result.counts.${k} must be a number`);
  }
  const settings = parseSpecSettings(r.settings, 'spec.json: result.settings');
  const sources = parseSettingSources(r.settingSources, 'spec.json: result.settingSources');
  problems.push(...settings.problems, ...sources.problems);
  if (problems.length > 0) return { problems };
  const extra: Record<string, number> = {};
  if (typeof r.extra === 'object' && r.extra !== null) for (const [k, x] of Object.entries(r.extra)) if (finite(x)) extra[k] = x;
  const result: SpecResult = {
    tool: r.tool as SpecTool,
    label: r.label as string,
    speculative: r.speculative !== false,
    tauDefinition: r.tauDefinition as TauDefinition,
    extra,
    settings: settings.settings,
    settingSources: sources.sources,
    notes: Array.isArray(r.notes) ? r.notes.filter((n): n is string => typeof n === 'string') : [],
    ...(finite(r.tau) ? { tau: r.tau } : {}),
    ...(finite(r.acceptanceRate) ? { acceptanceRate: r.acceptanceRate } : {}),
    ...(Array.isArray(r.pk) ? { pk: r.pk as number[] } : {}),
    ...(finite(r.outputTokensPerSec) ? { outputTokensPerSec: r.outputTokensPerSec } : {}),
    ...(finite(r.speedup) ? { speedup: r.speedup } : {}),
    ...(Object.keys(counts).length > 0 ? { counts } : {}),
  };
  const str = (k: string): string | undefined => (typeof o[k] === 'string' ? (o[k] as string) : undefined);
  const record: SpecRecord = { version: 1, result };
  for (const k of ['engine', 'model', 'server', 'source'] as const) {
    const s = str(k);
    if (s !== undefined) record[k] = s;
  }
  return { record };
}
