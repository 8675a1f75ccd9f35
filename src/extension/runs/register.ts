/**
 * Run-level views: "Show Run Table" (a target's runs with state, latest step, last values and the config keys that
 * differ) and the run config the tree's run tooltip shows. Both read through RunFactsReader, over the host's one
 * pooled connection.
 */
import * as vscode from 'vscode';
import type { HostDirectory } from '../../core/hosts';
import type { RemoteRunsCore } from '../../core/service';
import { RemoteRunsError, formatTarget, type TargetRef } from '../../core/types';
import type { TreeNode } from '../../core/tree/nodes';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import { quickPick } from '../pickCheckpoint';
import type { RunFactsReader } from './runFacts';
import { RunTablePanels } from './runTableView';

export interface RunsDeps {
  store: DisposableStore;
  core: RemoteRunsCore;
  hosts: HostDirectory;
  reader: RunFactsReader;
  log: Logger;
  context: vscode.ExtensionContext;
}

export function registerRuns(deps: RunsDeps): void {
  const { store, core, hosts, reader, log, context } = deps;
  const tables = store.register(new RunTablePanels({ core, reader, extensionUri: context.extensionUri, log }));
  store.register(
    registerCommand(CommandIds.showRunTable, async (node?: TreeNode) => {
      let place: { hostName: string; target: TargetRef } | undefined;
      if (node?.type === 'target') place = { hostName: node.hostName, target: { kind: node.target.kind, id: node.target.id } };
      else if (node && (node.type === 'run' || node.type === 'checkpoint')) place = { hostName: node.hostName, target: node.target };
      else {
        const all = hosts.all();
        if (all.length === 0) throw new RemoteRunsError('bad-config', 'No hosts are configured: add one with "Remote Runs: Add Host"');
        const hostName = all.length === 1 ? all[0]!.config.name : await quickPick('Show Run Table (1/2): host', all.map((h) => ({ label: h.config.name, description: h.config.host, value: h.config.name })), 'Pick a host');
        if (!hostName) return;
        const targets = (await core.listTargets(hostName)).targets.filter((t) => t.state !== 'stopped');
        const target = targets.length === 1 ? targets[0] : await quickPick('Show Run Table (2/2): where', targets.map((t) => ({ label: formatTarget(t), description: t.kind === 'host' ? 'bare host' : `${t.label} · ${t.state}`, value: t as TargetRef })), 'Pick the host or a container');
        if (!target) return;
        place = { hostName, target: { kind: target.kind, id: target.id } };
      }
      tables.show(place);
    }, log),
  );
}
