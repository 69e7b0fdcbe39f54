import { ConsumeInput, ConsumeResult, CounterStore, FallbackStats, ServiceCount, assertConsumeInput } from './counterStore';
import { MemoryCounterStore } from './memoryCounterStore';
import { CounterRedisClientOptions, RedisCounterStore, createCounterRedisClient } from './redisCounterStore';
import { toRedisTarget } from '../data/redis';

/** The part of a pino logger the store uses. */
export interface CounterLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface FailoverOptions {
  /** How often to check whether Redis is back while counting in process. */
  probeIntervalMs?: number;
}

/**
 * Counts in Redis; when a Redis call fails it answers from the in-process store, reports
 * `redisHealthy: false` and checks Redis in the background until it answers again, then
 * switches back. While down, requests go straight to the in-process store, so only those in
 * flight when Redis failed pay the command time-out. Logs once per change of state.
 *
 * Counts made in process during an outage stay there (they are not copied to Redis), and limits
 * are then enforced per instance rather than across instances.
 */
export class FailoverCounterStore implements CounterStore {
  private healthy = true;
  private probe: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly probeIntervalMs: number;
  private fallbacks = 0;
  private fallbackOperations = 0;

  constructor(
    private readonly primary: RedisCounterStore,
    private readonly fallback: CounterStore,
    private readonly logger: CounterLogger,
    options: FailoverOptions = {},
  ) {
    this.probeIntervalMs = options.probeIntervalMs ?? 500;
  }

  /**
   * For /readyz: false while counting in process because Redis is unreachable, and as soon as
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

  /** Switches to the in-process store; public so the factory can start there. */
  markDown(err: unknown): void {
    if (!this.healthy || this.closed) return;
    this.healthy = false;
    this.fallbacks++;
    this.logger.warn({ err }, 'Redis unreachable: counting requests in process');
    this.probe = setInterval(() => void this.checkRecovered(), this.probeIntervalMs);
    this.probe.unref();
  }

  private async route<T>(op: (store: CounterStore) => Promise<T>): Promise<T> {
    // A lost connection is known before any command fails: skip the failing round trip.
    if (this.healthy && !this.primary.ready) this.markDown(new Error('Redis connection lost'));
    if (this.healthy) {
      try {
        return await op(this.primary);
      } catch (err) {
        // Any failure, not only connection errors: counting must never turn into a 500.
        this.markDown(err);
      }
    }
    this.fallbackOperations++;
    return op(this.fallback);
  }

  private async checkRecovered(): Promise<void> {
    if (this.healthy || this.closed || !this.primary.ready) return;
    try {
      await this.primary.ping();
    } catch {
      return;
    }
    if (this.healthy || this.closed) return;
    this.healthy = true;
    clearInterval(this.probe);
    this.probe = undefined;
    this.logger.info({}, 'Redis reachable again: counting requests in Redis');
  }
}

export interface CreateFailoverOptions extends CounterRedisClientOptions, FailoverOptions {
  logger: CounterLogger;
  /** How long start-up waits for the first connection before counting in process. */
  startupWaitMs?: number;
}

/**
 * The counter store for a configured Redis (one, or a cluster). Never fails for want of Redis: when it cannot
 * connect within `startupWaitMs` it starts in process (redisHealthy false) and keeps trying.
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
  const store = new FailoverCounterStore(
    new RedisCounterStore(client, toRedisTarget(options.url)),
    new MemoryCounterStore(),
    options.logger,
    options,
  );
  if (!client.isReady) store.markDown(new Error(`cannot connect to Redis at start-up`));
  return store;
}
