/**
 * Which settings a workspace (a cloned repository's `.vscode/settings.json`, a `.code-workspace` file) may set, and
 * what is done with the ones it may not. Pure: the extension feeds it what `WorkspaceConfiguration.inspect()` and
 * the workspace's settings files hold, and says out loud what this returns as ignored.
 *
 * The rule (VS Code's own convention, as `git.path`): a setting that names a program to run or a file that decides
 * trust is `machine` scoped — read from user (or, in a remote window, remote) settings only. Settings a repository
 * may legitimately share (its hosts, its eval profiles, where downloads go) stay window scoped but are listed in
 * `capabilities.untrustedWorkspaces.restrictedConfigurations`, so an untrusted workspace's values are not applied;
 * and even in a trusted workspace the dangerous parts of them (a host's key file and jump hosts; a profile's
 * command before you said yes to it) are not taken from the workspace unasked.
 */
import { createHash } from 'node:crypto';
import type { EvalProfile } from './eval/types';
import type { SpecServerProfile } from './eval/spec/server/profile';
import { formatTarget } from './types';

/** Read from user/remote settings only; a workspace value is ignored (VS Code drops it) and reported. */
export const MACHINE_SETTINGS = ['remoteRuns.sshPath', 'remoteRuns.kubectlPath', 'remoteRuns.knownHostsFiles', 'remoteRuns.sshConfigFile'] as const;

/** Window-scoped settings whose workspace values VS Code does not apply in Restricted Mode (untrusted workspace). */
export const RESTRICTED_SETTINGS = [...MACHINE_SETTINGS, 'remoteRuns.hosts', 'remoteRuns.evalProfiles', 'remoteRuns.downloadDirectory'] as const;

/** Why each setting is kept from workspaces: docs/workspace-trust.md's table and the warnings say the same. */
export const WHY_RESTRICTED: Record<(typeof RESTRICTED_SETTINGS)[number], string> = {
  'remoteRuns.sshPath': 'names a program that every download runs',
  'remoteRuns.kubectlPath': 'names the program that every command in a Kubernetes cluster runs',
  'remoteRuns.knownHostsFiles': 'decides which host keys are trusted',
  'remoteRuns.sshConfigFile': 'an ssh config can run programs (ProxyCommand, Match exec) and choose keys and jump hosts',
  'remoteRuns.hosts': 'connects with your keys; in a trusted workspace its hosts are used without identityFile and proxyJump',
  'remoteRuns.evalProfiles': 'runs commands; in a trusted workspace a profile runs only after you said yes to its command',
  'remoteRuns.downloadDirectory': 'decides where files are written',
};

/**
 * Fields of a `remoteRuns.hosts` entry that a workspace may not set: they pick keys and route connections, or (a
 * cluster's `kubeconfig`) name a file whose `exec` credential plugins kubectl runs (client-go
 * plugin/pkg/client/auth/exec/exec.go) and whose clusters and users decide where your credentials go.
 */
export const HOST_FIELDS_USER_ONLY = ['identityFile', 'proxyJump', 'kubeconfig'] as const;

const WHY_USER_ONLY: Record<(typeof HOST_FIELDS_USER_ONLY)[number], string> = {
  identityFile: 'picks the key offered',
  proxyJump: 'routes the connection through other machines',
  kubeconfig: 'names a kubeconfig, whose credential plugins kubectl runs',
};

/** What `WorkspaceConfiguration.inspect()` gives (the language-specific values are not used by these settings). */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

export type SettingOrigin = 'default' | 'user' | 'workspace';

/** One workspace value that was not honoured, with the reason said to the user. */
export interface IgnoredSetting {
  setting: string;
  /** Where the workspace set it, e.g. `.vscode/settings.json of trainer` (or "workspace settings"). */
  where: string;
  reason: string;
}

/**
 * A machine-scoped setting's value: user level or default, never a workspace level. VS Code already drops a
 * workspace value of a `machine` setting before the extension sees it; reading `globalValue` is the defence in
 * depth for a host that does not (an older or another editor), and the workspace value it did see is reported.
 */
