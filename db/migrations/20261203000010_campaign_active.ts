import type { Knex } from 'knex';

/** Campaigns carry `active` (docs/decisions.md, Lead definitions): the loader's `active?`, default true. */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE campaigns ADD COLUMN active boolean NOT NULL DEFAULT true`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE campaigns DROP COLUMN IF EXISTS active`);
}
