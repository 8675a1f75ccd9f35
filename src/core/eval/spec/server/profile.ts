/**
 * The `speculative-server` eval profile: an entry of `remoteRuns.evalProfiles` with `"kind": "speculative-server"` that
 * measures a running OpenAI-compatible server (SGLang, vLLM) with speculative decoding, reached through a host's SSH
 * link (run.ts). This file validates the entry and reads the prompt set; profiles.ts hands such entries here.
 *
 * Pure: no I/O but reading the prompt file the user names (readPromptFile).
 */
import * as fs from 'node:fs';
import { RemoteRunsError } from '../../../types';
import { expandHome } from '../../../util/home';
import { parseServerUrl } from './http';
import builtin from './builtinPrompts.json';

export const SPEC_SERVER_KIND = 'speculative-server';

/** The speed of the same target model with speculation off, for the speedup. */
export type SpecBaseline = { kind: 'server'; url: string } | { kind: 'recorded'; outputTokensPerSec: number };

export interface SpecServerProfile {
  kind: typeof SPEC_SERVER_KIND;
  name: string;
  /** The server's URL as the host sees it: `http://ADDRESS:PORT`. */
  server: string;
  /** The `remoteRuns.hosts` entry whose link reaches the server; default: the host of the run being evaluated. */
  host?: string;
  /** The served model name (`/v1/models`); default: the server's only model. */
  model?: string;
  /** A JSONL prompt file on this machine; default: the built-in set (builtinPrompts.json). */
  prompts?: string;
  temperature: number;
  maxTokens: number;
  /** `chat_template_kwargs.enable_thinking`; absent: the chat template's own default, recorded as not pinned. */
  thinking?: boolean;
  /** A chat template sent with each chat request (`chat_template`); absent: the server's. */
  chatTemplate?: string;
  /** Requests in flight at once. */
  concurrency: number;
  baseline?: SpecBaseline;
}

export const SPEC_SERVER_DEFAULTS = { temperature: 0, maxTokens: 256, concurrency: 1 } as const;

/** JSON schema of the entry (package.json adds it as a `oneOf` branch of `remoteRuns.evalProfiles` items). */
export const SPEC_SERVER_PROFILE_JSON_SCHEMA = {
  type: 'object',
  required: ['kind', 'name', 'server'],
  additionalProperties: false,
  properties: {
    kind: { const: SPEC_SERVER_KIND, markdownDescription: 'An eval of a running SGLang or vLLM server with speculative decoding (docs/evals.md).' },
    name: { type: 'string', minLength: 1, description: 'Shown in pickers and the eval table. Must be unique.' },
    server: { type: 'string', pattern: '^http://', markdownDescription: 'The server as the training host reaches it, e.g. `http://10.0.0.5:30000`; reached through the host\'s SSH link, so no port needs to be open.' },
    host: { type: 'string', minLength: 1, markdownDescription: 'The host whose SSH link reaches the server (default: the host of the run being evaluated).' },
    model: { type: 'string', minLength: 1, markdownDescription: 'The served model name, as `/v1/models` lists it (default: the server\'s only model).' },
    prompts: { type: 'string', minLength: 1, markdownDescription: 'A JSONL file on this machine, one `{"prompt": "…"}` or `{"messages": [{"role": "user", "content": "…"}]}` per line (default: 12 built-in short prompts).' },
    temperature: { type: 'number', minimum: 0, default: 0 },
    maxTokens: { type: 'integer', minimum: 1, default: 256, markdownDescription: 'Most tokens generated per request.' },
    thinking: { type: 'boolean', markdownDescription: 'Sent as `chat_template_kwargs.enable_thinking` (absent: the chat template\'s default).' },
    chatTemplate: { type: 'string', minLength: 1, markdownDescription: 'A chat template sent with each request (absent: the server\'s own).' },
    concurrency: { type: 'integer', minimum: 1, default: 1, markdownDescription: 'Requests in flight at once.' },
    baseline: {
      oneOf: [{ type: 'string', pattern: '^http://' }, { type: 'number', exclusiveMinimum: 0 }],
      markdownDescription: 'For the speedup: the same target model with speculation off, as a second server URL (run with the same prompts and settings) or a recorded output tokens/s.',
    },
  },
} as const;

