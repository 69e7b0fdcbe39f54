import type { Knex } from 'knex';

/**
 * Background jobs that every API node schedules and one node runs per interval (the lead
 * lifecycle sweep, partition maintenance): when each last ran, where, and how it ended
 * (src/data/scheduledJobs.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE scheduled_jobs (
      job text PRIMARY KEY,
      runs bigint NOT NULL DEFAULT 0,
      last_started_at timestamptz,
      last_finished_at timestamptz,
      last_node text,
      last_error text,
      last_result jsonb
    )
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS scheduled_jobs');
}
