import * as vscode from 'vscode';
import type { HostConfig, TargetRef } from '../core/types';
import { RemoteRunsError } from '../core/types';
import type { HostDirectory } from '../core/hosts';
import { terminalKubectlArgs, terminalSshArgs } from '../core/terminal';
import type { KubectlAccess } from '../core/kube/kubectl';
import type { TreeNode } from '../core/tree/nodes';
import type { RunsTreeProvider } from './tree/treeProvider';
import { CommandIds } from './commandIds';
import { registerCommand } from './commandRunner';
import type { Logger } from './log';
import { inspectSetting, setUserSetting, setting, userSetting } from './settings';
import { clusterEntriesFor, listContexts } from '../core/kube/contexts';
import { isDns1123Label } from '../core/kube/names';
import type { RemoteRunsCore } from '../core/service';
import { showJobLogs } from './jobLogs';

export interface CommandDeps {
  tree: RunsTreeProvider;
  hosts: HostDirectory;
  log: Logger;
  showLog(): void;
  knownHostsFiles(): string[];
  /** The kubectl program (remoteRuns.kubectlPath, user settings only); undefined: `kubectl` from PATH. */
  kubectlPath(): string | undefined;
  /** The core (a job's logs are followed through its cluster's kubectl access). */
  core: RemoteRunsCore;
  /** How kubectl reaches the cluster of this name (service.ts kubectlAccess); undefined when it is not a cluster. */
  kubectlAccess(name: string): KubectlAccess | undefined;
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
    [CommandIds.addHost, () => addHost(deps)],
    [CommandIds.useKubeContexts, () => useKubeContexts(deps)],
    [CommandIds.copyRemotePath, (node?: TreeNode) => copyRemotePath(node)],
    [CommandIds.openTerminal, (node?: TreeNode) => openTerminal(deps, node)],
    [CommandIds.showJobLogs, (node?: TreeNode) => showJobLogs(deps.core, node)],
  ];
  return handlers.map(([id, h]) => registerCommand(id as never, h, log));
}

/** The first step of Add Host: an address, or the button that takes a Kubernetes context instead. */
function askAddress(): Promise<string | 'kube' | undefined> {
  return new Promise((resolve) => {
    const box = vscode.window.createInputBox();
    const kube: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon('cloud'), tooltip: 'Use a context from ~/.kube/config (a Kubernetes cluster)' };
    box.title = 'Add Host (1/3): address';
    box.prompt = 'Hostname, address, or an alias from ~/.ssh/config (user@host:port also works); the cloud button takes a Kubernetes context from ~/.kube/config';
    box.ignoreFocusOut = true;
    box.buttons = [kube];
    let answer: string | 'kube' | undefined;
    box.onDidChangeValue(() => {
      box.validationMessage = undefined;
    });
    box.onDidTriggerButton((b) => {
      if (b !== kube) return;
      answer = 'kube';
      box.hide();
    });
    box.onDidAccept(() => {
      if (!box.value.trim()) {
        box.validationMessage = 'Enter a host';
        return;
      }
      answer = box.value;
      box.hide();
    });
    box.onDidHide(() => {
      box.dispose();
      resolve(answer);
    });
    box.show();
  });
}

/** Names already in use anywhere (a workspace's hosts too), and the user's own list, which a new entry joins. */
function hostLists(): { existing: { name: string; context?: string }[]; mine: unknown[] } {
  const shown = setting<unknown>('hosts', []);
  const mine = userSetting<unknown>('hosts');
  return { existing: (Array.isArray(shown) ? shown : []) as { name: string; context?: string }[], mine: Array.isArray(mine) ? mine : [] };
}

/** What was added, and why it may not show: a workspace's list replaces the user's in VS Code (the most specific level wins). */
function addedMessage(what: string): string {
  const levels = inspectSetting<unknown>('hosts');
  const workspaceList = levels?.workspaceFolderValue !== undefined || levels?.workspaceValue !== undefined;
  return workspaceList
    ? `Remote Runs: added ${what} to your user settings. This workspace sets its own remoteRuns.hosts, which VS Code uses instead of yours while it is open.`
    : `Remote Runs: added ${what}.`;
}

/**
 * "Use Contexts from ~/.kube/config": the kubeconfig's contexts (kubectl config get-contexts -o name, through the
 * kubectl runner), picked, each with the namespace to show (empty: every namespace the user may list), appended to
 * the user's `remoteRuns.hosts` as cluster entries (kube/contexts.ts names them apart from every host).
 */
async function useKubeContexts(deps: CommandDeps): Promise<void> {
  const kubectl = deps.kubectlPath();
  const contexts = await listContexts(kubectl ? { kubectl } : {});
  const { existing, mine } = hostLists();
  const used = new Set(existing.map((h) => h.context).filter((c): c is string => typeof c === 'string'));
  const picks = await vscode.window.showQuickPick(
    contexts.map((c) => ({ label: c, ...(used.has(c) ? { description: 'already a cluster entry' } : {}) })),
    { title: 'Use Contexts from ~/.kube/config', placeHolder: 'The kubeconfig contexts to show as clusters (Space to pick several)', canPickMany: true, ignoreFocusOut: true },
  );
  if (!picks || picks.length === 0) return;
  const chosen: { context: string; namespace?: string }[] = [];
  for (const [i, p] of picks.entries()) {
    const ns = await vscode.window.showInputBox({
      title: `Namespace for ${p.label}${picks.length > 1 ? ` (${i + 1}/${picks.length})` : ''}`,
      prompt: 'The namespace whose jobs to show; empty: every namespace you may list (needs "list" on pods at the cluster scope)',
      ignoreFocusOut: true,
      validateInput: (v) => (!v.trim() || isDns1123Label(v.trim()) ? undefined : 'A namespace is lower-case letters, digits and "-", at most 63'),
    });
    if (ns === undefined) return;
    chosen.push({ context: p.label, ...(ns.trim() ? { namespace: ns.trim() } : {}) });
  }
  const entries = clusterEntriesFor(chosen, existing.map((h) => h.name));
  await setUserSetting('hosts', [...mine, ...entries]);
  void vscode.window.showInformationMessage(addedMessage(entries.length === 1 ? `cluster ${entries[0].name}` : `clusters ${entries.map((e) => e.name).join(', ')}`));
}

/** A short quick-input flow that appends a host to the `remoteRuns.hosts` setting. */
async function addHost(deps: CommandDeps): Promise<void> {
  // The new entry joins the user's own list only: a workspace's hosts are never copied into the user's settings.
  const { existing, mine } = hostLists();
  const host = await askAddress();
  if (host === 'kube') return useKubeContexts(deps);
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
  await setUserSetting('hosts', [...mine, entry]);
  // The new host is in the user settings but may not be in this window's tree, which must be said rather than look
  // like a failed add.
  void vscode.window.showInformationMessage(addedMessage(`host ${entry.name}`));
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
  if (node.target.kind === 'pod') {
    // A pod container has no SSH login: its terminal is the user's kubectl, `exec -it`, on this machine.
    const access = deps.kubectlAccess(node.hostName);
    if (!access) throw new RemoteRunsError('not-found', `Cluster ${node.hostName} is no longer configured`);
    const { program, args } = terminalKubectlArgs(access, node.target, node.type === 'run' ? node.run.path : '');
    const term = vscode.window.createTerminal({ name: `Remote Runs: ${node.hostName} ${node.target.id}`, shellPath: program, shellArgs: args });
    term.show();
    return;
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
