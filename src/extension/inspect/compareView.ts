/**
 * "Compare Checkpoints": one webview panel per pair (A, B) with what differs between their tensors (compareHtml),
 * each side read from its headers over one remote command (the tree's inspect, cached per file) and shown as soon
 * as it is read. Like every webview of the extension it gets the shared options and CSP (webviewSetup.ts, html.ts)
 * and validates what its page posts with parseFromWebview.
 */
import * as vscode from 'vscode';
import type { Inspection } from '../../core/inspect';
import { formatTarget, isRemoteRunsError, type Checkpoint, type TargetRef } from '../../core/types';
import type { Logger } from '../log';
import { parseFromWebview } from '../metrics/validate';
import { KeyedPanels, setupWebviewPage } from '../metrics/webviewSetup';
import type { PickedCheckpoint } from '../pickCheckpoint';
import { compareHtml, type SideState } from './compareHtml';

export const COMPARE_PANEL_TYPE = 'remoteRuns.compare';

export interface CompareDeps {
  extensionUri: vscode.Uri;
  log: Logger;
  /** What a checkpoint holds (the tree's inspect: one remote command, cached per path, size and mtime). */
  inspect(hostName: string, target: TargetRef, checkpoint: Checkpoint): Promise<Inspection>;
  /** Pick another checkpoint (host → target → run → checkpoint); undefined when the user cancels. */
  pick(title: string): Promise<PickedCheckpoint | undefined>;
}

export function checkpointAddress(c: PickedCheckpoint): string {
  return `${c.hostName}/${formatTarget(c.target)}/${c.run.name}/${c.checkpoint.name}`;
}

const identity = (c: PickedCheckpoint): string => `${c.hostName}\0${formatTarget(c.target)}\0${c.checkpoint.path}`;

class CompareView implements vscode.Disposable {
  private sides: { a: SideState; b: SideState } = { a: { state: 'reading' }, b: { state: 'reading' } };
  /** Bumped by every (re)load: a read that finishes after a newer one started is dropped. */
  private generation = 0;
  private disposed = false;
  private readonly subs: vscode.Disposable[] = [];

  constructor(
    readonly panel: vscode.WebviewPanel,
    private a: PickedCheckpoint,
    private b: PickedCheckpoint,
    private readonly deps: CompareDeps,
    private readonly onPairChanged: (view: CompareView) => void,
  ) {
    this.subs.push(panel.webview.onDidReceiveMessage((m) => void this.onMessage(m)));
    this.load();
  }

  get key(): string {
    return pairKey(this.a, this.b);
  }

  /** Read both sides (again); each is shown as soon as it is read. */
  load(): void {
    const gen = ++this.generation;
    this.sides = { a: { state: 'reading' }, b: { state: 'reading' } };
    this.panel.title = `Compare: ${this.a.checkpoint.name} ↔ ${this.b.checkpoint.name}`;
    this.render();
    for (const side of ['a', 'b'] as const) {
      const ref = this[side];
      void this.deps.inspect(ref.hostName, ref.target, ref.checkpoint).then(
        (inspection) => this.settle(gen, side, { state: 'read', inspection }),
        (e: unknown) => {
          const message = e instanceof Error ? e.message : String(e);
          this.deps.log.warn(`compare: reading ${checkpointAddress(ref)} failed: ${message}`);
          this.settle(gen, side, { state: 'failed', kind: isRemoteRunsError(e) ? e.kind : undefined, message });
        },
      );
    }
  }

  private settle(gen: number, side: 'a' | 'b', state: SideState): void {
    if (gen !== this.generation || this.disposed) return;
    this.sides = { ...this.sides, [side]: state };
    this.render();
  }

  private render(): void {
    setupWebviewPage(this.panel.webview, this.deps.extensionUri, 'compare.css', (parts) =>
      compareHtml({
        ...parts,
        a: { address: checkpointAddress(this.a), side: this.sides.a },
        b: { address: checkpointAddress(this.b), side: this.sides.b },
        sameCheckpoint: identity(this.a) === identity(this.b),
      }),
    );
  }

  private async onMessage(raw: unknown): Promise<void> {
    const msg = parseFromWebview(raw);
    if (!msg) {
      this.deps.log.warn(`compare: ignored a malformed message from the webview: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    // The compare page posts nothing else; another page's message here is ignored.
    if (msg.type !== 'compare') return;
    switch (msg.action) {
      case 'swap': {
        [this.a, this.b] = [this.b, this.a];
        // What was read stays read: only which side it is shown on changes.
        this.generation++;
        this.sides = { a: this.sides.b, b: this.sides.a };
        this.panel.title = `Compare: ${this.a.checkpoint.name} ↔ ${this.b.checkpoint.name}`;
        this.onPairChanged(this);
        this.render();
        if (this.sides.a.state === 'reading' || this.sides.b.state === 'reading') this.load();
        break;
      }
      case 'changeB': {
        try {
          const picked = await this.deps.pick(`Compare ${this.a.checkpoint.name} with`);
          if (!picked || this.disposed) return;
          this.b = picked;
          this.onPairChanged(this);
          this.load();
        } catch (e) {
          void vscode.window.showErrorMessage(`Remote Runs: ${e instanceof Error ? e.message : String(e)}`);
        }
        break;
      }
      case 'retry':
        this.load();
        break;
      default: {
        // Compile-time exhaustiveness: an action added to CompareAction and not handled here is a type error.
        const never: never = msg.action;
        void never;
      }
    }
  }

  dispose(): void {
    this.disposed = true;
    this.subs.forEach((s) => s.dispose());
  }
}

function pairKey(a: PickedCheckpoint, b: PickedCheckpoint): string {
  return `${identity(a)}\0\0${identity(b)}`;
}

export class ComparePanels implements vscode.Disposable {
  private readonly panels: KeyedPanels<CompareView>;

  constructor(private readonly deps: CompareDeps) {
    this.panels = new KeyedPanels(COMPARE_PANEL_TYPE, deps.extensionUri);
  }

  /** Open (or reveal) the comparison of A with B. */
  show(a: PickedCheckpoint, b: PickedCheckpoint): void {
    const key = pairKey(a, b);
    const existing = this.panels.reveal(key);
    if (existing) {
      existing.load();
      return;
    }
    // A view whose pair changes (its sides swapped or re-picked) is kept under its new pair.
    this.panels.create(key, `Compare: ${a.checkpoint.name} ↔ ${b.checkpoint.name}`, (panel, rekey) => new CompareView(panel, a, b, this.deps, (v) => rekey(v.key)));
  }

  dispose(): void {
    this.panels.dispose();
  }
}
