import { Counter, Gauge, type Registry } from 'prom-client';
import type { CounterStore } from '../../ratelimit/counterStore';

/**
 * Redis behind the request counters, read when scraped: whether requests are counted there, and
 * how often counting fell back to Postgres. Nothing without Redis configured.
 */
export function collectRedisMetrics(registry: Registry, counter: CounterStore): void {
  const stats = counter.fallbackStats?.bind(counter);
  if (stats === undefined) return;
  new Gauge({
    name: 'lcm_redis_up',
    aggregator: 'min',
    help: '1 while requests are counted in Redis, 0 while counted in Postgres because Redis is unreachable',
    registers: [registry],
    collect() {
      this.set(stats().redisHealthy ? 1 : 0);
    },
  });
  monotonic(
    registry,
    'lcm_redis_fallbacks_total',
    'Times Redis became unreachable and request counting fell back to the Postgres counters',
    () => stats().fallbacks,
  );
  monotonic(
    registry,
    'lcm_redis_fallback_operations_total',
    'Counter store operations (counting, peeking, /myaccount/request/counts) answered from Postgres because Redis was unreachable',
    () => stats().fallbackOperations,
  );
}

/** A counter whose value another object keeps: it catches up with that total when scraped. */
function monotonic(registry: Registry, name: string, help: string, read: () => number): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > seen) this.inc(now - seen);
      seen = Math.max(seen, now);
    },
  });
}
