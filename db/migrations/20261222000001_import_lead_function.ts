import type { Knex } from 'knex';

/**
 * The single import in one round trip (docs/decisions.md, Leads): `lcm_import_lead` does in
 * one call, so in one statement and (outside an explicit transaction) one transaction, what
 * took six round trips: the project check, the do-not-call lock and check, the pool found or
 * created, the lead inserted, and its `lead.created` hook event with deliveries and queue jobs.
 *
 * It is built of steps, each a function of its own, so a later check (duplicates) is one more
 * step in `lcm_import_lead` and one more outcome. Callers pass parameters by name
 * (`p_campaign_id => …`): a new parameter with a default does not break them.
 *
 * `lcm_record_lead_events` is the one definition of lead events (src/data/hookEvents.ts calls
 * it too). Status numbers are the storage values of src/domain/enums.ts (New 0, DoNotCall
 * 700, GlobalDoNotCall 750).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The lead as src/domain/hookMessages.ts LeadSnapshot.
    CREATE FUNCTION lcm_lead_snapshot(p_lead_id bigint) RETURNS jsonb
    LANGUAGE sql STABLE AS $fn$
      SELECT jsonb_build_object(
        'row', jsonb_build_object(
          'uniqueId', l.unique_id, 'status', l.status, 'closure', l.closure, 'priority', l.priority,
          'phoneNumber', l.phone_number, 'externalKey', l.external_key, 'campaignId', l.campaign_id, 'poolId', l.pool_id,
          'dataJson', l.data::text, 'dataVisible', false,
          'uploadTime', (extract(epoch from l.upload_time) * 1000)::float8,
          'lastModifiedTime', (extract(epoch from l.last_modified_time) * 1000)::float8,
          'firstProcessedTime', (extract(epoch from l.first_processed_time) * 1000)::float8,
          'ownerOrgUnitId', l.owner_org_unit_id, 'uploadedByUserId', l.uploaded_by_user_id,
          'lastModifiedByUserId', l.last_modified_by_user_id, 'firstProcessedByUserId', l.first_processed_by_user_id,
          'closureDataJson', l.closure_data::text),
        'campaign', jsonb_build_object('uniqueId', c.unique_id, 'code', c.code, 'leadDefinitionId', c.lead_definition_id),
        'pool', (SELECT p.name FROM lead_pools p WHERE p.id = l.pool_id),
        'users', coalesce((SELECT jsonb_object_agg(u.id::text, u.org_code) FROM users u
                            WHERE u.id IN (l.uploaded_by_user_id, l.last_modified_by_user_id, l.first_processed_by_user_id)), '{}'),
        'units', coalesce((SELECT jsonb_object_agg(o.id::text, o.org_code) FROM org_units o WHERE o.id = l.owner_org_unit_id), '{}'),
        'agentEmail', (SELECT u.email FROM users u WHERE u.id = l.last_modified_by_user_id),
        'statusChangedTime', (extract(epoch from l.status_changed_time) * 1000)::float8)
      FROM leads l JOIN campaigns c ON c.id = l.campaign_id WHERE l.id = p_lead_id
    $fn$;

    -- Lead events of one type (docs/decisions.md, Hooks and Live events): every event with the
    -- lead as it is now in this transaction (the live event stream reads them all; the
    -- hook_events trigger numbers them at commit), and for the hooks that want it (enabled, of
    -- an enabled account, subscribed, campaign / projects / lead status filters, for
    -- lead.statusChanged the lead release type (closure), the account's project rights) one
    -- delivery per hook and the first attempt's job. Answers the deliveries queued. The hook
    -- filters are those of the call and calendar events' statement (src/data/hookEvents.ts,
    -- emit): a new one goes into both.
    CREATE FUNCTION lcm_record_lead_events(p_type text, p_lead_ids bigint[], p_previous smallint[], p_time timestamptz)
    RETURNS integer
    LANGUAGE plpgsql AS $fn$
    DECLARE
      queued integer;
    BEGIN
      WITH s AS (
        SELECT l.id AS key, l.unique_id AS resource_id, c.code AS campaign_code, c.project, l.status AS lead_status,
               l.closure AS lead_closure, i.previous_status
          FROM unnest(p_lead_ids, p_previous) AS i(lead_id, previous_status)
          JOIN leads l ON l.id = i.lead_id JOIN campaigns c ON c.id = l.campaign_id),
      m AS (
        SELECT s.key, h.id AS hook_id
          FROM s
          JOIN hooks h ON h.enabled AND h.events @> array[p_type]
          JOIN accounts a ON a.id = h.account_id AND a.enabled
         WHERE (h.campaign_code IS NULL OR h.campaign_code = s.campaign_code)
           AND (h.lead_status IS NULL OR h.lead_status = s.lead_status)
           AND (h.lead_release_type IS NULL OR p_type <> 'lead.statusChanged' OR h.lead_release_type = s.lead_closure)
           AND (h.projects IS NULL OR EXISTS (
                 SELECT 1 FROM unnest(h.projects) p
                  WHERE lower(s.project) LIKE lcm_glob_to_like(p) OR md5('project:' || lower(s.project))::uuid::text = lower(p)))
           AND EXISTS (SELECT 1 FROM unnest(a.project_patterns) p WHERE lower(s.project) LIKE lcm_glob_to_like(p))),
      e AS (
        INSERT INTO hook_events (type, occurred_time, project, campaign_code, resource_id, previous_status, snapshot)
        SELECT p_type, p_time, s.project, s.campaign_code, s.resource_id, s.previous_status, lcm_lead_snapshot(s.key)
          FROM s
        RETURNING id, resource_id),
      d AS (
        INSERT INTO hook_deliveries (unique_id, hook_id, event_id, status, next_attempt_time)
        SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), m.hook_id, e.id, 'pending', now()
          FROM m JOIN s ON s.key = m.key JOIN e ON e.resource_id = s.resource_id
        RETURNING id)
      SELECT count(*) INTO queued FROM graphile_worker.add_jobs(array(
        SELECT row('hook_deliver', json_build_object('deliveryId', d.id, 'attempt', 1), null, null, 25,
                   'hook-delivery:' || d.id, null, null)::graphile_worker.job_spec
          FROM d))
       WHERE EXISTS (SELECT 1 FROM d);
      RETURN queued;
    END
    $fn$;

    -- The status a new lead of a campaign of p_project gets from the do-not-call lists for its
    -- number (E.164, as the application normalised it): 750 GlobalDoNotCall, 700 DoNotCall, or
    -- null when not listed. Takes the lists' shared lock first and holds it to the end of the
    -- transaction: a listing (exclusive lock) and an import never pass each other.
    CREATE FUNCTION lcm_do_not_call_status(p_project text, p_number text, p_now timestamptz) RETURNS smallint
    LANGUAGE plpgsql AS $fn$
    DECLARE
      is_global boolean;
    BEGIN
      IF p_number IS NULL THEN
        RETURN NULL;
      END IF;
      PERFORM pg_advisory_xact_lock_shared(hashtextextended('lcm do-not-call lists', 0));
      SELECT bool_or(d.global) INTO is_global
        FROM do_not_call_numbers d
       WHERE d.phone_number = p_number
         AND (d.expires_time IS NULL OR d.expires_time > p_now)
         AND (d.global OR d.project IS NULL OR lower(d.project) = lower(p_project));
      RETURN CASE WHEN is_global IS NULL THEN NULL WHEN is_global THEN 750 ELSE 700 END;
    END
    $fn$;

    -- The pool of this name in the campaign, created when missing. A pool created by a
    -- concurrent import is waited for (the conflict) and read by the next statement's snapshot.
    CREATE FUNCTION lcm_lead_pool(p_campaign_id bigint, p_name text) RETURNS bigint
    LANGUAGE plpgsql AS $fn$
    DECLARE
      v_pool bigint;
    BEGIN
      FOR attempt IN 1..3 LOOP
        SELECT id INTO v_pool FROM lead_pools WHERE campaign_id = p_campaign_id AND name = p_name;
        IF FOUND THEN
          RETURN v_pool;
        END IF;
        INSERT INTO lead_pools (campaign_id, name) VALUES (p_campaign_id, p_name)
          ON CONFLICT (campaign_id, name) DO NOTHING
          RETURNING id INTO v_pool;
        IF v_pool IS NOT NULL THEN
          RETURN v_pool;
        END IF;
      END LOOP;
      RAISE EXCEPTION 'lead pool % could not be found or created', p_name;
    END
    $fn$;

    -- One import. outcome: 'inserted' (lead_id, lead_status), 'unknown_campaign' (the campaign
    -- is gone), 'forbidden' (its project matches none of p_like_patterns, the account's
    -- patterns as LIKE patterns). Each step may end the import with its own outcome.
    CREATE FUNCTION lcm_import_lead(
      p_campaign_id bigint,
      p_like_patterns text[],
      p_pool_name text,
      p_unique_id text,
      p_phone_number text,
      p_phone_e164 text,
      p_external_key text,
      p_data jsonb,
      p_now timestamptz,
      p_user_id bigint)
    RETURNS TABLE (outcome text, lead_id bigint, lead_status smallint)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      v_project text;
      v_pool bigint;
      v_status smallint;
      v_lead bigint;
    BEGIN
      SELECT c.project INTO v_project FROM campaigns c WHERE c.id = p_campaign_id;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown_campaign', null::bigint, null::smallint;
        RETURN;
      END IF;
      IF NOT lower(v_project) LIKE ANY (p_like_patterns) THEN
        RETURN QUERY SELECT 'forbidden', null::bigint, null::smallint;
        RETURN;
      END IF;

      v_status := coalesce(lcm_do_not_call_status(v_project, p_phone_e164, p_now), 0);
      v_pool := lcm_lead_pool(p_campaign_id, p_pool_name);

      INSERT INTO leads (unique_id, campaign_id, pool_id, status, closure, phone_number, external_key, data,
                         upload_time, last_modified_time, status_changed_time, uploaded_by_user_id, last_modified_by_user_id)
      VALUES (p_unique_id, p_campaign_id, v_pool, v_status, 0, p_phone_number, p_external_key, p_data,
              p_now, p_now, p_now, p_user_id, p_user_id)
      RETURNING leads.id INTO v_lead;

      PERFORM lcm_record_lead_events('lead.created', array[v_lead], array[null::smallint], p_now);
      RETURN QUERY SELECT 'inserted', v_lead, v_status;
    END
    $fn$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS lcm_import_lead(bigint, text[], text, text, text, text, text, jsonb, timestamptz, bigint);
    DROP FUNCTION IF EXISTS lcm_lead_pool(bigint, text);
    DROP FUNCTION IF EXISTS lcm_do_not_call_status(text, text, timestamptz);
    DROP FUNCTION IF EXISTS lcm_record_lead_events(text, bigint[], smallint[], timestamptz);
    DROP FUNCTION IF EXISTS lcm_lead_snapshot(bigint);
  `);
}
