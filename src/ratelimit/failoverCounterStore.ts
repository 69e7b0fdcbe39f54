import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { ConsumeInput, ConsumeResult, CounterEntry, CounterStore, FallbackStats, ServiceCount, assertConsumeInput } from './counterStore';
import { PostgresCounterStore } from './postgresCounterStore';
import { CounterRedisClientOptions, RedisCounterStore, createCounterRedisClient } from './redisCounterStore';
import { toRedisTarget, withinDeadline } from '../data/redis';
import type { RedisTarget } from '../config/settings';

/** The part of a pino logger the store uses. */
export interface CounterLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface FailoverOptions {
  /** How long a count waits for Redis before it is made in Postgres (and Redis marked down). */
  commandTimeoutMs?: number;
  /** How often to check whether Redis is back while counting in Postgres. */
  probeIntervalMs?: number;
  /** The clock that decides which outage windows are still running when they are merged (ms). */
  now?: () => number;
}

/**
 * The scope under which the processes using one Redis keep their outage counts in Postgres: a
 * digest of its address(es), without credentials. Every process must name the Redis alike
 * (the same REDIS_URL / REDIS_CLUSTER), so that any of them merges what the others counted.
 */
export function outageScope(target: RedisTarget): string {
  const urls = target.cluster ? [...target.rootUrls] : [target.url];
  const names = urls.map((u) => {
    try {
      const url = new URL(u);
      return `${url.protocol}//${url.host}${url.pathname}`;
    } catch {
      return u;
    }
  });
  const digest = createHash('sha256').update(names.sort().join(',')).digest('base64url').slice(0, 16);
  return `redis:${digest}`;
}

/**
 * Counts in Redis; when a Redis call fails it answers from Postgres (the same counters every
 * process uses while Redis is down), reports `redisHealthy: false` and checks Redis in the
 * background until it answers again. Before switching back it takes the counts made in
 * Postgres during the outage and adds them to Redis (each row taken by one process only, so
 * nothing is added twice); what it could not add stays in Postgres, and it keeps counting
 * there until a later check succeeds. While down, requests go straight to Postgres, so only
 * those in flight when Redis failed pay the command time-out. Logs once per change of state.
 */
export class FailoverCounterStore implements CounterStore {
  private healthy = true;
  private probe: NodeJS.Timeout | undefined;
  private closed = false;
  private recovering = false;
  private readonly probeIntervalMs: number;
  readonly commandTimeoutMs: number;
  private readonly now: () => number;
  private fallbacks = 0;
  private fallbackOperations = 0;

  constructor(
    private readonly primary: RedisCounterStore,
    private readonly fallback: PostgresCounterStore,
    private readonly logger: CounterLogger,
    options: FailoverOptions = {},
  ) {
    this.probeIntervalMs = options.probeIntervalMs ?? 500;
    this.commandTimeoutMs = options.commandTimeoutMs ?? 200;
    this.now = options.now ?? Date.now;
  }

  /**
   * For /readyz: false while counting in Postgres because Redis is unreachable, and as soon as
   * the client has lost a connection it needs (a killed cluster master), before a request fails.
   */
  get redisHealthy(): boolean {
    return this.healthy && this.primary.ready;
  }

  /** The Redis client of the counters, for other counts that fail over with them (failed logins). */
  get redisClient(): RedisCounterStore['client'] {
    return this.primary.client;
  }

  fallbackStats(): FallbackStats {
    return { redisHealthy: this.redisHealthy, fallbacks: this.fallbacks, fallbackOperations: this.fallbackOperations };
  }

  async consume(input: ConsumeInput): Promise<ConsumeResult> {
    // A caller's bug must surface as such, not be taken for Redis being down.
    assertConsumeInput(input);
    return this.route((store) => store.consume(input));
  }

  async peek(input: ConsumeInput): Promise<ConsumeResult> {
    assertConsumeInput(input);
    return this.route((store) => store.peek(input));
  }

