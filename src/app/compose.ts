import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import { redisTarget, Settings } from '../config/settings';
import { configurePhoneRegion, configurePlatformZone } from '../config/platform';
import { PostgresCounterStore } from '../ratelimit/postgresCounterStore';
import { createFailoverCounterStore, outageScope } from '../ratelimit/failoverCounterStore';
import { PostgresLoginFailures, loginFailureLimitsFrom } from '../ratelimit/loginFailures';
import { RedisLoginFailures } from '../ratelimit/redisLoginFailures';
import { FailoverLoginFailures } from '../ratelimit/failoverLoginFailures';
import type { AppServices } from '../http/services';
import { createApp, App } from '../http/app';
import { followAccountChanges } from '../data/accountChanges';
import { PgListener } from '../data/notifications';
import { EventFeed } from '../http/eventFeed';
import { connectionStringOf, createDb } from '../data/db';
import { ReadSource } from '../data/readSource';
import { poolConnections } from '../data/exportSession';
import { RequestLogWriter } from '../data/requestLog';

export interface ComposedApp {
  app: App;
  services: AppServices;
  /** This process's one listening connection for Postgres notifications. */
  notifications: PgListener;
  /** This process's live events; `close()` ends its streams (a stopping worker calls it first, so clients reconnect elsewhere). */
  events: EventFeed;
  /** Closes what compose opened (Redis clients, the export and replica pools); the database belongs to the caller. */
  close(): Promise<void>;
}

/**
 * The composition root shared by `lcm serve` and the HTTP tests: counter store (Redis or a Redis
 * Cluster with failover to Postgres, or Postgres alone without REDIS_URL), the account-change
 * subscription, the live event feed, and the app. Failed logins are counted beside the requests (Redis with the
 * same failover, or Postgres).
 */
export async function composeApp(options: { settings: Settings; db: Knex; logger: Logger; clock?: () => Date }): Promise<ComposedApp> {
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

  // Bulk reads (every export): the replica of DATABASE_READ_URL while it is up, the primary's
  // export pool otherwise. The replica's pool is sized and bounded like the export pool; a
  // replica that cannot be reached fails a new connection within 3 s.
  const replica = settings.DATABASE_READ_URL
    ? createDb({
        url: settings.DATABASE_READ_URL,
        timezone: settings.PLATFORM_TIMEZONE,
        poolMax: settings.EXPORT_POOL_MAX,
        acquireTimeoutMs: settings.EXPORT_ACQUIRE_TIMEOUT_MS,
        connectTimeoutMs: 3000,
        quiet: true,
      })
    : undefined;
  const reads = new ReadSource({
    primary: poolConnections(exportDb),
    replica,
    checkIntervalMs: settings.DATABASE_READ_CHECK_MS,
    maxLagMs: settings.DATABASE_READ_MAX_LAG_MS,
  });
  reads.on('state', (state, detail) => {
    if (state === 'down') logger.warn({ err: detail.err, lagMs: detail.lagMs }, 'read replica unavailable: bulk reads go to the primary');
    else logger.info({ lagMs: detail.lagMs }, 'read replica available again: bulk reads go to it');
  });
  await reads.start();
  closers.push(async () => {
    reads.close();
    await replica?.destroy();
  });

  // This process's one listening connection: account changes and live events (src/data/notifications.ts).
  const notifications = new PgListener(connectionStringOf(db), (state, err) => {
    if (state === 'down')
      logger.warn(
        { err },
        'database notifications unavailable: cached credentials expire by AUTH_CACHE_TTL_MS and event streams wait until they are back',
      );
    else logger.info({}, 'database notifications available again');
  });
  closers.push(() => notifications.close());
  const events = new EventFeed({
    db,
    listener: notifications,
    zone: settings.PLATFORM_TIMEZONE,
    logger,
    heartbeatMs: settings.EVENTS_HEARTBEAT_MS,
    sequenceMs: settings.EVENTS_SEQUENCE_MS,
    maxStreamsPerAccount: settings.EVENTS_MAX_STREAMS,
    readSpan: settings.EVENTS_READ_SPAN,
  });
  closers.push(() => events.close());

  const redis = redisTarget(settings);
  const clock = options.clock ?? (() => new Date());
  const limits = loginFailureLimitsFrom(settings);
  let services: AppServices;
  if (redis) {
    const counter = await createFailoverCounterStore({
      url: redis,
      db,
      logger,
      commandTimeoutMs: settings.REDIS_COMMAND_TIMEOUT_MS,
      now: () => clock().getTime(),
    });
    closers.push(() => counter.close());
    // Failed logins are counted in the same Redis, through the counters' client and failover.
    const loginFailures = new FailoverLoginFailures(
      new RedisLoginFailures(counter.redisClient, limits),
      new PostgresLoginFailures(db, limits, outageScope(redis)),
      counter,
    );
    services = {
      settings,
      db,
      exportDb,
      reads,
      exportConnections: reads,
      logger,
      clock,
      counter,
      loginFailures,
      redisHealthy: () => counter.redisHealthy,
      events,
    };
  } else {
    services = {
      settings,
      db,
      exportDb,
      reads,
      exportConnections: reads,
      logger,
      clock,
      counter: new PostgresCounterStore(db),
      loginFailures: new PostgresLoginFailures(db, limits),
      events,
    };
  }
  if (settings.REQUEST_LOG) {
    const requestLog = new RequestLogWriter(db, { flushMs: settings.REQUEST_LOG_FLUSH_MS, maxPending: settings.REQUEST_LOG_MAX_PENDING });
    requestLog.on('unreachable', (down, err) => {
      if (down) logger.warn({ err }, 'request log: the database cannot be reached; entries wait (up to REQUEST_LOG_MAX_PENDING)');
      else logger.info({}, 'request log: the database is reachable again; waiting entries written');
    });
    // Closing writes what is pending: the database is the caller's and is still open then.
    closers.push(() => requestLog.close());
    services.requestLog = requestLog;
  }
  const app = createApp(services);

  // Account changes, whoever makes them (`lcm account`, the loader, another node), drop this
  // process's cached credentials of that account when they commit (src/data/accountChanges.ts).
  await followAccountChanges(notifications, (accountId) =>
    accountId === undefined ? app.credentials.clear() : app.credentials.invalidateAccount(accountId),
  );

  await events.start();

  return {
    app,
    services,
    notifications,
    events,
    async close() {
      for (const close of closers.reverse()) await close().catch(() => undefined);
    },
  };
}
