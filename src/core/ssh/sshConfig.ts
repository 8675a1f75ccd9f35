/**
 * ~/.ssh/config read the way OpenSSH (9.x, `ssh -G`) reads it, for the options a connection needs:
 * Host / Match blocks, first-obtained-value-wins, HostName, User, Port, IdentityFile (accumulating, with `~`,
 * `%`-tokens and `${VAR}`), IdentitiesOnly, ProxyJump (several hops, each resolved through the config again)
 * and Include (relative to ~/.ssh, globs, nested, conditional when inside a block).
 *
 * Written by hand rather than with npm `ssh-config`: that library does not follow Include, and an Include
 * inside a Host block must make every line of the included file conditional on that block, which is the
 * shape real conf.d setups use.
 *
 * Nothing is dropped in silence: a keyword OpenSSH does not know, or a value it would reject (`Port abc`), is a
 * fatal problem (every host fails with `bad-config`, as `ssh` refuses the file); an OpenSSH option we do not follow
 * is a problem reported for each host it applies to (ResolvedHost.configProblems).
 *
 * What is deliberately not supported, and how it fails:
 * - `Match canonical|final|localnetwork|tagged|…`: the block is skipped (its options do not apply) and a
 *   problem is recorded. `Match all|host|originalhost|user|localuser` (with `!` and comma lists) work, and
 *   `Match exec` runs its command locally as ssh does (`$SHELL -c`, tokens expanded, each value shell-quoted; it
 *   is the user's own file), exit 0 being a match; one that does not finish within 10 s is a problem, no match.
 * - `ProxyCommand`: `ssh -W %h:%p host` (and its usual variants) is read as a jump through `host` (one ssh2
 *   connection more, no child process); any other command is run (hops.ts) and SSH spoken over its stdin/stdout.
 *   A `proxyJump` in the host's settings takes precedence, as `ssh -J` does.
 * - CanonicalizeHostname, `%C` in IdentityFile: not supported (the latter throws `bad-config`).
 */
import { runProcessSync } from '../util/processes';
import * as fs from 'node:fs';
import { shellQuote } from '../shell/quote';
import * as os from 'node:os';
import * as path from 'node:path';
import { RemoteRunsError, type HostConfig } from '../types';
import { globSegmentMatcher, hasGlob, hasWildcard, matchHostname, matchPattern, matchPatternList } from '../util/wildcard';
import type { ResolvedHop, ResolvedHost } from './types';

/** The condition a config line is under. */
export type SshCondition =
  | { kind: 'host'; patterns: string[] }
  | { kind: 'match'; criteria: MatchCriterion[] }
  /** A Match block with a criterion we cannot evaluate (exec, final, …): never applies. */
  | { kind: 'never'; reason: string };

export interface MatchCriterion {
  name: 'all' | 'host' | 'originalhost' | 'user' | 'localuser' | 'exec';
  negated: boolean;
  /** Comma-separated pattern list, as written (empty for `all`). */
  patterns: string;
}

/** One option line, with every condition it is under (outermost first: an Include inside a Host block adds that block's condition to each line of the included file). */
export interface SshConfigLine {
  /** Lower-cased keyword. */
  keyword: string;
  /** The keyword as written (for messages). */
  name: string;
  /** Arguments after OpenSSH's quoting rules. */
  args: string[];
  /** The text after the keyword, unsplit (ProxyCommand takes it whole). */
  raw: string;
  when: SshCondition[];
  file: string;
  line: number;
}

export interface SshConfig {
  lines: SshConfigLine[];
  /** The pattern lists of every Host line, in file order (for configuredHostAliases). */
  hostPatterns: string[][];
  /** Every file read, the main one first. */
  files: string[];
  /** Things skipped, each `file:line: why`. The rest of the config is still used, as far as it makes sense. */
  problems: string[];
  /**
   * The subset of `problems` for which OpenSSH refuses the whole file (`Bad port 'abc'`, an unknown keyword, a
   * missing `-F` file): resolveHost then fails with `bad-config` for every host, as `ssh -F` would.
   */
  fatal: string[];
}

/** One hop of a ProxyJump value. */
export interface JumpSpec {
  host: string;
  user?: string;
  port?: number;
}

export interface ParseSshConfigOptions {
  home: string;
  /** The name used in problems and as the first of `files`. Default `<home>/.ssh/config`. */
  path?: string;
  /** Expands an absolute Include pattern (may hold globs) into the files it names, sorted; may throw. Without it, Include lines are reported and skipped. */
  readInclude?: (pattern: string) => { path: string; text: string }[];
}

export interface ResolveEnv {
  home: string;
  localUser: string;
  /** For `%l`/`%L`; default os.hostname(). */
  localHost?: string;
  /** For `${VAR}` in IdentityFile; default process.env. */
  vars?: Readonly<Record<string, string | undefined>>;
  /** For `%i`; default the process uid. */
  uid?: number;
  /**
   * Runs a `Match exec` command line (tokens already expanded and quoted) and says whether it exited 0. Default:
   * `$SHELL -c LINE` (else /bin/sh), as ssh runs it, stdout sent to nowhere, bounded by 10 s.
   */
  runMatchExec?: (commandLine: string) => { matched: boolean; problem?: string };
}

