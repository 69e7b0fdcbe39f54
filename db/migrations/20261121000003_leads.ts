import type { Knex } from 'knex';

/**
 * Lead lifecycle bookkeeping: the call statuses a call's outcome gave when it was applied to its
 * lead (`lcm load` with `applyOutcome: true`). Loading the same call again restores them
 * instead of applying the outcome twice (attempts would count double), so reloading a file
 * stays idempotent.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE calls ADD COLUMN applied_outcome jsonb`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE calls DROP COLUMN IF EXISTS applied_outcome`);
}
