/**
 * What the card's page posts is untrusted input (the page shows remote strings and user text): each message is
 * checked here before the extension acts on it; a malformed one is dropped (and logged by the caller). Only the shape
 * is checked here; what a saved row's fields must hold is checked by the references file's one validator
 * (core/metrics/references.ts specRowFromForm → parseSpecRow), which names the field. Pure: no `vscode`.
 */
import type { SpecCardFromWebview } from '../../shared/specCardProtocol';
import { SPEC_ROW_FORM_FIELDS } from '../../core/metrics/references';
import { SPEC_SETTING_KEYS } from '../../core/eval/spec/settings';

/** Longest text of one input (a paper's title and table as the source is the longest there is). */
const MAX_FIELD = 2000;

/** The inputs the form has: SPEC_ROW_FORM_FIELDS and one `setting.<key>` per SpecSettingKey. */
export const SPEC_CARD_FORM_INPUTS: readonly string[] = [...SPEC_ROW_FORM_FIELDS, ...SPEC_SETTING_KEYS.map((k) => `setting.${k}`)];

/** The message as a typed value, or undefined when it is not one the card understands. Unknown inputs are dropped. */
export function parseSpecCardFromWebview(msg: unknown): SpecCardFromWebview | undefined {
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return undefined;
  const m = msg as Record<string, unknown>;
  switch (m.type) {
    case 'ready':
    case 'refresh':
      return { type: m.type };
    case 'removeRow':
      return typeof m.id === 'string' && /^[a-z0-9-]{1,40}$/.test(m.id) ? { type: 'removeRow', id: m.id } : undefined;
    case 'saveRow': {
      if (m.kind !== 'paper' && m.kind !== 'reference') return undefined;
      const f = m.fields;
      if (typeof f !== 'object' || f === null || Array.isArray(f)) return undefined;
      const fields: Record<string, string> = {};
      for (const name of SPEC_CARD_FORM_INPUTS) {
        const v = (f as Record<string, unknown>)[name];
        if (v === undefined) continue;
        if (typeof v !== 'string' || v.length > MAX_FIELD) return undefined;
        fields[name] = v;
      }
      return { type: 'saveRow', kind: m.kind, fields };
    }
    default:
      return undefined;
  }
}
