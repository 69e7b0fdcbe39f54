import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import type { CounterStore } from '../ratelimit/counterStore';
import type { LoginFailureStore } from '../ratelimit/loginFailures';
import type { ReadSource } from '../data/readSource';
import type { ConnectionSource } from '../data/exportSession';
import type { RequestLogWriter } from '../data/requestLog';
import type { EventFeed } from './eventFeed';

/** What the HTTP layer is given by the composition root (server start or a test). */
export interface AppServices {
  settings: Settings;
  db: Knex;
  /**
   * The bulk read pool (EXPORT_POOL_MAX connections): every export's connection comes from here,
   * never from `db`, so exports cannot take the connections small requests and /readyz need
   * (docs/architecture.md, "Database connections").
   */
  exportDb: Knex;
  logger: Logger;
  /** Injected so tests can move through production hours, periods and midnights. */
  clock: () => Date;
  counter: CounterStore;
  /** Failed logins per address and username, and known-good credentials (Redis or Postgres, like `counter`). */
  loginFailures: LoginFailureStore;
  /**
   * Bulk, lag-tolerant reads: connections on the read replica while it is up, else on the
   * primary (src/data/readSource.ts). Its replica state feeds /readyz and the metrics;
   * composeApp also makes it `exportConnections`.
   */
  reads: ReadSource;
  /** Reports Redis health for /readyz; undefined when no Redis is configured. */
  redisHealthy?: () => boolean;
  /** Where bulk exports take their connection; undefined: the pool of `exportDb`. */
  exportConnections?: ConnectionSource;
  /** The accounts' request log (REQUEST_LOG); undefined when it is off. */
  requestLog?: RequestLogWriter;
  /** This process's live events: the one reader behind every event stream it serves (src/http/eventFeed.ts). */
  events: EventFeed;
}
