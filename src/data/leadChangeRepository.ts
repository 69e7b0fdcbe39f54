import type { Knex } from 'knex';
import { EntryAccess, LeadStatus, LeadStatusName, OPEN_LEAD_STATUSES } from '../domain/enums';
import type { LeadFieldRule } from '../domain/leadData';
import type { LeadSnapshot } from '../domain/hookMessages';
import type { ProjectScope } from './projectScope';
import { queryPrepared } from './db';
import { clearLeadCalendarEventTexts } from './calendarEventRepository';

/**
 * Changes to one lead (docs/decisions.md, Lead changes), each one statement: the database
 * functions of db/migrations/20261223000001_lead_change_functions.ts lock the lead, check that
 * it is still what the caller checked, write the change and record its hook events. What the
 * checks need before that is read without a lock (readLeadForChange).
 */

/** A field of a lead's definition, with `editable`. */
export type LeadFieldForChange = LeadFieldRule & { editable: boolean };

/** What checking a patch needs to know of a lead, read without a lock. */
export interface LeadForChange {
  campaignId: number;
  status: LeadStatusName;
  /** Changes with every write of the row (Postgres's xmin): the lead's ETag. */
  version: string;
  /** The fields of the campaign's lead definition, in sort order. */
  fields: LeadFieldForChange[];
}

type FieldJson = Omit<LeadFieldForChange, 'access'> & { access: number };

const toFields = (fields: FieldJson[]): LeadFieldForChange[] => fields.map((f) => ({ ...f, access: EntryAccess.toName(f.access) }));

/** A lead of the account's projects as a change checks it; undefined when unknown or outside the scope. */
export async function readLeadForChange(db: Knex, uniqueId: string, scope: ProjectScope): Promise<LeadForChange | undefined> {
  const { rows } = await queryPrepared<{ campaign_id: number; status: number; version: string; fields: FieldJson[] }>(
    db,
    'lcm_read_lead_for_change',
    `select l.campaign_id, l.status, l.xmin::text as version, lcm_lead_fields(l.campaign_id) as fields
       from leads l join campaigns c on c.id = l.campaign_id
      where l.unique_id = $1 and lower(c.project) like any($2::text[])`,
    [uniqueId, scope.likePatterns],
  );
  const r = rows[0];
  if (!r) return undefined;
  return { campaignId: Number(r.campaign_id), status: LeadStatus.toName(r.status), version: r.version, fields: toFields(r.fields) };
}

/** A patch as the database applies it: field names resolved and values checked by the caller. */
export interface LeadRowPatch {
  /** The lead's last modification, by the account's linked user. */
  now: Date;
  userId: number;
  /** `If-Match` matched this version: the change goes ahead only if the lead is still at it. */
  version?: string;
  /** The campaign whose lead definition checked `set` and `remove`: the lead must still be in it. */
  campaignId?: number;
  /** Values by field name; `remove`: field names whose values go. */
  set?: Record<string, string>;
  remove?: string[];
  /** The lead's new number (E.164 beside it) when the patch names the phone field; null removes it. */
  phone?: { number: string | null; e164: string | null };
  /** The new external key when the patch names its field. */
  externalKey?: { value: string | null };
  priority?: number;
  /** An administrative move (the lifecycle rules allow it from every status but Anonymized, which is refused). */
  status?: LeadStatusName;
}

/** A lead as a change left it, for the answer: its version (ETag), the lead as hook events keep it, its definition's fields. */
export interface ChangedLead {
  version: string;
  snapshot: LeadSnapshot;
  fields: LeadFieldForChange[];
}

export type LeadRowPatchOutcome =
  | {
      kind: 'changed';
      lead: ChangedLead;
      /** The lead's number after the change. */
      phoneNumber: string | null;
      project: string;
    }
  | { kind: 'not_found' }
  | { kind: 'precondition_failed' }
  | { kind: 'anonymized' }
  /** The lead is no longer in `campaignId`: its data must be checked again. */
  | { kind: 'moved' };

const OPEN_STATUS_NUMBERS = OPEN_LEAD_STATUSES.map((s) => LeadStatus.toNumber(s));

