/** A tiny event emitter for the core (which cannot use vscode.EventEmitter). Same shape: `event(listener)` returns a disposable. */
export interface Disposable {
  dispose(): void;
}

export type Event<T> = (listener: (e: T) => void) => Disposable;

export class Emitter<T> implements Disposable {
  private listeners = new Set<(e: T) => void>();
  private disposed = false;

  readonly event: Event<T> = (listener) => {
    if (this.disposed) return { dispose() {} };
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(e: T): void {
    for (const l of [...this.listeners]) {
      try {
        l(e);
      } catch {
        // A faulty listener must not stop the others.
      }
    }
  }

  dispose(): void {
    this.disposed = true;
    this.listeners.clear();
  }
}
