import type { Knex } from 'knex';

/**
 * A patch that changes nothing (an empty merge patch, or values the lead already has) writes
 * nothing (docs/decisions.md, "Lead changes"): the lead keeps its version (ETag) and its
 * lastModifiedTime, so it does not come back in every `ModifiedFrom` export. `lcm_patch_lead`
 * (20261223000001) is the same but for the guard on its UPDATE and the version it answers then.
 */

/** The UPDATE's guard: some value the patch names differs from the lead's. */
const CHANGES_SOMETHING = `
         AND (l.data IS DISTINCT FROM (l.data - p_remove) || p_set
              OR (p_set_phone AND (l.phone_number IS DISTINCT FROM p_phone_number OR l.phone_e164 IS DISTINCT FROM p_phone_e164))
              OR (p_set_external_key AND l.external_key IS DISTINCT FROM p_external_key)
              OR (p_priority IS NOT NULL AND l.priority IS DISTINCT FROM p_priority)
              OR v_status <> v.lead_status)`;

/** Nothing updated: the lead's version stays what it was. */
const UNCHANGED_VERSION = `
      IF NOT FOUND THEN
        v_version := v.version;
      END IF;
`;

const patchLeadFunction = (onlyWhenChanged: boolean) => `
    CREATE OR REPLACE FUNCTION lcm_patch_lead(
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
       WHERE l.id = v.lead_id${onlyWhenChanged ? CHANGES_SOMETHING : ''}
      RETURNING l.xmin::text INTO v_version;
${onlyWhenChanged ? UNCHANGED_VERSION : ''}
      IF v_status <> v.lead_status THEN
        PERFORM lcm_record_lead_events('lead.statusChanged', array[v.lead_id], array[v.lead_status], p_now);
      END IF;

      RETURN QUERY
      SELECT 'changed', v_version, CASE WHEN p_set_phone THEN p_phone_number ELSE v.phone_number END, v.project,
             lcm_lead_snapshot(v.lead_id), lcm_lead_fields(v.campaign_id);
    END
    $fn$;
`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(patchLeadFunction(true));
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(patchLeadFunction(false));
}
