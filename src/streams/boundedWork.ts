/**
 * At most `concurrency` tasks at once and at most `queue` waiting; one more is refused at once
 * (`run` rejects with BoundedWorkFull) rather than queued behind a flood. Used for password
 * checks: scrypt runs on libuv's thread pool, which a flood of bad logins would otherwise fill,
 * delaying every valid login and every other thread-pool user (DNS, zlib, files). Also, with
 * no bound on the queue, for the hook workers' failed-attempt writes (src/jobs/hookDelivery.ts).
 *
 * Tasks run with `low` priority (logins from an address with recent failures) wait behind
 * every normal one and never take the last free slot: a flood of guesses keeps one slot busy
 * at most (of two), so a login from an address without failures starts at once rather than
 * behind every queued guess.
 */
export class BoundedWorkFull extends Error {
  constructor() {
    super('too much work is waiting');
  }
}

export type WorkPriority = 'normal' | 'low';

export class BoundedWork {
  private running = 0;
  private runningLow = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly waitingLow: (() => void)[] = [];
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
    if (this.mayStart(low) && (low ? this.waiting.length + this.waitingLow.length === 0 : this.waiting.length === 0)) {
      this.start(low);
    } else {
      if (this.waiting.length + this.waitingLow.length >= this.queue) throw new BoundedWorkFull();
      // The slot is counted by `dispatch` before the waiter is woken.
      await new Promise<void>((resolve) => (low ? this.waitingLow : this.waiting).push(resolve));
    }
    try {
      return await task();
    } finally {
      this.running--;
      if (low) this.runningLow--;
      this.dispatch();
    }
  }

  private mayStart(low: boolean): boolean {
    return this.running < this.concurrency && (!low || this.runningLow < this.lowConcurrency);
  }

  private start(low: boolean): void {
    this.running++;
    if (low) this.runningLow++;
  }

  /** Hands free slots to waiters: normal ones first, then low ones within their share. */
  private dispatch(): void {
    for (;;) {
      if (this.waiting.length > 0 && this.mayStart(false)) {
        this.start(false);
        this.waiting.shift()!();
      } else if (this.waitingLow.length > 0 && this.mayStart(true)) {
        this.start(true);
        this.waitingLow.shift()!();
      } else return;
    }
  }
}
