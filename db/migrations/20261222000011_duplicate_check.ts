import type { Knex } from 'knex';
import { toE164 } from '../../src/domain/phoneNumber';
import { defaultPhoneRegion } from '../../src/config/platform';

/**
 * Duplicates on import (docs/decisions.md, Duplicates on import):
 *
 * - `leads.phone_e164`: the lead's number as the do-not-call list normalises it, written by
 *   every import, the loader and PATCH; existing leads are filled here (libphonenumber-js, the
 *   platform's DEFAULT_PHONE_REGION).
 * - The indexes the check looks up: the normalised phone and the external key, each with the
 *   campaign (the Campaign scope reads both columns of the index, wider scopes the first).
 * - Campaign defaults (`duplicate_check`, `duplicate_key`, `duplicate_window`, `on_duplicate`).
 * - `lcm_import_lead` gains the check as one more step, in the same statement: a lock on each
 *   normalised key (an advisory transaction lock on a hash of the key, taken in a fixed order),
 *   then one index lookup; a duplicate ends the import ('duplicate') or has its editable data
 *   merged with the new values and a `lead.updated` event recorded ('updated'). Its result
 *   gains columns, so it is dropped and created again rather than replaced.
 */

const BACKFILL_BATCH = 5000;

/** lcm_import_lead with the duplicate check, as this migration defines it (20261231000001 replaces it; its down restores it). */
export const IMPORT_LEAD_WITH_DUPLICATE_CHECK = `
    -- One import. outcome: 'inserted' (lead_id, lead_status), 'unknown_campaign' (the campaign
    -- is gone), 'forbidden' (its project matches none of p_like_patterns, the account's
    -- patterns as LIKE patterns), 'duplicate' (nothing stored: dup_unique_id, matched) or
    -- 'updated' (the duplicate's data merged with p_patch). Each step may end the import with
    -- its own outcome. The check runs when p_dup_scope is given ('campaign', 'project',
    -- 'account') and p_dup_phone_e164 or p_dup_external_key (the keys checked) is not null.
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
      p_user_id bigint,
      p_dup_scope text DEFAULT NULL,
      p_dup_phone_e164 text DEFAULT NULL,
      p_dup_external_key text DEFAULT NULL,
      p_dup_since timestamptz DEFAULT NULL,
      p_dup_statuses smallint[] DEFAULT NULL,
      p_dup_update boolean DEFAULT false,
      p_patch jsonb DEFAULT '{}',
      p_patch_phone text DEFAULT NULL,
      p_patch_external_key text DEFAULT NULL)
    RETURNS TABLE (outcome text, lead_id bigint, lead_status smallint, dup_unique_id text, matched text)
    LANGUAGE plpgsql AS $fn$
    DECLARE
      v_project text;
      v_pool bigint;
      v_status smallint;
      v_lead bigint;
      v_dup record;
    BEGIN
      SELECT c.project INTO v_project FROM campaigns c WHERE c.id = p_campaign_id;
      IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown_campaign', null::bigint, null::smallint, null::text, null::text;
        RETURN;
      END IF;
      IF NOT lower(v_project) LIKE ANY (p_like_patterns) THEN
        RETURN QUERY SELECT 'forbidden', null::bigint, null::smallint, null::text, null::text;
        RETURN;
      END IF;

      IF p_dup_scope IS NOT NULL AND (p_dup_phone_e164 IS NOT NULL OR p_dup_external_key IS NOT NULL) THEN
        PERFORM lcm_lock_duplicate_keys(p_dup_phone_e164, p_dup_external_key);
        SELECT * INTO v_dup FROM lcm_find_duplicate(p_dup_scope, p_campaign_id, v_project, p_like_patterns,
                                                    p_dup_phone_e164, p_dup_external_key, p_dup_since, p_dup_statuses);
        IF v_dup.dup_id IS NOT NULL THEN
          IF NOT p_dup_update THEN
            RETURN QUERY SELECT 'duplicate', v_dup.dup_id, v_dup.dup_status, v_dup.dup_unique_id, v_dup.matched;
            RETURN;
          END IF;
          -- A merge patch of editable fields; the phone and external key columns follow their
          -- fields when those are editable (p_patch_phone, p_patch_external_key; null: unchanged).
          UPDATE leads l SET data = l.data || p_patch,
                 phone_number = coalesce(p_patch_phone, l.phone_number),
                 phone_e164 = CASE WHEN p_patch_phone IS NULL THEN l.phone_e164 ELSE p_phone_e164 END,
                 external_key = coalesce(p_patch_external_key, l.external_key),
                 last_modified_time = p_now, last_modified_by_user_id = p_user_id
           WHERE l.id = v_dup.dup_id;
          PERFORM lcm_record_lead_events('lead.updated', array[v_dup.dup_id], array[null::smallint], p_now);
          RETURN QUERY SELECT 'updated', v_dup.dup_id, v_dup.dup_status, v_dup.dup_unique_id, v_dup.matched;
          RETURN;
        END IF;
      END IF;

      v_status := coalesce(lcm_do_not_call_status(v_project, p_phone_e164, p_now), 0);
      v_pool := lcm_lead_pool(p_campaign_id, p_pool_name);

      INSERT INTO leads (unique_id, campaign_id, pool_id, status, closure, phone_number, phone_e164, external_key, data,
                         upload_time, last_modified_time, status_changed_time, uploaded_by_user_id, last_modified_by_user_id)
      VALUES (p_unique_id, p_campaign_id, v_pool, v_status, 0, p_phone_number, p_phone_e164, p_external_key, p_data,
              p_now, p_now, p_now, p_user_id, p_user_id)
      RETURNING leads.id INTO v_lead;

      PERFORM lcm_record_lead_events('lead.created', array[v_lead], array[null::smallint], p_now);
      RETURN QUERY SELECT 'inserted', v_lead, v_status, null::text, null::text;
    END
    $fn$;`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    ALTER TABLE leads ADD COLUMN phone_e164 text;
    ALTER TABLE campaigns
      ADD COLUMN duplicate_check text CHECK (duplicate_check IN ('None', 'Campaign', 'Project', 'Account')),
      ADD COLUMN duplicate_key text CHECK (duplicate_key IN ('Phone', 'ExternalKey', 'PhoneOrExternalKey')),
      ADD COLUMN duplicate_window interval,
      ADD COLUMN on_duplicate text CHECK (on_duplicate IN ('Reject', 'Skip', 'Update'));
  `);
  await backfillPhoneE164(knex, process.env.DEFAULT_PHONE_REGION ?? defaultPhoneRegion());
  await knex.raw(`
    CREATE INDEX leads_duplicate_phone ON leads (phone_e164, campaign_id) WHERE phone_e164 IS NOT NULL;
    CREATE INDEX leads_duplicate_external_key ON leads (external_key, campaign_id) WHERE external_key IS NOT NULL;

    DROP FUNCTION lcm_import_lead(bigint, text[], text, text, text, text, text, jsonb, timestamptz, bigint);

    -- The stored lead a new one duplicates, the latest uploaded: by its normalised phone and/or
    -- external key, in the scope ('campaign': p_campaign_id; 'project': campaigns of p_project;
    -- 'account': campaigns whose project matches p_like_patterns), uploaded at or after p_since
    -- (null: any age), in one of p_statuses (null: any status). matched: 'phone' or 'externalKey'.
    CREATE FUNCTION lcm_find_duplicate(
      p_scope text, p_campaign_id bigint, p_project text, p_like_patterns text[],
      p_phone_e164 text, p_external_key text, p_since timestamptz, p_statuses smallint[])
    RETURNS TABLE (dup_id bigint, dup_unique_id text, dup_status smallint, matched text)
    -- plpgsql, not sql: its plan is kept per connection instead of made on every call; generic,
    -- as a plan for one scope's values is no cheaper than the index lookup every scope starts with.
    LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
    BEGIN
      RETURN QUERY
      SELECT d.id, d.unique_id, d.status, d.matched FROM (
        SELECT l.id, l.unique_id, l.status, l.upload_time, l.campaign_id, 'phone' AS matched
          FROM leads l WHERE p_phone_e164 IS NOT NULL AND l.phone_e164 = p_phone_e164
        UNION ALL
        SELECT l.id, l.unique_id, l.status, l.upload_time, l.campaign_id, 'externalKey'
          FROM leads l WHERE p_external_key IS NOT NULL AND l.external_key = p_external_key) d
      JOIN campaigns c ON c.id = d.campaign_id
      WHERE CASE p_scope
              WHEN 'campaign' THEN d.campaign_id = p_campaign_id
              WHEN 'project' THEN lower(c.project) = lower(p_project)
              ELSE lower(c.project) LIKE ANY (p_like_patterns) END
        AND (p_since IS NULL OR d.upload_time >= p_since)
        AND (p_statuses IS NULL OR d.status = ANY (p_statuses))
      ORDER BY d.upload_time DESC, d.id DESC
      LIMIT 1;
    END
    $fn$;

    -- Serialises imports of the same normalised keys until the end of the transaction, so the
    -- lookup that follows sees every lead a concurrent import of the key stored. One lock per key
    -- whatever the scope (scopes of different accounts overlap); taken in hash order, so two
    -- imports that share both keys never wait on each other.
    CREATE FUNCTION lcm_lock_duplicate_keys(p_phone_e164 text, p_external_key text) RETURNS void
    LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM pg_advisory_xact_lock(h) FROM (
        SELECT DISTINCT hashtextextended(k, 0) AS h
          FROM unnest(array['lcm duplicate phone ' || p_phone_e164, 'lcm duplicate external key ' || p_external_key]) AS k
         WHERE k IS NOT NULL
         ORDER BY 1) s;
    END
    $fn$;

    ${IMPORT_LEAD_WITH_DUPLICATE_CHECK}
  `);
}

/** Fills phone_e164 of the leads stored before, in batches by id. */
async function backfillPhoneE164(knex: Knex, region: string): Promise<void> {
  let after = 0;
  for (;;) {
    const { rows } = await knex.raw<{ rows: { id: string; phone_number: string }[] }>(
      `select id, phone_number from leads where id > ? and phone_number is not null order by id limit ?`,
      [after, BACKFILL_BATCH],
    );
    if (rows.length === 0) return;
    after = Number(rows[rows.length - 1]!.id);
    const ids: string[] = [];
    const numbers: string[] = [];
    for (const r of rows) {
      const e164 = toE164(r.phone_number, region);
      if (e164 === undefined) continue;
      ids.push(r.id);
      numbers.push(e164);
    }
    if (ids.length > 0) {
      await knex.raw(`update leads l set phone_e164 = u.e164 from unnest(?::bigint[], ?::text[]) as u(id, e164) where l.id = u.id`, [
        ids,
        numbers,
      ]);
    }
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION IF EXISTS lcm_import_lead(bigint, text[], text, text, text, text, text, jsonb, timestamptz, bigint,
                                            text, text, text, timestamptz, smallint[], boolean, jsonb, text, text);
    DROP FUNCTION IF EXISTS lcm_lock_duplicate_keys(text, text);
    DROP FUNCTION IF EXISTS lcm_find_duplicate(text, bigint, text, text[], text, text, timestamptz, smallint[]);
    DROP INDEX IF EXISTS leads_duplicate_phone;
    DROP INDEX IF EXISTS leads_duplicate_external_key;
    ALTER TABLE campaigns DROP COLUMN IF EXISTS duplicate_check, DROP COLUMN IF EXISTS duplicate_key,
      DROP COLUMN IF EXISTS duplicate_window, DROP COLUMN IF EXISTS on_duplicate;
    ALTER TABLE leads DROP COLUMN IF EXISTS phone_e164;

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
