import type { Readable } from 'node:stream';
import type { Knex } from 'knex';

/**
 * The reads of one streamed export on ONE connection of the export pool, in a read-only
 * REPEATABLE READ transaction: `prepare` first reads what names the rows (lookups, the
 * organisation snapshot), then opens the row cursor, all on that connection and from one
 * snapshot, so every pool, campaign or user a row refers to is in what was read before it.
 *
 * No connection is held while another is awaited: the export's one connection is taken
 * first, and every query of `prepare` runs on it (a second acquire from any pool while it is
 * held is how eleven exports once deadlocked a pool of ten: docs/architecture.md).
 *
 * The transaction ends and the connection goes back to the pool when the returned `rows`
 * stream closes (its end, an error, or the client leaving), or here if `prepare` fails.
 * Waiting for the connection is bounded by the pool's acquire timeout (EXPORT_ACQUIRE_TIMEOUT_MS);
 * the timeout rejects with knex's KnexTimeoutError, answered 503.
 */
export async function openExportReads<T extends { rows: Readable }>(
  exportDb: Knex,
  prepare: (trx: Knex.Transaction) => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  signal?.throwIfAborted();
  const trx = await exportDb.transaction({ isolationLevel: 'repeatable read', readOnly: true });
  const end = (): void => {
    if (!trx.isCompleted()) void trx.rollback().catch(() => undefined);
  };
  let result: T;
  try {
    // A client that left while the connection was awaited: give it back at once.
    signal?.throwIfAborted();
    result = await prepare(trx);
  } catch (err) {
    end();
    throw err;
  }
  if (result.rows.closed || result.rows.destroyed) end();
  else result.rows.once('close', end);
  return result;
}
