import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import { beginTransaction, commitTransaction } from './transactions';

/**
 * `Idempotency-Key` for writes (docs/decisions.md, Leads): a retried request with the same key returns the
 * first answer without doing the work twice, also when the retries run at the same time.
 *
 * The key row is claimed first, inside the transaction that does the work. A concurrent
 * request with the same key blocks on that uncommitted row (a unique-index conflict waits for
 * the other transaction), and once the first one commits it reads the stored answer. If the
 * first one fails (rolls back), the key is free again and the waiting request does the work.
 * Keys expire after KEY_TTL: an older key is taken over as if new.
 */
export const KEY_TTL = '24 hours';

/** A row of idempotency_keys. */
export interface IdempotencyKeyRow {
  account_id: number;
  key: string;
  request_hash: string;
  status_code: number | null;
  /** jsonb: written as JSON text, read parsed. */
  response: unknown;
  created_at: Date;
}

export interface StoredAnswer {
  status: number;
  body: unknown;
}

export type IdempotentOutcome =
  | { kind: 'fresh'; answer: StoredAnswer }
  | { kind: 'replayed'; answer: StoredAnswer }
  /** The key was used with a different request. */
  | { kind: 'mismatch' };

/** A stable hash of the request a key stands for (callers pass a canonical form). */
export function requestHash(canonical: unknown): string {
  return createHash('sha256').update(stableJson(canonical)).digest('base64url');
}

function stableJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return '[' + value.map(stableJson).join(',') + ']';
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return '{' + entries.map(([k, v]) => JSON.stringify(k) + ':' + stableJson(v)).join(',') + '}';
}

/**
 * Runs `work` once per (account, key). `work` runs inside the transaction that holds the key
 * and returns the answer to store; if it throws, nothing is stored and the error propagates.
 */
export async function runIdempotent(
  db: Knex,
  accountId: number,
  key: string,
  hash: string,
  work: (trx: Knex.Transaction) => Promise<StoredAnswer>,
): Promise<IdempotentOutcome> {
  const trx = await beginTransaction(db);
  try {
    const claimed = await trx.raw<{ rows: { account_id: number }[] }>(
      `insert into idempotency_keys (account_id, key, request_hash) values (?, ?, ?)
       on conflict (account_id, key) do update
         set request_hash = excluded.request_hash, status_code = null, response = null, created_at = now()
         where idempotency_keys.created_at < now() - interval '${KEY_TTL}'
       returning account_id`,
      [accountId, key, hash],
    );
    if (claimed.rows.length === 0) {
      // Held by a committed request: the conflict above waited for it if it was running.
      const stored = (await trx<IdempotencyKeyRow>('idempotency_keys')
        .where({ account_id: accountId, key })
        .first('request_hash', 'status_code', 'response'))!;
      await trx.rollback();
      if (stored.request_hash !== hash) return { kind: 'mismatch' };
      return { kind: 'replayed', answer: { status: stored.status_code!, body: stored.response } };
    }
    const answer = await work(trx);
    await trx('idempotency_keys')
      .where({ account_id: accountId, key })
      .update({ status_code: answer.status, response: JSON.stringify(answer.body) });
    await commitTransaction(trx);
    return { kind: 'fresh', answer };
  } catch (err) {
    if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
    throw err;
  }
}

/** Drops keys past their time to live (run by the sweeper). */
export async function deleteExpiredIdempotencyKeys(db: Knex): Promise<number> {
  return db('idempotency_keys').whereRaw(`created_at < now() - interval '${KEY_TTL}'`).delete();
}