export function userLevelValue<T>(setting: string, inspected: Inspected<T> | undefined): { value: T | undefined; ignored: IgnoredSetting[] } {
  const ignored: IgnoredSetting[] = [];
  if (inspected?.workspaceValue !== undefined) ignored.push({ setting, where: 'workspace settings', reason: reasonOf(setting, true) });
  if (inspected?.workspaceFolderValue !== undefined) ignored.push({ setting, where: 'folder settings', reason: reasonOf(setting, true) });
  return { value: inspected?.globalValue ?? inspected?.defaultValue, ignored };
}

/** The level VS Code's `get()` answers from for a window-scoped setting: the most specific one that is set. */
export function effectiveLevel<T>(inspected: Inspected<T> | undefined): { value: T | undefined; origin: SettingOrigin } {
  if (inspected?.workspaceFolderValue !== undefined) return { value: inspected.workspaceFolderValue, origin: 'workspace' };
  if (inspected?.workspaceValue !== undefined) return { value: inspected.workspaceValue, origin: 'workspace' };
  if (inspected?.globalValue !== undefined) return { value: inspected.globalValue, origin: 'user' };
  return { value: inspected?.defaultValue, origin: 'default' };
}

/**
 * `remoteRuns.hosts` as VS Code would answer it, except that host entries from a workspace lose `identityFile`,
 * `proxyJump` and `kubeconfig` (each reported; a cluster entry then uses kubectl's own kubeconfig): a repository may name hosts, but which of your keys is offered and through which
 * machine the connection goes come from your user settings or `~/.ssh/config` (a `Host` alias the entry names).
 */
export function hostsSetting(inspected: Inspected<unknown> | undefined): { value: unknown; origin: SettingOrigin; ignored: IgnoredSetting[] } {
  const { value, origin } = effectiveLevel(inspected);
  if (origin !== 'workspace' || !Array.isArray(value)) return { value, origin, ignored: [] };
  const ignored: IgnoredSetting[] = [];
  const cleaned = value.map((entry: unknown, i) => {
    if (!entry || typeof entry !== 'object' || Array.isArray(entry)) return entry;
    const copy: Record<string, unknown> = { ...(entry as Record<string, unknown>) };
    for (const field of HOST_FIELDS_USER_ONLY) {
      if (!(field in copy)) continue;
      delete copy[field];
      const name = typeof copy.name === 'string' ? ` (${copy.name})` : '';
      ignored.push({
        setting: `remoteRuns.hosts[${i}].${field}${name}`,
        where: 'workspace settings',
        reason: `${WHY_USER_ONLY[field]}: set it in your user settings${field === 'kubeconfig' ? '' : ' or in ~/.ssh/config for that Host'}`,
      });
    }
    return copy;
  });
  return { value: cleaned, origin, ignored };
}

/**
 * The workspace values of restricted settings in one settings file's parsed contents (a `.vscode/settings.json`,
 * or the `settings` object of a `.code-workspace` file). Machine settings are always ignored there; the other
 * restricted ones only while the workspace is not trusted (VS Code's Restricted Mode).
 */
export function ignoredInWorkspaceFile(where: string, contents: unknown, trusted: boolean): IgnoredSetting[] {
  if (!contents || typeof contents !== 'object' || Array.isArray(contents)) return [];
  const keys = Object.keys(contents as Record<string, unknown>);
  const out: IgnoredSetting[] = [];
  for (const setting of RESTRICTED_SETTINGS) {
    if (!keys.includes(setting)) continue;
    const machine = (MACHINE_SETTINGS as readonly string[]).includes(setting);
    if (machine || !trusted) out.push({ setting, where, reason: reasonOf(setting, machine) });
  }
  return out;
}

function reasonOf(setting: string, machine: boolean): string {
  const why = (WHY_RESTRICTED as Record<string, string>)[setting] ?? 'is restricted';
  return machine ? `${why}: only your user settings can set it` : `${why}: not applied while this workspace is not trusted`;
}

