import type { Knex } from 'knex';

/**
 * Failed-login counts and known-good credentials in Postgres (tables login_failure_counts and
 * login_known_good, functions login_attempt, login_succeeded and login_failed of the migration
 * 20261206000002_login_records). Keys are digests made by the caller; windows and
 * expiries follow the database's clock, the same for every process.
 */

export interface LoginKeys {
  address: string;
  pair: string;
  knownGood: string;
}

export interface LoginAttemptArgs {
  scope: string;
  keys: LoginKeys;
  perAddress: number;
  perPair: number;
  windowMs: number;
  knownGoodFirst: boolean;
}

/** status 0: one failure reserved; 1: at a limit (waitMs); 2: a known-good record (tag, tagMs left). */
export interface LoginAttemptReply {
  status: 0 | 1 | 2;
  waitMs: number;
  addressFailures: number;
  tag: string;
  tagMs: number;
}

interface AttemptRow {
  status: number;
  wait_ms: number;
  address_failures: number;
  tag: string;
  tag_ms: number;
}

export async function loginAttempt(db: Knex, a: LoginAttemptArgs): Promise<LoginAttemptReply> {
  const { rows } = await db.raw<{ rows: AttemptRow[] }>(
    `select status, wait_ms, address_failures, tag, tag_ms
       from login_attempt(?::text, ?::text, ?::text, ?::text, ?::integer, ?::integer, ?::bigint, ?::boolean)`,
    [a.scope, a.keys.address, a.keys.pair, a.keys.knownGood, a.perAddress, a.perPair, a.windowMs, a.knownGoodFirst],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('login_attempt returned no row');
  return {
    status: row.status === 1 ? 1 : row.status === 2 ? 2 : 0,
    waitMs: row.wait_ms,
    addressFailures: row.address_failures,
    tag: row.tag,
    tagMs: row.tag_ms,
  };
}

export async function loginSucceeded(
  db: Knex,
  scope: string,
  keys: LoginKeys,
  reserved: boolean,
  knownGood: { tag: string; ttlMs: number } | undefined,
): Promise<void> {
  await db.raw(`select login_succeeded(?::text, ?::text, ?::text, ?::text, ?::boolean, ?::text, ?::bigint)`, [
    scope,
    keys.address,
    keys.pair,
    keys.knownGood,
    reserved,
    knownGood?.tag ?? null,
    knownGood?.ttlMs ?? 0,
  ]);
}

export async function loginFailed(db: Knex, scope: string, keys: LoginKeys, windowMs: number): Promise<void> {
  await db.raw(`select login_failed(?::text, ?::text, ?::text, ?::bigint)`, [scope, keys.address, keys.pair, windowMs]);
}

/** Deletes ended failure windows and expired known-good records. Returns how many rows went. */
export async function deleteEndedLoginRecords(db: Knex): Promise<number> {
  const failures = await db('login_failure_counts').where('window_ends', '<', db.raw('now()')).delete();
  const knownGood = await db('login_known_good').where('expires', '<', db.raw('now()')).delete();
  return failures + knownGood;
}
