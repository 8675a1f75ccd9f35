/**
 * One debounced queue for every refresh (timer, manual, after an action): requests arriving within
 * `delayMs` are coalesced into one batch, and a batch never overlaps the previous one.
 */
export class RefreshQueue {
  private pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private idleWaiters: (() => void)[] = [];
  private disposed = false;

  constructor(
    private readonly run: (ids: Set<string>) => Promise<void>,
    private readonly delayMs: number,
  ) {}

  push(id: string): void {
    if (this.disposed) return;
    this.pending.add(id);
    if (!this.timer) this.timer = setTimeout(() => this.flush(), this.delayMs);
  }

  whenIdle(): Promise<void> {
    if (!this.timer && this.pending.size === 0) return this.running;
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private flush(): void {
    this.timer = undefined;
    const batch = this.pending;
    this.pending = new Set();
    this.running = this.running
      .then(() => this.run(batch))
      .catch(() => undefined)
      .then(() => {
        if (!this.timer && this.pending.size === 0) {
          for (const w of this.idleWaiters.splice(0)) w();
        }
      });
  }

  dispose(): void {
    this.disposed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
