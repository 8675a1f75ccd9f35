/**
 * The edge where untrusted host settings (`remoteRuns.hosts`, the CLI's --config file) become HostConfig
 * values. Everything after this trusts them. A bad entry is reported (index and field) and skipped; it never
 * takes the good ones down with it.
 */
import { RemoteRunsError, parseTarget, type ClusterConfig, type HostConfig } from './types';
import { parseProxyJump } from './ssh/sshConfig';

/** The target spellings a `targets` entry accepts (checked again, more precisely, with parseTarget). */
const TARGET_PATTERN = '^(host|pct:\\d+|docker:.+)$';

/**
 * A Kubernetes name as the API server accepts it for a namespace (and a container): an RFC 1123 label, at most 63
 * characters (k8s.io/apimachinery pkg/util/validation/validation.go, IsDNS1123Label; a Namespace's name is validated
 * with it: kubernetes pkg/apis/core/validation/validation.go, ValidateNamespaceName).
 */
export const DNS1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/**
 * JSON schema for one entry of `remoteRuns.hosts` (package.json contributes.configuration) and of the CLI
 * config's `hosts` array. Kept next to the validator so the two cannot drift (a unit test compares them). An entry
 * is an SSH host (`host` required) or, with `"kind": "kubernetes"`, a cluster (`context` required): the `if`/`then`
 * below says which fields each takes.
 */
export const HOSTS_JSON_SCHEMA = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  if: { properties: { kind: { const: 'kubernetes' } }, required: ['kind'] },
  then: { required: ['context'], properties: { host: false, user: false, port: false, identityFile: false, proxyJump: false, targets: false } },
  else: { required: ['host'], properties: { context: false, namespace: false, selector: false, kubeconfig: false } },
  defaultSnippets: [
    { label: 'New host', body: { name: '${1:trainbox}', host: '${2:trainbox.example.com}', user: '${3:root}' } },
    { label: 'New Kubernetes cluster', body: { name: '${1:cluster}', kind: 'kubernetes', context: '${2:my-context}', namespace: '${3:default}' } },
  ],
  properties: {
    kind: {
      type: 'string',
      enum: ['ssh', 'kubernetes'],
      default: 'ssh',
      description: '"ssh" (default): a machine reached over SSH. "kubernetes": a cluster whose pod containers are reached through your own kubectl (see context, namespace, selector, kubeconfig).',
    },
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
      description: 'Directories searched for runs on this host (in each container of a cluster), absolute or starting with "~". Default: remoteRuns.defaultRunRoots (/workspace, ~/runs, ~/checkpoints).',
    },
    context: {
      type: 'string',
      minLength: 1,
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      description: 'Kubernetes: the kubeconfig context to use (kubectl config get-contexts lists them).',
    },
    namespace: {
      type: 'string',
      maxLength: 63,
      pattern: DNS1123_LABEL,
      description: 'Kubernetes: only this namespace. Default: every namespace you may list.',
    },
    selector: {
      type: 'string',
      minLength: 1,
      pattern: '^[^\\u0000-\\u001f\\u007f]+$',
      description: 'Kubernetes: a label selector for the pods shown, in kubectl\'s -l syntax, e.g. "training.kubeflow.org/job-name" or "team=nlp,!canary".',
    },
    kubeconfig: {
      type: 'string',
      minLength: 1,
      description: 'Kubernetes: the kubeconfig file ("~" is your home folder). Default: kubectl\'s own ($KUBECONFIG, else ~/.kube/config).',
    },
  },
} as const;