/** One line per ignored value, for the log and (joined) for the one notification. */
export function describeIgnored(items: readonly IgnoredSetting[]): string[] {
  return items.map((i) => `${i.setting} (in ${i.where}) ignored: ${i.reason}`);
}

// ---- eval profiles from a workspace: a yes per command ---------------------------------------------------------

/** A command profile, or a speculative-server one (which runs no command, but sends a prompt file to a server). */
export type ConsentProfile = EvalProfile | SpecServerProfile;

function isServerProfile(p: ConsentProfile): p is SpecServerProfile {
  return (p as SpecServerProfile).kind === 'speculative-server';
}

/**
 * A fingerprint of everything in a profile that decides what runs (name, where, command, cwd, env, scheduler and
 * sbatch options; not the result pattern, which only reads output). A changed command is a new fingerprint. A
 * speculative-server profile's is all of it: which server is sent what, through which host's link, from which file.
 */
export function profileFingerprint(profile: ConsentProfile): string {
  if (isServerProfile(profile)) return createHash('sha256').update(canonicalJson(profile)).digest('hex');
  const what = {
    name: profile.name,
    where: profile.where,
    command: profile.command,
    cwd: profile.cwd ?? null,
    env: profile.env ? Object.fromEntries(Object.entries(profile.env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : null,
    scheduler: profile.scheduler ?? null,
    sbatch: profile.sbatch ?? null,
  };
  return createHash('sha256').update(canonicalJson(what)).digest('hex');
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** A profile from a workspace runs only after a yes to exactly this content; user and default profiles need none. */
export function needsConsent(profile: ConsentProfile, origin: SettingOrigin, approved: readonly string[]): boolean {
  return origin === 'workspace' && !approved.includes(profileFingerprint(profile));
}

/** The list of approved fingerprints after a yes (no duplicates; the newest last, at most `keep`). */
export function withApproval(approved: readonly string[], profile: ConsentProfile, keep = 200): string[] {
  const fp = profileFingerprint(profile);
  return [...approved.filter((a) => a !== fp), fp].slice(-keep);
}

/**
 * What the consent question shows: where it runs, and the command line exactly as written. For a speculative-server
 * profile: the server it sends prompts to, the host whose link opens the channel, and the prompt file read on this
 * machine (a workspace could otherwise have a file of yours sent to a server of its choosing).
 */
export function consentDetail(profile: ConsentProfile): string {
  if (isServerProfile(profile)) {
    const through = profile.host ? `${profile.host}'s SSH link` : "the SSH link of the run's host";
    const lines = [`The eval profile "${profile.name}" comes from this workspace's settings and sends prompts to ${profile.server} through ${through}, with your login:`, ''];
    lines.push(profile.prompts ? `prompts: the file ${profile.prompts} on this machine (its lines are sent to the server)` : 'prompts: the built-in set');
    if (profile.baseline?.kind === 'server') lines.push(`baseline: the same prompts to ${profile.baseline.url}`);
    lines.push('', 'Run it? You are asked again if the profile changes.');
    return lines.join('\n');
  }
  const where =
    profile.where.kind === 'local'
      ? 'on this machine, as you'
      : profile.where.kind === 'target'
        ? "on the run's own host or container, with your login"
        : `on ${profile.where.host}/${formatTarget(profile.where.target)}, with your login`;
  const lines = [`The eval profile "${profile.name}" comes from this workspace's settings and runs ${where}:`, '', profile.command];
  if (profile.cwd) lines.push('', `in: ${profile.cwd}`);
  if (profile.env && Object.keys(profile.env).length) lines.push('', `env: ${Object.entries(profile.env).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  if (profile.scheduler) lines.push('', `submitted with sbatch ${(profile.sbatch ?? []).join(' ')}`.trimEnd());
  lines.push('', 'Run it? You are asked again if the profile changes.');
  return lines.join('\n');
}
