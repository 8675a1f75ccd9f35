/**
 * An abortable pause, shared by the core's pollers and retry loops (eval following, download retries).
 */
import { RemoteRunsError } from '../types';

/**
 * Resolve after `ms`, or reject as soon as `signal` aborts (at once if it already has) with the error `onAbort`
 * makes — by default a `cancelled` RemoteRunsError — so a loop waiting between tries stops without waiting out
 * the pause. The timer and the abort listener are both removed whichever comes first.
 */
export function delay(ms: number, signal?: AbortSignal, onAbort: () => Error = () => new RemoteRunsError('cancelled', 'Cancelled')): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(onAbort());
    const abort = (): void => {
      clearTimeout(timer);
      reject(onAbort());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', abort, { once: true });
  });
}
