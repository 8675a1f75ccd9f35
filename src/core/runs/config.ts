/**
 * A run's config: the files its framework or script writes in the run folder, read with ONE remote command over the
 * host's pooled connection, each file bounded, and turned into flat `key → value` text (`optimizer.lr → 0.0003`).
 *
 * Which files, and who writes them:
 * - `hparams.yaml`: PyTorch Lightning's loggers (`save_hparams_to_yaml` in lightning/pytorch/core/saving.py) in the
 *   version folder (`lightning_logs/version_N/`), written with `yaml.dump`, so it may hold Python tags
 *   (`!!python/tuple`, `!!python/object:argparse.Namespace`): read as plain sequences and mappings, never as objects.
 * - `config.yaml` / `config.yml`: Hydra-style and hand-written configs, W&B's run config.
 * - `config.json`: Hugging Face's `PretrainedConfig.save_pretrained` beside the final weights, and scripts' own.
 * - `args.json`: argparse namespaces dumped by training scripts (`json.dump(vars(args))`).
 *
 * Hostile input gets a row saying what is wrong, never a crash and never a silent gap: a file over the read bound is
 * not parsed (its size is said), invalid JSON/YAML says where, a file that is not text or not a mapping says so, and
 * flattening stops at a bound of keys and depth (a YAML alias bomb is references, bounded here).
 */
import * as yaml from 'js-yaml';
import { RemoteRunsError } from '../types';
import type { RemoteCommand } from '../remote';
import { formatBytes } from '../util/format';

/** The files looked for in the run folder, in this order (the first to give a key wins in the merged view). */
export const CONFIG_FILES: readonly string[] = ['config.yaml', 'config.yml', 'config.json', 'hparams.yaml', 'args.json'];

/** Bytes read of each file; a larger file is named with its size, not parsed. */
export const MAX_CONFIG_BYTES = 256 * 1024;
/** Keys kept per file after flattening (the rest are counted). */
export const MAX_CONFIG_KEYS = 500;
const MAX_DEPTH = 8;
const MAX_VALUE_CHARS = 200;

export type ConfigFile =
  | { name: string; ok: true; values: Record<string, string>; /** Keys left out past MAX_CONFIG_KEYS, MAX_DEPTH or the visit bound (at least this many). */ omitted: number }
  | { name: string; ok: false; error: string };

export interface RunConfig {
  /** The files found (absent ones are not listed). */
  files: ConfigFile[];
}

/** Raw result of the command for one file. */
interface RawFile {
  name: string;
  state: 'file' | 'not-a-file' | 'unreadable';
  size?: number;
  bytes?: Buffer;
}

/**
 * `sh -c` over the run folder: for each candidate, `F size name` then its first bytes in base64 then `E`; `N name`
 * when it is not a regular file, `P name` when it cannot be read; `X` when the folder cannot be entered. The names
 * are ours, the path arrives as `$1` (quoted by the runner).
 */
export function runConfigCommand(runPath: string, maxBytes = MAX_CONFIG_BYTES): RemoteCommand<RunConfig> {
  const script =
    'cd -- "$1" 2>/dev/null || { echo X; exit 0; }; m=$2; shift 2; ' +
    'for f in "$@"; do ' +
    '[ -e "$f" ] || [ -L "$f" ] || continue; ' +
    'if [ ! -f "$f" ]; then echo "N $f"; continue; fi; ' +
    'if [ ! -r "$f" ]; then echo "P $f"; continue; fi; ' +
    's=$(wc -c < "$f" 2>/dev/null | tr -d " "); echo "F ${s:-0} $f"; ' +
    'head -c "$m" -- "$f" | base64; echo E; ' +
    'done; exit 0';
  return {
    argv: ['sh', '-c', script, 'sh', runPath, String(maxBytes), ...CONFIG_FILES],
    describe: `Read the config files of ${runPath}`,
    maxOutputBytes: CONFIG_FILES.length * (Math.ceil((maxBytes * 4) / 3) + Math.ceil(maxBytes / 57) + 200) + 1024,
    parse(result) {
      if (result.code !== 0) throw new RemoteRunsError('command-failed', `Reading the config of ${runPath} failed (exit ${result.code}): ${result.stderr.toString('utf8').split('\n')[0] ?? ''}`);
      return { files: parseRawFiles(result.stdout.toString('latin1'), runPath).map((f) => parseConfigFile(f, maxBytes)) };
    },
  };
}

