import type { Knex } from 'knex';

/**
 * Transactions taken without a callback (`db.transaction()`), whose BEGIN and COMMIT failures
 * surface where they happen. knex reports a failed BEGIN or COMMIT only through the
 * transaction's `executionPromise`: `trx.commit()` itself resolves when the COMMIT failed (the
 * connection was cut before Postgres committed), and a transaction whose BEGIN failed is handed
 * out already completed, so that its first query fails with "Transaction query already
 * complete" instead of the cause. An answer sent after such a commit would acknowledge work
 * that was rolled back.
 */
export async function beginTransaction(db: Knex, config?: Knex.TransactionConfig): Promise<Knex.Transaction> {
  const trx = await db.transaction(config);
  if (trx.isCompleted()) {
    await trx.executionPromise;
    throw new Error('the transaction ended as it began');
  }
  return trx;
}

/** Commits, or throws the COMMIT's error (then nothing was committed, or it is unknown whether it was). */
export async function commitTransaction(trx: Knex.Transaction): Promise<void> {
  await trx.commit();
  await trx.executionPromise;
}
