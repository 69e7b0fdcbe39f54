import type { Knex } from 'knex';
import { defaultPhoneRegion } from '../config/platform';
import type { EntryAccessName } from '../domain/enums';
import { ifMatchAccepts, ifMatchesAny, leadVersionTag } from '../domain/entityTag';
import { canSeeField, LeadDataError, leadKeyFields, mapLeadData, sameFieldTwiceMessage } from '../domain/leadData';
import { toE164 } from '../domain/phoneNumber';
import {
  anonymizeLeadRows,
  ChangedLead,
  LeadFieldForChange,
  LeadForChange,
  LeadRowPatch,
  LeadRowPatchOutcome,
  patchLeadRow,
  readLeadForChange,
} from '../data/leadChangeRepository';
import { addDoNotCallNumbers } from '../data/doNotCallRepository';
import type { ProjectScope } from '../data/projectScope';

/**
 * Changing one lead through the API (docs/decisions.md, Lead changes): a JSON merge patch of
 * its editable data, priority and administrative status, and anonymization. The checks that
 * need the lead definition (and an `If-Match`'s version) run on a read without a lock, so a
 * refused patch writes nothing; the change itself is one statement that locks the lead, checks
 * that it is still in that campaign (and at that version), and writes the change with its hook
 * events and do-not-call effects.
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

export type LeadChangeRefusal =
  | { kind: 'not_found' }
  /** `If-Match` named another version of the lead. */
  | { kind: 'precondition_failed' }
  /** An Anonymized lead does not change any more. */
  | { kind: 'anonymized' }
  | { kind: 'invalid'; errors: LeadDataError[] };

/** A change made: the lead as it left it, for the answer. */
export type LeadChangeOutcome = { kind: 'changed'; lead: ChangedLead } | LeadChangeRefusal;

/** The row changes a patch's data comes to, or why it is refused. */
type CheckedData = { errors: LeadDataError[] } & Pick<LeadRowPatch, 'set' | 'remove' | 'phone' | 'externalKey'>;

/**
 * Checks the data of a patch against the lead definition. Only fields the account sees and that
 * are editable may be named; each named field is checked as an import checks it (its type, and
 * a required field cannot be removed), while values stored before a definition changed stay as
 * they are. The number and external key follow their fields when the patch names them.
 */