/** OpenSSH's READCONF_MAX_DEPTH. */
const MAX_INCLUDE_DEPTH = 16;
/**
 * Files one config may read in all. Only an Include of a file already on the current path is refused, so files
 * that each include their whole folder (`Include conf.d/*` inside conf.d) would otherwise be read once per
 * ordering of the folder: six files gave ~2,000 lines, nine would not finish.
 */
const MAX_INCLUDED_FILES = 256;
const MAX_JUMP_DEPTH = 8;
const DEFAULT_IDENTITIES = ['id_ed25519', 'id_ecdsa', 'id_rsa'];
const SUPPORTED_MATCH = new Set(['all', 'host', 'originalhost', 'user', 'localuser', 'exec']);
/** How long a `Match exec` command may run (ssh waits forever; a listing must not). */
const MATCH_EXEC_TIMEOUT_MS = 10_000;
const KNOWN_MATCH = new Set([...SUPPORTED_MATCH, 'exec', 'canonical', 'final', 'localnetwork', 'tagged', 'version', 'sessiontype', 'command']);

/**
 * Every keyword OpenSSH's client accepts (readconf.c), lower-cased: the ones `ssh -F f -G x` of OpenSSH 9.2 takes
 * (each tried with that command), plus those added by later releases. Any other keyword makes ssh refuse the file.
 */
const OPENSSH_KEYWORDS = new Set(
  (
    'addkeystoagent addressfamily batchmode bindaddress bindinterface canonicaldomains canonicalizefallbacklocal ' +
    'canonicalizehostname canonicalizemaxdots canonicalizepermittedcnames casignaturealgorithms certificatefile ' +
    'challengeresponseauthentication checkhostip cipher ciphers clearallforwardings compression connectionattempts ' +
    'connecttimeout controlmaster controlpath controlpersist dsaauthentication dynamicforward enableescapecommandline ' +
    'enablesshkeysign escapechar exitonforwardfailure fallbacktorsh fingerprinthash forkafterauthentication forwardagent ' +
    'forwardx11 forwardx11timeout forwardx11trusted gatewayports globalknownhostsfile globalknownhostsfile2 ' +
    'gssapiauthentication gssapiclientidentity gssapidelegatecredentials gssapikexalgorithms gssapikeyexchange ' +
    'gssapirenewalforcesrekey gssapiserveridentity gssapitrustdns hashknownhosts hostbasedacceptedalgorithms ' +
    'hostbasedauthentication hostbasedkeytypes hostkeyalgorithms hostkeyalias hostname identitiesonly identityagent ' +
    'identityfile identityfile2 ignoreunknown ipqos kbdinteractiveauthentication kbdinteractivedevices keepalive ' +
    'kexalgorithms knownhostscommand localcommand localforward loglevel logverbose macs nohostauthenticationforlocalhost ' +
    'numberofpasswordprompts passwordauthentication permitlocalcommand permitremoteopen pkcs11provider port ' +
    'preferredauthentications protocol protocolkeepalives proxycommand proxyjump proxyusefdpass pubkeyacceptedalgorithms ' +
    'pubkeyacceptedkeytypes pubkeyauthentication rekeylimit remotecommand remoteforward requesttty requiredrsasize ' +
    'revokedhostkeys rhostsauthentication securitykeyprovider sendenv serveralivecountmax serveraliveinterval sessiontype ' +
    'setenv setuptimeout skeyauthentication smartcarddevice stdinnull streamlocalbindmask streamlocalbindunlink ' +
    'stricthostkeychecking syslogfacility tcpkeepalive tisauthentication tunnel tunneldevice updatehostkeys ' +
    'useblacklistedkeys useprivilegedport user userknownhostsfile userknownhostsfile2 useroaming usersh verifyhostkeydns ' +
    'visualhostkey xauthlocation ' +
    // Apple's ssh (macOS) adds UseKeychain, and macOS configs use it without IgnoreUnknown.
    'usekeychain ' +
    // 9.5 to 10.x
    'obscurekeystroketiming channeltimeout tag enableescapecommandline refuseconnection warnweakcrypto versionaddendum ' +
    // Removed long ago: OpenSSH warns "Unsupported option" and goes on.
    'afstokenpassing compressionlevel kerberosauthentication kerberostgtpassing rhostsrsaauthentication rsaauthentication'
  ).split(' '),
);
const OPENSSH_UNSUPPORTED = new Set('afstokenpassing compressionlevel kerberosauthentication kerberostgtpassing rhostsrsaauthentication rsaauthentication'.split(' '));

/**
 * The options a connection of ours follows (Host, Match and Include are read by the parser itself). Any other
 * OpenSSH option that applies to a host is reported for that host ("not honoured"), never dropped in silence.
 */
export const HONOURED_OPTIONS = new Set([
  'hostname',
  'user',
  'port',
  'identityfile',
  'identitiesonly',
  'proxyjump',
  'proxycommand',
  'ignoreunknown',
  'stricthostkeychecking',
  'hostkeyalias',
  'userknownhostsfile',
  'globalknownhostsfile',
  'identityagent',
  // Followed by the OpenSSH transport, which a host using them gets (transport.ts).
  'certificatefile',
  'gssapiauthentication',
]);

/** OpenSSH's defaults (readconf.c fill_default_options), used for whichever of the two a config leaves unset. */
const DEFAULT_USER_KNOWN_HOSTS = ['~/.ssh/known_hosts', '~/.ssh/known_hosts2'];
const DEFAULT_GLOBAL_KNOWN_HOSTS = ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2'];

