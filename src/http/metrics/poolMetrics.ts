import { Gauge, type Registry } from 'prom-client';
import type { Knex } from 'knex';
import { poolOf } from '../../data/db';

/** The database pool (knex's tarn pool), read when scraped: connections in use and idle, requests waiting, the size. */
export function collectPoolMetrics(registry: Registry, db: Knex): void {
  const pool = () => poolOf(db);
  new Gauge({
    name: 'lcm_db_pool_connections',
    help: 'Database pool connections by state: used (checked out by a query or cursor) or free (idle)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const p = pool();
      this.set({ state: 'used' }, p?.numUsed() ?? 0);
      this.set({ state: 'free' }, p?.numFree() ?? 0);
    },
  });
  new Gauge({
    name: 'lcm_db_pool_waiting',
    help: 'Requests waiting for a database connection (pending acquires); above zero for long means the pool is too small',
    registers: [registry],
    collect() {
      this.set(pool()?.numPendingAcquires() ?? 0);
    },
  });
  new Gauge({
    name: 'lcm_db_pool_max',
    help: 'Largest number of connections the database pool opens (DB_POOL_MAX)',
    registers: [registry],
    collect() {
      this.set(pool()?.max ?? 0);
    },
  });
}
