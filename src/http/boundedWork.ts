/**
 * At most `concurrency` tasks at once and at most `queue` waiting; one more is refused at once
 * (`run` rejects with BoundedWorkFull) rather than queued behind a flood. Used for password
 * checks: scrypt runs on libuv's thread pool, which a flood of bad logins would otherwise fill,
 * delaying every valid login and every other thread-pool user (DNS, zlib, files).
 */
export class BoundedWorkFull extends Error {
  constructor() {
    super('too much work is waiting');
  }
}

export class BoundedWork {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly concurrency: number,
    private readonly queue: number,
  ) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.concurrency) {
      if (this.waiting.length >= this.queue) throw new BoundedWorkFull();
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter (running stays the same), or frees up.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