function checkPatchData(
  fields: readonly LeadFieldForChange[],
  patch: Record<string, string | null>,
  changer: LeadChanger,
  zone: string,
): CheckedData {
  const errors: LeadDataError[] = [];
  const set: Record<string, string> = {};
  const remove = new Set<string>();
  const touched = new Map<string, string>();
  for (const [key, value] of Object.entries(patch)) {
    const field = fields.find(
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
    const first = touched.get(field.name);
    if (first !== undefined) {
      const before = set[field.name] ?? null;
      const now = value === null || value.trim() === '' ? null : value;
      if (before !== now) errors.push({ field: `data.${key}`, message: sameFieldTwiceMessage(first) });
      continue;
    }
    touched.set(field.name, key);
    if (value === null || value.trim() === '') {
      delete set[field.name];
      remove.add(field.name);
    } else {
      set[field.name] = value;
      remove.delete(field.name);
    }
  }
  const mapped = mapLeadData(fields, set, zone);
  for (const e of mapped.errors) {
    const key = touched.get(e.field);
    if (key !== undefined) errors.push({ field: `data.${key}`, message: e.message });
  }
  if (errors.length > 0) return { errors };
  const { phoneField, keyField } = leadKeyFields(fields);
  const phone = phoneField !== undefined && touched.has(phoneField.name) ? mapped.phoneNumber : undefined;
  return {
    errors,
    set,
    remove: [...remove],
    ...(phone !== undefined
      ? { phone: { number: phone, e164: phone === null ? null : (toE164(phone, defaultPhoneRegion()) ?? null) } }
      : {}),
    ...(keyField !== undefined && touched.has(keyField.name) ? { externalKey: { value: mapped.externalKey } } : {}),
  };
}

/**
 * Whether an `If-Match` names versions the lead must be at. `*` does not: the change's own
 * statement answers for a lead that does not exist.
 */
const namesVersions = (ifMatch: string | undefined): ifMatch is string => ifMatch !== undefined && !ifMatchesAny(ifMatch);

/**
 * The lead as a change checks it (read without a lock), with the version its `If-Match` accepted
 * when it names versions; or why the change is refused.
 */
async function readForChange(
  deps: LeadChangeDeps,
  changer: LeadChanger,
  uniqueId: string,
  ifMatch: string | undefined,
): Promise<{ lead: LeadForChange; version?: string } | LeadChangeRefusal> {
  const lead = await readLeadForChange(deps.db, uniqueId, changer.scope);
  if (lead === undefined) return { kind: 'not_found' };
  if (!namesVersions(ifMatch)) return { lead };
  if (!ifMatchAccepts(ifMatch, leadVersionTag(uniqueId, lead.version))) return { kind: 'precondition_failed' };
  return { lead, version: lead.version };
}

/** Each move of a lead to another campaign is a commit of someone else's (the loader's): a few tries suffice. */
const MOVED_TRIES = 5;

/** Applies a merge patch to a lead of the account's projects. */
export async function patchLead(
  deps: LeadChangeDeps,
  changer: LeadChanger,
  uniqueId: string,
  patch: LeadPatch,
  ifMatch?: string,
): Promise<LeadChangeOutcome> {
  for (let attempt = 1; ; attempt++) {
    const outcome = await patchOnce(deps, changer, uniqueId, patch, ifMatch);
    // The lead moved to another campaign between the check and the change: check it against its new definition.
    if (outcome.kind !== 'moved') return outcome;
    if (attempt === MOVED_TRIES) throw new Error(`lead ${uniqueId} moved to another campaign ${attempt} times during a patch`);
  }
}

async function patchOnce(
  deps: LeadChangeDeps,
  changer: LeadChanger,
  uniqueId: string,
  patch: LeadPatch,
  ifMatch: string | undefined,
): Promise<LeadChangeOutcome | { kind: 'moved' }> {
  const { db } = deps;
  const row: LeadRowPatch = {
    now: deps.clock(),
    userId: changer.userId,
    ...(patch.priority !== undefined ? { priority: patch.priority } : {}),
    ...(patch.status !== undefined ? { status: patch.status } : {}),
  };
  if (patch.data !== undefined || namesVersions(ifMatch)) {
    const read = await readForChange(deps, changer, uniqueId, ifMatch);
    if ('kind' in read) return read;
    const { lead, version } = read;
    if (version !== undefined) row.version = version;
    if (lead.status === 'Anonymized') return { kind: 'anonymized' };
    if (patch.data !== undefined) {
      const { errors, ...data } = checkPatchData(lead.fields, patch.data, changer, deps.zone);
      if (errors.length > 0) return { kind: 'invalid', errors };
      Object.assign(row, data, { campaignId: lead.campaignId });
    }
  }
  const outcome =
    patch.status === 'DoNotCall'
      ? await db.transaction((trx) => patchAndList(trx, changer, uniqueId, row))
      : await patchLeadRow(db, uniqueId, changer.scope, row);
  return outcome.kind === 'changed' ? { kind: 'changed', lead: outcome.lead } : outcome;
}

/** DoNotCall also lists the lead's number for its project, which moves that project's other open leads with it. */
async function patchAndList(
  trx: Knex.Transaction,
  changer: LeadChanger,
  uniqueId: string,
  row: LeadRowPatch,
): Promise<LeadRowPatchOutcome> {
  const outcome = await patchLeadRow(trx, uniqueId, changer.scope, row);
  if (outcome.kind !== 'changed' || outcome.phoneNumber === null) return outcome;
  const e164 = toE164(outcome.phoneNumber, defaultPhoneRegion());
  if (e164 !== undefined) {
    await addDoNotCallNumbers(trx, { global: false, scope: changer.scope }, [{ phoneNumber: e164, project: outcome.project }], {
      now: row.now,
      userId: row.userId,
    });
  }
  return outcome;
}

/**
 * Anonymizes a lead of the account's projects (irreversible), in one transaction: see
 * anonymizeLeadRows. An Anonymized lead is left as it is, so a retried request succeeds.
 */
export async function anonymizeLead(
  deps: LeadChangeDeps,
  changer: LeadChanger,
  uniqueId: string,
  ifMatch?: string,
): Promise<LeadChangeOutcome> {
  let version: string | undefined;
  if (namesVersions(ifMatch)) {
    const read = await readForChange(deps, changer, uniqueId, ifMatch);
    if ('kind' in read) return read;
    version = read.version;
  }
  const outcome = await deps.db.transaction((trx) =>
    anonymizeLeadRows(trx, uniqueId, changer.scope, { now: deps.clock(), userId: changer.userId, ...(version ? { version } : {}) }),
  );
  return outcome.kind === 'unchanged' ? { kind: 'changed', lead: outcome.lead } : outcome;
}
