import type { Knex } from 'knex';

/**
 * Fair hook delivery and what live-service clients send (docs/decisions.md, "Hooks"):
 * - a hook's circuit breaker: the failures in a row of its last attempts, and the time it is
 *   paused until once they all failed;
 * - an address the SSRF rules refused, shown on the hook (the delivery failed at once);
 * - `lead_release_type`: the LeadClosure a `lead.statusChanged` hook is narrowed to;
 * - the attempts in flight per hook (and so per account), counted when a delivery is claimed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE hooks
      ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0,
      ADD COLUMN paused_until timestamptz,
      ADD COLUMN refused_reason text,
      ADD COLUMN refused_time timestamptz,
      ADD COLUMN lead_release_type smallint;
    CREATE INDEX hook_deliveries_in_flight ON hook_deliveries (hook_id, in_flight_until) WHERE in_flight_until IS NOT NULL;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX IF EXISTS hook_deliveries_in_flight;
    ALTER TABLE hooks
      DROP COLUMN IF EXISTS consecutive_failures,
      DROP COLUMN IF EXISTS paused_until,
      DROP COLUMN IF EXISTS refused_reason,
      DROP COLUMN IF EXISTS refused_time,
      DROP COLUMN IF EXISTS lead_release_type;
  `);
}
