import { createHash } from 'node:crypto';
import knex, { Knex } from 'knex';
import pg from 'pg';
import { dropRecordedExtensions, migrationSource, MIGRATIONS_TABLE } from './migrations';
import { migrateJobQueue } from './jobQueue';
import { isUnusable, watchConnection } from './connectionHealth';

// Row ids and counts fit in a double; reading int8 as a number keeps rows plain.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

export interface DbOptions {
  url: string;
  timezone: string;
  poolMax?: number;
  /** How long a query waits for a free pooled connection before it fails (knex's KnexTimeoutError). */
  acquireTimeoutMs?: number;
  /**
   * Give up on opening a new connection after this long. Set for a replica, so reads fall back
   * to the primary quickly when it does not answer.
   */
  connectTimeoutMs?: number;
  /** Where knex's own warnings go (default: console.log); the command line keeps stdout for results. */
  log?: Knex.Config['log'];
  /** Keep knex's own connection-error lines off the console (the caller reports state changes). */
  quiet?: boolean;
}

const SILENT = { warn() {}, error() {}, debug() {}, deprecate() {} };

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
    connection:
      options.connectTimeoutMs === undefined
        ? options.url
        : { connectionString: options.url, connectionTimeoutMillis: options.connectTimeoutMs },
    acquireConnectionTimeout: options.acquireTimeoutMs ?? 60000,
    pool: {
      min: 0,
      max: options.poolMax ?? 10,
      afterCreate(conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) {
        watchConnection(conn);
        conn.query(`SET TIME ZONE '${tz}'`, (err) => done(err ?? null, conn));
      },
      // A connection that failed, ended or was given up on is closed by the pool, not handed out.
      validate: (conn: pg.Client) => !isUnusable(conn),
    },
    migrations: { migrationSource: migrationSource(), tableName: MIGRATIONS_TABLE },
    ...(options.log ? { log: options.log } : options.quiet ? { log: SILENT } : {}),
  });
  urls.set(db, options.url);
  return db;
}

/** Advisory lock key (two-key form) that serialises migrations of nodes starting together. */
const MIGRATION_LOCK = [0x4c434d, 0] as const;

/**
 * The project's migrations, then the job queue's schema (graphile-worker's own migrations).
 * API nodes started together all call this: knex's own lock makes every node but one fail at
 * once ("migration table is already locked"), so the nodes queue on an advisory lock instead,
 * and the later ones find nothing left to apply.
 */
export async function migrateLatest(db: Knex): Promise<string[]> {
  const migrate = async () => {
    await dropRecordedExtensions(db);
    const [, applied] = (await db.migrate.latest()) as [number, string[]];
    await migrateJobQueue(connectionStringOf(db));
    return applied;
  };
  // The lock holds one connection while knex migrates on another: a pool of one cannot.
  if ((poolOf(db)?.max ?? 2) < 2) return migrate();
  return withConnection(db, async (conn) => {
    await conn.query('select pg_advisory_lock($1, $2)', [...MIGRATION_LOCK]);
    try {
      return await migrate();
    } finally {
      await conn.query('select pg_advisory_unlock($1, $2)', [...MIGRATION_LOCK]).catch(() => undefined);
    }
  });
}

/** The parts of knex's client (`db.client`, untyped in knex's types) this project uses. */
export interface KnexClient {
  /** The instance's configuration, shared by its transactions' clients. */
  config: object;
  pool?: PoolState;
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(conn: pg.Client): Promise<void>;
}

export function knexClient(db: Knex): KnexClient {
  return db.client as KnexClient;
}

/** Runs `work` on a connection of the pool (or the transaction's), given back when it settles. */
export async function withConnection<T>(db: Knex | Knex.Transaction, work: (conn: pg.Client) => Promise<T>): Promise<T> {
  const client = knexClient(db);
  const conn = await client.acquireConnection();
  try {
    return await work(conn);
  } finally {
    await client.releaseConnection(conn);
  }
}

/**
 * Runs a statement as a named prepared statement on a pooled connection (or the transaction's):
 * Postgres parses and plans it once per connection instead of once per call (the single-statement
 * writes: an import, a lead change).
 */
export async function queryPrepared<R extends pg.QueryResultRow>(
  db: Knex | Knex.Transaction,
  name: string,
  text: string,
  values: unknown[],
): Promise<{ rows: R[] }> {
  return withConnection(db, (conn) => conn.query<R>({ name, text, values }));
}

/**
 * A statement written with knex's `?` bindings, run as a named prepared statement (queryPrepared)
 * named after its text: a long statement run often (a write with its hook event) is planned once
 * per connection instead of on every call.
 */
export function queryPreparedRaw<R extends pg.QueryResultRow>(
  db: Knex | Knex.Transaction,
  sql: string,
  bindings: readonly Knex.RawBinding[],
): Promise<{ rows: R[] }> {
  const native = db.raw(sql, bindings).toSQL().toNative();
  const name = `lcm_${createHash('sha1').update(native.sql).digest('hex').slice(0, 24)}`;
  return queryPrepared<R>(db, name, native.sql, [...native.bindings]);
}

/** What knex's pool (tarn) tells about its connections. */
export interface PoolState {
  max: number;
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}

/** The pool of `db`, for reading its state (metrics, spare connections); none on a transaction. */
export function poolOf(db: Knex): PoolState | undefined {
  return knexClient(db).pool;
}

/**
 * Whether `count` more connections can be had from the pool now without waiting (free ones, or
 * room to open new ones), with nobody queued for one. Work that could use another connection
 * but does not need it asks this instead of waiting for one while it holds a connection.
 */
export function hasSpareConnections(db: Knex, count: number): boolean {
  const pool = poolOf(db);
  if (!pool) return false;
  if (pool.numPendingAcquires() > 0) return false;
  const room = pool.max - pool.numUsed() - pool.numFree() - pool.numPendingCreates();
  return pool.numFree() + room >= count;
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
