/**
 * The edge where `remoteRuns.evalProfiles` (settings, or the CLI config) becomes EvalProfile values. A bad entry is
 * reported with its index and field and skipped; the good ones stay usable. The JSON schema for package.json sits
 * beside the validator so the two are read together.
 */
import { RemoteRunsError, formatTarget } from '../types';
import { parseAddress } from '../address';
import { checkTemplate } from './template';
import { compileResultPattern } from './results';
import type { EvalProfile, EvalWhere } from './types';
import { put } from '../util/dict';
import { SPEC_SERVER_KIND, SpecProfileError, parseSpecServerProfile, type SpecServerProfile } from './spec/server/profile';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const WHERE_PATTERN = '^(target|local|[^/\\s]+/(host|pct:\\d+|docker:.+))$';

/** JSON schema of one `remoteRuns.evalProfiles` entry (package.json: `"items"` of an array setting). */
export const EVAL_PROFILE_JSON_SCHEMA = {
  type: 'object',
  required: ['name', 'command'],
  additionalProperties: false,
  defaultSnippets: [
    {
      label: 'New eval profile',
      body: { name: '${1:acceptance}', where: 'target', command: '${2:python eval.py --ckpt \\${checkpoint\\} --step \\${step\\}}' },
    },
  ],
  properties: {
    name: { type: 'string', minLength: 1, description: 'Shown in pickers, terminals and the eval table. Must be unique.' },
    where: {
      type: 'string',
      default: 'target',
      pattern: WHERE_PATTERN,
      markdownDescription:
        'Where the eval runs: `target` (the run\'s own host or container, default), another `host/target` address such as `gpu2/pct:300`, or `local` (this machine).',
    },
    command: {
      type: 'string',
      minLength: 1,
      markdownDescription:
        'Shell command (POSIX `sh`). Placeholders `${checkpoint}`, `${localCheckpoint}`, `${run}`, `${runPath}`, `${step}`, `${host}`, `${target}` each become ONE quoted word: write them outside quotes. `$${` gives a literal `${` for the shell.',
    },
    cwd: { type: 'string', minLength: 1, markdownDescription: 'Working directory (placeholders allowed). Default: the run directory for `target`, else the home directory.' },
    env: {
      type: 'object',
      additionalProperties: { type: 'string' },
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      markdownDescription: 'Extra environment variables (values may use placeholders).',
    },
    resultPattern: {
      type: 'string',
      minLength: 1,
      markdownDescription:
        'Regular expression with named groups that extracts numbers from output lines, e.g. `acceptance length: (?<acc_len>[0-9.]+)`. Lines that are JSON objects of numbers are always results.',
    },
    scheduler: { type: 'string', enum: ['slurm'], markdownDescription: 'Submit as a Slurm batch job (`sbatch`) instead of starting directly.' },
    sbatch: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      markdownDescription: 'Extra `sbatch` options, one per item, e.g. `["--gres=gpu:1", "--time=00:30:00"]` (needs `scheduler: "slurm"`).',
    },
  },
} as const;

type Field = keyof typeof EVAL_PROFILE_JSON_SCHEMA.properties;
const FIELDS = Object.keys(EVAL_PROFILE_JSON_SCHEMA.properties) as Field[];

class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Validate `remoteRuns.evalProfiles`. Undefined/null is an empty list. Invalid entries and duplicate names are
 * skipped with a problem naming `source[i].field`; unknown fields are reported and ignored.
 */
