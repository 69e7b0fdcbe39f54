import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import { redisTarget, Settings } from '../config/settings';
import { configurePhoneRegion, configurePlatformZone } from '../config/platform';
import { MemoryCounterStore } from '../ratelimit/memoryCounterStore';
import { createFailoverCounterStore } from '../ratelimit/failoverCounterStore';
import { MemoryLoginFailures, loginFailureLimitsFrom } from '../ratelimit/loginFailures';
import { RedisLoginFailures } from '../ratelimit/redisLoginFailures';
import { FailoverLoginFailures } from '../ratelimit/failoverLoginFailures';
import type { AppServices } from '../http/services';
import { createApp, App } from '../http/app';
import { subscribeAccountChanges } from '../data/accountChanges';
import { connectionStringOf, createDb } from '../data/db';

export interface ComposedApp {
  app: App;
  services: AppServices;
  /** Closes what compose opened (Redis clients, the export pool); the database belongs to the caller. */
  close(): Promise<void>;
}

/**
 * The composition root shared by `lcm serve` and the HTTP tests: counter store (Redis or a Redis
 * Cluster with in-process failover, or in-process alone without REDIS_URL), the account-change
 * subscription, and the app. Failed logins are counted beside the requests (Redis with the
 * same failover, or in process).
 */
export async function composeApp(options: {
  settings: Settings;
  db: Knex;
  logger: Logger;
  clock?: () => Date;
}): Promise<ComposedApp> {
  const { settings, db, logger } = options;
  configurePlatformZone(settings.PLATFORM_TIMEZONE);
  configurePhoneRegion(settings.DEFAULT_PHONE_REGION);
  const closers: (() => Promise<unknown>)[] = [];
  // Bulk exports read through a pool of their own on the same database (docs/architecture.md).
  const exportDb = createDb({
    url: connectionStringOf(db),
    timezone: settings.PLATFORM_TIMEZONE,
    poolMax: settings.EXPORT_POOL_MAX,
    acquireTimeoutMs: settings.EXPORT_ACQUIRE_TIMEOUT_MS,
  });
  closers.push(() => exportDb.destroy());

  const redis = redisTarget(settings);
  let services: AppServices;
  if (redis) {
    const counter = await createFailoverCounterStore({
      url: redis,
      logger,
      commandTimeoutMs: settings.REDIS_COMMAND_TIMEOUT_MS,
    });
    closers.push(() => counter.close());
    // Failed logins are counted in the same Redis, through the counters' client and failover.
    const limits = loginFailureLimitsFrom(settings);
    const loginFailures = new FailoverLoginFailures(new RedisLoginFailures(counter.redisClient, limits), new MemoryLoginFailures(limits), counter);
    services = {
      settings,
      db,
      exportDb,
      logger,
      clock: options.clock ?? (() => new Date()),
      counter,
      loginFailures,
      redisHealthy: () => counter.redisHealthy,
    };
  } else {
    const counter = new MemoryCounterStore();
    closers.push(() => counter.close());
    const loginFailures = new MemoryLoginFailures(loginFailureLimitsFrom(settings));
    services = { settings, db, exportDb, logger, clock: options.clock ?? (() => new Date()), counter, loginFailures };
  }
  const app = createApp(services);

  if (redis) {
    // Account changes made by other processes (`lcm account ...`) drop cached credentials at once.
    const unsubscribe = subscribeAccountChanges(
      redis,
      (accountId) => (accountId === undefined ? app.credentials.clear() : app.credentials.invalidateAccount(accountId)),
      (err) => logger.warn({ err }, 'account change subscription unavailable; cached credentials expire by TTL'),
    );
    closers.push(unsubscribe);
  }

  return {
    app,
    services,
    async close() {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}
