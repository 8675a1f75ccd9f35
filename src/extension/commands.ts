import * as vscode from 'vscode';
import type { HostConfig, TargetRef } from '../core/types';
import { RemoteRunsError } from '../core/types';
import type { HostDirectory } from '../core/hosts';
import { terminalSshArgs } from '../core/terminal';
import type { TreeNode } from '../core/tree/nodes';
import type { RunsTreeProvider } from './tree/treeProvider';
import { CommandIds } from './commandIds';
import { registerCommand } from './commandRunner';
import type { Logger } from './log';
import { inspectSetting, setUserSetting, setting, userSetting } from './settings';

export interface CommandDeps {
  tree: RunsTreeProvider;
  hosts: HostDirectory;
  log: Logger;
  showLog(): void;
  knownHostsFiles(): string[];
}

/** Commands as values: id → handler, registered through the one wrapper. */
export function registerCommands(deps: CommandDeps): vscode.Disposable[] {
  const { tree, log } = deps;
  const handlers: [string, (...args: any[]) => unknown][] = [
    [CommandIds.refresh, (node?: TreeNode) => tree.refresh(node)],
    [CommandIds.retry, (node?: TreeNode) => tree.refresh(node)],
    [CommandIds.showLog, () => deps.showLog()],
    [CommandIds.openSettings, () => vscode.commands.executeCommand('workbench.action.openSettings', 'remoteRuns')],
    [CommandIds.useSshConfigHosts, () => setUserSetting('useSshConfigHosts', true)],
    [CommandIds.addHost, () => addHost()],
    [CommandIds.copyRemotePath, (node?: TreeNode) => copyRemotePath(node)],
    [CommandIds.openTerminal, (node?: TreeNode) => openTerminal(deps, node)],
  ];
  return handlers.map(([id, h]) => registerCommand(id as never, h, log));
}

/** A short quick-input flow that appends a host to the `remoteRuns.hosts` setting. */
async function addHost(): Promise<void> {
  // Names already in use anywhere (a workspace's hosts too); the new entry joins the user's own list only: a
  // workspace's hosts are never copied into the user's settings.
  const shown = setting<unknown>('hosts', []);
  const existing = (Array.isArray(shown) ? shown : []) as HostConfig[];
  const mine = userSetting<unknown>('hosts');
  const host = await vscode.window.showInputBox({
    title: 'Add Host (1/3): address',
    prompt: 'Hostname, address, or an alias from ~/.ssh/config (user@host:port also works)',
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : 'Enter a host'),
  });
  if (!host) return;
  const m = /^(?:([^@\s]+)@)?([^:\s]+)(?::(\d+))?$/.exec(host.trim());
  if (!m) throw new RemoteRunsError('bad-config', `Not a host address: ${host}`);
  const [, userPart, hostPart, portPart] = m;
  const name = await vscode.window.showInputBox({
    title: 'Add Host (2/3): name',
    prompt: 'Name shown in the tree and used in CLI addresses',
    value: hostPart,
    ignoreFocusOut: true,
    validateInput: (v) => (!v.trim() ? 'Enter a name' : v.includes('/') ? 'A name cannot contain "/"' : existing.some((h) => h.name === v.trim()) ? 'A host with this name exists' : undefined),
  });
  if (!name) return;
  const roots = await vscode.window.showInputBox({
    title: 'Add Host (3/3): run roots',
    prompt: 'Where runs live on this host (comma-separated); leave empty for the defaults',
    placeHolder: '/workspace, ~/runs, ~/checkpoints',
    ignoreFocusOut: true,
  });
  if (roots === undefined) return;
  const entry: HostConfig = { name: name.trim(), host: hostPart };
  if (userPart) entry.user = userPart;
  if (portPart) entry.port = Number(portPart);
  const runRoots = roots.split(',').map((r) => r.trim()).filter(Boolean);
  if (runRoots.length) entry.runRoots = runRoots;
  await setUserSetting('hosts', [...(Array.isArray(mine) ? mine : []), entry]);
  // A workspace's list replaces the user's in VS Code (the most specific level wins): the new host is in the user
  // settings but not in this window's tree, which must be said rather than look like a failed add.
  const levels = inspectSetting<unknown>('hosts');
  const workspaceList = levels?.workspaceFolderValue !== undefined || levels?.workspaceValue !== undefined;
  void vscode.window.showInformationMessage(
    workspaceList
      ? `Remote Runs: added host ${entry.name} to your user settings. This workspace sets its own remoteRuns.hosts, which VS Code uses instead of yours while it is open.`
      : `Remote Runs: added host ${entry.name}.`,
  );
}

function remotePathOf(node: TreeNode | undefined): string | undefined {
  switch (node?.type) {
    case 'run':
      return node.run.path;
    case 'checkpoint':
      return node.checkpoint.path;
    case 'file':
      return node.file.path;
    default:
      return undefined;
  }
}

async function copyRemotePath(node: TreeNode | undefined): Promise<void> {
  const p = remotePathOf(node);
  if (!p) throw new RemoteRunsError('not-found', 'Select a run, checkpoint or file in the Remote Runs tree first');
  await vscode.env.clipboard.writeText(p);
  vscode.window.setStatusBarMessage(`Copied ${p}`, 3000);
}

/** An OpenSSH terminal already inside the target (and in the run's folder when opened on a run). */
function openTerminal(deps: CommandDeps, node: TreeNode | undefined): void {
  if (!node || (node.type !== 'target' && node.type !== 'run')) {
    throw new RemoteRunsError('not-found', 'Select a target or a run in the Remote Runs tree first');
  }
  const hostConfig = deps.hosts.configs().find((h) => h.name === node.hostName);
  if (!hostConfig) throw new RemoteRunsError('not-found', `Host ${node.hostName} is no longer configured`);
  const resolved = deps.hosts.resolve(hostConfig);
  const target: TargetRef = node.type === 'target' ? node.target : node.target;
  const cwd = node.type === 'run' ? node.run.path : '';
  const args = terminalSshArgs(resolved.jumps, resolved.target, target, cwd, { knownHostsFiles: deps.knownHostsFiles() });
  const name = `${node.hostName}${target.kind === 'host' ? '' : ` ${target.kind}:${target.id}`}`;
  const term = vscode.window.createTerminal({ name: `Remote Runs: ${name}`, shellPath: 'ssh', shellArgs: args });
  term.show();
}