export function parseEvalProfiles(value: unknown, source = 'remoteRuns.evalProfiles'): { profiles: EvalProfile[]; problems: string[]; serverProfiles: SpecServerProfile[] } {
  const profiles: EvalProfile[] = [];
  const problems: string[] = [];
  const serverProfiles: SpecServerProfile[] = [];
  if (value === undefined || value === null) return { profiles, problems, serverProfiles };
  if (!Array.isArray(value)) {
    problems.push(`${source}: expected an array of eval profiles, got ${describe(value)}`);
    return { profiles, problems, serverProfiles };
  }
  const names = new Map<string, number>();
  value.forEach((entry: unknown, i) => {
    const at = `${source}[${i}]`;
    // An entry with "kind" is not a command: spec/server/profile.ts validates the speculative-server kind.
    if (typeof entry === 'object' && entry !== null && !Array.isArray(entry) && 'kind' in entry) {
      const kind = (entry as { kind: unknown }).kind;
      if (kind !== SPEC_SERVER_KIND) {
        problems.push(`${at}.kind: unknown kind ${describe(kind)} (known: ${JSON.stringify(SPEC_SERVER_KIND)}; leave "kind" out for a command eval); entry skipped`);
        return;
      }
      try {
        const { profile, unknown } = parseSpecServerProfile(entry as Record<string, unknown>);
        for (const key of unknown) problems.push(`${at}.${key}: unknown field of a ${SPEC_SERVER_KIND} profile, ignored`);
        const first = names.get(profile.name);
        if (first !== undefined) {
          problems.push(`${at}.name: duplicate name ${JSON.stringify(profile.name)} (also ${source}[${first}]); entry skipped`);
          return;
        }
        names.set(profile.name, i);
        serverProfiles.push(profile);
      } catch (e) {
        if (e instanceof SpecProfileError) problems.push(`${at}${e.field ? '.' + e.field : ''}: ${e.message}; entry skipped`);
        else throw e;
      }
      return;
    }
    try {
      const { profile, unknown } = parseProfile(entry);
      for (const key of unknown) problems.push(`${at}.${key}: unknown field, ignored (known: ${FIELDS.join(', ')})`);
      const first = names.get(profile.name);
      if (first !== undefined) {
        problems.push(`${at}.name: duplicate name ${JSON.stringify(profile.name)} (also ${source}[${first}]); entry skipped`);
        return;
      }
      names.set(profile.name, i);
      profiles.push(profile);
    } catch (e) {
      if (e instanceof FieldError) problems.push(`${at}${e.field ? '.' + e.field : ''}: ${e.message}; entry skipped`);
      else if (e instanceof RemoteRunsError) problems.push(`${at}.${String(e.detail.field ?? '')}: ${stripField(e.message)}; entry skipped`);
      else throw e;
    }
  });
  return { profiles, problems, serverProfiles };
}

/** Validate one profile; throws RemoteRunsError('bad-config') with every problem of it. */
export function parseEvalProfile(entry: unknown): EvalProfile {
  const { profiles, problems, serverProfiles } = parseEvalProfiles([entry], 'profile');
  if (serverProfiles.length > 0) throw new RemoteRunsError('bad-config', `profile: a ${SPEC_SERVER_KIND} profile runs no command; it is run by the speculative-server eval (spec/server/run.ts)`, { field: 'kind' });
  if (profiles.length === 0 || problems.length > 0) {
    throw new RemoteRunsError('bad-config', problems.join('\n'), { problems });
  }
  return profiles[0];
}

/** `target` | `local` | `host/target` → EvalWhere (throws bad-config). */
export function parseWhere(value: string): EvalWhere {
  if (value === 'target') return { kind: 'target' };
  if (value === 'local') return { kind: 'local' };
  let address;
  try {
    address = parseAddress(value);
  } catch (e) {
    throw new RemoteRunsError('bad-config', `where: ${(e as Error).message}`, { field: 'where' });
  }
  if (!address.target || address.run !== undefined) {
    throw new RemoteRunsError('bad-config', `where: ${JSON.stringify(value)} is not "target", "local" or a host/target address such as gpu2/pct:300`, {
      field: 'where',
    });
  }
  return { kind: 'remote', host: address.host, target: address.target };
}

