import type { Knex } from 'knex';

/**
 * Plans of the lead events that hold whatever the table statistics (docs/benchmarks.md, "Small
 * requests"), same results:
 * - `lcm_lead_snapshot` in PL/pgSQL instead of SQL: Postgres plans a SQL function it cannot
 *   inline on every call, and this one (a lead with its campaign, pool, users and unit, six
 *   subqueries) cost more to plan than everything else a single import does in the database;
 *   PL/pgSQL keeps the plan per connection.
 * - `lcm_record_lead_events` finds its leads by primary key, one lookup each: the plan kept per
 *   connection was made while `leads` was new, and hashed a sequential scan of every lead on
 *   each import until the table was analysed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION lcm_lead_snapshot(p_lead_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $fn$
    BEGIN
      RETURN (SELECT jsonb_build_object(
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
      FROM leads l JOIN campaigns c ON c.id = l.campaign_id WHERE l.id = p_lead_id);
    END
    $fn$;

    CREATE OR REPLACE FUNCTION lcm_record_lead_events(p_type text, p_lead_ids bigint[], p_previous smallint[], p_time timestamptz)
    RETURNS integer
    LANGUAGE plpgsql AS $fn$
    DECLARE
      queued integer;
    BEGIN
      WITH s AS (
        SELECT l.id AS key, l.unique_id AS resource_id, c.code AS campaign_code, c.project, l.status AS lead_status,
               l.closure AS lead_closure, i.previous_status
          FROM unnest(p_lead_ids, p_previous) AS i(lead_id, previous_status)
          -- One primary-key lookup per lead whatever the statistics say: as a plain join, the
          -- plan kept per connection could hash a sequential scan of all leads, chosen while the
          -- table was new and small (LIMIT keeps the subquery from being flattened into a join).
          CROSS JOIN LATERAL (SELECT * FROM leads x WHERE x.id = i.lead_id LIMIT 1) l
          JOIN campaigns c ON c.id = l.campaign_id),
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
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION lcm_lead_snapshot(p_lead_id bigint) RETURNS jsonb
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

    CREATE OR REPLACE FUNCTION lcm_record_lead_events(p_type text, p_lead_ids bigint[], p_previous smallint[], p_time timestamptz)
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
  `);
}