/** StrictHostKeyChecking as readconf.c's multistate table spells it; `no`/`off`/`false` are read as accept-new here. */
function parseStrict(v: string): ResolvedHop['strictHostKeyChecking'] | undefined {
  switch (v.toLowerCase()) {
    case 'yes':
    case 'true':
      return 'yes';
    case 'ask':
      return 'ask';
    case 'accept-new':
    case 'no':
    case 'off':
    case 'false':
      return 'accept-new';
    default:
      return undefined;
  }
}

const ignoreUnknownLists = new WeakMap<SshConfig, string[]>();
function ignoreUnknownOf(config: SshConfig): string[] {
  let l = ignoreUnknownLists.get(config);
  if (!l) ignoreUnknownLists.set(config, (l = []));
  return l;
}

// ---------------------------------------------------------------------------------------------------------
// Loading and parsing

/**
 * Read an ssh config file and everything it Includes. A missing ~/.ssh/config is an empty config, as for ssh; a
 * missing file that was named explicitly (`explicit`, like `ssh -F`) is a fatal problem (ssh stops: "Can't open
 * user config file"). An unreadable default file is an empty config with a problem.
 */
export function loadSshConfig(file: string, opts: { home?: string; explicit?: boolean } = {}): SshConfig {
  const home = opts.home ?? os.homedir();
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const empty: SshConfig = { lines: [], hostPatterns: [], files: [], problems: [], fatal: [] };
    if (opts.explicit) {
      // `ssh -F missing` stops: "Can't open user config file missing: No such file or directory".
      const why = `${file}: cannot open the ssh config file named in the settings or on the command line (${code ?? String(e)})`;
      empty.problems.push(why);
      empty.fatal.push(why);
    } else if (code !== 'ENOENT' && code !== 'ENOTDIR') empty.problems.push(`${file}: cannot read (${code ?? String(e)})`);
    return empty;
  }
  return parseSshConfig(text, { home, path: file, readInclude: readGlob });
}

/** Parse config text. Include patterns are resolved (`~`, relative to ~/.ssh) and handed to `readInclude`. */
export function parseSshConfig(text: string, opts: ParseSshConfigOptions): SshConfig {
  const file = opts.path ?? path.join(opts.home, '.ssh', 'config');
  const config: SshConfig = { lines: [], hostPatterns: [], files: [file], problems: [], fatal: [] };
  parseInto(config, text, file, [], [file], opts);
  return config;
}

function parseInto(
  config: SshConfig,
  text: string,
  file: string,
  base: SshCondition[],
  stack: string[],
  opts: ParseSshConfigOptions,
): void {
  // Like OpenSSH, the included file starts under its includer's condition, and its own Host/Match lines
  // only narrow it; when it ends, the includer's block continues unchanged.
  let current: SshCondition | undefined;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const where = `${file}:${i + 1}`;
    let parsed: { keyword: string; name: string; args: string[]; raw: string } | undefined;
    try {
      parsed = splitLine(lines[i]);
    } catch (e) {
      fatal(config, `${where}: ${(e as Error).message}`);
      continue;
    }
    if (!parsed) continue;
    const { keyword, name, args, raw } = parsed;
    const when = current ? [...base, current] : base;
    switch (keyword) {
      case 'host':
        if (args.length === 0) {
          config.problems.push(`${where}: Host without patterns; block skipped`);
          current = { kind: 'never', reason: 'empty Host line' };
        } else {
          current = { kind: 'host', patterns: args };
          config.hostPatterns.push(args);
        }
        break;
      case 'match':
        current = parseMatch(args, where, config.problems);
        break;
      case 'include':
        includeFiles(config, args, where, when, stack, opts);
        break;
      case 'ignoreunknown':
        if (args.length > 0) ignoreUnknownOf(config).push(args.join(','));
        config.lines.push({ keyword, name, args, raw, when, file, line: i + 1 });
        break;
      default: {
        if (!OPENSSH_KEYWORDS.has(keyword)) {
          // OpenSSH: "Bad configuration option: foo" and "terminating, 1 bad configuration options", unless an
          // earlier IgnoreUnknown names it (its pattern list is honoured wherever it appears before the line).
          if (ignoreUnknownOf(config).some((list) => matchPatternList(keyword, list.toLowerCase(), false) === 1)) {
            config.problems.push(`${where}: unknown option ${name}, ignored (IgnoreUnknown)`);
          } else {
            fatal(config, `${where}: Bad configuration option: ${name} (ssh refuses this file too; remove the line or name it in IgnoreUnknown)`);
          }
          break;
        }
        if (OPENSSH_UNSUPPORTED.has(keyword)) {
          config.problems.push(`${where}: ${name} is no longer supported by OpenSSH; line ignored`);
          break;
        }
        const problem = checkOption(keyword, args, raw);
        if (problem) fatal(config, `${where}: ${problem} (ssh refuses this file too)`);
        else config.lines.push({ keyword, name, args, raw, when, file, line: i + 1 });
      }
    }
  }
}

