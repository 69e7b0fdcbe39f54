import {
  ConsumeInput,
  ConsumeResult,
  CounterStore,
  DAY_MS,
  MINUTE_MS,
  ServiceCount,
  Window,
  assertConsumeInput,
  currentWindow,
  resetSeconds,
  tally,
  toConsumeResult,
} from './counterStore';

interface Entry {
  daily?: Window;
  minute?: Window;
}

/**
 * In-process counters with the semantics of the Redis store: the embedded default without
 * REDIS_URL, and the fallback while Redis is unreachable. Exact within one process only.
 */
export class MemoryCounterStore implements CounterStore {
  private readonly accounts = new Map<number, Map<string, Entry>>();
  private lastSweep: number | undefined;

  // Run inside a promise's executor: an invalid input rejects, as with the Redis store.
  consume(input: ConsumeInput): Promise<ConsumeResult> {
    return new Promise((resolve) => {
      assertConsumeInput(input);
      this.sweepNowAndThen(input.now);
      const entry = this.accounts.get(input.accountId)?.get(input.service);
      const t = tally(input, currentWindow(entry?.daily, DAY_MS, input.now), currentWindow(entry?.minute, MINUTE_MS, input.now));
      if (!t.exceeded) this.servicesOf(input.accountId).set(input.service, { daily: t.daily, minute: t.minute });
      resolve(toConsumeResult(input, t));
    });
  }

  peek(input: ConsumeInput): Promise<ConsumeResult> {
    return new Promise((resolve) => {
      assertConsumeInput(input);
      const entry = this.accounts.get(input.accountId)?.get(input.service);
      resolve(
        toConsumeResult(input, {
          daily: currentWindow(entry?.daily, DAY_MS, input.now),
          minute: currentWindow(entry?.minute, MINUTE_MS, input.now),
        }),
      );
    });
  }

  private servicesOf(accountId: number): Map<string, Entry> {
    let services = this.accounts.get(accountId);
    if (!services) {
      services = new Map();
      this.accounts.set(accountId, services);
    }
    return services;
  }

  counts(accountId: number, now: number): Promise<ServiceCount[]> {
    const rows: ServiceCount[] = [];
    for (const [service, entry] of this.accounts.get(accountId) ?? []) {
      const daily = currentWindow(entry.daily, DAY_MS, now);
      if (!daily) continue;
      rows.push({
        service,
        count: daily.count,
        periodStart: new Date(daily.start),
        resetSeconds: resetSeconds(daily, DAY_MS, now),
        minuteCount: currentWindow(entry.minute, MINUTE_MS, now)?.count ?? 0,
      });
    }
    return Promise.resolve(rows.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0)));
  }

  close(): Promise<void> {
    this.accounts.clear();
    return Promise.resolve();
  }

  /** Drops ended periods about once a minute (by the caller's clock) so memory stays bounded. */
  private sweepNowAndThen(now: number): void {
    if (this.lastSweep !== undefined && Math.abs(now - this.lastSweep) < MINUTE_MS) return;
    this.lastSweep = now;
    for (const [accountId, services] of this.accounts) {
      for (const [service, entry] of services) {
        if (!currentWindow(entry.daily, DAY_MS, now) && !currentWindow(entry.minute, MINUTE_MS, now)) {
          services.delete(service);
        }
      }
      if (services.size === 0) this.accounts.delete(accountId);
    }
  }
}
