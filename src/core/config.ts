/**
 * The edge where untrusted host settings (`remoteRuns.hosts`, the CLI's --config file) become HostConfig
 * values. Everything after this trusts them. A bad entry is reported (index and field) and skipped; it never
 * takes the good ones down with it.
 */
import { RemoteRunsError, parseTarget, type HostConfig } from './types';
import { parseProxyJump } from './ssh/sshConfig';

/** The target spellings a `targets` entry accepts (checked again, more precisely, with parseTarget). */
const TARGET_PATTERN = '^(host|pct:\\d+|docker:.+)$';

/**
 * JSON schema for one entry of `remoteRuns.hosts` (package.json contributes.configuration) and of the CLI
 * config's `hosts` array. Kept next to the validator so the two cannot drift (a unit test compares them).
 */
export const HOSTS_JSON_SCHEMA = {
  type: 'object',
  required: ['name', 'host'],
  additionalProperties: false,
  defaultSnippets: [
    { label: 'New host', body: { name: '${1:trainbox}', host: '${2:trainbox.example.com}', user: '${3:root}' } },
  ],
  properties: {
    name: {
      type: 'string',
      minLength: 1,
      pattern: '^[^/\\s](?:[^/]*[^/\\s])?$',
      description: 'Display name, and the first part of CLI addresses (name/target/run). Must be unique; no "/".',
    },
    host: {
      type: 'string',
      minLength: 1,
      pattern: '^[^\\s@-][^\\s@]*$',
      description: 'Hostname, IP address or a Host alias from ~/.ssh/config (which supplies HostName, User, Port, IdentityFile, ProxyJump).',
    },
    user: {
      type: 'string',
      minLength: 1,
      pattern: '^[^\\s:@/-][^\\s:@/]*$',
      description: 'Login user. Overrides User from ~/.ssh/config; default: your local user name.',
    },
    port: {
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      description: 'SSH port. Overrides Port from ~/.ssh/config; default 22.',
    },
    identityFile: {
      oneOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', items: { type: 'string', minLength: 1 } },
      ],
      description: 'Private key file(s), tried before any IdentityFile from ~/.ssh/config. "~" and %d, %u, %h, %r are expanded.',
    },
    proxyJump: {
      type: 'string',
      minLength: 1,
      description: 'Jump host(s) as in OpenSSH ProxyJump: [user@]host[:port], several separated by commas; each is itself looked up in ~/.ssh/config. "none" disables a ProxyJump from ~/.ssh/config.',
    },
    targets: {
      oneOf: [
        { type: 'string', enum: ['auto'] },
        { type: 'array', items: { type: 'string', pattern: TARGET_PATTERN } },
      ],
      default: 'auto',
      description: '"auto" (default) lists the host itself plus every Proxmox container (pct) and Docker container found. Or a list such as ["host", "pct:200", "docker:trainer"].',
    },
    runRoots: {
      type: 'array',
      items: { type: 'string', minLength: 1, pattern: '^[/~]' },
      description: 'Directories searched for runs on this host, absolute or starting with "~". Default: remoteRuns.defaultRunRoots (/workspace, ~/runs, ~/checkpoints).',
    },
  },
} as const;

type Field = keyof typeof HOSTS_JSON_SCHEMA.properties;
const FIELDS = Object.keys(HOSTS_JSON_SCHEMA.properties) as Field[];

/** A field failed: the whole entry is skipped. */
class FieldError extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Validate a hosts array from settings. `source` names where it came from in problems (e.g. `remoteRuns.hosts`).
 * Unset (undefined/null) is an empty list without problems. Unknown fields are reported but do not skip the entry;
 * invalid fields and duplicate names do (the first of a name wins).
 */
