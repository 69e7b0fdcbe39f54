import type { Knex } from 'knex';
import { KEY_TTL, type IdempotencyKeyRow } from './idempotency';

/**
 * `Idempotency-Key` over a whole bulk import (docs/decisions.md, Bulk import). A bulk import
 * commits many transactions, so the key cannot be held by one of them as a single import's is.
 * Instead the key row is claimed at once (committed), each stored batch adds a part of the
 * answer in its own transaction (checked against the rows the key already holds, so two
 * requests with the same key cannot both add rows), and the end of the body finishes the key
 * with the digest of the whole request.
 *
 * `request_hash` of a bulk key is `bulk:<hash of the parameters>:<digest of the rows>`, the
 * digest empty while the import is unfinished. A part's `digest` is the digest of the rows up
 * to its last row, which lets a retry prove it sends the same rows before it is resumed.
 */

export type BulkKeyState =
  /** Claimed now: no row was answered under this key. */
  | { kind: 'fresh' }
  /** An import with this key stopped before the end of its body (or still runs): rows 1..rows are stored. */
  | { kind: 'unfinished'; rows: number; digest?: string }
  /** An import with this key read its whole body: its answer is kept. */
  | { kind: 'finished'; digest: string; rows: number; stop: unknown }
  /** The key was used with other parameters, or by another endpoint. */
  | { kind: 'mismatch' };

interface BulkPartRow {
  account_id: number;
  key: string;
  last_row: number;
  digest: string;
  results: string;
}

const hashText = (paramsHash: string, digest = '') => `bulk:${paramsHash}:${digest}`;

/** Claims the key, or says what an earlier request left under it. */
export async function claimBulkKey(db: Knex, accountId: number, key: string, paramsHash: string): Promise<BulkKeyState> {
  return db.transaction(async (trx) => {
    const claimed = await trx.raw<{ rows: { account_id: number }[] }>(
      `insert into idempotency_keys (account_id, key, request_hash) values (?, ?, ?)
       on conflict (account_id, key) do update
         set request_hash = excluded.request_hash, status_code = null, response = null, created_at = now()
         where idempotency_keys.created_at < now() - interval '${KEY_TTL}'
       returning account_id`,
      [accountId, key, hashText(paramsHash)],
    );
    if (claimed.rows.length > 0) {
      // An expired key taken over: the parts of its earlier answer go.
      await trx('idempotency_bulk_parts').where({ account_id: accountId, key }).delete();
      return { kind: 'fresh' };
    }
    const stored = (await trx<IdempotencyKeyRow>('idempotency_keys')
      .where({ account_id: accountId, key })
      .first('request_hash', 'status_code', 'response'))!;
    const match = /^bulk:([^:]*):(.*)$/.exec(stored.request_hash);
    if (!match || match[1] !== paramsHash) return { kind: 'mismatch' };
    const last = await trx<BulkPartRow>('idempotency_bulk_parts')
      .where({ account_id: accountId, key })
      .orderBy('last_row', 'desc')
      .first('last_row', 'digest');
    const rows = last ? Number(last.last_row) : 0;
    if (stored.status_code !== null) {
      return { kind: 'finished', digest: match[2]!, rows, stop: (stored.response as { stop?: unknown } | null)?.stop ?? null };
    }
    return { kind: 'unfinished', rows, ...(last ? { digest: last.digest } : {}) };
  });
}

/** Locks the key row and checks that it is unfinished and holds exactly `rows` rows. */
async function holdsRows(trx: Knex.Transaction, accountId: number, key: string, rows: number): Promise<boolean> {
  const locked = await trx.raw<{ rows: { status_code: number | null }[] }>(
    'select status_code from idempotency_keys where account_id = ? and key = ? for update',
    [accountId, key],
  );
  if (locked.rows.length === 0 || locked.rows[0]!.status_code !== null) return false;
  const { rows: counted } = await trx.raw<{ rows: { n: number }[] }>(
    'select coalesce(max(last_row), 0)::int as n from idempotency_bulk_parts where account_id = ? and key = ?',
    [accountId, key],
  );
  return counted[0]!.n === rows;
}

/**
 * Adds a stored batch's part of the answer, in the batch's transaction. False (add nothing,
 * roll back) when the key does not hold `rowsBefore` rows: another request with the same key
 * stored rows meanwhile, or finished it.
 */
export async function addBulkPart(
  trx: Knex.Transaction,
  accountId: number,
  key: string,
  rowsBefore: number,
  part: { lastRow: number; digest: string; results: string },
): Promise<boolean> {
  if (!(await holdsRows(trx, accountId, key, rowsBefore))) return false;
  await trx('idempotency_bulk_parts').insert({
    account_id: accountId,
    key,
    last_row: part.lastRow,
    digest: part.digest,
    results: part.results,
  });
  return true;
}

/** Marks the key finished with the digest of the whole request and how the answer ended. */
export async function finishBulkKey(
  db: Knex,
  accountId: number,
  key: string,
  finish: { paramsHash: string; rows: number; digest: string; stop: unknown },
): Promise<boolean> {
  return db.transaction(async (trx) => {
    if (!(await holdsRows(trx, accountId, key, finish.rows))) return false;
    await trx('idempotency_keys')
      .where({ account_id: accountId, key })
      .update({
        request_hash: hashText(finish.paramsHash, finish.digest),
        status_code: 200,
        response: JSON.stringify({ stop: finish.stop }),
      });
    return true;
  });
}

/** Frees a key under which nothing was answered (the request was refused before its first row). */
export async function releaseBulkKey(db: Knex, accountId: number, key: string): Promise<void> {
  await db.raw(
    `delete from idempotency_keys k
      where k.account_id = ? and k.key = ? and k.status_code is null
        and not exists (select 1 from idempotency_bulk_parts p where p.account_id = k.account_id and p.key = k.key)`,
    [accountId, key],
  );
}

/** The stored parts of the answer up to row `throughRow` (all without it), in order, a page at a time. */
export async function* bulkParts(
  db: Knex,
  accountId: number,
  key: string,
  throughRow?: number,
  pageSize = 20,
): AsyncGenerator<{ lastRow: number; results: string; rows: number }> {
  let after = 0;
  for (;;) {
    const query = db<BulkPartRow>('idempotency_bulk_parts').where({ account_id: accountId, key }).andWhere('last_row', '>', after);
    if (throughRow !== undefined) query.andWhere('last_row', '<=', throughRow);
    const page = await query.orderBy('last_row').limit(pageSize).select('last_row', 'results');
    for (const p of page) {
      yield { lastRow: p.last_row, results: p.results, rows: p.last_row - after };
      after = p.last_row;
    }
    if (page.length < pageSize) return;
  }
}