function includeFiles(
  config: SshConfig,
  args: string[],
  where: string,
  when: SshCondition[],
  stack: string[],
  opts: ParseSshConfigOptions,
): void {
  if (args.length === 0) {
    config.problems.push(`${where}: Include without a file`);
    return;
  }
  if (!opts.readInclude) {
    config.problems.push(`${where}: Include not followed (no reader)`);
    return;
  }
  for (const arg of args) {
    const pattern = expandTilde(arg, opts.home);
    const absolute = path.isAbsolute(pattern) ? pattern : path.join(opts.home, '.ssh', pattern);
    let found: { path: string; text: string }[];
    try {
      found = opts.readInclude(absolute);
    } catch (e) {
      config.problems.push(`${where}: Include ${arg}: ${(e as Error).message}`);
      continue;
    }
    for (const f of found) {
      if (stack.includes(f.path)) {
        config.problems.push(`${where}: Include ${f.path} would include itself again; skipped`);
        continue;
      }
      if (config.files.length >= MAX_INCLUDED_FILES) {
        config.problems.push(`${where}: more than ${MAX_INCLUDED_FILES} files included in all; ${f.path} skipped`);
        continue;
      }
      if (stack.length > MAX_INCLUDE_DEPTH) {
        config.problems.push(`${where}: Include nested deeper than ${MAX_INCLUDE_DEPTH}; ${f.path} skipped`);
        continue;
      }
      config.files.push(f.path);
      parseInto(config, f.text, f.path, when, [...stack, f.path], opts);
    }
  }
}

/**
 * Split one line as OpenSSH does: keyword, then `=` or whitespace, then arguments with "double" and 'single'
 * quotes and backslash escapes; a `#` at the start of an argument ends the line. Undefined for blank and
 * comment lines.
 */
function splitLine(line: string): { keyword: string; name: string; args: string[]; raw: string } | undefined {
  const m = /^[ \t\f]*([^ \t\f=]+)[ \t\f]*(?:=[ \t\f]*)?(.*?)[ \t\f\r]*$/s.exec(line);
  if (!m || m[1].startsWith('#')) return undefined;
  return { keyword: m[1].toLowerCase(), name: m[1], args: splitArgs(m[2]), raw: m[2] };
}

function fatal(config: SshConfig, problem: string): void {
  config.problems.push(problem);
  config.fatal.push(problem);
}

function splitArgs(s: string): string[] {
  const out: string[] = [];
  let i = 0;
  for (;;) {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++;
    if (i >= s.length || s[i] === '#') break;
    let arg = '';
    let quote = '';
    for (; i < s.length; i++) {
      const c = s[i];
      const next = s[i + 1];
      if (c === '\\' && (next === "'" || next === '"' || next === '\\' || (quote === '' && next === ' '))) {
        arg += next;
        i++;
      } else if (quote === '' && (c === ' ' || c === '\t')) {
        break;
      } else if (quote === '' && (c === '"' || c === "'")) {
        quote = c;
      } else if (quote !== '' && c === quote) {
        quote = '';
      } else {
        arg += c;
      }
    }
    if (quote !== '') throw new Error('unterminated quote');
    out.push(arg);
  }
  return out;
}

function parseMatch(args: string[], where: string, problems: string[]): SshCondition {
  const criteria: MatchCriterion[] = [];
  const skip = (reason: string): SshCondition => {
    problems.push(`${where}: Match ${args.join(' ')}: ${reason}; block skipped`);
    return { kind: 'never', reason };
  };
  if (args.length === 0) return skip('no criteria');
  for (let i = 0; i < args.length; i++) {
    const negated = args[i].startsWith('!');
    const name = (negated ? args[i].slice(1) : args[i]).toLowerCase();
    if (!KNOWN_MATCH.has(name)) return skip(`unknown criterion "${name}"`);
    if (!SUPPORTED_MATCH.has(name)) return skip(`criterion "${name}" is not supported by Remote Runs`);
    if (name === 'all') {
      if (args.length !== 1) return skip('"all" must stand alone');
      criteria.push({ name: 'all', negated, patterns: '' });
      continue;
    }
    const patterns = args[i + 1];
    if (patterns === undefined) return skip(`"${name}" needs a pattern list`);
    i++;
    criteria.push({ name: name as MatchCriterion['name'], negated, patterns });
  }
  return { kind: 'match', criteria };
}

/** Validate the options we use, at parse time like OpenSSH does (whether or not the block applies). */
function checkOption(keyword: string, args: string[], raw: string): string | undefined {
  const one = (): string | undefined =>
    args.length === 1 ? undefined : `${keyword} takes one argument, got ${args.length}`;
  switch (keyword) {
    case 'hostname':
    case 'user':
    case 'identityfile':
      return one();
    case 'port':
      // OpenSSH's own words (readconf.c), whether or not the block applies.
      return one() ?? (parsePort(args[0]) === undefined ? `Bad port '${args[0]}'` : undefined);
    case 'identitiesonly':
      return one() ?? (parseFlag(args[0]) === undefined ? `IdentitiesOnly must be yes or no, not "${args[0]}"` : undefined);
    case 'stricthostkeychecking':
      return one() ?? (parseStrict(args[0]) === undefined ? `StrictHostKeyChecking must be yes, ask, accept-new or no, not "${args[0]}"` : undefined);
    case 'hostkeyalias':
    case 'identityagent':
      return one();
    case 'userknownhostsfile':
    case 'globalknownhostsfile':
      return args.length === 0 ? `${keyword} needs a file` : undefined;
    case 'proxyjump': {
      const bad = one();
      if (bad) return bad;
      try {
        parseProxyJump(args[0]);
        return undefined;
      } catch (e) {
        return (e as Error).message;
      }
    }
    case 'proxycommand':
      return raw.trim() === '' ? 'ProxyCommand without a command' : undefined;
    default:
      return undefined;
  }
}