export function parseHostsSetting(value: unknown, source: string): { hosts: HostConfig[]; problems: string[] } {
  const hosts: HostConfig[] = [];
  const problems: string[] = [];
  if (value === undefined || value === null) return { hosts, problems };
  if (!Array.isArray(value)) {
    problems.push(`${source}: expected an array of hosts, got ${describe(value)}`);
    return { hosts, problems };
  }
  const names = new Map<string, number>();
  value.forEach((entry: unknown, i) => {
    const at = `${source}[${i}]`;
    try {
      const { host, unknown } = parseEntry(entry);
      for (const key of unknown) problems.push(`${at}.${key}: unknown field, ignored (known: ${FIELDS.join(', ')})`);
      const first = names.get(host.name);
      if (first !== undefined) {
        problems.push(`${at}.name: duplicate name ${JSON.stringify(host.name)} (also ${source}[${first}]); entry skipped`);
        return;
      }
      names.set(host.name, i);
      hosts.push(host);
    } catch (e) {
      if (!(e instanceof FieldError)) throw e;
      problems.push(`${at}${e.field ? '.' + e.field : ''}: ${e.message}; entry skipped`);
    }
  });
  return { hosts, problems };
}

/**
 * Parse a CLI config file: JSON `{"hosts": [...], "evalProfiles"?: [...], "knownHostsFiles"?: [...]}` (hosts only; see parseEvalProfiles;
 * knownHostsFiles is checked here, read by the CLI). Stricter than settings: any problem (even an unknown
 * field, usually a typo) throws RemoteRunsError('bad-config') listing all of them.
 */
export function parseConfigFile(text: string, path: string): HostConfig[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new RemoteRunsError('bad-config', `${path}: not valid JSON (${(e as Error).message})`, { path });
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new RemoteRunsError('bad-config', `${path}: expected an object like {"hosts": [...]}, got ${describe(data)}`, { path });
  }
  const problems: string[] = [];
  for (const key of Object.keys(data)) {
    // evalProfiles is validated by whoever uses it (parseEvalProfiles in core/eval), not here.
    if (key !== 'hosts' && key !== '$schema' && key !== 'evalProfiles' && key !== 'knownHostsFiles') problems.push(`${path}: unknown top-level field ${JSON.stringify(key)}`);
  }
  // As the remoteRuns.knownHostsFiles setting: a user's own file, so it may name which host keys are trusted.
  const known = (data as Record<string, unknown>).knownHostsFiles;
  if (known !== undefined && !(Array.isArray(known) && known.every((f) => typeof f === 'string' && f.trim() !== ''))) {
    problems.push(`${path}: knownHostsFiles: expected an array of file paths, got ${describe(known)}`);
  }
  const raw = (data as Record<string, unknown>).hosts;
  if (raw === undefined) problems.push(`${path}: missing "hosts" array`);
  const parsed = parseHostsSetting(raw, `${path}: hosts`);
  problems.push(...parsed.problems);
  if (problems.length > 0) {
    throw new RemoteRunsError('bad-config', problems.join('\n'), { path, problems });
  }
  return parsed.hosts;
}

/**
 * The host field as an address: `[::1]` (the URL spelling of an IPv6 address) is `::1`, a bare IPv6 address is kept;
 * `host:port` and `[addr]:port` are refused with what to write instead, since a port here would be ambiguous with
 * IPv6 and OpenSSH's own HostName takes no port either.
 */
function hostSpelling(value: string): string {
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(value);
  if (bracketed) {
    if (bracketed[2] !== undefined) {
      throw new FieldError('host', `${JSON.stringify(value)} holds a port: write {"host": ${JSON.stringify(bracketed[1])}, "port": ${/^\d+$/.test(bracketed[2]) ? bracketed[2] : 'N'}}`);
    }
    return bracketed[1];
  }
  if (/[[\]]/.test(value)) throw new FieldError('host', `${JSON.stringify(value)}: brackets go around a whole IPv6 address, as in "[::1]"`);
  const colons = value.split(':').length - 1;
  if (colons === 1) {
    const [h, p] = value.split(':');
    throw new FieldError('host', `${JSON.stringify(value)} holds a port: write {"host": ${JSON.stringify(h)}, "port": ${/^\d+$/.test(p) ? p : 'N'}}`);
  }
  return value;
}

