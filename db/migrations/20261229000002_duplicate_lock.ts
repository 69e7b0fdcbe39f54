import type { Knex } from 'knex';

/**
 * The duplicate a lookup finds is locked (FOR UPDATE) and found again (docs/decisions.md,
 * "Duplicates on import"): a change of that lead in flight (anonymize, a move out of the open
 * statuses, a new number) is waited for, and the lookup then sees it. Before, an import with
 * `OnDuplicate=Update` that found a lead just before it was anonymized merged its data into the
 * anonymized lead once the anonymize committed. The lock holds the lead as found until the
 * import commits, so its merge applies to that lead. `lcm_find_duplicate` is volatile now (it
 * locks); its lookup is that of 20261222000011, unchanged.
 */

const LOOKUP = `
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
      LIMIT 1`;

const SIGNATURE = `lcm_find_duplicate(
      p_scope text, p_campaign_id bigint, p_project text, p_like_patterns text[],
      p_phone_e164 text, p_external_key text, p_since timestamptz, p_statuses smallint[])
    RETURNS TABLE (dup_id bigint, dup_unique_id text, dup_status smallint, matched text)`;

/** Tries before a lookup whose duplicate keeps changing under it answers what it found last. */
const TRIES = 5;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION ${SIGNATURE}
    LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
    DECLARE
      dup record;
      recheck record;
    BEGIN
      ${LOOKUP.trim()} INTO dup;
      FOR i IN 1..${TRIES} LOOP
        IF dup.id IS NULL THEN
          RETURN;
        END IF;
        -- Waits for a change of the lead in flight, then holds it until the import commits.
        PERFORM 1 FROM leads l WHERE l.id = dup.id FOR UPDATE;
        ${LOOKUP.trim()} INTO recheck;
        EXIT WHEN recheck.id IS NOT DISTINCT FROM dup.id;
        dup := recheck;
      END LOOP;
      IF dup.id IS NOT NULL THEN
        RETURN QUERY SELECT dup.id, dup.unique_id, dup.status, dup.matched;
      END IF;
    END
    $fn$;
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE OR REPLACE FUNCTION ${SIGNATURE}
    LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $fn$
    BEGIN
      RETURN QUERY
      ${LOOKUP.trim()};
    END
    $fn$;
  `);
}
