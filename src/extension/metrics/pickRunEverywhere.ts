/**
 * "Add run…" of a metrics panel: a quick pick over the runs with metrics on every configured host, listed when it
 * opens (core/tree/runsEverywhere.ts), filling in as each host answers. Places that could not be listed are shown
 * marked (unreachable, login refused…) and cannot be picked.
 */
import * as vscode from 'vscode';
import { addRunChoices, listRunsEverywhere, type PlaceRuns, type RunChoice, type RunsSource } from '../../core/tree/runsEverywhere';
import { toRunRef } from '../../core/runRef';
import type { RunRefWire } from '../../shared/metricsProtocol';

interface ChoiceItem extends vscode.QuickPickItem {
  choice: RunChoice;
}

export async function pickRunEverywhere(source: RunsSource, hostNames: readonly string[], title: string, exclude: readonly string[] = []): Promise<RunRefWire | undefined> {
  const qp = vscode.window.createQuickPick<ChoiceItem>();
  qp.title = title;
  qp.placeholder = hostNames.length ? `Listing runs with metrics on ${hostNames.length} host${hostNames.length === 1 ? '' : 's'}…` : 'No hosts are configured';
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  qp.ignoreFocusOut = true;
  qp.busy = hostNames.length > 0;
  const controller = new AbortController();
  const places: PlaceRuns[] = [];
  const render = (): void => {
    qp.items = addRunChoices(places, exclude).map((c) => ({
      label: c.kind === 'run' ? c.label : `$(debug-disconnect) ${c.label}`,
      description: c.description,
      detail: c.detail,
      alwaysShow: c.kind === 'unreachable',
      choice: c,
    }));
  };
  const listed = listRunsEverywhere(source, hostNames, (p) => {
    places.push(p);
    render();
  }, controller.signal).then(() => {
    qp.busy = false;
    qp.placeholder = qp.items.some((i) => i.choice.kind === 'run') ? 'Pick a run to compare' : 'No runs with metrics logs were found on the hosts that answered';
  });
  try {
    return await new Promise<RunRefWire | undefined>((resolve) => {
      qp.onDidAccept(() => {
        const c = qp.selectedItems[0]?.choice;
        // A marked place is information, not a choice: the pick stays open.
        if (!c || c.kind !== 'run') return;
        resolve(toRunRef(c.hostName, c.target, c.run));
        qp.hide();
      });
      qp.onDidHide(() => resolve(undefined));
      qp.show();
    });
  } finally {
    controller.abort();
    qp.dispose();
    void listed.catch(() => undefined);
  }
}