function parsePort(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

function parseFlag(s: string): boolean | undefined {
  const v = s.toLowerCase();
  if (v === 'yes' || v === 'true') return true;
  if (v === 'no' || v === 'false') return false;
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Patterns (the OpenSSH dialect of ../util/wildcard: `*`, `?`, `!`, comma lists for Match)

/**
 * A Host line applies when some pattern matches the alias and no negated one does (case-sensitive, as ssh). Each
 * argument is one pattern, not a comma list: readconf.c calls match_pattern per argument for Host, and
 * match_pattern_list only for Match criteria.
 */
function hostLineMatches(alias: string, patterns: readonly string[]): boolean {
  let matched = false;
  for (const p of patterns) {
    if (p.startsWith('!')) {
      if (matchPattern(alias, p.slice(1))) return false;
    } else if (matchPattern(alias, p)) {
      matched = true;
    }
  }
  return matched;
}

interface MatchContext {
  alias: string;
  /** Runs a Match exec once per condition per resolution (ssh runs it once, when it reads the line). */
  exec(c: MatchCriterion): boolean;
  /** The hostname as obtained so far (Match host sees HostName from earlier lines). */
  hostname(): string;
  user(): string;
  localUser: string;
}

function conditionHolds(c: SshCondition, ctx: MatchContext): boolean {
  switch (c.kind) {
    case 'never':
      return false;
    case 'host':
      return hostLineMatches(ctx.alias, c.patterns);
    case 'match':
      return c.criteria.every((k) => {
        let r: boolean;
        switch (k.name) {
          case 'all':
            r = true;
            break;
          case 'host':
            r = matchHostname(ctx.hostname().toLowerCase(), k.patterns) === 1;
            break;
          case 'originalhost':
            r = matchHostname(ctx.alias.toLowerCase(), k.patterns) === 1;
            break;
          case 'user':
            r = matchPatternList(ctx.user(), k.patterns, false) === 1;
            break;
          case 'localuser':
            r = matchPatternList(ctx.localUser, k.patterns, false) === 1;
            break;
          case 'exec':
            r = ctx.exec(k);
            break;
        }
        return k.negated ? !r : r;
      });
  }
}

/** The concrete names on Host lines (no wildcards, no negations), in file order, without repeats. */
export function configuredHostAliases(config: SshConfig): string[] {
  const seen = new Set<string>();
  for (const patterns of config.hostPatterns) {
    for (const p of patterns) {
      if (!p.startsWith('!') && !hasWildcard(p)) seen.add(p);
    }
  }
  return [...seen];
}

// ---------------------------------------------------------------------------------------------------------
// ProxyJump

/**
 * Parse a ProxyJump value: `none`, or comma-separated `[user@]host[:port]` / `ssh://[user@]host[:port]` hops
 * (IPv6 in brackets). `none` and the empty string give no hops. Throws RemoteRunsError('bad-config').
 */
export function parseProxyJump(spec: string): JumpSpec[] {
  const trimmed = spec.trim();
  if (trimmed === '' || trimmed.toLowerCase() === 'none') return [];
  return trimmed.split(',').map((hop) => parseJumpHop(hop.trim(), spec));
}

function parseJumpHop(hop: string, whole: string): JumpSpec {
  const bad = (why: string): RemoteRunsError =>
    new RemoteRunsError('bad-config', `ProxyJump ${JSON.stringify(whole)}: ${why}`);
  let rest = hop.startsWith('ssh://') ? hop.slice(6).replace(/\/$/, '') : hop;
  if (rest === '') throw bad('empty hop');
  let user: string | undefined;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    user = rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (user === '') throw bad(`empty user in "${hop}"`);
  }
  let host = rest;
  let portText: string | undefined;
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(rest);
  if (bracketed) {
    host = bracketed[1];
    portText = bracketed[2];
  } else if (rest.includes(':')) {
    const parts = rest.split(':');
    if (parts.length > 2) throw bad(`write an IPv6 address in brackets: [${rest}]`);
    [host, portText] = parts;
  }
  if (host === '' || /\s/.test(host) || host.startsWith('-')) throw bad(`bad host in "${hop}"`);
  let port: number | undefined;
  if (portText !== undefined) {
    port = parsePort(portText);
    if (port === undefined) throw bad(`bad port "${portText}" in "${hop}"`);
  }
  return { host, ...(user !== undefined ? { user } : {}), ...(port !== undefined ? { port } : {}) };
}

/** Read `ssh [opts] -W %h:%p host` (the pre-ProxyJump idiom) as a jump; undefined for any other command. */
function proxyCommandAsJump(command: string): JumpSpec | undefined {
  const words = command.trim().split(/\s+/);
  if (!/^(?:.*\/)?ssh$/.test(words[0] ?? '')) return undefined;
  let forward = false;
  let user: string | undefined;
  let port: number | undefined;
  let host: string | undefined;
  for (let i = 1; i < words.length; i++) {
    const w = words[i];
    if (w === '-W') {
      if (!/^(?:%h|\[%h\]):%p$/.test(words[++i] ?? '')) return undefined;
      forward = true;
    } else if (w === '-l') {
      user = words[++i];
    } else if (w === '-p') {
      port = parsePort(words[++i] ?? '');
      if (port === undefined) return undefined;
    } else if (/^-[46AaCKkNnqTtvXxY]+$/.test(w)) {
      // Flags without arguments that do not change where the hop goes.
    } else if (!w.startsWith('-') && host === undefined) {
      host = w;
    } else {
      return undefined;
    }
  }
  if (!forward || host === undefined) return undefined;
  let spec: JumpSpec;
  try {
    [spec] = parseProxyJump(host);
  } catch {
    return undefined;
  }
  if (!spec) return undefined;
  return { ...spec, ...(user !== undefined ? { user } : {}), ...(port !== undefined ? { port } : {}) };
}

// ---------------------------------------------------------------------------------------------------------
// Resolution

/** What the command line (or our settings) fixes before the config is read; like `ssh -l -p -i -J`. */
interface Preset {
  user?: string;
  port?: number;
  identityFiles?: string[];
  /** A ProxyJump value; any value (even `none`) makes the config's ProxyJump/ProxyCommand ignored. */
  proxyJump?: string;
}

interface Collected {
  hop: ResolvedHop;
  /** Lines that apply to this hop and that we do not follow, `file:line: why`. */
  ignored: string[];
  /** Hops in front of this one, as configured for it (not yet resolved). */
  jumps: JumpSpec[];
}

/**
 * Resolve a configured host as OpenSSH would connect to it: the destination and every ProxyJump hop, each
 * through the ssh config. Settings (`user`, `port`, `identityFile`, `proxyJump`) win over the config, as
 * `ssh -l/-p/-i/-J` do; identity files from settings are tried first and the config's follow (like `ssh -i`).
 * With no identity file anywhere, the defaults (~/.ssh/id_ed25519, id_ecdsa, id_rsa) are listed; the caller
 * skips missing ones. Throws RemoteRunsError('bad-config') for a ProxyCommand we cannot follow, a ProxyJump
 * loop, or an unknown `%` token.
 */
export function resolveHost(host: HostConfig, config: SshConfig, env: ResolveEnv): ResolvedHost {
  if (config.fatal.length > 0) {
    throw new RemoteRunsError('bad-config', `The ssh config cannot be used (ssh would refuse it too): ${config.fatal.join('; ')}`, {
      problems: config.fatal,
    });
  }
  const identityFiles =
    host.identityFile === undefined ? undefined : Array.isArray(host.identityFile) ? host.identityFile : [host.identityFile];
  const target = collect(
    host.host,
    config,
    env,
    { user: host.user, port: host.port, identityFiles, proxyJump: host.proxyJump },
  );
  const ignored: string[] = [];
  const jumps = resolveJumps(target.jumps, config, env, [host.host], ignored);
  const configProblems = [...new Set([...config.problems, ...ignored, ...target.ignored])];
  const overrides = {
    ...(host.user !== undefined ? { user: host.user } : {}),
    ...(host.port !== undefined ? { port: host.port } : {}),
    ...(identityFiles?.length ? { identityFiles } : {}),
    ...(host.proxyJump !== undefined ? { proxyJump: host.proxyJump } : {}),
  };
  return {
    jumps,
    target: target.hop,
    ...(configProblems.length ? { configProblems } : {}),
    openssh: { ...(config.files[0] !== undefined ? { configFile: config.files[0] } : {}), overrides },
  };
}

/**
 * `ssh -J a,b,c dest` runs `ssh -J a,b -W dest c`, and so on down to `ssh -W b a`: the first hop is connected
 * with its own config (including its own ProxyJump), every later hop with its config's proxy overridden.
 */
function resolveJumps(specs: JumpSpec[], config: SshConfig, env: ResolveEnv, chain: string[], ignored: string[]): ResolvedHop[] {
  if (specs.length === 0) return [];
  const [first, ...rest] = specs;
  if (chain.includes(first.host) || chain.length > MAX_JUMP_DEPTH) {
    // ssh fails the same way ("jumphost loop"); the usual cause is `Host *` without `!bastion`.
    throw new RemoteRunsError(
      'bad-config',
      `ProxyJump loop: ${[...chain, first.host].join(' → ')} (exclude a jump host from the Host pattern that sets ` +
        `ProxyJump, e.g. "Host * !${first.host}")`,
      {
        chain: [...chain, first.host],
      },
    );
  }
  const head = collect(first.host, config, env, { user: first.user, port: first.port });
  const before = resolveJumps(head.jumps, config, env, [...chain, first.host], ignored);
  ignored.push(...head.ignored);
  const after = rest.map((s) => {
    const c = collect(s.host, config, env, { user: s.user, port: s.port, proxyJump: 'none' });
    ignored.push(...c.ignored);
    return c.hop;
  });
  return [...before, head.hop, ...after];
}

function collect(alias: string, config: SshConfig, env: ResolveEnv, preset: Preset): Collected {
  let hostname: string | undefined;
  let user = preset.user;
  let port = preset.port;
  let identitiesOnly: boolean | undefined;
  let strict: ResolvedHop['strictHostKeyChecking'];
  let hostKeyAlias: string | undefined;
  let identityAgent: string | undefined;
  let userKnownHosts: string[] | undefined;
  let globalKnownHosts: string[] | undefined;
  const identityFiles = [...(preset.identityFiles ?? [])];
  const certificateFiles: { value: string; where: string }[] = [];
  let gssapi: { on: boolean; where: string } | undefined;
  const ignored: string[] = [];
  let proxy: { kind: 'jump' | 'command'; value: string; where: string } | undefined =
    preset.proxyJump !== undefined ? { kind: 'jump', value: preset.proxyJump, where: 'settings' } : undefined;

  const execResults = new Map<MatchCriterion, boolean>();
  const ctx: MatchContext = {
    alias,
    exec: (k) => {
      let r = execResults.get(k);
      if (r === undefined) {
        const tokens = fileTokens(env, { alias, hostname: ctx.hostname().toLowerCase(), user: ctx.user(), port: port ?? 22 });
        // Each token's value quoted through the one quoting function: a host name reaching a shell stays one word.
        const quoted = Object.fromEntries(Object.entries(tokens).map(([t, v]) => [t, shellQuote(v)]));
        const line = percentExpand(k.patterns, quoted, 'Match exec');
        const out = (env.runMatchExec ?? runMatchExec)(line);
        if (out.problem) ignored.push(`Match exec ${JSON.stringify(k.patterns)}: ${out.problem}; block skipped for ${alias}`);
        execResults.set(k, (r = out.matched));
      }
      return r;
    },
    hostname: () => (hostname === undefined ? alias : expandHostName(hostname, alias)),
    user: () => user ?? env.localUser,
    localUser: env.localUser,
  };
  for (const line of config.lines) {
    if (!line.when.every((c) => conditionHolds(c, ctx))) continue;
    const arg = line.args[0];
    switch (line.keyword) {
      case 'hostname':
        hostname ??= arg;
        break;
      case 'user':
        user ??= arg;
        break;
      case 'port':
        port ??= parsePort(arg);
        break;
      case 'identityfile':
        identityFiles.push(arg);
        break;
      case 'identitiesonly':
        identitiesOnly ??= parseFlag(arg);
        break;
      case 'certificatefile':
        certificateFiles.push({ value: arg, where: `${line.file}:${line.line}` });
        break;
      case 'gssapiauthentication':
        gssapi ??= { on: parseFlag(arg) === true, where: `${line.file}:${line.line}` };
        break;
      case 'stricthostkeychecking':
        strict ??= parseStrict(arg);
        break;
      case 'hostkeyalias':
        hostKeyAlias ??= arg;
        break;
      case 'identityagent':
        identityAgent ??= arg;
        break;
      case 'userknownhostsfile':
        userKnownHosts ??= line.args;
        break;
      case 'globalknownhostsfile':
        globalKnownHosts ??= line.args;
        break;
      case 'proxyjump':
        proxy ??= { kind: 'jump', value: arg, where: `${line.file}:${line.line}` };
        break;
      case 'proxycommand':
        proxy ??= { kind: 'command', value: line.raw.trim(), where: `${line.file}:${line.line}` };
        break;
      default:
        if (!HONOURED_OPTIONS.has(line.keyword)) ignored.push(`${line.file}:${line.line}: ${line.name} is not honoured by Remote Runs; ignored for ${alias}`);
    }
  }

  const finalHost = (hostname === undefined ? alias : expandHostName(hostname, alias)).toLowerCase();
  const finalUser = user ?? env.localUser;
  const finalPort = port ?? 22;
  const tokens = fileTokens(env, { alias, hostname: finalHost, user: finalUser, port: finalPort });
  const files = identityFiles.length > 0 ? identityFiles : DEFAULT_IDENTITIES.map((f) => `~/.ssh/${f}`);
  const expanded = [...new Set(files.map((f) => expandPath(f, env, tokens)))];
  let knownHosts: ResolvedHop['knownHosts'];
  if (userKnownHosts !== undefined || globalKnownHosts !== undefined) {
    const list = (l: string[]): string[] => (l.length === 1 && l[0].toLowerCase() === 'none' ? [] : l.map((f) => expandPath(f, env, tokens, 'UserKnownHostsFile')));
    const user = list(userKnownHosts ?? DEFAULT_USER_KNOWN_HOSTS);
    knownHosts = { files: [...user, ...list(globalKnownHosts ?? DEFAULT_GLOBAL_KNOWN_HOSTS)], ...(user.length ? { appendTo: user[0] } : {}) };
  }

  let jumps: JumpSpec[] = [];
  let proxyCommand: ResolvedHop['proxyCommand'];
  if (proxy?.kind === 'jump') {
    jumps = parseProxyJump(proxy.value);
  } else if (proxy?.kind === 'command' && proxy.value.toLowerCase() !== 'none') {
    const jump = proxyCommandAsJump(proxy.value);
    if (jump) {
      jumps = [jump];
    } else {
      // ssh's tokens for ProxyCommand (%h %n %p %r), each value quoted as one shell word by the one quoting function.
      const quoted = Object.fromEntries(
        Object.entries({ h: finalHost, n: alias, p: String(finalPort), r: finalUser }).map(([t, v]) => [t, shellQuote(v)]),
      );
      proxyCommand = { command: percentExpand(proxy.value, quoted, 'ProxyCommand'), where: proxy.where };
    }
  }
  return {
    hop: {
      alias,
      hostname: finalHost,
      port: finalPort,
      user: finalUser,
      identityFiles: expanded,
      identitiesOnly: identitiesOnly ?? false,
      ...(hostKeyAlias !== undefined ? { hostKeyAlias } : {}),
      ...(proxyCommand ? { proxyCommand } : {}),
      ...(identityAgent !== undefined ? { identityAgent: agentSocket(identityAgent, env, tokens) } : {}),
      ...(knownHosts ? { knownHosts } : {}),
      ...(strict ? { strictHostKeyChecking: strict } : {}),
      ...(certificateFiles.length ? { certificateFiles: certificateFiles.map((c) => ({ path: expandPath(c.value, env, tokens, 'CertificateFile'), where: c.where })) } : {}),
      ...(gssapi?.on ? { gssapi: { where: gssapi.where } } : {}),
    },
    ignored,
    jumps,
  };
}

/** `$SHELL -c LINE` as ssh's match_cfg_line does (stdin and stdout to /dev/null); exit 0 is a match. */
function runMatchExec(commandLine: string): { matched: boolean; problem?: string } {
  const shell = process.env.SHELL || '/bin/sh';
  const r = runProcessSync(shell, ['-c', commandLine], { stdio: ['ignore', 'ignore', 'pipe'], timeout: MATCH_EXEC_TIMEOUT_MS, encoding: 'utf8' });
  if (r.error) {
    const timedOut = (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT';
    return { matched: false, problem: timedOut ? `still running after ${MATCH_EXEC_TIMEOUT_MS / 1000} s, stopped` : `cannot run ${shell}: ${r.error.message}` };
  }
  return { matched: r.status === 0 };
}

/** IdentityAgent as ssh reads it: `none`, `SSH_AUTH_SOCK` or `$VAR` (from the environment), else a path. */
function agentSocket(value: string, env: ResolveEnv, tokens: Record<string, string>): string | null {
  if (value.toLowerCase() === 'none') return null;
  const vars = env.vars ?? process.env;
  const name = value === 'SSH_AUTH_SOCK' ? value : value.startsWith('$') ? value.slice(1) : undefined;
  if (name !== undefined) {
    const v = vars[name];
    // Unset: ssh then connects without an agent (sshconnect2.c), and so do we.
    return v === undefined || v === '' ? null : v;
  }
  return expandPath(value, env, tokens, 'IdentityAgent');
}

function expandHostName(value: string, alias: string): string {
  return percentExpand(value, { h: alias }, 'HostName');
}

function fileTokens(
  env: ResolveEnv,
  t: { alias: string; hostname: string; user: string; port: number },
): Record<string, string> {
  const localHost = env.localHost ?? os.hostname();
  const uid = env.uid ?? (typeof process.getuid === 'function' ? process.getuid() : -1);
  return {
    d: env.home,
    h: t.hostname,
    i: String(uid),
    k: t.alias,
    L: localHost.split('.')[0],
    l: localHost,
    n: t.alias,
    p: String(t.port),
    r: t.user,
    u: env.localUser,
  };
}

/** `~` first, then `%` tokens and `${VAR}`, in the order ssh expands an IdentityFile. */
function expandPath(value: string, env: ResolveEnv, tokens: Record<string, string>, what = 'IdentityFile'): string {
  const vars = env.vars ?? process.env;
  const withTokens = percentExpand(expandTilde(value, env.home, env.localUser), tokens, what);
  return withTokens.replace(/\$\{([^}]*)\}/g, (_m, name: string) => {
    const v = vars[name];
    if (v === undefined) throw new RemoteRunsError('bad-config', `${what} ${value}: environment variable ${name} is not set`);
    return v;
  });
}

function percentExpand(value: string, tokens: Record<string, string>, what: string): string {
  return value.replace(/%(.?)/gs, (_m, t: string) => {
    if (t === '%') return '%';
    const v = tokens[t];
    if (v === undefined) {
      throw new RemoteRunsError('bad-config', `${what} ${value}: unsupported token %${t}`, { value });
    }
    return v;
  });
}

function expandTilde(value: string, home: string, localUser?: string): string {
  if (value === '~') return home;
  if (value.startsWith('~/')) return path.join(home, value.slice(2));
  if (localUser && (value === `~${localUser}` || value.startsWith(`~${localUser}/`))) {
    return path.join(home, value.slice(localUser.length + 1));
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------------
// Include globbing (Node 20 has no fs.globSync)

/**
 * Files matching an absolute glob, sorted like glob(3), which is what OpenSSH hands Include to: unlike Host
 * patterns, this is the filesystem dialect of ../util/wildcard (`*` and `?` within one path segment, `[…]`
 * classes, a leading `.` matched only literally).
 */
function readGlob(pattern: string): { path: string; text: string }[] {
  const segments = pattern.split('/').filter((s) => s !== '');
  let dirs = ['/'];
  for (const seg of segments) {
    const next: string[] = [];
    for (const dir of dirs) {
      if (!hasGlob(seg)) {
        next.push(path.join(dir, seg));
        continue;
      }
      let names: string[];
      try {
        names = fs.readdirSync(dir);
      } catch {
        continue;
      }
      const matches = globSegmentMatcher(seg);
      for (const n of names.sort()) {
        if (matches(n)) next.push(path.join(dir, n));
      }
    }
    dirs = next;
  }
  const out: { path: string; text: string }[] = [];
  for (const p of dirs) {
    let stat: fs.Stats;
    try {
      stat = fs.statSync(p);
    } catch {
      continue; // a literal path that does not exist: ssh ignores it too
    }
    if (!stat.isFile()) continue;
    out.push({ path: p, text: fs.readFileSync(p, 'utf8') });
  }
  return out;
}