function parseEntry(entry: unknown): { host: HostConfig; unknown: string[] } {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    throw new FieldError('', `expected an object with at least "name" and "host", got ${describe(entry)}`);
  }
  const e = entry as Record<string, unknown>;
  const name = requireString(e, 'name');
  if (name.includes('/')) throw new FieldError('name', `${JSON.stringify(name)} contains "/", which separates the parts of an address`);
  if (name.trim() !== name) throw new FieldError('name', `${JSON.stringify(name)} has leading or trailing spaces`);
  const hostName = requireString(e, 'host');
  if (/\s/.test(hostName)) throw new FieldError('host', `${JSON.stringify(hostName)} contains whitespace`);
  if (hostName.startsWith('-')) throw new FieldError('host', `${JSON.stringify(hostName)} starts with "-"`);
  if (hostName.includes('@')) {
    throw new FieldError('host', `${JSON.stringify(hostName)} contains "@": put the user in "user" and only the host name here`);
  }
  const host: HostConfig = { name, host: hostSpelling(hostName) };

  if (e.user !== undefined) {
    host.user = requireString(e, 'user');
    if (/[\s:@/]/.test(host.user) || host.user.startsWith('-')) throw new FieldError('user', `${JSON.stringify(host.user)} is not a user name`);
  }
  if (e.port !== undefined) {
    const p = e.port;
    if (typeof p !== 'number' || !Number.isInteger(p) || p < 1 || p > 65535) {
      throw new FieldError('port', `must be an integer from 1 to 65535, got ${describe(p)}`);
    }
    host.port = p;
  }
  if (e.identityFile !== undefined) {
    const v = e.identityFile;
    if (typeof v === 'string') {
      if (v === '') throw new FieldError('identityFile', 'must not be empty');
      host.identityFile = v;
    } else if (Array.isArray(v)) {
      host.identityFile = v.map((f, j) => {
        if (typeof f !== 'string' || f === '') throw new FieldError(`identityFile[${j}]`, `must be a non-empty string, got ${describe(f)}`);
        return f;
      });
    } else {
      throw new FieldError('identityFile', `must be a path or a list of paths, got ${describe(v)}`);
    }
  }
  if (e.proxyJump !== undefined) {
    const v = requireString(e, 'proxyJump');
    try {
      parseProxyJump(v);
    } catch (err) {
      throw new FieldError('proxyJump', (err as Error).message);
    }
    host.proxyJump = v;
  }
  if (e.targets !== undefined) {
    const v = e.targets;
    if (v === 'auto') host.targets = 'auto';
    else if (Array.isArray(v)) {
      host.targets = v.map((t, j) => {
        if (typeof t !== 'string') throw new FieldError(`targets[${j}]`, `must be a string like "pct:200", got ${describe(t)}`);
        try {
          parseTarget(t);
        } catch (err) {
          throw new FieldError(`targets[${j}]`, (err as Error).message);
        }
        return t;
      });
    } else {
      throw new FieldError('targets', `must be "auto" or a list like ["host", "pct:200", "docker:trainer"], got ${describe(v)}`);
    }
  }
  if (e.runRoots !== undefined) {
    const v = e.runRoots;
    if (!Array.isArray(v)) throw new FieldError('runRoots', `must be a list of directories, got ${describe(v)}`);
    const roots = v.map((r, j) => {
      if (typeof r !== 'string' || r === '') throw new FieldError(`runRoots[${j}]`, `must be a non-empty string, got ${describe(r)}`);
      // A relative root would depend on the remote working directory, which differs between ssh and pct exec.
      if (!r.startsWith('/') && !r.startsWith('~')) {
        throw new FieldError(`runRoots[${j}]`, `${JSON.stringify(r)} must be absolute or start with "~"`);
      }
      return r;
    });
    // An empty list means "not set": the defaults apply.
    if (roots.length > 0) host.runRoots = roots;
  }
  const unknown = Object.keys(e).filter((k) => !(FIELDS as string[]).includes(k));
  return { host, unknown };
}

function requireString(e: Record<string, unknown>, field: string): string {
  const v = e[field];
  if (v === undefined) throw new FieldError(field, 'is required');
  if (typeof v !== 'string') throw new FieldError(field, `must be a string, got ${describe(v)}`);
  if (v === '') throw new FieldError(field, 'must not be empty');
  return v;
}

/** A short, safe rendering of an untrusted value for messages. */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return JSON.stringify(v.length > 60 ? v.slice(0, 57) + '...' : v);
  return `${typeof v} ${String(v)}`;
}
