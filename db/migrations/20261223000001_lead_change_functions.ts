import type { Knex } from 'knex';

/**
 * Lead changes in one statement each (docs/decisions.md, Lead changes), as the single import is
 * (20261222000001): `lcm_patch_lead` does what took BEGIN, a locked read, the do-not-call
 * check, the UPDATE, the event and COMMIT; `lcm_anonymize_lead` clears the lead, its calls and
 * the queued copies of them. Both lock the lead first (`lcm_lock_lead_for_change`) and refuse,
 * writing nothing, a lead outside the account's projects, one no longer at the version an
 * `If-Match` named, and an Anonymized lead (patch).
 *
 * The rules stay in the application: it checks the patch against the lead definition (a
 * refused patch never reaches the database), resolves field names, normalises numbers to E.164
 * and passes the open statuses; the functions apply the result under the lock. Events go
 * through `lcm_record_lead_events`. Callers pass parameters by name. Status numbers are the
 * storage values of src/domain/enums.ts (Anonymized 610).
 *
 * `lcm_lead_snapshot` (the lead as hook events keep it, which the changes now answer with too)
 * and the new `lcm_lead_fields` are plpgsql: a SQL-language function with a FROM clause is
 * planned again on every call (pg_stat_user_functions put the snapshot at 645 µs a call, most of
 * a patch's time in Postgres), a plpgsql one keeps its plan per connection. The snapshot's
 * query is unchanged.
 */

