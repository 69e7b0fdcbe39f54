import type { Knex } from 'knex';
import { localDate } from '../domain/datetime';
import { leadKeyFields } from '../domain/leadData';
import { autoPoolName } from '../data/leadPools';
import { findImportCampaign, ImportCampaign } from '../data/leadRepository';
import type { ProjectScope } from '../data/projectScope';

/**
 * What the single import (importLead.ts) and the bulk import (bulkImport.ts) share, so both
 * follow one set of rules (docs/decisions.md, Leads): the refusals, the campaign check, the pool a
 * lead goes into, and what an Update changes on a duplicate.
 */

/** An import that is not answered but refused: nothing is stored, also not under an idempotency key. */
export class ImportRefused extends Error {
  constructor(
    readonly reason: 'unknown_campaign' | 'campaign_forbidden',
    readonly campaignCode: string,
  ) {
    super(
      reason === 'unknown_campaign'
        ? `no campaign has the code ${campaignCode}`
        : `campaign ${campaignCode} is outside the account's projects`,
    );
    this.name = 'ImportRefused';
  }
}

/**
 * The pool of a lead inserted at `now`: the named one, or `(auto) yyyy-MM-dd` of the
 * platform-local date at that moment (an upload across midnight lands in two pools).
 */
export function poolNameAt(requested: string | undefined, now: Date, zone: string): string {
  return requested ?? autoPoolName(localDate(now, zone));
}

/** The values of a new lead that a duplicate check may copy onto the stored one. */
interface DuplicateValues {
  data: Record<string, string>;
  phoneNumber: string | null;
  externalKey: string | null;
}

/**
 * What an import with `OnDuplicate=Update` changes on the stored duplicate: its editable fields
 * of the new data, and the phone and external key only when their fields are editable (null:
 * left as stored). Both imports build their update here.
 */
export function duplicateUpdate(
  campaign: Pick<ImportCampaign, 'editableFields' | 'fields'>,
  values: DuplicateValues,
): { patch: Record<string, string>; phoneNumber: string | null; externalKey: string | null } {
  const editable = new Set(campaign.editableFields);
  const { phoneField, keyField } = leadKeyFields(campaign.fields);
  return {
    patch: Object.fromEntries(Object.entries(values.data).filter(([name]) => editable.has(name))),
    phoneNumber: phoneField !== undefined && editable.has(phoneField.name) ? values.phoneNumber : null,
    externalKey: keyField !== undefined && editable.has(keyField.name) ? values.externalKey : null,
  };
}

/**
 * The campaign with its lead definition, looked up afresh (the project check decided in SQL);
 * throws ImportRefused for an unknown campaign or one outside the account's projects.
 */
export async function campaignForImport(db: Knex, code: string, scope: ProjectScope): Promise<ImportCampaign> {
  const found = await findImportCampaign(db, code, scope, { fresh: true });
  if (!found) throw new ImportRefused('unknown_campaign', code);
  if (found.visible !== true) throw new ImportRefused('campaign_forbidden', found.campaign.code);
  return found.campaign;
}
