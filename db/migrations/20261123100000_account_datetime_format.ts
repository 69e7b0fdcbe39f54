import type { Knex } from 'knex';

/**
 * How an account's answers write DateTimes (docs/decisions.md, Wire): 0 = Offset (the
 * default, `2026-05-06T10:16:41.000+02:00`), 1 = Local (`2026-05-06T10:16:41.0000000`), the
 * numbers of DateTimeFormat in src/domain/enums.ts.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE accounts ADD COLUMN date_time_format smallint NOT NULL DEFAULT 0 CHECK (date_time_format IN (0, 1))`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`ALTER TABLE accounts DROP COLUMN IF EXISTS date_time_format`);
}
