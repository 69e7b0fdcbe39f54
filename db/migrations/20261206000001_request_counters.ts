import type { Knex } from 'knex';

/**
 * Request counters in Postgres (docs/decisions.md, Request counting): the store without
 * REDIS_URL, and the fallback of the Redis store while Redis is down. Each counted request is
 * one function call, so one statement; the function locks the row it changes, so concurrent
 * requests of one account and service run one after the other.
 *
 * `scope` keeps apart counts kept as the primary store ('') and counts kept while a Redis was
 * down (a digest of its address), which are merged into that Redis when it is back.
 *
 * Times are the caller's clock in ms since the epoch, as in the Redis script.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Rows change on every request: room on each page for HOT updates.
    CREATE TABLE request_counters (
      scope text NOT NULL,
      account_id bigint NOT NULL,
      service text NOT NULL,
      daily_start_ms bigint,
      daily_count bigint NOT NULL DEFAULT 0,
      minute_start_ms bigint,
      minute_count bigint NOT NULL DEFAULT 0,
      -- When both periods have ended: from then on the row counts nothing and may be deleted.
      ends_ms bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (scope, account_id, service)
    ) WITH (fillfactor = 50);

    -- Makes the decision src/ratelimit/counterStore.ts describes, as the Lua script of
    -- src/ratelimit/redisCounterStore.ts does. p_minute_limit NULL: no fair use.
    -- exceeded: 0 admitted (counted), 1 daily, 2 minute; the windows current at p_now, after the
    -- increment when admitted.
    CREATE FUNCTION count_request(
      p_scope text, p_account_id bigint, p_service text, p_now bigint, p_weight bigint,
      p_daily_limit bigint, p_minute_limit bigint, p_day_ms bigint, p_minute_ms bigint)
    RETURNS TABLE (exceeded smallint, d_start bigint, d_count bigint, m_start bigint, m_count bigint)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      r request_counters%ROWTYPE;
      ds bigint;
      dc bigint := 0;
      ms bigint;
      mc bigint := 0;
    BEGIN
      -- A count need not wait for its WAL flush while it holds the row: a crash of Postgres may
      -- lose the last fraction of a second of counts (docs/decisions.md, Request counting).
      PERFORM set_config('synchronous_commit', 'off', true);
      SELECT * INTO r FROM request_counters c
       WHERE c.scope = p_scope AND c.account_id = p_account_id AND c.service = p_service
         FOR UPDATE;
      IF NOT FOUND THEN
        INSERT INTO request_counters (scope, account_id, service) VALUES (p_scope, p_account_id, p_service)
          ON CONFLICT DO NOTHING;
        SELECT * INTO r FROM request_counters c
         WHERE c.scope = p_scope AND c.account_id = p_account_id AND c.service = p_service
           FOR UPDATE;
      END IF;

      IF r.daily_start_ms IS NOT NULL AND p_now < r.daily_start_ms + p_day_ms THEN
        ds := r.daily_start_ms;
        dc := r.daily_count;
      END IF;
      IF p_minute_limit IS NOT NULL AND r.minute_start_ms IS NOT NULL AND p_now < r.minute_start_ms + p_minute_ms THEN
        ms := r.minute_start_ms;
        mc := r.minute_count;
      END IF;

      IF dc + p_weight > p_daily_limit THEN
        RETURN QUERY SELECT 1::smallint, ds, dc, ms, mc;
        RETURN;
      END IF;
      IF p_minute_limit IS NOT NULL AND mc + p_weight > p_minute_limit THEN
        RETURN QUERY SELECT 2::smallint, ds, dc, ms, mc;
        RETURN;
      END IF;

      ds := coalesce(ds, p_now);
      dc := dc + p_weight;
      IF p_minute_limit IS NOT NULL THEN
        ms := coalesce(ms, p_now);
        mc := mc + p_weight;
        UPDATE request_counters c
           SET daily_start_ms = ds, daily_count = dc, minute_start_ms = ms, minute_count = mc,
               ends_ms = greatest(ds + p_day_ms, ms + p_minute_ms)
         WHERE c.scope = p_scope AND c.account_id = p_account_id AND c.service = p_service;
      ELSE
        -- A request without fair use leaves the minute window as it is.
        UPDATE request_counters c
           SET daily_start_ms = ds, daily_count = dc,
               ends_ms = greatest(ds + p_day_ms, coalesce(c.minute_start_ms + p_minute_ms, 0))
         WHERE c.scope = p_scope AND c.account_id = p_account_id AND c.service = p_service;
      END IF;
      RETURN QUERY SELECT 0::smallint, ds, dc, ms, mc;
    END
    $fn$;

  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS count_request(text, bigint, text, bigint, bigint, bigint, bigint, bigint, bigint);
    DROP TABLE IF EXISTS request_counters;
  `);
}
