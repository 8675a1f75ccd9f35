/**
 * The one adapter from a cancellation token (VS Code's, or the language server protocol's: the same shape) to the
 * AbortSignal the core takes. The listener is removed when the work ends, so a long-lived token (a progress
 * notification's, a connection's) does not collect one per request.
 */

/** A cancellation token as VS Code and vscode-languageserver give one. */
export interface CancellationLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): { dispose(): unknown };
}

/** Run `work` with a signal that aborts when `token` is cancelled (at once if it already is). */
export async function withCancellation<T>(token: CancellationLike, work: (signal: AbortSignal) => Promise<T> | T): Promise<T> {
  const controller = new AbortController();
  if (token.isCancellationRequested) controller.abort();
  const sub = token.onCancellationRequested(() => controller.abort());
  try {
    return await work(controller.signal);
  } finally {
    sub.dispose();
  }
}