const FIELDS = Object.keys(SPEC_SERVER_PROFILE_JSON_SCHEMA.properties);

/** A bad field: `field` is the entry's key (or '' for the entry as a whole). */
export class SpecProfileError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Validate one entry of kind `speculative-server`. Throws SpecProfileError naming the field; returns the profile and
 * the unknown keys (reported by the caller, ignored).
 */
export function parseSpecServerProfile(e: Record<string, unknown>): { profile: SpecServerProfile; unknown: string[] } {
  if (e.kind !== SPEC_SERVER_KIND) throw new SpecProfileError('kind', `must be ${JSON.stringify(SPEC_SERVER_KIND)}, got ${describe(e.kind)}`);
  const name = str(e, 'name', true) as string;
  if (name.trim() !== name) throw new SpecProfileError('name', `${JSON.stringify(name)} has leading or trailing spaces`);
  const server = str(e, 'server', true) as string;
  checkUrl('server', server);
  if (e.command !== undefined) throw new SpecProfileError('command', `a ${SPEC_SERVER_KIND} profile runs no command (it sends requests to "server"); remove "command", or remove "kind" for a command eval`);
  const profile: SpecServerProfile = {
    kind: SPEC_SERVER_KIND,
    name,
    server,
    temperature: num(e, 'temperature', SPEC_SERVER_DEFAULTS.temperature, { min: 0 }),
    maxTokens: num(e, 'maxTokens', SPEC_SERVER_DEFAULTS.maxTokens, { min: 1, integer: true }),
    concurrency: num(e, 'concurrency', SPEC_SERVER_DEFAULTS.concurrency, { min: 1, integer: true }),
  };
  for (const k of ['host', 'model', 'prompts', 'chatTemplate'] as const) {
    const v = str(e, k, false);
    if (v !== undefined) profile[k] = v;
  }
  if (e.thinking !== undefined) {
    if (typeof e.thinking !== 'boolean') throw new SpecProfileError('thinking', `must be true or false, got ${describe(e.thinking)}`);
    profile.thinking = e.thinking;
  }
  if (e.baseline !== undefined) {
    const b = e.baseline;
    if (typeof b === 'string') {
      checkUrl('baseline', b);
      if (parseServerUrl(b).url === parseServerUrl(server).url) throw new SpecProfileError('baseline', `is the same server as "server" (${b}); the baseline is the same model served with speculation off`);
      profile.baseline = { kind: 'server', url: b };
    } else if (typeof b === 'number' && Number.isFinite(b) && b > 0) {
      profile.baseline = { kind: 'recorded', outputTokensPerSec: b };
    } else {
      throw new SpecProfileError('baseline', `must be a server URL ("http://host:port", speculation off) or a recorded output tokens/s (a number > 0), got ${describe(b)}`);
    }
  }
  return { profile, unknown: Object.keys(e).filter((k) => !FIELDS.includes(k)) };
}

function checkUrl(field: string, v: string): void {
  try {
    parseServerUrl(v);
  } catch (err) {
    throw new SpecProfileError(field, (err as Error).message.replace(/^server: /, ''));
  }
}

function str(e: Record<string, unknown>, field: string, required: boolean): string | undefined {
  const v = e[field];
  if (v === undefined) {
    if (required) throw new SpecProfileError(field, 'is required');
    return undefined;
  }
  if (typeof v !== 'string' || v === '') throw new SpecProfileError(field, `must be a non-empty string, got ${describe(v)}`);
  return v;
}

function num(e: Record<string, unknown>, field: string, dflt: number, o: { min: number; integer?: boolean }): number {
  const v = e[field];
  if (v === undefined) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new SpecProfileError(field, `must be a number, got ${describe(v)}`);
  if (o.integer && !Number.isInteger(v)) throw new SpecProfileError(field, `must be a whole number, got ${v}`);
  if (v < o.min) throw new SpecProfileError(field, `must be ≥ ${o.min}, got ${v}`);
  return v;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v);
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

/** A chat message as the OpenAI API takes it. */
export interface ChatMessage {
  role: string;
  content: string;
}

