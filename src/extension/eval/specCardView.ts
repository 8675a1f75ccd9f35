/**
 * "Open Speculative-Decoding Card": one webview panel per run with its card (specCardHtml.ts), built by the same
 * collection as `remote-runs eval --card` (core/eval/spec/card.ts specCardOf) from the run's eval records as the
 * results hub publishes them and the paper and reference rows of the references file (ReferenceStore, its one owner
 * in the editor). Redrawn when the run's evals are listed again (an eval recorded) and when the file changes. Rows
 * entered in the page's form are validated by the file's one validator (references.ts specRowFromForm) and written
 * through the ReferenceStore; a file read only in part is never rewritten, and the page says why.
 */
import * as vscode from 'vscode';
import { cardEmptyReason, enteredRowOrder, specCardOf } from '../../core/eval/spec/card';
import type { EvalRecord, EvalRunRef } from '../../core/eval/types';
import { specRowFromForm, specRowIds } from '../../core/metrics/references';
import { formatTarget } from '../../core/types';
import type { SpecCardFromWebview, SpecCardToWebview } from '../../shared/specCardProtocol';
import { CommandIds } from '../commandIds';
import { registerCommand } from '../commandRunner';
import type { DisposableStore } from '../lifecycle';
import type { Logger } from '../log';
import type { ReferenceStore } from '../metrics/referenceStore';
import { pickRun, runRefOfArg } from '../metrics/treeGlue';
import { KeyedPanels, setupWebviewPage } from '../metrics/webviewSetup';
import type { RunsTreeProvider } from '../tree/treeProvider';
import { evalRunOf, runIdentity, type EvalResultsHub } from './resultsHub';
import { specCardHtml, specCardSectionHtml, type SpecCardState } from './specCardHtml';
import { parseSpecCardFromWebview } from './specCardMessages';

export const SPEC_CARD_PANEL_TYPE = 'remoteRuns.specCard';

/** A run's address as the card and the references file name it: host/target/run (as `remote-runs eval --card`). */
export function runAddress(run: EvalRunRef): string {
  return `${run.host}/${formatTarget(run.target)}/${run.run.name}`;
}

interface CardDeps {
  extensionUri: vscode.Uri;
  results: EvalResultsHub;
  references: ReferenceStore;
  log: Logger;
}

