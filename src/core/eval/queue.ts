/**
 * Evaluating several checkpoints in one go: which checkpoints ("every checkpoint since…", or a multi-select in the
 * tree) and one queue that runs them one after the other through the ordinary eval path (start, then wait for its
 * end), so a host's GPU is never asked for several evals at once and each result is shown as it finishes. Pure of
 * any UI: the extension passes how to start one, how to wait for it and what to say.
 */
import { checkpointOrder, type Checkpoint, type Run } from '../types';

/**
 * The step checkpoints of a run from `fromStep` on (inclusive), in step order: complete ones only (one still being
 * written is not evaluated), aliases left out (they name a save that is listed itself).
 */
export function checkpointsSince(run: Pick<Run, 'checkpoints'>, fromStep: number): Checkpoint[] {
  return run.checkpoints.filter((c) => c.kind === 'step' && c.step !== null && c.step >= fromStep && c.incomplete === undefined).sort((a, b) => checkpointOrder(a) - checkpointOrder(b));
}

/** Checkpoints picked in the tree, each once (by path), in step order. */
export function queueOrder<T extends { checkpoint: Checkpoint }>(items: readonly T[]): T[] {
  const seen = new Set<string>();
  const out: T[] = [];
  for (const it of items) {
    if (seen.has(it.checkpoint.path)) continue;
    seen.add(it.checkpoint.path);
    out.push(it);
  }
  return out.sort((a, b) => checkpointOrder(a.checkpoint) - checkpointOrder(b.checkpoint));
}

export interface QueueSteps<T, S> {
  /** Start the eval of one item (undefined: skipped, e.g. the user declined a download it needs). */
  start(item: T, signal: AbortSignal): Promise<S | undefined>;
  /** Resolves when the started eval has ended (passed, failed, lost). */
  ended(started: S, signal: AbortSignal): Promise<void>;
  /** Before each item: its index (from 0) and the count. */
  onItem?(item: T, index: number, count: number): void;
  /** An item's eval ended (its result is there to show), or it could not start (`error`). */
  onDone?(item: T, outcome: { started?: S; error?: unknown }): void;
}

export interface QueueReport {
  started: number;
  skipped: number;
  failed: number;
  /** Items not reached because the queue was cancelled. */
  notReached: number;
}

/**
 * Run the items one at a time. An item that fails to start is reported and the queue goes on; a cancel stops the
 * queue between items (the eval running then goes on on its target: it is its own process there).
 */
export async function runEvalQueue<T, S>(items: readonly T[], steps: QueueSteps<T, S>, signal: AbortSignal): Promise<QueueReport> {
  const report: QueueReport = { started: 0, skipped: 0, failed: 0, notReached: 0 };
  for (let i = 0; i < items.length; i++) {
    if (signal.aborted) {
      report.notReached = items.length - i;
      break;
    }
    const item = items[i]!;
    steps.onItem?.(item, i, items.length);
    let started: S | undefined;
    try {
      started = await steps.start(item, signal);
    } catch (e) {
      if (signal.aborted) {
        report.notReached = items.length - i;
        break;
      }
      report.failed++;
      steps.onDone?.(item, { error: e });
      continue;
    }
    if (started === undefined) {
      report.skipped++;
      continue;
    }
    report.started++;
    try {
      await steps.ended(started, signal);
    } catch (e) {
      if (signal.aborted) {
        report.notReached = items.length - i - 1;
        break;
      }
      steps.onDone?.(item, { started, error: e });
      continue;
    }
    steps.onDone?.(item, { started });
  }
  return report;
}
