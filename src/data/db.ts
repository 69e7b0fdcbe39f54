import knex, { Knex } from 'knex';
import pg from 'pg';
import { dropRecordedExtensions, migrationSource, MIGRATIONS_TABLE } from './migrations';
import { migrateJobQueue } from './jobQueue';

// Row ids and counts fit in a double; reading int8 as a number keeps rows plain.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export interface DbOptions {
  url: string;
  timezone: string;
  poolMax?: number;
  /** How long a query waits for a free pooled connection before it fails (knex's KnexTimeoutError). */
  acquireTimeoutMs?: number;
  /** Where knex's own warnings go (default: console.log); the command line keeps stdout for results. */
  log?: Knex.Config['log'];
}

/** A knex instance whose connections speak the platform time zone (interval and date arithmetic). */
const urls = new WeakMap<Knex, string>();

/** The URL a knex instance was made with: the job queue opens its own connections to the same database. */
export function connectionStringOf(db: Knex): string {
  const url = urls.get(db);
  if (url === undefined) throw new Error('this database handle was not made by createDb');
  return url;
}

export function createDb(options: DbOptions): Knex {
  const tz = options.timezone.replace(/'/g, "''");
  const db = knex({
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
    migrations: { migrationSource: migrationSource(), tableName: MIGRATIONS_TABLE },
    ...(options.log ? { log: options.log } : {}),
  });
  urls.set(db, options.url);
  return db;
}

/** The project's migrations, then the job queue's schema (graphile-worker's own migrations). */
export async function migrateLatest(db: Knex): Promise<string[]> {
  await dropRecordedExtensions(db);
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  await migrateJobQueue(connectionStringOf(db));
  return applied;
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
