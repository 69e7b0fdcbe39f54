/**
 * Gathers the requests of concurrent jobs into one statement. A request waits for the current
 * turn of the event loop (the jobs the queue hands out together arrive in it) and, while a
 * statement of this batcher is running, for that statement to finish; then every request
 * waiting goes out in one call of `run`. So an idle worker pays no delay beyond the turn, and
 * a busy one sends one statement for many jobs instead of one each.
 *
 * `keyOf` names what a request touches: two requests with the same key never go in the same
 * call (the second waits for the next), so each call sees a key at most once — exactly as if
 * the requests had been sent one after the other. A failed call fails every request in it.
 */
export class StatementBatcher<I, O> {
  private waiting: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private running = false;
  private scheduled = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly keyOf: (item: I) => string | number,
    private readonly maxBatch = 64,
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.running || this.scheduled || this.waiting.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.running) return;
    const keys = new Set<string | number>();
    const batch: typeof this.waiting = [];
    const later: typeof this.waiting = [];
    for (const w of this.waiting) {
      const key = this.keyOf(w.item);
      if (batch.length < this.maxBatch && !keys.has(key)) {
        keys.add(key);
        batch.push(w);
      } else later.push(w);
    }
    this.waiting = later;
    if (batch.length === 0) return;
    this.running = true;
    try {
      const results = await this.run(batch.map((w) => w.item));
      batch.forEach((w, i) => w.resolve(results[i]!));
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.running = false;
      this.schedule();
    }
  }
}
