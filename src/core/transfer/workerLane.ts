/**
 * The main thread's side of a transfer worker (transferWorker.ts): a Lane whose bytes are received, decrypted and
 * written in another thread, reported back as written ranges. Starting one opens the worker's own SSH connection
 * with the pool's already-unlocked secrets (ConnectionPool.siblingLogin), never a prompt.
 */
import * as path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../util/worker';
import type { Logger } from '../ssh/types';
import type { PoolHost, ConnectionPool } from '../ssh/pool';
import { RemoteRunsError, type TargetRef } from '../types';
import type { Lane, RangeHashes, RangeJob, WriteFn } from './lanes';
import { keyToText } from './workerKeys';
import type { ErrorData, FromWorker, ToWorker, WorkerInit } from './workerProtocol';
import type { TransportKind } from './types';

/** How long a stopped worker gets to close its channels and connection before it is terminated. */
const STOP_GRACE_MS = 1000;

/** What a worker needs to log in and run a lane, from the pool's shared connection to `host`. */
export function workerInit(pool: ConnectionPool, host: PoolHost, target: TargetRef, transport: TransportKind): WorkerInit {
  const login = pool.siblingLogin(host);
  return {
    host: login.host,
    settings: login.settings,
    hops: login.hops.map((h) => ({
      ...(h.password !== undefined ? { password: h.password } : {}),
      keys: [...h.keys].flatMap(([p, key]) => {
        const text = keyToText(key);
        return text ? [[p, text] as [string, string]] : [];
      }),
    })),
    target,
    transport,
  };
}

/**
 * The worker's script: dist/transferWorker.js beside the bundle (extension, CLI), else the TypeScript entry
 * (spawnWorker); REMOTE_RUNS_TRANSFER_WORKER names another script (the benchmark's fresh bundle).
 */
function spawn(init: WorkerInit): Worker {
  return spawnWorker(
    { bundled: path.join(__dirname, 'transferWorker.js'), source: path.join(__dirname, 'transferWorker.ts'), override: process.env.REMOTE_RUNS_TRANSFER_WORKER },
    init,
  );
}

function toError(e: ErrorData): RemoteRunsError {
  return new RemoteRunsError(e.kind, e.message, e.detail);
}

/**
 * Start a worker and wait until its connection is up. Rejects with the connection's RemoteRunsError (e.g.
 * `auth-failed` where a login would need a prompt) or `cancelled`; the download then does without this lane.
 */
export function startWorkerLane(init: WorkerInit, signal: AbortSignal, logger?: Logger): Promise<Lane> {
  return new Promise<Lane>((resolve, reject) => {
    if (signal.aborted) return reject(new RemoteRunsError('cancelled', 'Download cancelled'));
    let worker: Worker;
    try {
      worker = spawn(init);
    } catch (e) {
      return reject(new RemoteRunsError('protocol', `Cannot start a transfer worker: ${e instanceof Error ? e.message : String(e)}`));
    }
    const settle = (e?: RemoteRunsError): void => {
      signal.removeEventListener('abort', onAbort);
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
      if (!e) return resolve(new WorkerLane(worker, logger));
      void worker.terminate();
      reject(e);
    };
    const onAbort = (): void => settle(new RemoteRunsError('cancelled', 'Download cancelled'));
    const onMessage = (m: FromWorker): void => {
      if (m.type === 'ready') settle();
      else if (m.type === 'failed') settle(toError(m.error));
      else if (m.type === 'log') logger?.[m.level](m.message);
    };
    const onError = (e: Error): void => settle(new RemoteRunsError('protocol', `Transfer worker failed: ${e.message}`));
    const onExit = (): void => settle(new RemoteRunsError('protocol', 'Transfer worker stopped before it connected'));
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}

interface PendingJob {
  resolve(hashes: RangeHashes | undefined): void;
  reject(e: RemoteRunsError): void;
  written(position: number, length: number): void;
}

class WorkerLane implements Lane {
  private nextId = 1;
  private readonly jobs = new Map<number, PendingJob>();
  private closed = false;

  constructor(
    private readonly worker: Worker,
    private readonly logger?: Logger,
  ) {
    worker.on('message', (m: FromWorker) => this.onMessage(m));
    worker.on('error', (e: Error) => this.failAll(new RemoteRunsError('protocol', `Transfer worker failed: ${e.message}`)));
    worker.on('exit', () => this.failAll(new RemoteRunsError('protocol', 'Transfer worker stopped')));
  }

  fetch(job: RangeJob, _write: WriteFn, signal: AbortSignal, written?: (position: number, length: number) => void): Promise<RangeHashes | undefined> {
    if (signal.aborted || this.closed) return Promise.reject(new RemoteRunsError('cancelled', 'Download cancelled'));
    if (!job.partPath || !written) return Promise.reject(new RemoteRunsError('protocol', 'A worker lane needs the .part path and a written() callback'));
    const id = this.nextId++;
    return new Promise<RangeHashes | undefined>((resolve, reject) => {
      // Cancel stops the worker's channels at once rather than waiting for the range to end.
      const onAbort = (): void => this.close();
      signal.addEventListener('abort', onAbort, { once: true });
      const done = (): void => {
        signal.removeEventListener('abort', onAbort);
        this.jobs.delete(id);
      };
      this.jobs.set(id, {
        resolve: (hashes) => (done(), resolve(hashes)),
        reject: (e) => (done(), reject(e)),
        written,
      });
      this.post({ type: 'fetch', id, job: { ...job, partPath: job.partPath! } });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.post({ type: 'stop' });
    setTimeout(() => void this.worker.terminate(), STOP_GRACE_MS).unref();
    this.failAll(new RemoteRunsError('cancelled', 'Download cancelled'));
  }

  private post(m: ToWorker): void {
    try {
      this.worker.postMessage(m);
    } catch {
      // the worker is gone; its 'exit' fails the jobs
    }
  }

  private onMessage(m: FromWorker): void {
    switch (m.type) {
      case 'wrote': {
        const job = this.jobs.get(m.id);
        for (let i = 0; job && i < m.ranges.length; i += 2) job.written(m.ranges[i], m.ranges[i + 1]);
        return;
      }
      case 'done':
        return this.jobs.get(m.id)?.resolve(m.hashes);
      case 'error':
        return this.jobs.get(m.id)?.reject(toError(m.error));
      case 'log':
        return this.logger?.[m.level](m.message);
      case 'ready':
      case 'failed':
        return;
    }
  }

  private failAll(e: RemoteRunsError): void {
    for (const job of [...this.jobs.values()]) job.reject(e);
  }
}
