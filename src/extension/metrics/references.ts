/**
 * Reference numbers a run is judged against ("paper: acceptance length 6.5"), kept in a small JSON file in the
 * workspace (`.vscode/remote-runs.references.json`) that the panel edits and a team can commit. Pure: parsing,
 * validating and editing the file's text; the extension does the reading and writing.
 *
 * File shape: `{ "version": 1, "lines": [{ "metric": "loss", "value": 1.2, "label": "paper", "source": "…" }] }`.
 */
import type { ReferenceLine } from '../../shared/metricsProtocol';

export const REFERENCES_FILE = '.vscode/remote-runs.references.json';

export interface ParsedReferences {
  lines: ReferenceLine[];
  /** Entries skipped and why, for the log (a hand-edited file may hold mistakes). */
  problems: string[];
}

/** A stable id from the line's content: deleting or adding one line never changes another's id. */
export function referenceId(line: Omit<ReferenceLine, 'id'>, taken: Set<string>): string {
  const base = `${line.metric}\u0000${line.label}\u0000${line.value}`;
  let h = 0x811c9dc5;
  for (let i = 0; i < base.length; i++) h = Math.imul(h ^ base.charCodeAt(i), 0x01000193) >>> 0;
  let id = h.toString(36);
  for (let n = 2; taken.has(id); n++) id = `${h.toString(36)}-${n}`;
  taken.add(id);
  return id;
}

/** Parse the file's text. An empty or missing file is no lines; a malformed one is no lines plus a problem. */
export function parseReferences(text: string | undefined): ParsedReferences {
  if (text === undefined || text.trim() === '') return { lines: [], problems: [] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { lines: [], problems: [`${REFERENCES_FILE} is not valid JSON: ${e instanceof Error ? e.message : String(e)}`] };
  }
  const entries = Array.isArray(json) ? json : typeof json === 'object' && json !== null ? (json as { lines?: unknown }).lines : undefined;
  if (!Array.isArray(entries)) return { lines: [], problems: [`${REFERENCES_FILE} has no "lines" array`] };
  const lines: ReferenceLine[] = [];
  const problems: string[] = [];
  const taken = new Set<string>();
  entries.forEach((e: unknown, i) => {
    const o = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
    const value = typeof o.value === 'string' ? Number(o.value) : o.value;
    if (typeof o.metric !== 'string' || o.metric === '') return problems.push(`lines[${i}]: "metric" must be a non-empty string`);
    if (typeof value !== 'number' || !Number.isFinite(value)) return problems.push(`lines[${i}]: "value" must be a finite number`);
    const label = typeof o.label === 'string' && o.label.trim() ? o.label.trim() : `${value}`;
    const source = typeof o.source === 'string' ? o.source.trim() : '';
    const line = { metric: o.metric, value, label, source };
    lines.push({ id: referenceId(line, taken), ...line });
  });
  return { lines, problems };
}

/** The file's text for these lines (ids are derived, not stored). */
export function serializeReferences(lines: readonly ReferenceLine[]): string {
  const out = { version: 1, lines: lines.map(({ metric, value, label, source }) => ({ metric, value, label, source })) };
  return `${JSON.stringify(out, null, 2)}\n`;
}

/** Lines with one added (after the others) — the text to write back. */
export function withLineAdded(current: readonly ReferenceLine[], line: Omit<ReferenceLine, 'id'>): ReferenceLine[] {
  return parseReferences(serializeReferences([...current, { id: '', ...line }])).lines;
}

/** Lines without the one with this id (unchanged when no line has it). */
export function withLineRemoved(current: readonly ReferenceLine[], id: string): ReferenceLine[] {
  return current.filter((l) => l.id !== id);
}
