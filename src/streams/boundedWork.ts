/**
 * At most `concurrency` tasks at once and at most `queue` waiting; one more is refused at once
 * (`run` rejects with BoundedWorkFull) rather than queued behind a flood. Used for password
 * checks: scrypt runs on libuv's thread pool, which a flood of bad logins would otherwise fill,
 * delaying every valid login and every other thread-pool user (DNS, zlib, files). Also, with
 * no bound on the queue, for the hook workers' failed-attempt writes (src/jobs/hookDelivery.ts).
 *
 * Waiting tasks start by priority, then in arrival order: `high` (credentials known to be good)
 * before `normal` before `low`. Tasks with `low` priority (logins from an address with recent
 * failures) also never take the last free slot: a flood of guesses keeps one slot busy at most
 * (of two), so a login from an address without failures starts at once rather than behind
 * every queued guess.
 */
export class BoundedWorkFull extends Error {
  constructor() {
    super('too much work is waiting');
  }
}

export type WorkPriority = 'high' | 'normal' | 'low';

const ORDER: readonly WorkPriority[] = ['high', 'normal', 'low'];

export class BoundedWork {
  private running = 0;
  private runningLow = 0;
  private readonly waiting: Record<WorkPriority, (() => void)[]> = { high: [], normal: [], low: [] };
  /** Slots low-priority tasks may hold at once: all but one (at least one). */
  private readonly lowConcurrency: number;

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {
    this.lowConcurrency = Math.max(1, concurrency - 1);
  }

  async run<T>(task: () => Promise<T>, priority: WorkPriority = 'normal'): Promise<T> {
    const low = priority === 'low';
    if (this.mayStart(low) && this.waitingAhead(priority) === 0) {
      this.start(low);
    } else {
      if (this.waitingTotal() >= this.queue) throw new BoundedWorkFull();
      // The slot is counted by `dispatch` before the waiter is woken.
      await new Promise<void>((resolve) => this.waiting[priority].push(resolve));
    }
    try {
      return await task();
    } finally {
      this.running--;
      if (low) this.runningLow--;
      this.dispatch();
    }
  }

  /** Waiting tasks that would start before one of `priority`. */
  private waitingAhead(priority: WorkPriority): number {
    let n = 0;
    for (const p of ORDER) {
      n += this.waiting[p].length;
      if (p === priority) break;
    }
    return n;
  }

  private waitingTotal(): number {
    return this.waiting.high.length + this.waiting.normal.length + this.waiting.low.length;
  }

  private mayStart(low: boolean): boolean {
    return this.running < this.concurrency && (!low || this.runningLow < this.lowConcurrency);
  }

  private start(low: boolean): void {
    this.running++;
    if (low) this.runningLow++;
  }

  /** Hands free slots to waiters by priority (low ones within their share). */
  private dispatch(): void {
    for (;;) {
      const next = ORDER.find((p) => this.waiting[p].length > 0 && this.mayStart(p === 'low'));
      if (next === undefined) return;
      this.start(next === 'low');
      this.waiting[next].shift()?.();
    }
  }
}
