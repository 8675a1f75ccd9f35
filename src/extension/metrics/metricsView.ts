/**
 * One webview showing metrics (a full panel or the inline view) bound to its presenter: it validates what the
 * webview sends, holds a lease on each shown run's live feed, and posts a snapshot after the ready handshake
 * and coalesced incremental updates after that.
 */
import type * as vscode from 'vscode';
import type { RunRefWire, RunRole, ToWebview, ViewMode } from '../../shared/metricsProtocol';
import type { Logger } from '../log';
import { MetricsPresenter, type PlateauSettings } from './presenter';
import type { EvalSource, FeedRegistry } from '../../core/metrics/follow/runFeed';
import type { ReferenceStore } from './referenceStore';
import { runKeyOf, whereOf } from '../../core/runRef';
import { parseFromWebview } from './validate';
import { chartCsv, chartPng, type ExportFile } from './exportContent';
import { displayName, displayText } from '../../shared/display';

export interface MetricsViewDeps {
  feeds: FeedRegistry;
  references: ReferenceStore;
  plateau(): PlateauSettings;
  log: Logger;
  /** Ask the user for a run to add (not one of `exclude`). */
  pickRun(exclude: string[]): Promise<RunRefWire | undefined>;
  /** Select the checkpoint at this step of the run in the tree. */
  revealCheckpoint(run: RunRefWire, step: number): Promise<void>;
  openPanel(run: RunRefWire): void;
  /** The step of the checkpoint of this run selected in the tree, if one is. */
  selectedStep(runKey: string): number | null;
  /** Each shown run's evals, drawn as points (none without it). */
  evals?: EvalSource;
  /** Open the table of a run's evals. */
  showEvalTable?(run: RunRefWire): void;
  /** The run's config as text lines (a full panel shows it collapsed under its header). */
  runConfig?(run: RunRefWire): Promise<string[]>;
  /** Ask where to save a chart's export and write it (chartExport.ts); without it, exports are refused with a log line. */
  saveExport?(file: ExportFile): Promise<void>;
  /** Tell the user something went wrong (a chart with nothing to export). */
  showError?(message: string): void;
}

/** Updates are coalesced: many polls finishing together cost one message. */
const FLUSH_MS = 50;

export class MetricsView implements vscode.Disposable {
  readonly presenter: MetricsPresenter;
  private readonly leases = new Map<string, { release(): void; sub: { dispose(): void }; evalSub?: { dispose(): void } }>();
  private readonly disposables: vscode.Disposable[] = [];
  private ready = false;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private disposed = false;
  /** Bytes of the last messages posted (JSON length), for benchmarks and the log. */
  lastPostedBytes = 0;

  constructor(
    private readonly webview: vscode.Webview,
    readonly mode: ViewMode,
    private readonly deps: MetricsViewDeps,
  ) {
    this.presenter = new MetricsPresenter({ plateau: deps.plateau, now: () => Date.now() });
    this.presenter.references = deps.references.lines;
    this.disposables.push(
      webview.onDidReceiveMessage((m) => void this.onMessage(m)),
      deps.references.onDidChange((lines) => {
        this.presenter.references = lines;
        this.post({ type: 'references', lines });
      }),
    );
  }

  get primary(): RunRefWire | undefined {
    return this.presenter.primary?.ref;
  }

  /** Show this run (the inline view switches runs; a panel sets it once). Undefined shows the empty message. */
  setPrimary(ref: RunRefWire | undefined, emptyMessage = 'Select or pin a run in the Remote Runs tree to see its metrics here.'): void {
    const current = this.presenter.primary;
    if (current && ref && current.key === runKeyOf(ref)) return;
    if (current) this.drop(current.key);
    if (ref) this.add(ref, 'primary');
    this.presenter.highlight = ref ? this.deps.selectedStep(runKeyOf(ref)) : null;
    if (!ref) this.post({ type: 'empty', message: emptyMessage });
    else this.sendSnapshot();
  }

  /** Add a run to compare with (or as the reference run). */
  addRun(ref: RunRefWire, role: Exclude<RunRole, 'primary'>): void {
    this.add(ref, role);
    this.sendSnapshot();
  }

  /** Highlight the checkpoint at this step (from the tree), with the values there. */
  highlight(step: number | null): void {
    this.presenter.highlight = step;
    this.post({ type: 'highlight', step, rows: step === null ? [] : this.presenter.valuesAt(step) });
  }

  private add(ref: RunRefWire, role: RunRole): void {
    const key = runKeyOf(ref);
    this.drop(key);
    const lease = this.deps.feeds.acquire(key, ref);
    const sub = lease.feed.onDidChange(() => this.scheduleFlush());
    this.presenter.addRun(ref, role, lease.feed);
    // After addRun: evals already known arrive synchronously and go into the coming snapshot.
    const evalSub = this.deps.evals?.watch(ref, (evals) => {
      const msg = this.presenter.setEvals(key, evals);
      if (msg) this.post(msg);
    });
    this.leases.set(key, { release: lease.release, sub, ...(evalSub ? { evalSub } : {}) });
  }

  private drop(key: string): void {
    this.presenter.removeRun(key);
    const lease = this.leases.get(key);
    if (lease) {
      lease.sub.dispose();
      lease.evalSub?.dispose();
      lease.release();
      this.leases.delete(key);
    }
  }

  private title(): string {
    const p = this.presenter.primary;
    return p ? `${displayName(p.ref.runName)} — ${displayName(whereOf(p.ref))}` : '';
  }

