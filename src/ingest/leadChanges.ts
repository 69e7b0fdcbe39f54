import type { Knex } from 'knex';
import { defaultPhoneRegion } from '../config/platform';
import type { EntryAccessName } from '../domain/enums';
import { ifMatchAccepts, leadEntityTag } from '../domain/entityTag';
import { canSeeField, LeadDataError, mapLeadData } from '../domain/leadData';
import { administrativeStatus, isOpenStatus } from '../domain/lifecycle';
import { toE164 } from '../domain/phoneNumber';
import { anonymizeLeadRows, LeadUpdate, LockedLead, lockLead, updateLead } from '../data/leadChangeRepository';
import { addDoNotCallNumbers, doNotCallStatus } from '../data/doNotCallRepository';
import type { ProjectScope } from '../data/projectScope';

/**
 * Changing one lead through the API (docs/decisions.md, Lead changes): a JSON merge patch of
 * its editable data, priority and administrative status, and anonymization. Each runs in one
 * transaction with the lead locked, so an `If-Match` check and the write see the same lead, and
 * the hook events and do-not-call effects commit with the change.
 */

/** The fields of a merge patch (RFC 7396): absent = unchanged; in `data`, null or blank removes the value. */
export interface LeadPatch {
  data?: Record<string, string | null>;
  priority?: number;
  status?: 'Removed' | 'DoNotCall';
}

export interface LeadChanger {
  /** The account's linked platform user: the lead's last modifier. */
  userId: number;
  scope: ProjectScope;
  entryAccess: EntryAccessName;
}

export interface LeadChangeDeps {
  db: Knex;
  clock: () => Date;
  zone: string;
}

export type LeadChangeOutcome =
  | { kind: 'changed' }
  | { kind: 'not_found' }
  /** `If-Match` named another version of the lead. */
  | { kind: 'precondition_failed' }
  /** An Anonymized lead does not change any more. */
  | { kind: 'anonymized' }
  | { kind: 'invalid'; errors: LeadDataError[] };

/** Throws inside the transaction so that nothing of a refused change is kept. */
class Refused extends Error {
  constructor(readonly outcome: Exclude<LeadChangeOutcome, { kind: 'changed' }>) {
    super(outcome.kind);
  }
}

async function withLockedLead(
  deps: LeadChangeDeps,
  changer: LeadChanger,
  uniqueId: string,
  ifMatch: string | undefined,
  change: (trx: Knex.Transaction, lead: LockedLead, now: Date) => Promise<void>,
): Promise<LeadChangeOutcome> {
  try {
    await deps.db.transaction(async (trx) => {
      const lead = await lockLead(trx, uniqueId, changer.scope);
      if (lead === undefined) throw new Refused({ kind: 'not_found' });
      if (ifMatch !== undefined && !ifMatchAccepts(ifMatch, leadEntityTag(lead.uniqueId, lead.version))) {
        throw new Refused({ kind: 'precondition_failed' });
      }
      await change(trx, lead, deps.clock());
    });
    return { kind: 'changed' };
  } catch (err) {
    if (err instanceof Refused) return err.outcome;
    throw err;
  }
}

/**
 * The data a patch leads to: the stored data with the patch's values merged in, checked as an
 * import checks them. Only fields the account sees and that are editable may be named.
 */
function mergeData(lead: LockedLead, patch: Record<string, string | null>, changer: LeadChanger, zone: string) {
  const errors: LeadDataError[] = [];
  const merged: Record<string, string> = { ...lead.data };
  const touched = new Map<string, string>();
  for (const [key, value] of Object.entries(patch)) {
    const field = lead.fields.find(
      (f) =>
        (f.name.toLowerCase() === key.toLowerCase() || f.importName?.toLowerCase() === key.toLowerCase()) &&
        canSeeField(changer.entryAccess, f.access),
    );
    if (field === undefined) {
      errors.push({ field: `data.${key}`, message: "is not a field of the campaign's lead definition" });
      continue;
    }
    if (!field.editable) {
      errors.push({ field: `data.${key}`, message: 'is not editable' });
      continue;
    }
    touched.set(field.name, key);
    if (value === null || value.trim() === '') delete merged[field.name];
    else merged[field.name] = value;
  }
  const mapped = mapLeadData(lead.fields, merged, zone);
  // Only the named fields are judged: values stored before a definition changed stay as they are.
  for (const e of mapped.errors) {
    const key = touched.get(e.field);
    if (key !== undefined) errors.push({ field: `data.${key}`, message: e.message });
  }
  return { errors, merged, mapped };
}

/** Applies a merge patch to a lead of the account's projects. */
export function patchLead(
  deps: LeadChangeDeps,
  changer: LeadChanger,
  uniqueId: string,
  patch: LeadPatch,
  ifMatch?: string,
): Promise<LeadChangeOutcome> {
  return withLockedLead(deps, changer, uniqueId, ifMatch, async (trx, lead, now) => {
    if (lead.status === 'Anonymized') throw new Refused({ kind: 'anonymized' });
    const update: LeadUpdate = {};
    let phoneNumber = lead.phoneNumber;
    if (patch.data !== undefined) {
      const { errors, merged, mapped } = mergeData(lead, patch.data, changer, deps.zone);
      if (errors.length > 0) throw new Refused({ kind: 'invalid', errors });
      phoneNumber = mapped.phoneNumber;
      Object.assign(update, { data: merged, phoneNumber, externalKey: mapped.externalKey });
    }
    if (patch.priority !== undefined) update.priority = patch.priority;
    if (patch.status !== undefined) update.status = administrativeStatus(lead.status, patch.status);
    const status = update.status ?? lead.status;
    const change = { now, userId: changer.userId };
    if (update.status === undefined && isOpenStatus(status) && phoneNumber !== null && phoneNumber !== lead.phoneNumber) {
      // A new number that is on a do-not-call list takes the lead off the calling lists, as an import of it would.
      const listed = await doNotCallStatus(trx, lead.campaignId, phoneNumber, now);
      if (listed !== undefined) update.status = listed;
    }
    await updateLead(trx, lead, update, change);
    if (patch.status === 'DoNotCall' && phoneNumber !== null) {
      // DoNotCall also lists the number for the lead's project, which moves that project's other open leads with it.
      const e164 = toE164(phoneNumber, defaultPhoneRegion());
      if (e164 !== undefined) {
        await addDoNotCallNumbers(trx, { global: false, scope: changer.scope }, [{ phoneNumber: e164, project: lead.project }], change);
      }
    }
  });
}

/**
 * Anonymizes a lead of the account's projects (irreversible): see anonymizeLeadRows. An
 * Anonymized lead is left as it is, so a retried request succeeds.
 */
export function anonymizeLead(deps: LeadChangeDeps, changer: LeadChanger, uniqueId: string, ifMatch?: string): Promise<LeadChangeOutcome> {
  return withLockedLead(deps, changer, uniqueId, ifMatch, async (trx, lead, now) => {
    if (lead.status === 'Anonymized') return;
    await anonymizeLeadRows(trx, lead, { now, userId: changer.userId });
  });
}
