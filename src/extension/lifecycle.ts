import type * as vscode from 'vscode';

/**
 * Owns disposables. `register` disposes at once if the owner is already gone, so a late registration
 * (after an await) can never leak.
 */
export class DisposableStore implements vscode.Disposable {
  private readonly items: vscode.Disposable[] = [];
  private disposed = false;

  register<T extends vscode.Disposable | { dispose(): unknown }>(item: T): T {
    if (this.disposed) {
      item.dispose();
    } else {
      this.items.push(item as vscode.Disposable);
    }
    return item;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const d of this.items.splice(0).reverse()) {
      try {
        d.dispose();
      } catch {
        // keep disposing the rest
      }
    }
  }
}