const PATCH_LEAD = `
  select outcome, version, phone_number, project, snapshot, fields from lcm_patch_lead(
    p_unique_id => $1, p_like_patterns => $2::text[], p_now => $3, p_user_id => $4, p_open_statuses => $5::smallint[],
    p_version => $6, p_campaign_id => $7, p_set => $8::jsonb, p_remove => $9::text[], p_set_phone => $10, p_phone_number => $11,
    p_phone_e164 => $12, p_set_external_key => $13, p_external_key => $14, p_priority => $15, p_status => $16)`;

/**
 * Applies a merge patch to a lead of the account's projects in one statement (outside a
 * transaction, one transaction of its own): the lead is locked, checked (scope, version,
 * Anonymized, campaign), changed, and a new status recorded as lead.statusChanged; a new number on
 * a do-not-call list moves an open lead to that list's status, under the lists' shared lock.
 */
export async function patchLeadRow(
  db: Knex | Knex.Transaction,
  uniqueId: string,
  scope: ProjectScope,
  patch: LeadRowPatch,
): Promise<LeadRowPatchOutcome> {
  const { rows } = await queryPrepared<{
    outcome: 'changed' | 'not_found' | 'precondition_failed' | 'anonymized' | 'moved';
    version: string | null;
    phone_number: string | null;
    project: string | null;
    snapshot: LeadSnapshot | null;
    fields: FieldJson[] | null;
  }>(db, 'lcm_patch_lead', PATCH_LEAD, [
    uniqueId,
    scope.likePatterns,
    patch.now,
    patch.userId,
    OPEN_STATUS_NUMBERS,
    patch.version ?? null,
    patch.campaignId ?? null,
    JSON.stringify(patch.set ?? {}),
    patch.remove ?? [],
    patch.phone !== undefined,
    patch.phone?.number ?? null,
    patch.phone?.e164 ?? null,
    patch.externalKey !== undefined,
    patch.externalKey?.value ?? null,
    patch.priority ?? null,
    patch.status === undefined ? null : LeadStatus.toNumber(patch.status),
  ]);
  const r = rows[0]!;
  if (r.outcome !== 'changed') return { kind: r.outcome };
  return {
    kind: 'changed',
    lead: { version: r.version!, snapshot: r.snapshot!, fields: toFields(r.fields!) },
    phoneNumber: r.phone_number,
    project: r.project!,
  };
}

/** `unchanged`: the lead was Anonymized already. */
export type AnonymizeOutcome =
  | { kind: 'changed'; lead: ChangedLead }
  | { kind: 'unchanged'; lead: ChangedLead }
  | { kind: 'not_found' }
  | { kind: 'precondition_failed' };

/**
 * Anonymizes a lead of the account's projects for good, in the caller's transaction: its data,
 * number, external key and closure data, the number and external key on its calls and the
 * copies queued hook events hold (one statement), then the title and notes of its calendar
 * events (each recorded as calendarEvent.updated). The lead becomes Anonymized
 * (lead.statusChanged); one already Anonymized is left as it is (`unchanged`).
 */
export async function anonymizeLeadRows(
  trx: Knex.Transaction,
  uniqueId: string,
  scope: ProjectScope,
  change: { now: Date; userId: number; version?: string },
): Promise<AnonymizeOutcome> {
  const { rows } = await queryPrepared<{
    outcome: 'changed' | 'unchanged' | 'not_found' | 'precondition_failed';
    version: string | null;
    snapshot: LeadSnapshot | null;
    fields: FieldJson[] | null;
  }>(
    trx,
    'lcm_anonymize_lead',
    `select outcome, version, snapshot, fields
       from lcm_anonymize_lead(p_unique_id => $1, p_like_patterns => $2::text[], p_now => $3, p_user_id => $4, p_version => $5)`,
    [uniqueId, scope.likePatterns, change.now, change.userId, change.version ?? null],
  );
  const r = rows[0]!;
  if (r.outcome === 'not_found' || r.outcome === 'precondition_failed') return { kind: r.outcome };
  if (r.outcome === 'changed') await clearLeadCalendarEventTexts(trx, uniqueId, change.now);
  return { kind: r.outcome, lead: { version: r.version!, snapshot: r.snapshot!, fields: toFields(r.fields!) } };
}
