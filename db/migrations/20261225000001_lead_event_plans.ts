import type { Knex } from 'knex';

/**
 * `lcm_record_lead_events` finds its leads by primary key, one lookup each, whatever the table
 * statistics (docs/decisions.md, "Leads"): the plan each connection keeps was made while `leads`
 * was new, and hashed a sequential scan of every lead on each import until the table was
 * analysed. Same results.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
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
