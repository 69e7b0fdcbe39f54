import type { Knex } from 'knex';
import { createClient } from 'redis';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import { configurePlatformZone } from '../config/platform';
import { MemoryCounterStore } from '../data/memoryCounterStore';
import { createFailoverCounterStore } from '../data/failoverCounterStore';
import type { AppServices } from './services';
import { createApp, App } from './app';
import { ACCOUNT_CHANGED_CHANNEL } from './credentialCache';

export interface ComposedApp {
  app: App;
  services: AppServices;
  /** Closes what compose opened (Redis clients); the database belongs to the caller. */
  close(): Promise<void>;
}

/**
 * The composition root shared by `lcm serve` and the HTTP tests: counter store (Redis with
 * in-process failover, or in-process alone without REDIS_URL), the account-change
 * subscription, and the app.
 */
export async function composeApp(options: {
  settings: Settings;
  db: Knex;
  logger: Logger;
  clock?: () => Date;
}): Promise<ComposedApp> {
  const { settings, db, logger } = options;
  configurePlatformZone(settings.PLATFORM_TIMEZONE);
  const closers: (() => Promise<unknown>)[] = [];

  let services: AppServices;
  if (settings.REDIS_URL) {
    const counter = await createFailoverCounterStore({
      url: settings.REDIS_URL,
      logger,
      commandTimeoutMs: settings.REDIS_COMMAND_TIMEOUT_MS,
    });
    closers.push(() => counter.close());
    services = { settings, db, logger, clock: options.clock ?? (() => new Date()), counter, redisHealthy: () => counter.redisHealthy };
  } else {
    const counter = new MemoryCounterStore();
    closers.push(() => counter.close());
    services = { settings, db, logger, clock: options.clock ?? (() => new Date()), counter };
  }
  const app = createApp(services);

  if (settings.REDIS_URL) {
    // Account changes made by other processes (`lcm account ...`) drop cached credentials at once.
    const subscriber = createClient({
      url: settings.REDIS_URL,
      socket: { reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 5000) },
    });
    subscriber.on('error', () => undefined);
    subscriber
      .connect()
      .then(() =>
        subscriber.subscribe(ACCOUNT_CHANGED_CHANNEL, (message) => {
          const id = Number(message);
          if (Number.isInteger(id)) app.credentials.invalidateAccount(id);
          else app.credentials.clear();
        }),
      )
      .catch((err: unknown) => logger.warn({ err }, 'account change subscription unavailable; cached credentials expire by TTL'));
    closers.push(async () => {
      if (subscriber.isOpen) await subscriber.quit().catch(() => subscriber.destroy());
      else subscriber.destroy();
    });
  }

  return {
    app,
    services,
    async close() {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}