/** One prompt: raw text (sent to `/v1/completions`) or chat messages (sent to `/v1/chat/completions`). */
export type SpecPrompt = { prompt: string } | { messages: ChatMessage[] };

/** A prompt set and where it came from. */
export interface PromptSet {
  source: string;
  prompts: SpecPrompt[];
}

/** The built-in set (builtinPrompts.json: what it is and its licence are written in the file). */
export function builtinPrompts(): PromptSet {
  return { source: 'built-in (12 short prompts)', prompts: (builtin.prompts as { messages: ChatMessage[] }[]).map((p) => ({ messages: p.messages.map((m) => ({ ...m })) })) };
}

/**
 * Parse a JSONL prompt set: one JSON object per line, `{"prompt": "text"}` or `{"messages": [{"role", "content"}…]}`
 * (other keys, such as an id or a category, are allowed and ignored). Blank lines are skipped. Every bad line is
 * named (file, line, why) and the whole set is refused: an eval over part of the prompts would not be the eval
 * asked for.
 */
export function parsePromptSet(text: string, source: string): PromptSet {
  const prompts: SpecPrompt[] = [];
  const problems: string[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    const at = `${source}:${i + 1}`;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch (e) {
      problems.push(`${at}: not JSON (${(e as Error).message})`);
      return;
    }
    const why = promptProblem(v);
    if (why) problems.push(`${at}: ${why}`);
    else {
      const o = v as Record<string, unknown>;
      prompts.push(typeof o.prompt === 'string' ? { prompt: o.prompt } : { messages: (o.messages as ChatMessage[]).map((m) => ({ role: m.role, content: m.content })) });
    }
  });
  if (problems.length > 0) {
    const shown = problems.slice(0, 5).join('\n');
    const more = problems.length > 5 ? `\n… and ${problems.length - 5} more bad lines` : '';
    throw new RemoteRunsError('bad-config', `the prompt set ${source} does not parse (each line must be {"prompt": "…"} or {"messages": [{"role": "user", "content": "…"}]}):\n${shown}${more}`, { file: source, problems: problems.slice(0, 20) });
  }
  if (prompts.length === 0) throw new RemoteRunsError('bad-config', `the prompt set ${source} holds no prompt (one JSON object per line: {"prompt": "…"} or {"messages": […]})`, { file: source });
  return { source, prompts };
}

function promptProblem(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `expected an object with "prompt" or "messages", got ${describe(v)}`;
  const o = v as Record<string, unknown>;
  if (o.prompt !== undefined && o.messages !== undefined) return 'has both "prompt" and "messages"; give one';
  if (o.prompt !== undefined) return typeof o.prompt === 'string' && o.prompt !== '' ? undefined : `"prompt" must be a non-empty string, got ${describe(o.prompt)}`;
  if (o.messages === undefined) return `has neither "prompt" nor "messages" (keys: ${Object.keys(o).join(', ') || 'none'})`;
  if (!Array.isArray(o.messages) || o.messages.length === 0) return `"messages" must be a non-empty list, got ${describe(o.messages)}`;
  for (let j = 0; j < o.messages.length; j++) {
    const m = o.messages[j] as Record<string, unknown> | null;
    if (typeof m !== 'object' || m === null || Array.isArray(m)) return `messages[${j}] must be an object {"role", "content"}`;
    if (typeof m.role !== 'string' || !['system', 'user', 'assistant'].includes(m.role)) return `messages[${j}].role must be "system", "user" or "assistant", got ${describe(m.role)}`;
    if (typeof m.content !== 'string') return `messages[${j}].content must be a string, got ${describe(m.content)}`;
  }
  return undefined;
}

/** Read the profile's prompt set: its file (a leading `~` is the home folder), or the built-in set. */
export function readPromptSet(file: string | undefined): PromptSet {
  if (file === undefined) return builtinPrompts();
  const p = expandHome(file);
  let text: string;
  try {
    text = fs.readFileSync(p, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new RemoteRunsError(code === 'ENOENT' ? 'not-found' : 'bad-config', `the prompt set ${p} cannot be read (${code ?? (e as Error).message})`, { file: p });
  }
  return parsePromptSet(text, p);
}
