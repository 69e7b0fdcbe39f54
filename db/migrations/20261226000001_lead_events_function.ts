import type { Knex } from 'knex';
import { up as leadEventPlans } from './20261225000001_lead_event_plans';

/**
 * `lcm_record_lead_events` (docs/decisions.md, "Leads" and "Hooks"):
 * - runs one generic plan per connection. Postgres's plan cache compares a generic plan's
 *   estimated cost with its custom plans': with the lead ids a parameter, the generic plan
 *   expects more leads than a one-lead call's custom plan, looks costlier, and the statement was
 *   planned again on every call (about 1.3 ms of an import's 1.6 ms in this function). The plan
 *   is the same key lookup per lead either way.
 * - locks the hooks an event matches (FOR KEY SHARE): a hook deleted by a transaction
 *   that has not committed yet is waited for and then passed over, where its delivery's foreign
 *   key failed the import.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION lcm_record_lead_events(p_type text, p_lead_ids bigint[], p_previous smallint[], p_time timestamptz)
    RETURNS integer
    LANGUAGE plpgsql
    -- One plan kept per connection: Postgres judged the generic plan costlier than a one-lead call's
    -- custom plan and planned the statement on every call.
    SET plan_cache_mode = force_generic_plan AS $fn$
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
           AND EXISTS (SELECT 1 FROM unnest(a.project_patterns) p WHERE lower(s.project) LIKE lcm_glob_to_like(p))
           -- A hook being deleted is waited for, then passed over when it is gone:
           -- its delivery would otherwise fail the write on the missing hook.
           FOR KEY SHARE OF h),
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

/** The function as migration 20261225000001 made it (CREATE OR REPLACE also drops the plan setting). */
export async function down(knex: Knex): Promise<void> {
  await leadEventPlans(knex);
}
