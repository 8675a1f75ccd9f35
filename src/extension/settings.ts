import * as vscode from 'vscode';
import { parseHostsSetting } from '../core/config';
import { parseEvalProfiles } from '../core/eval/profiles';
import type { EvalProfile } from '../core/eval/types';
import type { SpecServerProfile } from '../core/eval/spec/server/profile';
import {
  describeIgnored,
  hostsSetting,
  ignoredInWorkspaceFile,
  userLevelValue,
  type IgnoredSetting,
  type Inspected,
  type SettingOrigin,
} from '../core/settingsTrust';
import type { ClusterConfig, HostConfig } from '../core/types';
import { parseJsonc } from '../core/util/jsonc';
import { CommandIds } from './commandIds';
import type { Logger } from './log';

/**
 * The one edge to VS Code's settings: every `remoteRuns.*` read and write in the extension goes through this file (a
 * unit test holds it: `getConfiguration` appears nowhere else). Plain reads of settings a workspace may set are
 * `setting`; settings that decide trust are read by `Settings` below (user level, ignored values reported); writes go
 * to the user's settings only (`setUserSetting`: a workspace's settings file is often committed, and a value read
 * from it must never be copied into the user's).
 */
export type SettingKey =
  | 'hosts'
  | 'useSshConfigHosts'
  | 'sshConfigFile'
  | 'knownHostsFiles'
  | 'defaultRunRoots'
  | 'refreshIntervalSeconds'
  | 'idleDisconnectSeconds'
  | 'metrics.pollIntervalSeconds'
  | 'metrics.plateauWindow'
  | 'metrics.plateauFraction'
  | 'metrics.statusBarMetric'
  | 'downloadDirectory'
  | 'verifyDownloads'
  | 'downloadConcurrency'
  | 'downloadClient'
  | 'sshPath'
  | 'kubectlPath'
  | 'languageServer.languages'
  | 'pathMappings'
  | 'evalProfiles'
  | 'notifications.newCheckpoint'
  | 'notifications.stoppedLogging'
  | 'notifications.evalFinished';

function configuration(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration('remoteRuns');
}

/** The value VS Code applies (user, workspace, folder merged), or `fallback` when none is set. */
export function setting<T>(key: SettingKey, fallback: T): T {
  return configuration().get<T>(key, fallback);
}

/** Every level's value, for reads that must tell where a value came from. */
export function inspectSetting<T>(key: SettingKey): Inspected<T> | undefined {
  return configuration().inspect<T>(key);
}

/** The user-level value only (what `setUserSetting` would change), never a workspace's. */
export function userSetting<T>(key: SettingKey): T | undefined {
  return inspectSetting<T>(key)?.globalValue;
}

/** Write the user-level value (never the workspace's). */
export async function setUserSetting(key: SettingKey, value: unknown): Promise<void> {
  await configuration().update(key, value, vscode.ConfigurationTarget.Global);
}

/** `remoteRuns.downloadDirectory` as written (trimmed); '' when unset. Where files land: downloadRootFor. */
export function downloadDirectory(): string {
  const v = setting<unknown>('downloadDirectory', '');
  return typeof v === 'string' ? v.trim() : '';
}

/**
 * Typed reads of the `remoteRuns.*` settings; invalid host entries are reported once and skipped.
 *
 * Trust (docs/workspace-trust.md): `sshPath`, `kubectlPath`, `knownHostsFiles` and `sshConfigFile` are
 * machine scoped and read through `inspect()` from the user level only; hosts from a workspace lose `identityFile`
 * and `proxyJump`; eval profiles carry where they came from. Every workspace value not honoured is logged and shown
 * once (a notification naming the setting) — never dropped in silence.
 */
export class Settings {
  private lastProblems = '';
  private lastIgnored = '';
  /** Ignored values seen through inspect() (per setting), and those found in the workspace's settings files. */
  private readonly ignoredByRead = new Map<string, IgnoredSetting[]>();
  private ignoredInFiles: IgnoredSetting[] = [];

  constructor(private readonly log: Logger) {}

  private get cfg(): vscode.WorkspaceConfiguration {
    return configuration();
  }

  hosts(): HostConfig[] {
    return this.hostEntries().hosts;
  }

  /** The Kubernetes clusters of `remoteRuns.hosts` (entries with `"kind": "kubernetes"`), checked as the hosts are. */
  clusters(): ClusterConfig[] {
    const defaults = this.defaultRunRoots();
    return this.hostEntries().clusters.map((c) => (c.runRoots?.length || !defaults ? c : { ...c, runRoots: defaults }));
  }

  private hostEntries(): { hosts: HostConfig[]; clusters: ClusterConfig[] } {
    const read = hostsSetting(this.cfg.inspect<unknown>('hosts') as Inspected<unknown> | undefined);
    this.noteIgnored('hosts', read.ignored);
    const { hosts, clusters, problems } = parseHostsSetting(read.value, 'remoteRuns.hosts');
    const text = problems.join('\n');
    if (text && text !== this.lastProblems) {
      this.log.warn(`remoteRuns.hosts: ${text}`);
      void vscode.window.showWarningMessage(`Remote Runs: some hosts in remoteRuns.hosts were skipped: ${problems[0]}`, 'Open Settings').then((c) => {
        if (c) void vscode.commands.executeCommand('workbench.action.openSettingsJson');
      });
    }
    this.lastProblems = text;
    const defaults = this.defaultRunRoots();
    return { hosts: hosts.map((h) => (h.runRoots?.length || !defaults ? h : { ...h, runRoots: defaults })), clusters };
  }

