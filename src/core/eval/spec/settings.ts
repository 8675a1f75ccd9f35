/**
 * The settings that move τ (types.ts SpecSettings), as one table: each key's type and its name for people. Every
 * place that reads settings from outside (a recorded eval's spec.json, a paper or reference row the user entered)
 * validates them here, and the card's settings checklist walks the same table.
 *
 * Pure: no I/O, no vscode.
 */
import type { SettingSource, SpecSettingKey, SpecSettings } from './types';

/** Each setting's value type and what to call it. */
export const SPEC_SETTINGS: Readonly<Record<SpecSettingKey, { type: 'number' | 'string' | 'boolean'; label: string }>> = {
  temperature: { type: 'number', label: 'temperature' },
  maxTokens: { type: 'number', label: 'max tokens' },
  thinking: { type: 'boolean', label: 'thinking' },
  chatTemplate: { type: 'string', label: 'chat template' },
  concurrency: { type: 'number', label: 'concurrency' },
  method: { type: 'string', label: 'draft method' },
  numSteps: { type: 'number', label: 'draft steps' },
  topk: { type: 'number', label: 'draft top-k' },
  numDraftTokens: { type: 'number', label: 'draft tokens' },
  numSpeculativeTokens: { type: 'number', label: 'K (num_speculative_tokens)' },
  blockSize: { type: 'number', label: 'block size' },
  model: { type: 'string', label: 'target model' },
  benchmark: { type: 'string', label: 'prompt set' },
  numPrompts: { type: 'number', label: 'prompts' },
  ignoreEos: { type: 'boolean', label: 'ignore EOS' },
  draftModel: { type: 'string', label: 'draft model' },
};

export const SPEC_SETTING_KEYS = Object.keys(SPEC_SETTINGS) as SpecSettingKey[];

const SOURCES: readonly SettingSource[] = ['file', 'fixed', 'default', 'pinned', 'server'];

/**
 * Validate a settings object from outside. Unknown keys and values of the wrong type are problems (named with
 * `where`), never dropped silently; the valid keys are kept.
 */
export function parseSpecSettings(v: unknown, where: string): { settings: SpecSettings; problems: string[] } {
  const settings: SpecSettings = {};
  const problems: string[] = [];
  if (v === undefined) return { settings, problems };
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { settings, problems: [`${where}: must be an object of settings (${SPEC_SETTING_KEYS.join(', ')})`] };
  for (const [k, value] of Object.entries(v as Record<string, unknown>)) {
    const def = (SPEC_SETTINGS as Record<string, { type: string } | undefined>)[k];
    if (!def || !Object.prototype.hasOwnProperty.call(SPEC_SETTINGS, k)) {
      problems.push(`${where}.${k}: not a setting (known: ${SPEC_SETTING_KEYS.join(', ')})`);
      continue;
    }
    if (value === null || value === undefined) continue;
    const ok = def.type === 'number' ? typeof value === 'number' && Number.isFinite(value) : typeof value === def.type;
    if (!ok) {
      problems.push(`${where}.${k}: must be a ${def.type}, got ${JSON.stringify(value)}`);
      continue;
    }
    (settings as Record<string, unknown>)[k] = value;
  }
  return { settings, problems };
}

/** Validate a settingSources object (key → file | fixed | default | pinned | server); bad entries are problems. */
export function parseSettingSources(v: unknown, where: string): { sources: Partial<Record<SpecSettingKey, SettingSource>>; problems: string[] } {
  const sources: Partial<Record<SpecSettingKey, SettingSource>> = {};
  const problems: string[] = [];
  if (v === undefined) return { sources, problems };
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return { sources, problems: [`${where}: must be an object`] };
  for (const [k, s] of Object.entries(v as Record<string, unknown>)) {
    if (!Object.prototype.hasOwnProperty.call(SPEC_SETTINGS, k)) problems.push(`${where}.${k}: not a setting`);
    else if (typeof s !== 'string' || !SOURCES.includes(s as SettingSource)) problems.push(`${where}.${k}: must be one of ${SOURCES.join(', ')}`);
    else sources[k as SpecSettingKey] = s as SettingSource;
  }
  return { sources, problems };
}
