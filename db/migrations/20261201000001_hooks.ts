import type { Knex } from 'knex';

/**
 * Hooks (docs/architecture.md, "Hooks"): the WebHooks resource, the events written in the
 * transaction of the change that causes them, one delivery per (event, hook) with its attempts,
 * and the heartbeats of the delivery worker processes. The queue the deliveries travel on is
 * graphile-worker's, in its own schema (set up by migrateLatest beside these migrations).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- A project-rights pattern (* and ?, case-insensitive, anchored) as a LIKE pattern: the SQL
    -- twin of patternToSqlLike in src/domain/projectPatterns.ts, for matching hooks in SQL.
    CREATE FUNCTION lcm_glob_to_like(pattern text) RETURNS text
      LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT replace(replace(replace(replace(replace(lower(pattern), '\\', '\\\\'), '%', '\\%'), '_', '\\_'), '*', '%'), '?', '_')
      $$;

    CREATE TABLE hooks (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text,
      url text NOT NULL,
      method text NOT NULL CHECK (method IN ('POST', 'PUT')),
      format text NOT NULL CHECK (format IN ('Json', 'Form')),
      events text[] NOT NULL,
      campaign_code text,
      projects text[],
      lead_status smallint,
      content_template text,
      standard_template text NOT NULL,
      secret text NOT NULL,
      enabled boolean NOT NULL DEFAULT true,
      disabled_reason text,
      disabled_time timestamptz,
      -- Set by the first failed attempt after a success; a hook failing since long enough is disabled.
      failing_since timestamptz,
      created_time timestamptz NOT NULL DEFAULT now(),
      modified_time timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX hooks_account ON hooks (account_id, created_time);
    CREATE INDEX hooks_enabled_events ON hooks USING gin (events) WHERE enabled;

    -- The resource as it was when it changed (snapshot), rendered per hook account at delivery.
    CREATE TABLE hook_events (
      id bigserial PRIMARY KEY,
      type text NOT NULL,
      occurred_time timestamptz NOT NULL,
      project text,
      campaign_code text,
      resource_id text NOT NULL,
      previous_status smallint,
      snapshot jsonb NOT NULL,
      created_time timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE hook_deliveries (
      id bigserial PRIMARY KEY,
      -- The webhook-id header: the same on every attempt, so receivers can de-duplicate.
      unique_id text NOT NULL UNIQUE,
      hook_id bigint NOT NULL REFERENCES hooks(id) ON DELETE CASCADE,
      event_id bigint NOT NULL REFERENCES hook_events(id),
      status text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'skipped')),
      attempts integer NOT NULL DEFAULT 0,
      created_time timestamptz NOT NULL DEFAULT now(),
      first_attempt_time timestamptz,
      last_attempt_time timestamptz,
      next_attempt_time timestamptz,
      -- While an attempt is being sent: no second attempt of this delivery starts before then.
      in_flight_until timestamptz,
      last_status_code integer,
      last_error text,
      completed_time timestamptz
    );
    CREATE INDEX hook_deliveries_hook_created ON hook_deliveries (hook_id, created_time, id);
    CREATE INDEX hook_deliveries_pending ON hook_deliveries (next_attempt_time) WHERE status = 'pending';
    CREATE INDEX hook_deliveries_event ON hook_deliveries (event_id);

    CREATE TABLE hook_delivery_attempts (
      id bigserial PRIMARY KEY,
      delivery_id bigint NOT NULL REFERENCES hook_deliveries(id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      attempt_time timestamptz NOT NULL,
      outcome text NOT NULL,
      status_code integer,
      duration_ms integer,
      error text,
      -- The first 4 KB of the receiver's answer.
      response_body text,
      next_attempt_time timestamptz,
      worker_id text,
      UNIQUE (delivery_id, attempt)
    );

    -- Delivery worker pools and when each last said it was alive; a silent one's claims are released.
    CREATE TABLE hook_workers (
      worker_id text PRIMARY KEY,
      host text NOT NULL,
      started_time timestamptz NOT NULL DEFAULT now(),
      heartbeat_time timestamptz NOT NULL DEFAULT now()
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS hook_workers, hook_delivery_attempts, hook_deliveries, hook_events, hooks CASCADE;
    DROP FUNCTION IF EXISTS lcm_glob_to_like(text);
  `);
}