  private sendSnapshot(): void {
    if (!this.ready) return;
    const snap = this.presenter.snapshot(this.mode, this.title());
    if (snap) this.post(snap);
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.disposed) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flush();
    }, FLUSH_MS);
  }

  /** Post what changed since the last message (also called by tests and benchmarks). */
  flush(): void {
    if (!this.ready) return;
    const u = this.presenter.update();
    if (u) this.post(u);
  }

  /** The primary run's config, once per ready page (it is read over one remote command, then cached a while). */
  private async sendRunConfig(): Promise<void> {
    const p = this.presenter.primary;
    if (!p || !this.deps.runConfig) return;
    const lines = await this.deps.runConfig(p.ref);
    if (this.presenter.primary === p) this.post({ type: 'runConfig', runKey: p.key, lines: lines.map(displayText) });
  }

  private post(msg: ToWebview): void {
    if (!this.ready || this.disposed) return;
    this.lastPostedBytes = JSON.stringify(msg).length;
    void this.webview.postMessage(msg);
  }

  private async onMessage(raw: unknown): Promise<void> {
    const msg = parseFromWebview(raw);
    if (!msg) {
      this.deps.log.warn(`metrics view: ignored a malformed message from the webview: ${JSON.stringify(raw)?.slice(0, 200)}`);
      return;
    }
    try {
      switch (msg.type) {
        case 'ready':
          // The webview's settings are the only ones (a restored page brings those it kept); the presenter only
          // computes with them.
          this.ready = true;
          this.presenter.setView(msg.width, msg.range, msg.smoothing, msg.hidden, msg.directions);
          if (this.presenter.primary) this.sendSnapshot();
          else this.post({ type: 'empty', message: 'Select or pin a run in the Remote Runs tree to see its metrics here.' });
          if (this.mode === 'panel') void this.sendRunConfig();
          break;
        case 'view':
          if (this.presenter.setView(msg.width, msg.range, msg.smoothing, msg.hidden, msg.directions)) this.sendSnapshot();
          break;
        case 'hover':
          this.post({ type: 'values', seq: msg.seq, x: msg.x, rows: this.presenter.valuesAt(msg.x) });
          break;
        case 'selectCheckpoint': {
          const p = this.presenter.primary;
          if (p) await this.deps.revealCheckpoint(p.ref, msg.step);
          break;
        }
        case 'addRun': {
          const ref = await this.deps.pickRun(this.presenter.runs.map((r) => r.key));
          if (ref) this.addRun(ref, 'compare');
          break;
        }
        case 'removeRun':
          if (this.presenter.runs.find((r) => r.key === msg.runKey && r.role !== 'primary')) {
            this.drop(msg.runKey);
            this.sendSnapshot();
          }
          break;
        case 'setXColumn': {
          const run = this.presenter.runs.find((r) => r.key === msg.runKey);
          if (!run?.feed.setXPick) break;
          run.feed.setXPick(msg.key ?? undefined);
          // The logs are read again with the new x: the charts are redrawn whole (a column that became the x
          // is no longer a series).
          await run.feed.pollNow?.();
          this.sendSnapshot();
          break;
        }
        case 'setReferenceRun':
          if (this.presenter.setReferenceRun(msg.runKey)) this.sendSnapshot();
          break;
        case 'addReferenceLine':
        case 'removeReferenceLine':
          // A file that could not be read whole is never rewritten from what was read: said, nothing written.
          try {
            if (msg.type === 'addReferenceLine') await this.deps.references.add({ metric: msg.metric, value: msg.value, label: msg.label, source: msg.source });
            else await this.deps.references.remove(msg.id);
          } catch (e) {
            this.refuse(e instanceof Error ? e.message : String(e));
          }
          break;
        case 'openPanel': {
          const p = this.presenter.primary;
          if (p) this.deps.openPanel(p.ref);
          break;
        }
        case 'showEvalTable': {
          const p = this.presenter.primary;
          if (p) this.deps.showEvalTable?.(p.ref);
          break;
        }
        case 'exportCsv': {
          const file = chartCsv(this.presenter.runs, msg.metric, msg.runKeys);
          if (!file) this.refuse(`The ${msg.metric} chart has no logged series to save as CSV (eval results: Show Eval Results → Copy as CSV).`);
          else await this.save(file);
          break;
        }
        case 'exportPng': {
          const file = chartPng(this.presenter.primary?.ref.runName ?? 'chart', msg.metric, msg.png);
          if (!file) this.refuse(`The picture of the ${msg.metric} chart is not a PNG; nothing was saved.`);
          else await this.save(file);
          break;
        }
        case 'copyEvalTable':
        case 'compare':
          // The eval table's and the compare page's messages (evalTableView.ts, compareView.ts): not a metrics view's.
          break;
        default: {
          // Compile-time exhaustiveness: a message added to FromWebview and not handled here is a type error.
          const never: never = msg;
          void never;
        }
      }
    } catch (e) {
      this.deps.log.error(`metrics view: ${msg.type} failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async save(file: ExportFile): Promise<void> {
    if (!this.deps.saveExport) return this.refuse(`Saving ${file.name} is not available here.`);
    await this.deps.saveExport(file);
  }

  private refuse(message: string): void {
    this.deps.log.warn(`metrics view: ${message}`);
    this.deps.showError?.(message);
  }

  dispose(): void {
    this.disposed = true;
    if (this.flushTimer) clearTimeout(this.flushTimer);
    for (const key of [...this.leases.keys()]) this.drop(key);
    for (const d of this.disposables) d.dispose();
  }
}
