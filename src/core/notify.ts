/**
 * Notifications, each kind off by default (user settings `remoteRuns.notifications.*`): what changed between two
 * looks at the same thing. Pure: the extension looks (listings, feeds, eval records) and says what these return.
 * Nothing is announced on the first look (a window that opens is not told about every checkpoint that exists).
 */
import type { Checkpoint, Run } from './types';
import type { EvalRecord } from './eval/types';

export type NotificationKind = 'newCheckpoint' | 'stoppedLogging' | 'evalFinished';

/** The setting of each kind, below `remoteRuns.` (package.json contributes them, boolean, default false, user scope). */
export const NOTIFICATION_SETTINGS: Readonly<Record<NotificationKind, string>> = {
  newCheckpoint: 'notifications.newCheckpoint',
  stoppedLogging: 'notifications.stoppedLogging',
  evalFinished: 'notifications.evalFinished',
};

/**
 * Checkpoints of `after` that `before` did not have (by path) and that are complete; a checkpoint that was listed
 * while being written counts once it is complete. Undefined `before`: the first look, nothing is new.
 */
export function newCheckpoints(before: Pick<Run, 'checkpoints'> | undefined, after: Pick<Run, 'checkpoints'>): Checkpoint[] {
  if (!before) return [];
  const complete = new Set(before.checkpoints.filter((c) => c.incomplete === undefined).map((c) => c.path));
  return after.checkpoints.filter((c) => c.incomplete === undefined && c.kind !== 'alias' && !complete.has(c.path));
}

/** Evals that were pending or running in `before` and have ended in `after` (passed, failed, lost). */
export function finishedEvals(before: readonly EvalRecord[] | undefined, after: readonly EvalRecord[]): EvalRecord[] {
  if (!before) return [];
  const live = new Set(before.filter((r) => r.state === 'running' || r.state === 'pending').map((r) => r.id));
  return after.filter((r) => live.has(r.id) && r.state !== 'running' && r.state !== 'pending');
}

/** What a feed says about a run's writing, for stoppedLogging. */
export interface LoggingFacts {
  /** When it last wrote (this process's clock); undefined until known. */
  lastLoggedAt: number | undefined;
  /** How long without a write makes it stopped (liveness.ts stoppedAfterMs). */
  stoppedAfterMs: number;
  /** The connection to its host: while it is not connected nothing can be told (a lost connection is not a stop). */
  connected: boolean;
}

/** Whether the run has stopped logging now; undefined when it cannot be told (not connected, nothing known). */
export function loggingStopped(f: LoggingFacts, now: number): boolean | undefined {
  if (!f.connected || f.lastLoggedAt === undefined) return undefined;
  return now - f.lastLoggedAt > f.stoppedAfterMs;
}

/** A run went from logging to stopped between two looks (from unknown it does not: that is the first look). */
export function becameStopped(before: boolean | undefined, now: boolean | undefined): boolean {
  return before === false && now === true;
}