type Field = keyof typeof HOSTS_JSON_SCHEMA.properties;
/** The fields of an SSH host entry and of a cluster entry (`kind` is known to both). */
export const SSH_FIELDS: readonly Field[] = ['name', 'kind', 'host', 'user', 'port', 'identityFile', 'proxyJump', 'targets', 'runRoots'];
export const CLUSTER_FIELDS: readonly Field[] = ['name', 'kind', 'context', 'namespace', 'selector', 'kubeconfig', 'runRoots'];

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
export function parseHostsSetting(value: unknown, source: string): { hosts: HostConfig[]; clusters: ClusterConfig[]; problems: string[] } {
  const hosts: HostConfig[] = [];
  const clusters: ClusterConfig[] = [];
  const problems: string[] = [];
  if (value === undefined || value === null) return { hosts, clusters, problems };
  if (!Array.isArray(value)) {
    problems.push(`${source}: expected an array of hosts, got ${describe(value)}`);
    return { hosts, clusters, problems };
  }
  const names = new Map<string, number>();
  value.forEach((entry: unknown, i) => {
    const at = `${source}[${i}]`;
    try {
      const cluster = isClusterEntry(entry);
      const { host, unknown } = cluster ? parseClusterEntry(entry as Record<string, unknown>) : parseEntry(entry);
      for (const key of unknown) problems.push(`${at}.${key}: ${unknownFieldMessage(key, cluster)}`);
      // Hosts and clusters share one namespace of names: the first part of every address.
      const first = names.get(host.name);
      if (first !== undefined) {
        problems.push(`${at}.name: duplicate name ${JSON.stringify(host.name)} (also ${source}[${first}]); entry skipped`);
        return;
      }
      names.set(host.name, i);
      if ('kind' in host) clusters.push(host);
      else hosts.push(host);
    } catch (e) {
      if (!(e instanceof FieldError)) throw e;
      problems.push(`${at}${e.field ? '.' + e.field : ''}: ${e.message}; entry skipped`);
    }
  });
  return { hosts, clusters, problems };
}

/** An entry that says `"kind": "kubernetes"`; any other `kind` but "ssh" fails here, naming both. */
function isClusterEntry(entry: unknown): boolean {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return false;
  const kind = (entry as Record<string, unknown>).kind;
  if (kind === undefined || kind === 'ssh') return false;
  if (kind === 'kubernetes') return true;
  throw new FieldError('kind', `must be "ssh" (the default) or "kubernetes", got ${describe(kind)}`);
}

/** An unknown field is ignored, not fatal: said with the fields this kind of entry knows, or which kind it belongs to. */
function unknownFieldMessage(key: string, cluster: boolean): string {
  const own = cluster ? CLUSTER_FIELDS : SSH_FIELDS;
  const other = cluster ? SSH_FIELDS : CLUSTER_FIELDS;
  if ((other as string[]).includes(key)) {
    return cluster
      ? `is a field of an SSH host, not of a "kind": "kubernetes" entry; ignored (known: ${own.join(', ')})`
      : `is a field of a Kubernetes cluster: add "kind": "kubernetes" to this entry; ignored (known: ${own.join(', ')})`;
  }
  return `unknown field, ignored (known: ${own.join(', ')})`;
}

/** Reject ASCII control characters (a newline in a context or selector would be a second line in every message and log). */
function requirePrintable(field: string, v: string): string {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(v)) throw new FieldError(field, `${JSON.stringify(v)} contains a control character`);
  return v;
}

function parseClusterEntry(e: Record<string, unknown>): { host: ClusterConfig; unknown: string[] } {
  const name = requireName(e);
  const context = requirePrintable('context', requireString(e, 'context'));
  const cluster: ClusterConfig = { kind: 'kubernetes', name, context };
  if (e.namespace !== undefined) {
    const ns = requireString(e, 'namespace');
    if (ns.length > 63 || !new RegExp(DNS1123_LABEL).test(ns)) {
      throw new FieldError('namespace', `${JSON.stringify(ns.length > 60 ? ns.slice(0, 57) + '...' : ns)} is not a Kubernetes namespace name (lower-case letters, digits and "-", at most 63, starting and ending with a letter or digit)`);
    }
    cluster.namespace = ns;
  }
  if (e.selector !== undefined) cluster.selector = requirePrintable('selector', requireString(e, 'selector'));
  if (e.kubeconfig !== undefined) {
    const f = requirePrintable('kubeconfig', requireString(e, 'kubeconfig'));
    // One file: kubectl's --kubeconfig takes one path, not $KUBECONFIG's list.
    if (f.includes(':') && f.split(':').every((part) => part.startsWith('/') || part.startsWith('~'))) {
      throw new FieldError('kubeconfig', `${JSON.stringify(f)} looks like a $KUBECONFIG list: kubectl --kubeconfig takes one file`);
    }
    cluster.kubeconfig = f;
  }
  const roots = parseRunRoots(e);
  if (roots) cluster.runRoots = roots;
  const unknown = Object.keys(e).filter((k) => !(CLUSTER_FIELDS as string[]).includes(k));
  return { host: cluster, unknown };
}

