import * as vscode from 'vscode';
import { parseHostsSetting } from '../core/config';
import type { HostConfig } from '../core/types';
import type { Logger } from './log';

/** Typed reads of the `remoteRuns.*` settings; invalid host entries are reported once and skipped. */
export class Settings {
  private lastProblems = '';

  constructor(private readonly log: Logger) {}

  private get cfg(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration('remoteRuns');
  }

  hosts(): HostConfig[] {
    const { hosts, problems } = parseHostsSetting(this.cfg.get('hosts'), 'remoteRuns.hosts');
    const text = problems.join('\n');
    if (text && text !== this.lastProblems) {
      this.log.warn(`remoteRuns.hosts: ${text}`);
      void vscode.window.showWarningMessage(`Remote Runs: some hosts in remoteRuns.hosts were skipped: ${problems[0]}`, 'Open Settings').then((c) => {
        if (c) void vscode.commands.executeCommand('workbench.action.openSettingsJson');
      });
    }
    this.lastProblems = text;
    const defaults = this.defaultRunRoots();
    return hosts.map((h) => (h.runRoots?.length || !defaults ? h : { ...h, runRoots: defaults }));
  }

  useSshConfigHosts(): boolean {
    return this.cfg.get<boolean>('useSshConfigHosts', true);
  }

  sshConfigFile(): string | undefined {
    return this.cfg.get<string>('sshConfigFile') || undefined;
  }

  knownHostsFiles(): string[] {
    return this.cfg.get<string[]>('knownHostsFiles') ?? [];
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
}