function parseRawFiles(out: string, runPath: string): RawFile[] {
  const lines = out.split('\n');
  if (lines[0] === 'X') throw new RemoteRunsError('path-missing', `${runPath} cannot be entered (gone, or not readable)`, { path: runPath });
  const files: RawFile[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const m = /^([FNP]) (?:(\d+) )?(.+)$/.exec(line);
    if (!m || !CONFIG_FILES.includes(m[3]!)) continue;
    const name = m[3]!;
    if (m[1] === 'N') files.push({ name, state: 'not-a-file' });
    else if (m[1] === 'P') files.push({ name, state: 'unreadable' });
    else {
      const body: string[] = [];
      for (i++; i < lines.length && lines[i] !== 'E'; i++) body.push(lines[i]!);
      files.push({ name, state: 'file', size: Number(m[2] ?? 0), bytes: Buffer.from(body.join(''), 'base64') });
    }
  }
  return files;
}

/** Python tags of `yaml.dump` (Lightning's hparams.yaml) read as the data they wrap: never constructed. */
const PYTHON_TAGS = (['scalar', 'sequence', 'mapping'] as const).map(
  (kind) => new yaml.Type('tag:yaml.org,2002:python/', { kind, multi: true, construct: (data: unknown) => (kind === 'scalar' ? String(data ?? '') : data) }),
);
const SCHEMA = yaml.CORE_SCHEMA.extend(PYTHON_TAGS);

function parseConfigFile(raw: RawFile, maxBytes: number): ConfigFile {
  const { name } = raw;
  if (raw.state === 'not-a-file') return { name, ok: false, error: `${name} is not a regular file` };
  if (raw.state === 'unreadable') return { name, ok: false, error: `${name} cannot be read by the login user (permission denied)` };
  if ((raw.size ?? 0) > maxBytes) return { name, ok: false, error: `${name} is ${formatBytes(raw.size!)}: too large to be a config (only files up to ${formatBytes(maxBytes)} are read)` };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw.bytes ?? Buffer.alloc(0));
  } catch {
    return { name, ok: false, error: `${name} is not UTF-8 text` };
  }
  if (text.includes('\0')) return { name, ok: false, error: `${name} is not text (it holds NUL bytes)` };
  let value: unknown;
  try {
    value = name.endsWith('.json') ? JSON.parse(text) : yaml.load(text, { schema: SCHEMA, filename: name });
  } catch (e) {
    const msg = e instanceof Error ? e.message.split('\n')[0]! : String(e);
    return { name, ok: false, error: `${name} is not valid ${name.endsWith('.json') ? 'JSON' : 'YAML'}: ${msg}` };
  }
  if (value === null || value === undefined) return { name, ok: true, values: {}, omitted: 0 };
  if (typeof value !== 'object' || Array.isArray(value)) return { name, ok: false, error: `${name} is not a mapping of keys to values (it is ${Array.isArray(value) ? 'a list' : `a ${typeof value}`})` };
  const { values, omitted } = flattenConfig(value as Record<string, unknown>);
  return { name, ok: true, values, omitted };
}

/**
 * `{ optimizer: { lr: 3e-4 } }` → `{ 'optimizer.lr': '0.0003' }`: mappings become dotted keys, scalars text, lists of
 * scalars compact JSON (`[1,2]`), other lists and deeper mappings one line of JSON cut at MAX_VALUE_CHARS. Bounded:
 * at most MAX_CONFIG_KEYS keys and MAX_DEPTH levels; what is left out is counted.
 */
