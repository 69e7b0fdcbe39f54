import type { Knex } from 'knex';

/**
 * Failed-login counts and known-good credentials in Postgres (docs/decisions.md, Overload and
 * timeouts): the store without REDIS_URL, and the fallback of the Redis store while Redis is
 * down. Each step of a login is one function call; the functions lock the rows they change
 * (an address's row before its pairs'), so concurrent attempts from one address run one after
 * the other and the check of the limits and the count are one step.
 *
 * `scope` is '' for the store without Redis, else the digest of the Redis it stands in for.
 * Windows and expiries follow the database's clock, as the Redis keys follow Redis's.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Failed logins per address and per (address, username) pair, in fixed windows that start
    -- with their first failure. Keys are digests (src/ratelimit/redisLoginFailures.ts), never an
    -- address or a username.
    CREATE TABLE login_failure_counts (
      scope text NOT NULL,
      key text NOT NULL,
      count integer NOT NULL,
      window_ends timestamptz NOT NULL,
      PRIMARY KEY (scope, key)
    ) WITH (fillfactor = 70);

    -- Credentials that logged in from an address: a keyed tag of the password
    -- (docs/decisions.md, Overload and timeouts), never the password.
    CREATE TABLE login_known_good (
      scope text NOT NULL,
      key text NOT NULL,
      tag text NOT NULL,
      expires timestamptz NOT NULL,
      PRIMARY KEY (scope, key)
    ) WITH (fillfactor = 70);

    -- The functions below commit without waiting for their WAL flush, as count_request does:
    -- a crash of Postgres may lose the last fraction of a second of failures.

    -- One login attempt before its password check, in one step. With p_known_good_first, a
    -- current known-good record of the pair is returned as is (status 2, nothing counted).
    -- Otherwise: status 1 when the address or the pair is at its limit (wait_ms: until the
    -- later of the exceeded windows ends), else status 0 and one failure counted on both in
    -- advance. address_failures: the address's count before this attempt.
    CREATE FUNCTION login_attempt(
      p_scope text, p_address_key text, p_pair_key text, p_known_good_key text,
      p_per_address integer, p_per_pair integer, p_window_ms bigint, p_known_good_first boolean)
    RETURNS TABLE (status smallint, wait_ms bigint, address_failures integer, tag text, tag_ms bigint)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      t timestamptz := clock_timestamp();
      kg login_known_good%ROWTYPE;
      a login_failure_counts%ROWTYPE;
      p login_failure_counts%ROWTYPE;
      ac integer := 0;
      pc integer := 0;
      wait bigint := 0;
      limited boolean := false;
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      IF p_known_good_first THEN
        SELECT * INTO kg FROM login_known_good k WHERE k.scope = p_scope AND k.key = p_known_good_key AND k.expires > t;
        IF FOUND THEN
          RETURN QUERY SELECT 2::smallint, 0::bigint, 0, kg.tag, ceil(extract(epoch FROM kg.expires - t) * 1000)::bigint;
          RETURN;
        END IF;
      END IF;

      -- First without locks: a refused attempt then writes nothing (a flood from a limited
      -- address is only reads). A limit seen there holds: within a window counts only grow, but
      -- for a success taking back its own reservation. Then with the rows locked, address
      -- before pair in every function (no deadlocks), to decide and count in one step.
      FOR pass IN 1..2 LOOP
        IF pass = 1 THEN
          SELECT * INTO a FROM login_failure_counts c WHERE c.scope = p_scope AND c.key = p_address_key;
          SELECT * INTO p FROM login_failure_counts c WHERE c.scope = p_scope AND c.key = p_pair_key;
        ELSE
          INSERT INTO login_failure_counts AS c (scope, key, count, window_ends)
            VALUES (p_scope, p_address_key, 0, t), (p_scope, p_pair_key, 0, t)
            ON CONFLICT DO NOTHING;
          SELECT * INTO a FROM login_failure_counts c WHERE c.scope = p_scope AND c.key = p_address_key FOR UPDATE;
          SELECT * INTO p FROM login_failure_counts c WHERE c.scope = p_scope AND c.key = p_pair_key FOR UPDATE;
        END IF;
        ac := 0;
        pc := 0;
        IF a.window_ends > t THEN ac := a.count; END IF;
        IF p.window_ends > t THEN pc := p.count; END IF;
        IF ac >= p_per_address THEN
          limited := true;
          wait := greatest(wait, ceil(extract(epoch FROM a.window_ends - t) * 1000)::bigint);
        END IF;
        IF pc >= p_per_pair THEN
          limited := true;
          wait := greatest(wait, ceil(extract(epoch FROM p.window_ends - t) * 1000)::bigint);
        END IF;
        IF limited THEN
          RETURN QUERY SELECT 1::smallint, wait, ac, ''::text, 0::bigint;
          RETURN;
        END IF;
      END LOOP;

      UPDATE login_failure_counts c
         SET count = CASE WHEN c.window_ends > t THEN c.count + 1 ELSE 1 END,
             window_ends = CASE WHEN c.window_ends > t THEN c.window_ends ELSE t + p_window_ms * interval '1 millisecond' END
       WHERE c.scope = p_scope AND c.key IN (p_address_key, p_pair_key);
      RETURN QUERY SELECT 0::smallint, 0::bigint, ac, ''::text, 0::bigint;
    END
    $fn$;

    -- A password check passed: takes back the attempt's reserved failure from the address,
    -- clears the pair's failures and, with a tag, records the credential as known-good.
    CREATE FUNCTION login_succeeded(
      p_scope text, p_address_key text, p_pair_key text, p_known_good_key text,
      p_reserved boolean, p_tag text, p_ttl_ms bigint)
    RETURNS void
    LANGUAGE plpgsql AS $fn$
    DECLARE
      t timestamptz := clock_timestamp();
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      IF p_reserved THEN
        UPDATE login_failure_counts c SET count = c.count - 1
         WHERE c.scope = p_scope AND c.key = p_address_key AND c.window_ends > t AND c.count > 0;
      END IF;
      DELETE FROM login_failure_counts c WHERE c.scope = p_scope AND c.key = p_pair_key;
      IF p_tag IS NOT NULL THEN
        INSERT INTO login_known_good AS k (scope, key, tag, expires)
          VALUES (p_scope, p_known_good_key, p_tag, t + p_ttl_ms * interval '1 millisecond')
          ON CONFLICT (scope, key) DO UPDATE SET tag = excluded.tag, expires = excluded.expires;
      END IF;
    END
    $fn$;

    -- One failure on the address and the pair that reserved nothing before.
    CREATE FUNCTION login_failed(p_scope text, p_address_key text, p_pair_key text, p_window_ms bigint)
    RETURNS void
    LANGUAGE plpgsql AS $fn$
    DECLARE
      t timestamptz := clock_timestamp();
    BEGIN
      PERFORM set_config('synchronous_commit', 'off', true);
      INSERT INTO login_failure_counts AS c (scope, key, count, window_ends)
        VALUES (p_scope, p_address_key, 1, t + p_window_ms * interval '1 millisecond'),
               (p_scope, p_pair_key, 1, t + p_window_ms * interval '1 millisecond')
        ON CONFLICT (scope, key) DO UPDATE
          SET count = CASE WHEN c.window_ends > t THEN c.count + 1 ELSE 1 END,
              window_ends = CASE WHEN c.window_ends > t THEN c.window_ends ELSE excluded.window_ends END;
    END
    $fn$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS login_failed(text, text, text, bigint);
    DROP FUNCTION IF EXISTS login_succeeded(text, text, text, text, boolean, text, bigint);
    DROP FUNCTION IF EXISTS login_attempt(text, text, text, text, integer, integer, bigint, boolean);
    DROP TABLE IF EXISTS login_known_good;
    DROP TABLE IF EXISTS login_failure_counts;
  `);
}
