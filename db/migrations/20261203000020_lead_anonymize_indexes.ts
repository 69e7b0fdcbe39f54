import type { Knex } from 'knex';

/**
 * Anonymizing a lead (docs/decisions.md, Lead changes) finds its calls, its calendar events and
 * the queued hook events holding copies of them. Calls are found by `lead_id` (indexed); only
 * calls loaded before their lead was known have none and are found by the lead's unique id.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE INDEX calls_unlinked_lead ON calls (unique_lead_id) WHERE lead_id IS NULL;
    CREATE INDEX calendar_events_lead ON calendar_events (lead_unique_id);
    CREATE INDEX hook_events_resource ON hook_events (resource_id);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX IF EXISTS hook_events_resource;
    DROP INDEX IF EXISTS calendar_events_lead;
    DROP INDEX IF EXISTS calls_unlinked_lead;
  `);
}