function parseProfile(entry: unknown): { profile: EvalProfile; unknown: string[] } {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new FieldError('', `expected an object with at least "name" and "command", got ${describe(entry)}`);
  }
  const e = entry as Record<string, unknown>;
  const name = requireString(e, 'name');
  if (name.trim() !== name) throw new FieldError('name', `${JSON.stringify(name)} has leading or trailing spaces`);
  const command = requireString(e, 'command');
  checkTemplate(command, 'command', true);
  const profile: EvalProfile = { name, command, where: e.where === undefined ? { kind: 'target' } : parseWhere(requireString(e, 'where')) };
  if (e.cwd !== undefined) {
    profile.cwd = requireString(e, 'cwd');
    checkTemplate(profile.cwd, 'cwd', false);
  }
  if (e.env !== undefined) {
    const env = e.env;
    if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new FieldError('env', `must be an object of strings, got ${describe(env)}`);
    profile.env = {};
    for (const [k, v] of Object.entries(env as Record<string, unknown>)) {
      if (!ENV_NAME.test(k)) throw new FieldError(`env.${k}`, 'is not a valid environment variable name (letters, digits, _; not starting with a digit)');
      if (typeof v !== 'string') throw new FieldError(`env.${k}`, `must be a string, got ${describe(v)}`);
      checkTemplate(v, `env.${k}`, false);
      put(profile.env, k, v);
    }
  }
  if (e.resultPattern !== undefined) {
    profile.resultPattern = requireString(e, 'resultPattern');
    compileResultPattern(profile.resultPattern);
  }
  if (e.scheduler !== undefined) {
    if (e.scheduler !== 'slurm') throw new FieldError('scheduler', `must be "slurm" (or absent), got ${describe(e.scheduler)}`);
    profile.scheduler = 'slurm';
  }
  if (e.sbatch !== undefined) {
    if (profile.scheduler !== 'slurm') throw new FieldError('sbatch', 'only applies with scheduler: "slurm"');
    if (!Array.isArray(e.sbatch)) throw new FieldError('sbatch', `must be a list of options, got ${describe(e.sbatch)}`);
    profile.sbatch = e.sbatch.map((o, j) => {
      if (typeof o !== 'string' || o === '') throw new FieldError(`sbatch[${j}]`, `must be a non-empty string, got ${describe(o)}`);
      if (!o.startsWith('-')) throw new FieldError(`sbatch[${j}]`, `${JSON.stringify(o)} is not an option (options start with "-"; write "--opt=value" as one item)`);
      checkTemplate(o, `sbatch[${j}]`, false);
      return o;
    });
  }
  const unknown = Object.keys(e).filter((k) => !(FIELDS as string[]).includes(k));
  return { profile, unknown };
}

function requireString(e: Record<string, unknown>, field: string): string {
  const v = e[field];
  if (v === undefined) throw new FieldError(field, 'is required');
  if (typeof v !== 'string' || v === '') throw new FieldError(field, `must be a non-empty string, got ${describe(v)}`);
  return v;
}

/** Errors from template.ts start with "field: "; the problem line names the field already. */
function stripField(message: string): string {
  const i = message.indexOf(': ');
  return i >= 0 ? message.slice(i + 2) : message;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return JSON.stringify(v);
  return typeof v === 'object' ? 'an object' : `${typeof v} ${String(v)}`;
}

/** A profile the editor's Evaluate Checkpoint may run: a command profile or a speculative-server one. */
export type RunnableProfile = { kind: 'command'; profile: EvalProfile } | { kind: 'server'; profile: SpecServerProfile };

/**
 * The rows of the profile picker: command profiles (where they run, their command) and speculative-server ones (the
 * server, through whose link, the pinned sampling settings) in one list: the command profiles first, as the setting
 * lists them, then the server ones.
 */
export function profileChoices(profiles: readonly EvalProfile[], serverProfiles: readonly SpecServerProfile[]): { label: string; description: string; detail: string; value: RunnableProfile }[] {
  return [
    ...profiles.map((p) => ({
      label: p.name,
      description: p.where.kind === 'remote' ? `${p.where.host}/${formatTarget(p.where.target)}` : p.where.kind,
      detail: p.command,
      value: { kind: 'command', profile: p } as RunnableProfile,
    })),
    ...serverProfiles.map((p) => ({
      label: p.name,
      description: SPEC_SERVER_KIND,
      detail: `${p.server} through ${p.host === undefined ? "the run's host" : p.host}'s SSH link · temperature ${p.temperature} · max tokens ${p.maxTokens} · concurrency ${p.concurrency}${p.prompts ? ` · prompts ${p.prompts}` : ''}`,
      value: { kind: 'server', profile: p } as RunnableProfile,
    })),
  ];
}
