import type { Knex } from 'knex';

/**
 * The request log's account index only on days that have ended (docs/decisions.md, "The
 * account's request log"). Kept up row by row, a btree on (account_id, time) was about 40% of
 * Postgres's work per logged request. The whole table now has a BRIN index on `time`, which
 * costs next to nothing to keep up and narrows a read to its window's blocks; partition
 * maintenance (src/data/partitions.ts) builds the btree on each day's partition once the day is
 * over, in one pass. Days that have already ended get theirs at maintenance's next run (it also
 * runs at start).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX request_log_account_time;
    CREATE INDEX request_log_time ON request_log USING brin (time);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX request_log_time;
    CREATE INDEX request_log_account_time ON request_log (account_id, time);
  `);
}