/** One open card: its panel, the run's records as last listed, and the section the page shows. */
class SpecCardView implements vscode.Disposable {
  private records: readonly EvalRecord[] | undefined;
  private shown = '';
  private readonly address: string;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    readonly panel: vscode.WebviewPanel,
    private readonly run: EvalRunRef,
    private readonly deps: CardDeps,
  ) {
    this.address = runAddress(run);
    this.shown = specCardSectionHtml(this.state());
    setupWebviewPage(panel.webview, deps.extensionUri, 'specCard.css', (parts) => specCardHtml({ ...parts, run: this.address, state: this.state() }));
    this.subs.push(
      panel.webview.onDidReceiveMessage((m) => void this.onMessage(m)),
      deps.references.onDidChangeSpecRows(() => this.push()),
      deps.results.watchRecords(run, (records) => {
        this.records = records;
        this.push();
      }),
    );
  }

  private state(): SpecCardState {
    const all = this.deps.references.specRows;
    const card = specCardOf({ run: this.address, records: this.records ?? [], references: all });
    // Why there is no checkpoint row is said once, as the card's empty state, not again among its notes.
    const emptyReason = this.records ? cardEmptyReason(this.address, this.records) : undefined;
    const empty = cardEmptyReason(this.address, this.records ?? []);
    card.notes = card.notes.filter((n) => n !== empty);
    const ids = specRowIds(all);
    const order = enteredRowOrder(this.address, all);
    const first = card.rows.length - order.length;
    const uri = this.deps.references.uri;
    return {
      card,
      rowIds: card.rows.map((_, i) => (i < first ? undefined : ids[order[i - first]])),
      listing: this.records === undefined,
      ...(emptyReason ? { emptyReason } : {}),
      ...(this.deps.references.writeBlocked ? { blocked: this.deps.references.writeBlocked } : {}),
      keptIn: uri ? uri.fsPath : 'memory for this session (no workspace folder is open to hold the references file)',
    };
  }

  /** Send the card section when it changed (or always: the page was loaded again and shows the first one). */
  private push(always = false): void {
    const html = specCardSectionHtml(this.state());
    if (!always && html === this.shown) return;
    this.shown = html;
    this.post({ type: 'card', html });
  }

  private post(m: SpecCardToWebview): void {
    void this.panel.webview.postMessage(m);
  }

  private async onMessage(raw: unknown): Promise<void> {
    const msg = parseSpecCardFromWebview(raw);
    if (!msg) {
      this.deps.log.warn(`speculative-decoding card: ignored a malformed message from the webview: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    await this.handle(msg);
  }

  private async handle(msg: SpecCardFromWebview): Promise<void> {
    switch (msg.type) {
      case 'ready':
        this.push(true);
        return;
      case 'refresh':
        this.deps.results.relist(this.run);
        return;
      case 'saveRow': {
        const got = specRowFromForm(this.address, msg.kind, msg.fields);
        if ('problems' in got) {
          this.post({ type: 'formError', problems: got.problems });
          return;
        }
        try {
          await this.deps.references.addSpecRow(got.row);
        } catch (e) {
          // The file holds what could not be read (or cannot be written): nothing was written, and the form says why.
          const message = e instanceof Error ? e.message : String(e);
          this.deps.log.warn(`speculative-decoding card of ${this.address}: row not saved: ${message}`);
          this.post({ type: 'formError', problems: [{ field: '', message }] });
          this.push();
          return;
        }
        this.deps.log.info(`speculative-decoding card of ${this.address}: ${got.row.kind} row "${got.row.label}" saved`);
        this.post({ type: 'saved' });
        return;
      }
      case 'removeRow':
        try {
          await this.deps.references.removeSpecRow(msg.id);
        } catch (e) {
          const message = e instanceof Error ? e.message : String(e);
          this.deps.log.warn(`speculative-decoding card of ${this.address}: row not removed: ${message}`);
          void vscode.window.showErrorMessage(`Remote Runs: the row was not removed: ${message}`);
          this.push();
        }
        return;
      default: {
        const never: never = msg;
        return never;
      }
    }
  }

  dispose(): void {
    this.subs.forEach((s) => s.dispose());
  }
}

export class SpecCardPanels implements vscode.Disposable {
  private readonly panels: KeyedPanels<SpecCardView>;

  constructor(private readonly deps: CardDeps) {
    this.panels = new KeyedPanels(SPEC_CARD_PANEL_TYPE, deps.extensionUri);
  }

  /** Open (or reveal) the card of a run. */
  show(run: EvalRunRef): void {
    const id = runIdentity(run.host, run.target, run.run.path);
    if (this.panels.reveal(id)) return;
    this.panels.create(id, `Card: ${run.run.name}`, (panel) => new SpecCardView(panel, run, this.deps));
  }

  dispose(): void {
    this.panels.dispose();
  }
}

export interface SpecCardDeps {
  store: DisposableStore;
  tree: RunsTreeProvider;
  log: Logger;
  context: vscode.ExtensionContext;
  results: EvalResultsHub;
  references: ReferenceStore;
}

/** The command and its panels. */
export function registerSpecCard(deps: SpecCardDeps): void {
  const { store, tree, log, context, results, references } = deps;
  const cards = store.register(new SpecCardPanels({ extensionUri: context.extensionUri, results, references, log }));
  store.register(
    registerCommand(CommandIds.openSpecCard, async (arg?: unknown) => {
      const ref = runRefOfArg(arg) ?? (await pickRun(tree, 'Open the speculative-decoding card of a run'));
      if (ref) cards.show(evalRunOf(ref));
    }, log),
  );
}
