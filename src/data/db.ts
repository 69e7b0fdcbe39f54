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