/**
 * Parse a CLI config file: JSON `{"hosts": [...], "evalProfiles"?: [...], "knownHostsFiles"?: [...]}` (hosts only; see parseEvalProfiles;
 * knownHostsFiles is checked here, read by the CLI). Stricter than settings: any problem (even an unknown
 * field, usually a typo) throws RemoteRunsError('bad-config') listing all of them.
 */
export function parseConfigFile(text: string, path: string): HostConfig[] {
  return parseConfigFileEntries(text, path).hosts;
}

/** parseConfigFile with the Kubernetes clusters (`"kind": "kubernetes"` entries) as well. */
export function parseConfigFileEntries(text: string, path: string): { hosts: HostConfig[]; clusters: ClusterConfig[] } {
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
  return { hosts: parsed.hosts, clusters: parsed.clusters };
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
  const name = requireName(e);
  if (e.host === undefined && e.context !== undefined) throw new FieldError('host', 'is required (an entry with "context" is a Kubernetes cluster: add "kind": "kubernetes")');
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
        let kind: string;
        try {
          kind = parseTarget(t).kind;
        } catch (err) {
          throw new FieldError(`targets[${j}]`, (err as Error).message);
        }
        // A pod container is reached through a cluster entry's kubectl, never through an SSH host.
        if (kind === 'pod') throw new FieldError(`targets[${j}]`, `${JSON.stringify(t)} is a pod container: it belongs to a Kubernetes cluster entry (kind "kubernetes"), not to an SSH host's targets`);
        return t;
      });
    } else {
      throw new FieldError('targets', `must be "auto" or a list like ["host", "pct:200", "docker:trainer"], got ${describe(v)}`);
    }
  }
  const roots = parseRunRoots(e);
  if (roots) host.runRoots = roots;
  const unknown = Object.keys(e).filter((k) => !(SSH_FIELDS as string[]).includes(k));
  return { host, unknown };
}

function requireName(e: Record<string, unknown>): string {
  const name = requireString(e, 'name');
  if (name.includes('/')) throw new FieldError('name', `${JSON.stringify(name)} contains "/", which separates the parts of an address`);
  if (name.trim() !== name) throw new FieldError('name', `${JSON.stringify(name)} has leading or trailing spaces`);
  return name;
}

/** The run roots of either kind of entry; undefined when not set (an empty list means "not set": the defaults apply). */
function parseRunRoots(e: Record<string, unknown>): string[] | undefined {
  if (e.runRoots === undefined) return undefined;
  const v = e.runRoots;
  if (!Array.isArray(v)) throw new FieldError('runRoots', `must be a list of directories, got ${describe(v)}`);
  const roots = v.map((r, j) => {
    if (typeof r !== 'string' || r === '') throw new FieldError(`runRoots[${j}]`, `must be a non-empty string, got ${describe(r)}`);
    // A relative root would depend on the remote working directory, which differs between ssh, pct exec and kubectl exec.
    if (!r.startsWith('/') && !r.startsWith('~')) {
      throw new FieldError(`runRoots[${j}]`, `${JSON.stringify(r)} must be absolute or start with "~"`);
    }
    return r;
  });
  return roots.length > 0 ? roots : undefined;
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
