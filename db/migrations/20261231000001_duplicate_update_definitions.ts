import type { Knex } from 'knex';
import { IMPORT_LEAD_WITH_DUPLICATE_CHECK } from './20261222000011_duplicate_check';

/**
 * `OnDuplicate=Update` into a lead of another lead definition (docs/decisions.md, "Duplicates on
 * import"). A check over a project or the account finds leads of campaigns whose definition is
 * not the import's; the merge then wrote the import definition's fields into the stored lead,
 * including names its own definition does not have, fields it does not let change and fields
 * above the importer's entry access there. `lcm_duplicate_patch` narrows the merge to the stored
 * lead's definition, and both imports merge through it: `lcm_import_lead` (which gains
 * `p_dup_access`, the importer's entry access) and the bulk import's update
 * (src/data/duplicateLookup.ts).
 */

/** The old function's update and the same through lcm_duplicate_patch. */
const OLD_UPDATE = `UPDATE leads l SET data = l.data || p_patch,
                 phone_number = coalesce(p_patch_phone, l.phone_number),
                 phone_e164 = CASE WHEN p_patch_phone IS NULL THEN l.phone_e164 ELSE p_phone_e164 END,
                 external_key = coalesce(p_patch_external_key, l.external_key),
                 last_modified_time = p_now, last_modified_by_user_id = p_user_id
           WHERE l.id = v_dup.dup_id;`;
const NEW_UPDATE = `UPDATE leads l SET data = l.data || n.patch,
                 phone_number = coalesce(n.patch_phone, l.phone_number),
                 phone_e164 = CASE WHEN n.patch_phone IS NULL THEN l.phone_e164 ELSE p_phone_e164 END,
                 external_key = coalesce(n.patch_external_key, l.external_key),
                 last_modified_time = p_now, last_modified_by_user_id = p_user_id
            FROM lcm_duplicate_patch(v_dup.dup_id, p_campaign_id, p_dup_access, p_patch, p_patch_phone, p_patch_external_key) n
           WHERE l.id = v_dup.dup_id;`;
const OLD_LAST_PARAMETER = `p_patch_external_key text DEFAULT NULL)`;
const NEW_LAST_PARAMETERS = `p_patch_external_key text DEFAULT NULL,
      p_dup_access smallint DEFAULT 0)`;

/** The function text with each replacement made exactly once (a text that moved fails the migration, not the import). */
function replacedOnce(text: string, replacements: [string, string][]): string {
  let out = text;
  for (const [from, to] of replacements) {
    const at = out.indexOf(from);
    if (at < 0 || out.indexOf(from, at + 1) >= 0) throw new Error(`expected one occurrence of: ${from.slice(0, 60)}`);
    out = out.slice(0, at) + to + out.slice(at + from.length);
  }
  return out;
}

const IMPORT_LEAD_MERGING_BY_STORED_DEFINITION = replacedOnce(IMPORT_LEAD_WITH_DUPLICATE_CHECK, [
  [OLD_LAST_PARAMETER, NEW_LAST_PARAMETERS],
  [OLD_UPDATE, NEW_UPDATE],
]);

const OLD_SIGNATURE = `lcm_import_lead(bigint, text[], text, text, text, text, text, jsonb, timestamptz, bigint,
                               text, text, text, timestamptz, smallint[], boolean, jsonb, text, text)`;

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    -- The merge of an import into its stored duplicate (p_patch: the import's editable fields;
    -- p_patch_phone, p_patch_external_key: the number and key when their fields are editable,
    -- else null) as the stored lead's definition takes it. The same definition: unchanged.
    -- Another: only fields that definition has under the same name (any case; stored under its
    -- spelling) and type, that it lets change and that p_access (the importer's entry access)
    -- reaches. Its number and key change only where its phone and key fields are the import's
    -- phone and key fields by name; a value for those fields from any other field is left out,
    -- so a lead's number and key stay the values its data holds under them.
    CREATE FUNCTION lcm_duplicate_patch(
      p_lead_id bigint, p_campaign_id bigint, p_access smallint,
      p_patch jsonb, p_patch_phone text, p_patch_external_key text)
    RETURNS TABLE (patch jsonb, patch_phone text, patch_external_key text)
    LANGUAGE plpgsql STABLE AS $fn$
    DECLARE
      v_import bigint;
      v_stored bigint;
      v_patch jsonb;
      v_import_phone text;
      v_stored_phone text;
      v_import_key text;
      v_stored_key text;
    BEGIN
      SELECT c.lead_definition_id INTO v_import FROM campaigns c WHERE c.id = p_campaign_id;
      SELECT c.lead_definition_id INTO v_stored FROM leads l JOIN campaigns c ON c.id = l.campaign_id WHERE l.id = p_lead_id;
      IF v_import IS NOT DISTINCT FROM v_stored THEN
        RETURN QUERY SELECT p_patch, p_patch_phone, p_patch_external_key;
        RETURN;
      END IF;
      SELECT coalesce(jsonb_object_agg(s.name, p.value), '{}') INTO v_patch
        FROM jsonb_each(p_patch) p
        JOIN lead_definition_fields i ON i.lead_definition_id = v_import AND i.name = p.key
        JOIN lead_definition_fields s ON s.lead_definition_id = v_stored AND lower(s.name) = lower(i.name)
       WHERE s.type = i.type AND s.editable AND s.access <= p_access;
      SELECT f.name INTO v_import_phone FROM lead_definition_fields f
       WHERE f.lead_definition_id = v_import AND f.type = 'phone' ORDER BY f.sort_order, f.id LIMIT 1;
      SELECT f.name INTO v_stored_phone FROM lead_definition_fields f
       WHERE f.lead_definition_id = v_stored AND f.type = 'phone' ORDER BY f.sort_order, f.id LIMIT 1;
      SELECT f.name INTO v_import_key FROM lead_definition_fields f WHERE f.lead_definition_id = v_import AND f.external_key;
      SELECT f.name INTO v_stored_key FROM lead_definition_fields f WHERE f.lead_definition_id = v_stored AND f.external_key;
      IF v_stored_phone IS NOT NULL AND lower(v_stored_phone) IS DISTINCT FROM lower(v_import_phone) THEN
        v_patch := v_patch - v_stored_phone;
      END IF;
      IF v_stored_key IS NOT NULL AND lower(v_stored_key) IS DISTINCT FROM lower(v_import_key) THEN
        v_patch := v_patch - v_stored_key;
      END IF;
      RETURN QUERY SELECT v_patch,
        CASE WHEN v_stored_phone IS NOT NULL AND (v_patch -> v_stored_phone) IS NOT NULL THEN p_patch_phone END,
        CASE WHEN v_stored_key IS NOT NULL AND (v_patch -> v_stored_key) IS NOT NULL THEN p_patch_external_key END;
    END
    $fn$;

    DROP FUNCTION ${OLD_SIGNATURE};
    ${IMPORT_LEAD_MERGING_BY_STORED_DEFINITION}
  `);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw(`
    DROP FUNCTION lcm_import_lead(bigint, text[], text, text, text, text, text, jsonb, timestamptz, bigint,
                                  text, text, text, timestamptz, smallint[], boolean, jsonb, text, text, smallint);
    DROP FUNCTION lcm_duplicate_patch(bigint, bigint, smallint, jsonb, text, text);
    ${IMPORT_LEAD_WITH_DUPLICATE_CHECK}
  `);
}
