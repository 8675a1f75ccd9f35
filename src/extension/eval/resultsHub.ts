/**
 * Where a run's eval records meet their viewers: the eval feature publishes each run's records whenever it lists
 * them (when a run is first shown, after an eval starts or ends, while some run); the metrics views (as points on
 * the charts) and the eval table watch a run's records. Watching a run nobody listed yet asks the eval feature to
 * list it. No `vscode` here: unit-tested as is.
 */
import { formatTarget, type TargetRef } from '../../core/types';
import { latestValues } from '../../core/eval/table';
import type { EvalRecord, EvalRunRef } from '../../core/eval/types';
import { Emitter, type Disposable, type Event } from '../../core/util/event';
import type { EvalPointWire, RunRefWire } from '../../shared/metricsProtocol';
import type { EvalSource } from '../../core/metrics/follow/runFeed';

/** One key per run: host, target and run folder. */
export function runIdentity(host: string, target: TargetRef, runPath: string): string {
  return `${host}\u0000${formatTarget(target)}\u0000${runPath}`;
}

/** The run a metrics view shows, as evals see it. */
export function evalRunOf(ref: RunRefWire): EvalRunRef {
  return { host: ref.hostName, target: { kind: ref.target.kind, id: ref.target.id }, run: { name: ref.runName, path: ref.runPath } };
}

/** Records → what the chart draws (in step order; each eval's last value per metric). */
export function toEvalPoints(records: readonly EvalRecord[]): EvalPointWire[] {
  return [...records]
    .sort((a, b) => a.step - b.step || a.startedAt - b.startedAt)
    .map((r) => ({
      id: r.id,
      profile: r.profile,
      step: r.step,
      checkpoint: r.checkpointPath.replace(/\/+$/, '').split('/').pop() ?? r.checkpointPath,
      startedAt: r.startedAt,
      state: r.state,
      values: latestValues(r.results),
    }));
}

interface Watched {
  run: EvalRunRef;
  listeners: Set<(records: readonly EvalRecord[]) => void>;
}

export class EvalResultsHub implements EvalSource, Disposable {
  private readonly known = new Map<string, readonly EvalRecord[]>();
  private readonly watched = new Map<string, Watched>();
  private readonly requested = new Emitter<EvalRunRef>();
  /** Someone watches a run whose evals are not known yet, or asks for them again (relist): list them. */
  readonly onDidRequest: Event<EvalRunRef> = this.requested.event;

  /** The run's records as last published, or undefined when never listed. */
  records(run: EvalRunRef): readonly EvalRecord[] | undefined {
    return this.known.get(runIdentity(run.host, run.target, run.run.path));
  }

  /** New records of a run (a listing finished): every watcher of that run hears of them. */
  publish(run: EvalRunRef, records: readonly EvalRecord[]): void {
    const id = runIdentity(run.host, run.target, run.run.path);
    this.known.set(id, records);
    for (const l of [...(this.watched.get(id)?.listeners ?? [])]) l(records);
  }

  /** Watch a run's records: the listener gets them now when known, and on every publish. */
  watchRecords(run: EvalRunRef, listener: (records: readonly EvalRecord[]) => void): Disposable {
    const id = runIdentity(run.host, run.target, run.run.path);
    let w = this.watched.get(id);
    if (!w) {
      w = { run, listeners: new Set() };
      this.watched.set(id, w);
    }
    w.listeners.add(listener);
    const known = this.known.get(id);
    if (known) listener(known);
    else this.requested.fire(run);
    const entry = w;
    return {
      dispose: () => {
        entry.listeners.delete(listener);
        if (entry.listeners.size === 0 && this.watched.get(id) === entry) this.watched.delete(id);
      },
    };
  }

  /** List a run's evals again (a card's Refresh: an eval recorded by the command line or another machine). */
  relist(run: EvalRunRef): void {
    this.requested.fire(run);
  }

  /** EvalSource for the metrics views: the run's evals as chart points. */
  watch(ref: RunRefWire, listener: (evals: EvalPointWire[]) => void): Disposable {
    return this.watchRecords(evalRunOf(ref), (records) => listener(toEvalPoints(records)));
  }

  /** Runs someone is watching now (relisted while their evals run). */
  watchedRuns(): EvalRunRef[] {
    return [...this.watched.values()].map((w) => w.run);
  }

  dispose(): void {
    this.requested.dispose();
    this.watched.clear();
  }
}
