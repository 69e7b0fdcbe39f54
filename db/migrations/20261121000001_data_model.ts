import type { Knex } from 'knex';

/**
 * The whole data model. Enumerations are smallints holding the numbers of
 * src/domain/enums.ts; durations of calls are integer milliseconds; campaign time limits
 * are intervals so calendar steps (months, years) work in the platform time zone.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- Org codes are unique across users and org units together: both tables claim their code
    -- in this registry inside the same transaction, so the primary key decides.
    CREATE TABLE org_codes (
      org_code text PRIMARY KEY,
      kind text NOT NULL CHECK (kind IN ('user', 'unit'))
    );

    -- BEFORE INSERT triggers also fire for rows that end in ON CONFLICT DO UPDATE, so the claim
    -- tolerates the code being registered already by the same kind.
    CREATE FUNCTION claim_org_code() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      k text := CASE WHEN TG_TABLE_NAME = 'users' THEN 'user' ELSE 'unit' END;
      existing text;
    BEGIN
      IF TG_OP = 'DELETE' THEN
        DELETE FROM org_codes WHERE org_code = OLD.org_code;
        RETURN OLD;
      END IF;
      IF TG_OP = 'UPDATE' AND NEW.org_code IS NOT DISTINCT FROM OLD.org_code THEN
        RETURN NEW;
      END IF;
      IF TG_OP = 'UPDATE' THEN
        DELETE FROM org_codes WHERE org_code = OLD.org_code;
      END IF;
      INSERT INTO org_codes (org_code, kind) VALUES (NEW.org_code, k) ON CONFLICT (org_code) DO NOTHING;
      SELECT kind INTO existing FROM org_codes WHERE org_code = NEW.org_code;
      IF existing <> k THEN
        RAISE EXCEPTION 'org code % is already used by %', NEW.org_code,
          CASE existing WHEN 'user' THEN 'a user' ELSE 'an org unit' END
          USING ERRCODE = 'unique_violation';
      END IF;
      RETURN NEW;
    END $$;

    CREATE TABLE org_units (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      org_code text NOT NULL UNIQUE,
      name text NOT NULL,
      level smallint NOT NULL CHECK (level BETWEEN 0 AND 4),
      parent_id bigint REFERENCES org_units(id),
      CHECK ((level = 0) = (parent_id IS NULL))
    );
    CREATE INDEX org_units_parent ON org_units (parent_id);
    CREATE TRIGGER org_units_claim_org_code BEFORE INSERT OR UPDATE OF org_code OR DELETE ON org_units
      FOR EACH ROW EXECUTE FUNCTION claim_org_code();

    CREATE TABLE users (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      org_code text NOT NULL UNIQUE,
      username text NOT NULL UNIQUE,
      name text NOT NULL,
      parent_id bigint REFERENCES org_units(id),
      email text,
      inbound_phone_number text,
      roles text[] NOT NULL DEFAULT '{}',
      employee_number text,
      payroll_number text
    );
    CREATE INDEX users_parent ON users (parent_id);
    CREATE TRIGGER users_claim_org_code BEFORE INSERT OR UPDATE OF org_code OR DELETE ON users
      FOR EACH ROW EXECUTE FUNCTION claim_org_code();

    CREATE TABLE lead_definitions (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      name text NOT NULL UNIQUE
    );

    CREATE TABLE lead_definition_fields (
      id bigserial PRIMARY KEY,
      lead_definition_id bigint NOT NULL REFERENCES lead_definitions(id) ON DELETE CASCADE,
      name text NOT NULL,
      import_name text,
      type text NOT NULL CHECK (type IN ('text', 'number', 'date', 'datetime', 'boolean', 'phone', 'email')),
      required boolean NOT NULL DEFAULT false,
      sort_order integer NOT NULL DEFAULT 0,
      editable boolean NOT NULL DEFAULT true,
      access smallint NOT NULL DEFAULT 0 CHECK (access IN (0, 1, 2)),
      external_key boolean NOT NULL DEFAULT false
    );
    CREATE UNIQUE INDEX lead_definition_fields_name ON lead_definition_fields (lead_definition_id, lower(name));
    CREATE UNIQUE INDEX lead_definition_fields_external_key ON lead_definition_fields (lead_definition_id) WHERE external_key;

    CREATE TABLE campaigns (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      code text NOT NULL UNIQUE,
      name text NOT NULL,
      project text NOT NULL,
      lead_definition_id bigint NOT NULL REFERENCES lead_definitions(id),
      campaign_type smallint NOT NULL,
      -- Lifecycle settings (docs/decisions.md, Lead lifecycle); NULL = no limit.
      max_attempts integer CHECK (max_attempts > 0),
      abandon_after interval,
      expire_after interval,
      private_expire_after interval
    );
    CREATE INDEX campaigns_project ON campaigns (lower(project));

    CREATE TABLE user_campaigns (
      user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      campaign_id bigint NOT NULL REFERENCES campaigns(id) ON DELETE CASCADE,
      PRIMARY KEY (user_id, campaign_id)
    );
    CREATE INDEX user_campaigns_campaign ON user_campaigns (campaign_id);

    CREATE TABLE lead_pools (
      id bigserial PRIMARY KEY,
      campaign_id bigint NOT NULL REFERENCES campaigns(id),
      name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (campaign_id, name)
    );

    CREATE TABLE leads (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      campaign_id bigint NOT NULL REFERENCES campaigns(id),
      pool_id bigint NOT NULL REFERENCES lead_pools(id),
      status smallint NOT NULL DEFAULT 0,
      closure smallint NOT NULL DEFAULT 0,
      priority integer NOT NULL DEFAULT 0,
      phone_number text,
      external_key text,
      data jsonb NOT NULL DEFAULT '{}',
      closure_data jsonb NOT NULL DEFAULT '[]',
      attempts integer NOT NULL DEFAULT 0,
      upload_time timestamptz NOT NULL DEFAULT now(),
      last_modified_time timestamptz NOT NULL DEFAULT now(),
      first_processed_time timestamptz,
      -- When the lead entered its current status; the sweeper measures time limits from it.
      status_changed_time timestamptz NOT NULL DEFAULT now(),
      owner_org_unit_id bigint REFERENCES org_units(id),
      uploaded_by_user_id bigint REFERENCES users(id),
      last_modified_by_user_id bigint REFERENCES users(id),
      first_processed_by_user_id bigint REFERENCES users(id)
    );
    CREATE INDEX leads_campaign_modified ON leads (campaign_id, last_modified_time, unique_id);
    CREATE INDEX leads_modified ON leads (last_modified_time, unique_id);
    CREATE INDEX leads_pool ON leads (pool_id);
    -- The sweeper scans open statuses only.
    CREATE INDEX leads_open_status ON leads (status, status_changed_time) WHERE status IN (0, 1, 2, 3, 10, 150);

    CREATE TABLE calls (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      campaign_id bigint NOT NULL REFERENCES campaigns(id),
      lead_id bigint REFERENCES leads(id),
      unique_lead_id text NOT NULL,
      user_id bigint NOT NULL REFERENCES users(id),
      -- The caller's org-unit chain at the time of the call, root first (level 0..4).
      ou0_id bigint NOT NULL REFERENCES org_units(id),
      ou1_id bigint REFERENCES org_units(id),
      ou2_id bigint REFERENCES org_units(id),
      ou3_id bigint REFERENCES org_units(id),
      ou4_id bigint REFERENCES org_units(id),
      lead_phone_number text NOT NULL,
      lead_external_key text,
      end_cause smallint NOT NULL DEFAULT 0,
      in_progress boolean NOT NULL DEFAULT false,
      connected boolean NOT NULL DEFAULT false,
      incoming boolean NOT NULL DEFAULT false,
      start_time timestamptz NOT NULL,
      connect_time timestamptz,
      end_time timestamptz,
      preview_ms integer NOT NULL DEFAULT 0,
      dialing_ms integer,
      conversation_ms integer,
      wrap_up_ms integer,
      lead_status smallint,
      pre_call_lead_status smallint,
      lead_closure smallint,
      campaign_type smallint
    );
    CREATE INDEX calls_user_time ON calls (user_id, start_time, unique_id);
    CREATE INDEX calls_ou0_time ON calls (ou0_id, start_time, unique_id);
    CREATE INDEX calls_ou1_time ON calls (ou1_id, start_time, unique_id) WHERE ou1_id IS NOT NULL;
    CREATE INDEX calls_ou2_time ON calls (ou2_id, start_time, unique_id) WHERE ou2_id IS NOT NULL;
    CREATE INDEX calls_ou3_time ON calls (ou3_id, start_time, unique_id) WHERE ou3_id IS NOT NULL;
    CREATE INDEX calls_ou4_time ON calls (ou4_id, start_time, unique_id) WHERE ou4_id IS NOT NULL;
    CREATE INDEX calls_lead ON calls (lead_id);

    CREATE TABLE recordings (
      id bigserial PRIMARY KEY,
      call_id bigint NOT NULL REFERENCES calls(id) ON DELETE CASCADE,
      start_time timestamptz NOT NULL,
      end_time timestamptz,
      recording_type smallint NOT NULL,
      file_name text NOT NULL
    );
    CREATE INDEX recordings_call_time ON recordings (call_id, start_time);
    CREATE UNIQUE INDEX recordings_call_file ON recordings (call_id, file_name);

    CREATE TABLE ready_periods (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      user_id bigint NOT NULL REFERENCES users(id),
      campaign_id bigint NOT NULL REFERENCES campaigns(id),
      start_time timestamptz NOT NULL,
      seconds integer NOT NULL CHECK (seconds >= 0),
      -- start_time + seconds, kept so the end-time search has an index.
      end_time timestamptz NOT NULL,
      CHECK (end_time = start_time + seconds * interval '1 second')
    );
    CREATE INDEX ready_periods_end ON ready_periods (end_time, unique_id);

    CREATE TABLE calendars (
      id bigserial PRIMARY KEY,
      code text NOT NULL UNIQUE,
      name text,
      project text NOT NULL
    );

    CREATE TABLE calendar_events (
      id bigserial PRIMARY KEY,
      unique_id text NOT NULL UNIQUE,
      calendar_id bigint NOT NULL REFERENCES calendars(id),
      lead_unique_id text NOT NULL,
      title text NOT NULL,
      notes text NOT NULL,
      start_time timestamptz NOT NULL,
      end_time timestamptz NOT NULL,
      source text NOT NULL,
      external_id text NOT NULL,
      version integer NOT NULL DEFAULT 1,
      CHECK (start_time <= end_time)
    );
    CREATE INDEX calendar_events_calendar_start ON calendar_events (calendar_id, start_time);

    CREATE TABLE accounts (
      id bigserial PRIMARY KEY,
      username text NOT NULL UNIQUE,
      password_hash text NOT NULL,
      user_id bigint NOT NULL REFERENCES users(id),
      project_patterns text[] NOT NULL DEFAULT '{}',
      rights jsonb NOT NULL DEFAULT '{}',
      entry_access smallint NOT NULL DEFAULT 0 CHECK (entry_access IN (0, 1, 2)),
      enabled boolean NOT NULL DEFAULT true,
      -- Bumped on every change so cached credentials of other processes go stale.
      version integer NOT NULL DEFAULT 1,
      created_at timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE request_limits (
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      service text NOT NULL,
      daily_limit integer NOT NULL CHECK (daily_limit > 0),
      PRIMARY KEY (account_id, service)
    );

    CREATE TABLE saved_searches (
      id bigserial PRIMARY KEY,
      user_id bigint NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name text NOT NULL,
      campaigns text[] NOT NULL DEFAULT '{}',
      projects text[] NOT NULL DEFAULT '{}',
      statuses smallint[] NOT NULL DEFAULT '{}',
      lead_closures smallint[] NOT NULL DEFAULT '{}',
      all_open_statuses boolean NOT NULL DEFAULT false,
      all_closed_statuses boolean NOT NULL DEFAULT false,
      UNIQUE (user_id, name)
    );

    CREATE TABLE idempotency_keys (
      account_id bigint NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
      key text NOT NULL,
      request_hash text NOT NULL,
      status_code integer,
      response jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (account_id, key)
    );
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP TABLE IF EXISTS idempotency_keys, saved_searches, request_limits, accounts,
      calendar_events, calendars, ready_periods, recordings, calls, leads, lead_pools,
      user_campaigns, campaigns, lead_definition_fields, lead_definitions, users, org_units,
      org_codes CASCADE;
    DROP FUNCTION IF EXISTS claim_org_code();
  `);
}