  counts(accountId: number, now: number): Promise<ServiceCount[]> {
    return this.route((store) => store.counts(accountId, now));
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.probe);
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }

  /** Switches to the Postgres counters; public so the factory can start there. */
  markDown(err: unknown): void {
    if (!this.healthy || this.closed) return;
    this.healthy = false;
    this.fallbacks++;
    this.logger.warn({ err }, 'Redis unreachable: counting requests in Postgres');
    this.probe = setInterval(() => void this.checkRecovered(), this.probeIntervalMs);
    this.probe.unref();
  }

  /**
   * Adds counts left in Postgres by an earlier outage (this or another process's) to Redis;
   * run at start. False when Redis failed meanwhile (the store is then marked down).
   */
  async mergeLeftovers(): Promise<boolean> {
    if (!this.healthy || this.closed) return false;
    try {
      await this.mergeOutageCounts();
      return true;
    } catch (err) {
      this.markDown(err);
      return false;
    }
  }

  private async route<T>(op: (store: CounterStore) => Promise<T>): Promise<T> {
    // A lost connection is known before any command fails: skip the failing round trip.
    if (this.healthy && !this.primary.ready) this.markDown(new Error('Redis connection lost'));
    if (this.healthy) {
      try {
        return await withinDeadline(op(this.primary), this.commandTimeoutMs);
      } catch (err) {
        // Any failure, not only connection errors: counting must never turn into a 500.
        this.markDown(err);
      }
    }
    this.fallbackOperations++;
    return op(this.fallback);
  }

  /**
   * Takes the outage counts out of Postgres and adds them to Redis. Throws when Redis refused
   * some (they are back in Postgres); a Postgres failure is logged and counts as done: Redis is
   * the better place to count then, and the rows wait for the next merge.
   */
  private async mergeOutageCounts(): Promise<void> {
    let refused = 0;
    let merged: number;
    try {
      merged = await this.fallback.takeAll(async (entries: CounterEntry[]) => {
        const left = await this.primary.merge(entries, this.now());
        refused = left.length;
        return left;
      });
    } catch (err) {
      this.logger.warn({ err }, 'request counts kept in Postgres during the Redis outage could not be read; they stay there');
      return;
    }
    if (refused > 0) throw new Error(`Redis refused ${refused} of the outage counts`);
    if (merged > 0) this.logger.info({ merged }, 'request counts kept in Postgres during the Redis outage added to Redis');
  }

  private async checkRecovered(): Promise<void> {
    if (this.healthy || this.closed || this.recovering || !this.primary.ready) return;
    this.recovering = true;
    try {
      await withinDeadline(this.primary.ping(), this.commandTimeoutMs);
      await this.mergeOutageCounts();
    } catch {
      return;
    } finally {
      this.recovering = false;
    }
    if (this.healthy || this.closed) return;
    this.healthy = true;
    clearInterval(this.probe);
    this.probe = undefined;
    this.logger.info({}, 'Redis reachable again: counting requests in Redis');
    // Requests that were on their way to Postgres when the store switched back: merged shortly after.
    setTimeout(() => void this.mergeLeftovers(), this.probeIntervalMs).unref();
  }
}

export interface CreateFailoverOptions extends CounterRedisClientOptions, FailoverOptions {
  logger: CounterLogger;
  /** The database whose counters stand in while Redis is down. */
  db: Knex;
  /** How long start-up waits for the first connection before counting in Postgres. */
  startupWaitMs?: number;
}

/**
 * The counter store for a configured Redis (one, or a cluster). Never fails for want of Redis:
 * when it cannot connect within `startupWaitMs` it starts on Postgres (redisHealthy false) and
 * keeps trying. Connected, it first merges counts an earlier outage left in Postgres.
 */
export async function createFailoverCounterStore(options: CreateFailoverOptions): Promise<FailoverCounterStore> {
  const client = createCounterRedisClient(options);
  // node-redis emits 'error' on every failed (re)connection; the store logs state changes instead.
  client.on('error', () => {});
  const connected = client.connect().then(
    () => true,
    () => false,
  );
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), options.startupWaitMs ?? 2000);
  });
  await Promise.race([connected, timedOut]);
  clearTimeout(timer);
  const target = toRedisTarget(options.url);
  const store = new FailoverCounterStore(
    new RedisCounterStore(client, target),
    new PostgresCounterStore(options.db, outageScope(target)),
    options.logger,
    options,
  );
  if (!client.isReady) store.markDown(new Error(`cannot connect to Redis at start-up`));
  else await store.mergeLeftovers();
  return store;
}