// The query of lcm_lead_snapshot (20261222000001), unchanged.
const LEAD_SNAPSHOT = `
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
      FROM leads l JOIN campaigns c ON c.id = l.campaign_id WHERE l.id = p_lead_id`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The lead as src/domain/hookMessages.ts LeadSnapshot.
    CREATE OR REPLACE FUNCTION lcm_lead_snapshot(p_lead_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $fn$
    BEGIN
      RETURN (${LEAD_SNAPSHOT});
    END
    $fn$;

    -- The lead a change is about, locked (FOR UPDATE) to the end of the transaction; no row when
    -- it is unknown or its campaign's project matches none of p_like_patterns.
    CREATE FUNCTION lcm_lock_lead_for_change(p_unique_id text, p_like_patterns text[])
    RETURNS TABLE (lead_id bigint, lead_status smallint, campaign_id bigint, project text, phone_number text, version text)
    LANGUAGE plpgsql AS $fn$
    BEGIN
      RETURN QUERY
      SELECT l.id, l.status, l.campaign_id, c.project, l.phone_number, l.xmin::text
        FROM leads l JOIN campaigns c ON c.id = l.campaign_id
       WHERE l.unique_id = p_unique_id AND lower(c.project) LIKE ANY (p_like_patterns)
         FOR UPDATE OF l;
    END
    $fn$;

    -- The fields of a campaign's lead definition in sort order, as src/data/leadChangeRepository.ts reads them.
    CREATE FUNCTION lcm_lead_fields(p_campaign_id bigint) RETURNS jsonb
    LANGUAGE plpgsql STABLE AS $fn$
    BEGIN
      RETURN (
        SELECT coalesce(jsonb_agg(jsonb_build_object('name', f.name, 'importName', f.import_name, 'type', f.type,
                          'required', f.required, 'access', f.access, 'externalKey', f.external_key, 'sortOrder', f.sort_order,
                          'editable', f.editable) ORDER BY f.sort_order, f.id), '[]')
          FROM campaigns c JOIN lead_definition_fields f ON f.lead_definition_id = c.lead_definition_id
         WHERE c.id = p_campaign_id);
    END
    $fn$;

    -- A merge patch of one lead. outcome: 'changed' (version: the new one; phone_number: the
    -- lead's number now; snapshot: the lead as lcm_lead_snapshot gives it; fields: its lead
    -- definition's fields: the caller answers with the lead without reading it again), 'not_found', 'precondition_failed'
    -- (p_version is not the lead's version), 'anonymized', 'moved' (the lead is no longer in
    -- p_campaign_id, whose definition checked the data: check again). Data: p_remove and p_set
    -- (field names) are merged into the stored data under the lock, so patches of other fields
    -- are kept; the number and external key change only when the patch names their fields.
    -- p_status: an administrative move (allowed from every status but Anonymized). Without it,
    -- a new number on a do-not-call list moves an open lead (p_open_statuses) to the list's
    -- status, as its import would. A new status records lead.statusChanged.
    CREATE FUNCTION lcm_patch_lead(
      p_unique_id text,
      p_like_patterns text[],
      p_now timestamptz,
      p_user_id bigint,
      p_open_statuses smallint[],
      p_version text DEFAULT NULL,
      p_campaign_id bigint DEFAULT NULL,
      p_set jsonb DEFAULT '{}',
      p_remove text[] DEFAULT '{}',
      p_set_phone boolean DEFAULT false,
      p_phone_number text DEFAULT NULL,
      p_phone_e164 text DEFAULT NULL,
      p_set_external_key boolean DEFAULT false,
      p_external_key text DEFAULT NULL,
      p_priority integer DEFAULT NULL,
      p_status smallint DEFAULT NULL)
    RETURNS TABLE (outcome text, version text, phone_number text, project text, snapshot jsonb, fields jsonb)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      v record;
      v_status smallint;
      v_version text;
    BEGIN
      SELECT * INTO v FROM lcm_lock_lead_for_change(p_unique_id, p_like_patterns);
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found', null::text, null::text, null::text, null::jsonb, null::jsonb;
        RETURN;
      END IF;
      IF p_version IS NOT NULL AND v.version <> p_version THEN
        RETURN QUERY SELECT 'precondition_failed', null::text, null::text, null::text, null::jsonb, null::jsonb;
        RETURN;
      END IF;
      IF v.lead_status = 610 THEN
        RETURN QUERY SELECT 'anonymized', null::text, null::text, null::text, null::jsonb, null::jsonb;
        RETURN;
      END IF;
      IF p_campaign_id IS NOT NULL AND v.campaign_id <> p_campaign_id THEN
        RETURN QUERY SELECT 'moved', null::text, null::text, null::text, null::jsonb, null::jsonb;
        RETURN;
      END IF;

      v_status := coalesce(p_status, v.lead_status);
      IF p_status IS NULL AND p_set_phone AND p_phone_number IS NOT NULL AND p_phone_number IS DISTINCT FROM v.phone_number
         AND v.lead_status = ANY (p_open_statuses) THEN
        v_status := coalesce(lcm_do_not_call_status(v.project, p_phone_e164, p_now), v_status);
      END IF;

      UPDATE leads l
         SET data = (l.data - p_remove) || p_set,
             phone_number = CASE WHEN p_set_phone THEN p_phone_number ELSE l.phone_number END,
             phone_e164 = CASE WHEN p_set_phone THEN p_phone_e164 ELSE l.phone_e164 END,
             external_key = CASE WHEN p_set_external_key THEN p_external_key ELSE l.external_key END,
             priority = coalesce(p_priority, l.priority),
             status = v_status,
             status_changed_time = CASE WHEN v_status <> v.lead_status THEN p_now ELSE l.status_changed_time END,
             last_modified_time = p_now,
             last_modified_by_user_id = p_user_id
       WHERE l.id = v.lead_id
      RETURNING l.xmin::text INTO v_version;

      IF v_status <> v.lead_status THEN
        PERFORM lcm_record_lead_events('lead.statusChanged', array[v.lead_id], array[v.lead_status], p_now);
      END IF;

      RETURN QUERY
      SELECT 'changed', v_version, CASE WHEN p_set_phone THEN p_phone_number ELSE v.phone_number END, v.project,
             lcm_lead_snapshot(v.lead_id), lcm_lead_fields(v.campaign_id);
    END
    $fn$;

    -- Anonymizes one lead (irreversible): its data, number, external key and closure data, the
    -- number and external key on its calls (calls name their lead by id, or only by unique id
    -- when the lead was unknown when the call was loaded), and the copies queued hook events
    -- hold of the lead, its calls and its calendar events; the lead becomes Anonymized with
    -- lead.statusChanged. The calendar events' own texts are the caller's (their events are
    -- recorded by the application, in the same transaction). outcome: 'changed' or 'unchanged'
    -- (already Anonymized), with the lead's version, snapshot and definition fields as
    -- lcm_patch_lead answers them; 'not_found'; 'precondition_failed'.
    CREATE FUNCTION lcm_anonymize_lead(
      p_unique_id text,
      p_like_patterns text[],
      p_now timestamptz,
      p_user_id bigint,
      p_version text DEFAULT NULL)
    RETURNS TABLE (outcome text, version text, snapshot jsonb, fields jsonb)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      v record;
      v_version text;
      v_calls text[];
    BEGIN
      SELECT * INTO v FROM lcm_lock_lead_for_change(p_unique_id, p_like_patterns);
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'not_found', null::text, null::jsonb, null::jsonb;
        RETURN;
      END IF;
      IF p_version IS NOT NULL AND v.version <> p_version THEN
        RETURN QUERY SELECT 'precondition_failed', null::text, null::jsonb, null::jsonb;
        RETURN;
      END IF;
      IF v.lead_status = 610 THEN
        RETURN QUERY SELECT 'unchanged', v.version, lcm_lead_snapshot(v.lead_id), lcm_lead_fields(v.campaign_id);
        RETURN;
      END IF;

      UPDATE leads l
         SET data = '{}'::jsonb, phone_number = null, phone_e164 = null, external_key = null, closure_data = '[]'::jsonb,
             status = 610, status_changed_time = p_now, last_modified_time = p_now, last_modified_by_user_id = p_user_id
       WHERE l.id = v.lead_id
      RETURNING l.xmin::text INTO v_version;

      WITH cleared AS (
        UPDATE calls c SET lead_phone_number = '', lead_external_key = null
         WHERE c.lead_id = v.lead_id OR (c.lead_id IS NULL AND c.unique_lead_id = p_unique_id)
        RETURNING c.unique_id)
      SELECT coalesce(array_agg(cleared.unique_id), '{}') INTO v_calls FROM cleared;

      UPDATE hook_events h
         SET snapshot = CASE
               WHEN h.type LIKE 'lead.%' THEN jsonb_set(jsonb_set(jsonb_set(jsonb_set(h.snapshot,
                      '{row,phoneNumber}', 'null'), '{row,externalKey}', 'null'), '{row,dataJson}', '"{}"'), '{row,closureDataJson}', '"[]"')
               WHEN h.type = 'call.ended' THEN jsonb_set(jsonb_set(h.snapshot, '{row,lead_phone_number}', '""'), '{row,lead_external_key}', 'null')
               ELSE jsonb_set(jsonb_set(h.snapshot, '{title}', '""'), '{notes}', '""')
             END
       WHERE (h.resource_id = p_unique_id AND h.type LIKE 'lead.%')
          OR (h.resource_id = ANY (v_calls) AND h.type = 'call.ended')
          OR (h.resource_id IN (SELECT e.unique_id FROM calendar_events e WHERE e.lead_unique_id = p_unique_id)
              AND h.type LIKE 'calendarEvent.%');

      PERFORM lcm_record_lead_events('lead.statusChanged', array[v.lead_id], array[v.lead_status], p_now);
      RETURN QUERY SELECT 'changed', v_version, lcm_lead_snapshot(v.lead_id), lcm_lead_fields(v.campaign_id);
    END
    $fn$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS lcm_anonymize_lead(text, text[], timestamptz, bigint, text);
    DROP FUNCTION IF EXISTS lcm_patch_lead(text, text[], timestamptz, bigint, smallint[], text, bigint, jsonb, text[], boolean, text, text,
                                           boolean, text, integer, smallint);
    DROP FUNCTION IF EXISTS lcm_lead_fields(bigint);
    DROP FUNCTION IF EXISTS lcm_lock_lead_for_change(text, text[]);

    CREATE OR REPLACE FUNCTION lcm_lead_snapshot(p_lead_id bigint) RETURNS jsonb
    LANGUAGE sql STABLE AS $fn$${LEAD_SNAPSHOT}
    $fn$;
  `);
}
