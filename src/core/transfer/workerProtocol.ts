/**
 * Messages between a download and its transfer worker threads (transferWorker.ts). Everything here is plain data
 * that structured cloning copies; secrets are in memory only, as in the main thread.
 */
import type { ConnectOptions } from '../ssh/connection';
import type { ResolvedHost } from '../ssh/types';
import type { ErrorKind, TargetRef } from '../types';
import type { RangeHashes, RangeJob } from './lanes';
import type { TransportKind } from './types';

/** workerData: how to log in (never prompting) and what kind of lane to run. */
export interface WorkerInit {
  host: ResolvedHost;
  settings: Omit<ConnectOptions, 'prompter' | 'logger' | 'secrets' | 'signal'>;
  /** Per hop, jumps first: a cached password and unlocked keys as parseable text, by path (workerKeys.ts). */
  hops: { password?: string; keys: [path: string, text: string][] }[];
  target: TargetRef;
  transport: TransportKind;
}

export type ToWorker = { type: 'fetch'; id: number; job: RangeJob & { partPath: string } } | { type: 'stop' };

/** A RemoteRunsError as data. */
export interface ErrorData {
  kind: ErrorKind;
  message: string;
  detail: Record<string, string | number | string[]>;
}

export type FromWorker =
  | { type: 'ready' }
  /** The connection could not be opened (e.g. it would need a prompt): the download does without this lane. */
  | { type: 'failed'; error: ErrorData }
  /** Ranges now on disk, as flat [position, length, position, length, …]. */
  | { type: 'wrote'; id: number; ranges: number[] }
  | { type: 'done'; id: number; hashes?: RangeHashes }
  | { type: 'error'; id: number; error: ErrorData }
  | { type: 'log'; level: 'info' | 'warn' | 'error'; message: string };
