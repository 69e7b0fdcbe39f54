import type { Knex } from 'knex';

/**
 * The do-not-call lists (docs/decisions.md, Do-not-call): the customer's list (entries for one
 * project, or for every project when `project` is null) and the global list (`global`, kept with
 * `lcm dnc --global` only). Numbers are stored in E.164. Leads keep their number as imported, so
 * finding the open leads of a number listed now goes through the number's digits: an index on
 * them, for open leads only, as only open leads move.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE do_not_call_numbers (
      id bigserial PRIMARY KEY,
      phone_number text NOT NULL CHECK (phone_number ~ '^\\+[0-9]{3,16}$'),
      global boolean NOT NULL DEFAULT false,
      project text,
      note text,
      expires_time timestamptz,
      created_time timestamptz NOT NULL DEFAULT now(),
      modified_time timestamptz NOT NULL DEFAULT now(),
      CHECK (NOT global OR project IS NULL)
    );
    CREATE UNIQUE INDEX do_not_call_numbers_entry ON do_not_call_numbers (phone_number, global, lower(coalesce(project, '')));
    CREATE INDEX do_not_call_numbers_modified ON do_not_call_numbers (modified_time, id);
    CREATE INDEX leads_open_phone_digits ON leads ((regexp_replace(phone_number, '[^0-9]', '', 'g')))
      WHERE status IN (0, 1, 2, 3, 10, 150);
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP INDEX IF EXISTS leads_open_phone_digits;
    DROP TABLE IF EXISTS do_not_call_numbers;
  `);
}
