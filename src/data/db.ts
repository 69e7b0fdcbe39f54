import knex, { Knex } from 'knex';
import pg from 'pg';
import path from 'node:path';

// Row ids and counts fit in a double; reading int8 as a number keeps rows plain.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export const MIGRATIONS_DIR = path.resolve(__dirname, '../../db/migrations');

export interface DbOptions {
  /** A postgres:// URL, or the parsed connection of another pool (connectionOf). */
  url: string | Knex.PgConnectionConfig;
  timezone: string;
  poolMax?: number;
  /** How long a query waits for a free pooled connection before it fails (knex's KnexTimeoutError). */
  acquireTimeoutMs?: number;
}

/** A knex instance whose connections speak the platform time zone (interval and date arithmetic). */
export function createDb(options: DbOptions): Knex {
  const tz = options.timezone.replace(/'/g, "''");
  return knex({
    client: 'pg',
    connection: options.url,
    acquireConnectionTimeout: options.acquireTimeoutMs ?? 60000,
    pool: {
      min: 0,
      max: options.poolMax ?? 10,
      afterCreate(conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) {
        conn.query(`SET TIME ZONE '${tz}'`, (err) => done(err ?? null, conn));
      },
    },
    migrations: { directory: MIGRATIONS_DIR, loadExtensions: ['.ts', '.js'], tableName: 'knex_migrations' },
  });
}

export async function migrateLatest(db: Knex): Promise<string[]> {
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}

/** What a knex instance made by createDb connects to (knex keeps the URL parsed), for a second pool. */
export function connectionOf(db: Knex): Knex.PgConnectionConfig {
  const connection = (db.client.config as Knex.Config).connection;
  if (typeof connection === 'string') return { connectionString: connection };
  if (connection === null || typeof connection !== 'object' || typeof connection === 'function') {
    throw new TypeError('the database was not made from a connection URL or object');
  }
  const parsed = connection as Knex.PgConnectionConfig;
  // knex keeps the password as a non-enumerable property (out of logs): a spread would drop it.
  return { ...parsed, password: parsed.password };
}

/** A connection that could not be had in time (knex's acquire timeout): the pool is busy, not broken. */
export function isAcquireTimeout(err: unknown): boolean {
  return (err as { name?: unknown } | null)?.name === 'KnexTimeoutError';
}

/**
 * Runs independent reads: side by side on a pool (each query takes a connection of its own for
 * a moment), one after the other on a transaction, whose one connection runs one query at a time
 * (pg would queue them itself, a use it deprecates).
 */
export async function readAll<T extends readonly unknown[]>(db: Knex, reads: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (!(db as Knex & { isTransaction?: boolean }).isTransaction) return Promise.all(reads.map((read) => read())) as unknown as Promise<T>;
  const out: unknown[] = [];
  for (const read of reads) out.push(await read());
  return out as unknown as T;
}
