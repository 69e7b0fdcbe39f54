import type { Knex } from 'knex';

/**
 * Request counters in Postgres (table request_counters, function count_request of the migration
 * 20261206000001_request_counters): one statement per counted request, exact across every
 * process on the database. Times are the caller's clock in ms since the epoch.
 */

/** One (account, service) row: its daily period and minute window as stored (ended ones included). */
export interface StoredRequestCounter {
  accountId: number;
  service: string;
  dailyStartMs: number | null;
  dailyCount: number;
  minuteStartMs: number | null;
  minuteCount: number;
  /** When both have ended. */
  endsMs: number;
}

export interface CountRequestArgs {
  scope: string;
  accountId: number;
  service: string;
  now: number;
  weight: number;
  dailyLimit: number;
  /** null: no fair use (the minute window is neither checked nor counted). */
  minuteLimit: number | null;
  dayMs: number;
  minuteMs: number;
}

/** The decision of count_request: 0 admitted, 1 daily or 2 minute limit exceeded; the current windows. */
export interface CountRequestReply {
  exceeded: 0 | 1 | 2;
  dailyStartMs: number | null;
  dailyCount: number;
  minuteStartMs: number | null;
  minuteCount: number;
}

interface ReplyRow {
  exceeded: number;
  d_start: number | null;
  d_count: number;
  m_start: number | null;
  m_count: number;
}

export async function countRequest(db: Knex, a: CountRequestArgs): Promise<CountRequestReply> {
  const { rows } = await db.raw<{ rows: ReplyRow[] }>(
    `select exceeded, d_start, d_count, m_start, m_count
       from count_request(?::text, ?::bigint, ?::text, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?::bigint)`,
    [a.scope, a.accountId, a.service, a.now, a.weight, a.dailyLimit, a.minuteLimit, a.dayMs, a.minuteMs],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('count_request returned no row');
  return {
    exceeded: row.exceeded === 1 ? 1 : row.exceeded === 2 ? 2 : 0,
    dailyStartMs: row.d_start,
    dailyCount: row.d_count,
    minuteStartMs: row.m_start,
    minuteCount: row.m_count,
  };
}

const COLUMNS = `account_id as "accountId", service, daily_start_ms as "dailyStartMs", daily_count as "dailyCount",
  minute_start_ms as "minuteStartMs", minute_count as "minuteCount", ends_ms as "endsMs"`;

/** The stored row of one account and service, if any. */
export async function findRequestCounter(
  db: Knex,
  scope: string,
  accountId: number,
  service: string,
): Promise<StoredRequestCounter | undefined> {
  const { rows } = await db.raw<{ rows: StoredRequestCounter[] }>(
    `select ${COLUMNS} from request_counters where scope = ? and account_id = ? and service = ?`,
    [scope, accountId, service],
  );
  return rows[0];
}

/** The rows of an account whose daily period may still run at `now` (the caller decides exactly). */
export async function listRequestCounters(
  db: Knex,
  scope: string,
  accountId: number,
  now: number,
  dayMs: number,
): Promise<StoredRequestCounter[]> {
  const { rows } = await db.raw<{ rows: StoredRequestCounter[] }>(
    `select ${COLUMNS} from request_counters where scope = ? and account_id = ? and daily_start_ms > ?::bigint`,
    [scope, accountId, now - dayMs],
  );
  return rows;
}

/**
 * Takes every row of `scope` out of the table in one transaction and hands them to `hand`, which
 * returns those it could not place elsewhere: they go back in before the transaction commits.
 * Rows are deleted under lock, so two processes never take the same row; a process that counts
 * on a taken key meanwhile waits for the commit and then starts from what was put back (or from
 * nothing). Returns how many rows were placed.
 */
export async function takeRequestCounters(
  db: Knex,
  scope: string,
  hand: (rows: StoredRequestCounter[]) => Promise<StoredRequestCounter[]>,
): Promise<number> {
  return db.transaction(async (trx) => {
    const { rows } = await trx.raw<{ rows: StoredRequestCounter[] }>(`delete from request_counters where scope = ? returning ${COLUMNS}`, [
      scope,
    ]);
    if (rows.length === 0) return 0;
    const left = await hand(rows);
    if (left.length > 0) {
      await trx('request_counters').insert(
        left.map((r) => ({
          scope,
          account_id: r.accountId,
          service: r.service,
          daily_start_ms: r.dailyStartMs,
          daily_count: r.dailyCount,
          minute_start_ms: r.minuteStartMs,
          minute_count: r.minuteCount,
          ends_ms: r.endsMs,
        })),
      );
    }
    return rows.length - left.length;
  });
}

/**
 * Deletes rows whose periods have all ended before `now - graceMs` (the grace covers API nodes
 * whose clocks run behind this one's). Returns how many.
 */
export async function deleteEndedRequestCounters(db: Knex, now: number, graceMs = 60_000): Promise<number> {
  return db('request_counters')
    .where('ends_ms', '<', now - graceMs)
    .delete();
}
