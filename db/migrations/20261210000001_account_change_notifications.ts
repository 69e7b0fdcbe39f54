import type { Knex } from 'knex';

/**
 * Every change of an account or of its request limits is announced on the Postgres channel
 * `lcm_account_changed` (payload: the account id) when its transaction commits, whoever makes
 * it (`lcm account`, the loader, SQL by hand): each worker process of every node drops the
 * credentials it cached for that account at once (docs/decisions.md, "Accounts and rights").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION lcm_account_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('lcm_account_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END)::text);
      RETURN NULL;
    END $$`);
  await knex.raw(`
    CREATE FUNCTION lcm_account_limits_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('lcm_account_changed', (CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END)::text);
      RETURN NULL;
    END $$`);
  await knex.raw(`CREATE TRIGGER accounts_changed AFTER INSERT OR UPDATE OR DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION lcm_account_changed()`);
  await knex.raw(`CREATE TRIGGER request_limits_changed AFTER INSERT OR UPDATE OR DELETE ON request_limits
    FOR EACH ROW EXECUTE FUNCTION lcm_account_limits_changed()`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`DROP TRIGGER IF EXISTS request_limits_changed ON request_limits`);
  await knex.raw(`DROP TRIGGER IF EXISTS accounts_changed ON accounts`);
  await knex.raw(`DROP FUNCTION IF EXISTS lcm_account_limits_changed()`);
  await knex.raw(`DROP FUNCTION IF EXISTS lcm_account_changed()`);
}
