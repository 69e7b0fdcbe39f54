import knex, { Knex } from 'knex';
import pg from 'pg';
import { dropRecordedExtensions, migrationSource, MIGRATIONS_TABLE } from './migrations';

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
export function createDb(options: DbOptions): Knex {
  const tz = options.timezone.replace(/'/g, "''");
  return knex({
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
}

export async function migrateLatest(db: Knex): Promise<string[]> {
  await dropRecordedExtensions(db);
  const [, applied] = (await db.migrate.latest()) as [number, string[]];
  return applied;
}
