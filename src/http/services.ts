import type { Knex } from 'knex';
import type { Logger } from '../config/logger';
import type { Settings } from '../config/settings';
import type { CounterStore } from '../ratelimit/counterStore';
import type { ReadSource } from '../data/readSource';

/** What the HTTP layer is given by the composition root (server start or a test). */
export interface AppServices {
  settings: Settings;
  db: Knex;
  logger: Logger;
  /** Injected so tests can move through production hours, periods and midnights. */
  clock: () => Date;
  counter: CounterStore;
  /** Bulk, lag-tolerant reads: the replica while it is up, else the primary (src/data/readSource.ts). */
  reads: ReadSource;
  /** Reports Redis health for /readyz; undefined when no Redis is configured. */
  redisHealthy?: () => boolean;
}