export function flattenConfig(root: Record<string, unknown>): { values: Record<string, string>; omitted: number } {
  const values: Record<string, string> = Object.create(null) as Record<string, string>;
  let count = 0;
  let omitted = 0;
  // Every node visited counts, so a mapping reached many times through YAML aliases cannot make this loop long.
  let budget = MAX_VISITS;
  const visit = (obj: Record<string, unknown>, prefix: string, depth: number): void => {
    for (const [k, v] of Object.entries(obj)) {
      if (--budget < 0) {
        omitted++;
        return;
      }
      const key = prefix ? `${prefix}.${k}` : k;
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) && Object.keys(v).length > 0) {
        if (depth >= MAX_DEPTH) {
          omitted++;
          continue;
        }
        visit(v as Record<string, unknown>, key, depth + 1);
        continue;
      }
      if (count >= MAX_CONFIG_KEYS) {
        omitted++;
        continue;
      }
      values[key] = valueText(v);
      count++;
    }
  };
  visit(root, '', 0);
  return { values: { ...values }, omitted };
}

const MAX_VISITS = 20_000;

function valueText(v: unknown): string {
  if (typeof v === 'string') return v.length > MAX_VALUE_CHARS ? `${v.slice(0, MAX_VALUE_CHARS)}…` : v;
  const out: string[] = [];
  let length = 0;
  // Compact JSON written until MAX_VALUE_CHARS: never the whole of a list that aliases make huge.
  const put = (s: string): boolean => {
    out.push(s);
    length += s.length;
    return length <= MAX_VALUE_CHARS;
  };
  const write = (x: unknown, depth: number): boolean => {
    if (x === null || x === undefined) return put('null');
    if (typeof x === 'string') return put(JSON.stringify(x));
    if (typeof x === 'number' || typeof x === 'boolean' || typeof x === 'bigint') return put(String(x));
    if (x instanceof Date) return put(JSON.stringify(x.toISOString()));
    if (depth > MAX_DEPTH) return put('…');
    if (Array.isArray(x)) {
      if (!put('[')) return false;
      for (let i = 0; i < x.length; i++) if ((i > 0 && !put(',')) || !write(x[i], depth + 1)) return false;
      return put(']');
    }
    if (typeof x === 'object') {
      const entries = Object.entries(x as Record<string, unknown>);
      if (!put('{')) return false;
      for (let i = 0; i < entries.length; i++) if ((i > 0 && !put(',')) || !put(`${JSON.stringify(entries[i]![0])}:`) || !write(entries[i]![1], depth + 1)) return false;
      return put('}');
    }
    return put(String(x));
  };
  if (typeof v !== 'object' || v === null) {
    write(v, 0);
    return out.join('');
  }
  const whole = write(v, 0);
  const text = out.join('');
  return whole ? text : `${text.slice(0, MAX_VALUE_CHARS)}…`;
}

/** The run's config as one map: the files in CONFIG_FILES order, the first to give a key winning. */
export function mergedConfig(config: RunConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of config.files) {
    if (!f.ok) continue;
    for (const [k, v] of Object.entries(f.values)) if (!(k in out)) out[k] = v;
  }
  return out;
}

/**
 * The keys whose values differ across runs (a key missing in some run counts as differing), in first-seen order.
 * Runs whose config could not be read are left out of the comparison.
 */
export function configDifferences(configs: readonly (Record<string, string> | undefined)[]): string[] {
  const known = configs.filter((c): c is Record<string, string> => c !== undefined);
  if (known.length < 2) return [];
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const c of known) for (const k of Object.keys(c)) if (!seen.has(k)) (seen.add(k), keys.push(k));
  return keys.filter((k) => {
    const first = known[0]![k];
    return known.some((c) => c[k] !== first);
  });
}

/** A few lines for a tooltip: each file's state, then up to `max` keys of the merged config. */
export function configSummary(config: RunConfig, max = 12): string[] {
  if (config.files.length === 0) return [`Config: none of ${CONFIG_FILES.join(', ')} in the run folder`];
  const lines = config.files.map((f) => (f.ok ? `Config: ${f.name} (${Object.keys(f.values).length} keys${f.omitted ? `, ${f.omitted} more not shown` : ''})` : `Config: ${f.error}`));
  const merged = Object.entries(mergedConfig(config));
  for (const [k, v] of merged.slice(0, max)) lines.push(`  ${k}: ${v}`);
  if (merged.length > max) lines.push(`  … ${merged.length - max} more`);
  return lines;
}
