import type { Knex } from 'knex';
import { countRequest, findRequestCounter, listRequestCounters, StoredRequestCounter, takeRequestCounters } from '../data/requestCounters';
import {
  ConsumeInput,
  ConsumeResult,
  CounterEntry,
  CounterStore,
  DAY_MS,
  MINUTE_MS,
  ServiceCount,
  Window,
  assertConsumeInput,
  currentWindow,
  resetSeconds,
  toConsumeResult,
} from './counterStore';

/** Where a store's rows live: '' for the store without Redis, else the scope of a Redis's outage counts. */
const PRIMARY_SCOPE = '';

function windowOf(start: number | null, count: number): Window | undefined {
  return start === null ? undefined : { start, count };
}

function toEntry(row: StoredRequestCounter): CounterEntry {
  return {
    accountId: row.accountId,
    service: row.service,
    daily: windowOf(row.dailyStartMs, row.dailyCount),
    minute: windowOf(row.minuteStartMs, row.minuteCount),
  };
}

/**
 * Counters in Postgres: the store without REDIS_URL (exact across every process and node on the
 * database, and across restarts), and the fallback while Redis is down. Each consume is one call
 * of count_request, which makes the decision of counterStore.ts under a row lock.
 */
export class PostgresCounterStore implements CounterStore {
  constructor(
    private readonly db: Knex,
    readonly scope: string = PRIMARY_SCOPE,
  ) {}

  async consume(input: ConsumeInput): Promise<ConsumeResult> {
    assertConsumeInput(input);
    const reply = await countRequest(this.db, {
      scope: this.scope,
      accountId: input.accountId,
      service: input.service,
      now: input.now,
      weight: input.weight,
      dailyLimit: input.dailyLimit,
      minuteLimit: input.minuteLimit,
      dayMs: DAY_MS,
      minuteMs: MINUTE_MS,
    });
    return toConsumeResult(input, {
      exceeded: reply.exceeded === 1 ? 'daily' : reply.exceeded === 2 ? 'minute' : undefined,
      daily: windowOf(reply.dailyStartMs, reply.dailyCount),
      minute: windowOf(reply.minuteStartMs, reply.minuteCount),
    });
  }

  async peek(input: ConsumeInput): Promise<ConsumeResult> {
    assertConsumeInput(input);
    const row = await findRequestCounter(this.db, this.scope, input.accountId, input.service);
    const entry = row && toEntry(row);
    return toConsumeResult(input, {
      daily: currentWindow(entry?.daily, DAY_MS, input.now),
      minute: currentWindow(entry?.minute, MINUTE_MS, input.now),
    });
  }

  async counts(accountId: number, now: number): Promise<ServiceCount[]> {
    const rows: ServiceCount[] = [];
    for (const entry of (await listRequestCounters(this.db, this.scope, accountId, now, DAY_MS)).map(toEntry)) {
      const daily = currentWindow(entry.daily, DAY_MS, now);
      if (!daily) continue;
      rows.push({
        service: entry.service,
        count: daily.count,
        periodStart: new Date(daily.start),
        resetSeconds: resetSeconds(daily, DAY_MS, now),
        minuteCount: currentWindow(entry.minute, MINUTE_MS, now)?.count ?? 0,
      });
    }
    // Code-unit order, as the Redis store sorts.
    return rows.sort((a, b) => (a.service < b.service ? -1 : a.service > b.service ? 1 : 0));
  }

  /**
   * Takes every row of this store's scope and hands them to `place` (which returns those it could
   * not place; they stay). Each row is taken by one caller only. Returns how many were placed.
   */
  async takeAll(place: (entries: CounterEntry[]) => Promise<CounterEntry[]>): Promise<number> {
    return takeRequestCounters(this.db, this.scope, async (rows) => {
      const entries = rows.map((row) => ({ row, entry: toEntry(row) }));
      const left = new Set(await place(entries.map((e) => e.entry)));
      return entries.filter((e) => left.has(e.entry)).map((e) => e.row);
    });
  }

  /** The database belongs to the caller. */
  async close(): Promise<void> {}
}
