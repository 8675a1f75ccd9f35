/**
 * The settings edits of "Try the demo host", as pure functions of the current user-level values (no `vscode` here, so
 * they are unit-tested): add the demo host, its known_hosts file and its eval profile, and take exactly those out
 * again when the demo stops. An entry is the demo's by its key file (under the extension's own storage), never by its name, so a host of
 * the user's that happens to be called "demo" is never touched.
 */
import type { HostConfig } from '../../core/types';

/** What `remoteRuns.knownHostsFiles: []` means: the user's OpenSSH file. Kept when the demo's file is added. */
export const DEFAULT_KNOWN_HOSTS = '~/.ssh/known_hosts';

/** True when `entry` is the demo host entry that uses this client key. */
export function isDemoHostEntry(entry: unknown, clientKeyPath: string): boolean {
  if (!entry || typeof entry !== 'object') return false;
  const id = (entry as { identityFile?: unknown }).identityFile;
  return id === clientKeyPath || (Array.isArray(id) && id.length === 1 && id[0] === clientKeyPath);
}

/**
 * `remoteRuns.hosts` with the demo host in it: an older demo entry (an earlier port) is replaced; the name is
 * `demo` unless the user has a host of that name, then `demo-2`, `demo-3`…
 */
export function hostsWithDemo(current: readonly unknown[] | undefined, demo: HostConfig): unknown[] {
  const clientKey = typeof demo.identityFile === 'string' ? demo.identityFile : '';
  const others = (current ?? []).filter((h) => !isDemoHostEntry(h, clientKey));
  const taken = new Set(others.map((h) => (h && typeof h === 'object' ? (h as { name?: unknown }).name : undefined)));
  let name = demo.name;
  for (let i = 2; taken.has(name); i++) name = `${demo.name}-${i}`;
  return [...others, { ...demo, name }];
}

/** `remoteRuns.hosts` without the demo host; `undefined` when nothing is left (the setting goes back to its default). */
export function hostsWithoutDemo(current: readonly unknown[] | undefined, clientKeyPath: string): unknown[] | undefined {
  const left = (current ?? []).filter((h) => !isDemoHostEntry(h, clientKeyPath));
  return left.length ? left : undefined;
}

/**
 * `remoteRuns.knownHostsFiles` with the demo's file added. An empty setting means the user's `~/.ssh/known_hosts`,
 * which must stay checked (and first: new keys the user accepts are appended to the first file, not to the demo's).
 */
export function knownHostsWithDemo(current: readonly string[] | undefined, demoFile: string): string[] {
  const base = current && current.length ? current.filter((f) => f !== demoFile) : [DEFAULT_KNOWN_HOSTS];
  return [...base, demoFile];
}

/** `remoteRuns.knownHostsFiles` without the demo's file; `undefined` when what is left means the same as the default. */
export function knownHostsWithoutDemo(current: readonly string[] | undefined, demoFile: string): string[] | undefined {
  const left = (current ?? []).filter((f) => f !== demoFile);
  if (left.length === 0 || (left.length === 1 && left[0] === DEFAULT_KNOWN_HOSTS)) return undefined;
  return left;
}

/**
 * True when `entry` is exactly one of the demo's eval profiles (same name and what it runs: the command, or a
 * speculative-server profile's kind and server), not a user's edited copy of it.
 */
export function isDemoEvalProfile(entry: unknown, demo: Readonly<Record<string, unknown>>): boolean {
  if (!entry || typeof entry !== 'object') return false;
  const e = entry as Record<string, unknown>;
  return e.name === demo.name && e.command === demo.command && e.kind === demo.kind && e.server === demo.server;
}

/** `remoteRuns.evalProfiles` with the demo's profile (once), after the user's own; a user profile of the same name wins. */
export function evalProfilesWithDemo(current: readonly unknown[] | undefined, demo: Readonly<Record<string, unknown>>): unknown[] {
  const others = (current ?? []).filter((p) => !isDemoEvalProfile(p, demo));
  const nameTaken = others.some((p) => p && typeof p === 'object' && (p as { name?: unknown }).name === demo.name);
  return nameTaken ? others : [...others, { ...demo }];
}

/** `remoteRuns.evalProfiles` without the demo's profile; `undefined` when nothing is left. */
export function evalProfilesWithoutDemo(current: readonly unknown[] | undefined, demo: Readonly<Record<string, unknown>>): unknown[] | undefined {
  const left = (current ?? []).filter((p) => !isDemoEvalProfile(p, demo));
  return left.length ? left : undefined;
}

/**
 * Whether adding the demo's profile to `current` adds one: not when an identical profile is already there (written
 * by `npm run demo`, or by the user) or a profile of the user's has its name. Only a profile this start added is
 * taken out again when the demo stops.
 */
export function addsDemoEvalProfile(current: readonly unknown[] | undefined, demo: Readonly<Record<string, unknown>>): boolean {
  return !(current ?? []).some((p) => isDemoEvalProfile(p, demo) || (p && typeof p === 'object' && (p as { name?: unknown }).name === demo.name));
}

/**
 * What a start of the demo added to the user's settings, beyond what is recognisably its own (host entry, known_hosts
 * file): its command eval profile, and its speculative-server profile (the drafter server's).
 */
export interface DemoAdditions {
  evalProfile: boolean;
  serverProfile: boolean;
}

/** The additions record as read from its file: anything malformed means nothing was added. Total. */
export function parseDemoAdditions(text: string | undefined): DemoAdditions {
  try {
    const v = text === undefined ? undefined : (JSON.parse(text) as unknown);
    const o = typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
    return { evalProfile: o.evalProfile === true, serverProfile: o.serverProfile === true };
  } catch {
    return { evalProfile: false, serverProfile: false };
  }
}
