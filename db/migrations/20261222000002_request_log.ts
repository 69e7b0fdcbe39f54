import type { Knex } from 'knex';

/**
 * The account's request log (docs/decisions.md, "The account's request log"): one row per
 * authenticated request, written in batches off the request path. Partitioned by UTC day on
 * `time`, so retention drops whole days (src/data/partitions.ts names them
 * `request_log_pYYYY_MM_DD`); the default partition takes rows of a day without a partition of
 * its own until maintenance moves them out. Reads are one account's rows in a time window.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE request_log (
      account_id bigint NOT NULL,
      time timestamptz NOT NULL,
      request_id text NOT NULL,
      method text NOT NULL,
      -- Path and query as the client sent them (credentials never: they travel in headers).
      path text NOT NULL,
      service text NOT NULL,
      status smallint NOT NULL,
      -- Counter units the request spent (0 when refused or not counted).
      weight integer NOT NULL,
      duration_ms real NOT NULL,
      bytes_sent bigint NOT NULL,
      client_address text
    ) PARTITION BY RANGE (time);
    CREATE INDEX request_log_account_time ON request_log (account_id, time);
    CREATE TABLE request_log_default PARTITION OF request_log DEFAULT;

    -- Yesterday to a week ahead (UTC days), as maintenance keeps them.
    DO $$
    DECLARE
      d date;
    BEGIN
      FOR d IN SELECT generate_series((now() at time zone 'UTC')::date - 1, (now() at time zone 'UTC')::date + 7, interval '1 day')::date LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF request_log FOR VALUES FROM (%L) TO (%L)',
                       'request_log_p' || to_char(d, 'YYYY_MM_DD'), d::text || ' 00:00:00+00', (d + 1)::text || ' 00:00:00+00');
      END LOOP;
    END
    $$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE IF EXISTS request_log CASCADE');
}
