import type { Knex } from 'knex';

/**
 * `lcm_record_lead_events` runs one generic plan per connection (docs/decisions.md, "Leads").
 * Postgres's plan cache compares a generic plan's estimated cost with its custom plans': with its
 * lead ids as a parameter the generic plan expects more leads than a one-lead call's custom plan
 * does, looks costlier, and the statement was planned again on every call (about 1.3 ms of an
 * import's 1.6 ms in this function). The plan is the same either way: a key lookup per lead.
 */
const SIGNATURE = 'lcm_record_lead_events(text, bigint[], smallint[], timestamptz)';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER FUNCTION ${SIGNATURE} SET plan_cache_mode = force_generic_plan`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER FUNCTION ${SIGNATURE} RESET plan_cache_mode`);
}