  /**
   * Valid eval profiles and where the list came from (`workspace`: each needs a yes before it runs): command
   * profiles, and `"kind": "speculative-server"` ones (core/eval/spec/server), which Evaluate Checkpoint runs too.
   */
  evalProfiles(): { profiles: EvalProfile[]; serverProfiles: SpecServerProfile[]; origin: SettingOrigin; problems: string[] } {
    const inspected = this.cfg.inspect<unknown>('evalProfiles');
    const origin: SettingOrigin =
      inspected?.workspaceFolderValue !== undefined || inspected?.workspaceValue !== undefined ? 'workspace' : inspected?.globalValue !== undefined ? 'user' : 'default';
    const { profiles, problems, serverProfiles } = parseEvalProfiles(this.cfg.get('evalProfiles'));
    return { profiles, serverProfiles, origin, problems };
  }

  useSshConfigHosts(): boolean {
    return this.cfg.get<boolean>('useSshConfigHosts', true);
  }

  sshConfigFile(): string | undefined {
    return this.userLevel<string>('sshConfigFile') || undefined;
  }

  knownHostsFiles(): string[] {
    const v = this.userLevel<string[]>('knownHostsFiles');
    return Array.isArray(v) ? v : [];
  }

  /** The OpenSSH binary downloads run; undefined: `ssh` from PATH. Never a workspace's value. */
  sshPath(): string | undefined {
    const v = this.userLevel<string>('sshPath');
    return typeof v === 'string' && v.trim() ? v.trim() : undefined;
  }

  /** The kubectl program clusters are reached through; undefined: `kubectl` from PATH. Never a workspace's value. */
  kubectlPath(): string | undefined {
    const v = this.userLevel<string>('kubectlPath');
    return typeof v === 'string' && v.trim() ? v.trim() : undefined;
  }

  defaultRunRoots(): string[] | undefined {
    const v = this.cfg.get<string[]>('defaultRunRoots');
    return Array.isArray(v) && v.length ? v : undefined;
  }

  refreshIntervalSeconds(): number {
    return Math.max(0, this.cfg.get<number>('refreshIntervalSeconds', 30));
  }

  idleDisconnectSeconds(): number {
    return Math.max(10, this.cfg.get<number>('idleDisconnectSeconds', 300));
  }

  /**
   * Look in the workspace's own settings files for restricted settings VS Code will not apply (it drops a
   * workspace value of a machine setting before an extension can see it, so `inspect()` alone cannot tell), and
   * say so. Called at activation, when settings change, when trust is granted, and when a settings file changes.
   */
  async checkWorkspaceFiles(): Promise<void> {
    const found: IgnoredSetting[] = [];
    const trusted = vscode.workspace.isTrusted;
    const files: { uri: vscode.Uri; where: string; pick: (v: unknown) => unknown }[] = [];
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      files.push({ uri: vscode.Uri.joinPath(folder.uri, '.vscode', 'settings.json'), where: `.vscode/settings.json of ${folder.name}`, pick: (v) => v });
    }
    const wsFile = vscode.workspace.workspaceFile;
    if (wsFile && wsFile.scheme !== 'untitled') {
      files.push({ uri: wsFile, where: `${wsFile.path.split('/').pop()} (workspace file)`, pick: (v) => (v && typeof v === 'object' ? (v as Record<string, unknown>).settings : undefined) });
    }
    for (const f of files) {
      let text: string;
      try {
        text = new TextDecoder().decode(await vscode.workspace.fs.readFile(f.uri));
      } catch {
        continue; // No such file: nothing set there.
      }
      const parsed = parseJsonc(text);
      if ('error' in parsed) {
        this.log.warn(`${f.where}: could not be read to check for restricted settings (${parsed.error})`);
        continue;
      }
      found.push(...ignoredInWorkspaceFile(f.where, f.pick(parsed.value), trusted));
    }
    this.ignoredInFiles = found;
    this.report();
  }

  private userLevel<T>(key: 'sshPath' | 'kubectlPath' | 'knownHostsFiles' | 'sshConfigFile'): T | undefined {
    const { value, ignored } = userLevelValue<T>(`remoteRuns.${key}`, this.cfg.inspect<T>(key));
    this.noteIgnored(key, ignored);
    return value;
  }

  private noteIgnored(key: string, ignored: IgnoredSetting[]): void {
    const before = JSON.stringify(this.ignoredByRead.get(key) ?? []);
    if (ignored.length) this.ignoredByRead.set(key, ignored);
    else this.ignoredByRead.delete(key);
    if (JSON.stringify(ignored) !== before) this.report();
  }

  /** Log each ignored value and show one notification — again only when the set of ignored values changes. */
  private report(): void {
    const all = [...this.ignoredInFiles, ...[...this.ignoredByRead.values()].flat()];
    // One line per setting and place, whichever way it was seen.
    const lines = [...new Set(describeIgnored(all))];
    const text = lines.join('\n');
    if (text === this.lastIgnored) return;
    this.lastIgnored = text;
    if (!lines.length) return;
    for (const l of lines) this.log.warn(`workspace setting: ${l}`);
    const names = [...new Set(all.map((i) => i.setting))];
    const message = `Remote Runs ignored ${names.length === 1 ? 'a setting' : `${names.length} settings`} from this workspace: ${lines[0]}${lines.length > 1 ? ` (and ${lines.length - 1} more, see the log)` : ''}`;
    void vscode.window.showWarningMessage(message, 'Show Log', 'Open User Settings').then((c) => {
      if (c === 'Show Log') void vscode.commands.executeCommand(CommandIds.showLog);
      else if (c === 'Open User Settings') void vscode.commands.executeCommand('workbench.action.openSettingsJson');
    });
  }
}
