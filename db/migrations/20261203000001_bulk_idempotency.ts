import type { Knex } from 'knex';

/**
 * The answer of a bulk import under an Idempotency-Key, kept in parts (one per stored batch,
 * written in the batch's transaction) so a retry can replay it without holding it in memory,
 * and an import cut short can be resumed after its last stored batch (docs/decisions.md, Bulk
 * import). The parts go with their key (the sweeper deletes expired keys).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE idempotency_bulk_parts (
      account_id bigint NOT NULL,
      key text NOT NULL,
      last_row integer NOT NULL,
      digest text NOT NULL,
      results text NOT NULL,
      PRIMARY KEY (account_id, key, last_row),
      FOREIGN KEY (account_id, key) REFERENCES idempotency_keys (account_id, key) ON DELETE CASCADE
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS idempotency_bulk_parts');
}
