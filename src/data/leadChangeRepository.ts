import { toE164 } from '../domain/phoneNumber';
import { defaultPhoneRegion } from '../config/platform';
import type { Knex } from 'knex';
import { LeadStatus, LeadStatusName } from '../domain/enums';
import type { LeadFieldRule } from '../domain/leadData';
import type { ProjectScope } from './projectScope';
import { recordLeadEvent } from './hookEvents';
import { clearLeadCalendarEventTexts } from './calendarEventRepository';

/**
 * Changes to one lead (docs/decisions.md, Lead changes): the lead is locked for the
 * transaction, its version (for ETags) read, and each change written with its hook events in
 * the caller's transaction.
 */

/** A lead locked for a change, with what the change rules need. */
export interface LockedLead {
  id: number;
  uniqueId: string;
  campaignId: number;
  project: string;
  status: LeadStatusName;
  priority: number;
  data: Record<string, string>;
  phoneNumber: string | null;
  /** Changes with every write of the row (Postgres's xmin): the lead's ETag. */
  version: string;
  /** The fields of the campaign's lead definition, in sort order, with `editable`. */
  fields: (LeadFieldRule & { editable: boolean })[];
}

interface LockedLeadRow {
  id: number;
  unique_id: string;
  campaign_id: number;
  project: string;
  status: number;
  priority: number;
  data: Record<string, string>;
  phone_number: string | null;
  version: string;
  fields: (Omit<LeadFieldRule, 'access'> & { access: number; editable: boolean })[];
}

/** Locks a lead of the account's projects (`FOR UPDATE`) for the rest of the transaction; undefined when unknown or outside the scope. */
export async function lockLead(trx: Knex.Transaction, uniqueId: string, scope: ProjectScope): Promise<LockedLead | undefined> {
  const { rows } = await trx.raw<{ rows: LockedLeadRow[] }>(
    `select l.id, l.unique_id, l.campaign_id, c.project, l.status, l.priority, l.data, l.phone_number, l.xmin::text as version,
            coalesce((select json_agg(json_build_object('name', f.name, 'importName', f.import_name, 'type', f.type,
                        'required', f.required, 'access', f.access, 'externalKey', f.external_key, 'sortOrder', f.sort_order,
                        'editable', f.editable) order by f.sort_order, f.id)
                        from lead_definition_fields f where f.lead_definition_id = c.lead_definition_id), '[]') as fields
       from leads l join campaigns c on c.id = l.campaign_id
      where l.unique_id = ? and lower(c.project) like any(?::text[])
        for update of l`,
    [uniqueId, scope.likePatterns],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    id: Number(r.id),
    uniqueId: r.unique_id,
    campaignId: Number(r.campaign_id),
    project: r.project,
    status: LeadStatus.toName(r.status),
    priority: r.priority,
    data: r.data,
    phoneNumber: r.phone_number,
    version: r.version,
    fields: r.fields.map((f) => ({
      ...f,
      access: (['None', 'Partner', 'Full'] as const)[f.access]!,
    })),
  };
}

export interface LeadUpdate {
  data?: Record<string, string>;
  phoneNumber?: string | null;
  externalKey?: string | null;
  priority?: number;
  status?: LeadStatusName;
}

/**
 * Writes a change to a locked lead, as its last modification by `userId` at `now`; a new status
 * restarts its time-limit clock and records lead.statusChanged. Answers the new version.
 */
export async function updateLead(
  trx: Knex.Transaction,
  lead: LockedLead,
  update: LeadUpdate,
  change: { now: Date; userId: number },
): Promise<void> {
  const statusChanged = update.status !== undefined && update.status !== lead.status;
  await trx('leads')
    .where({ id: lead.id })
    .update({
      ...(update.data !== undefined ? { data: JSON.stringify(update.data) } : {}),
      ...(update.phoneNumber !== undefined
        ? {
            phone_number: update.phoneNumber,
            phone_e164: update.phoneNumber === null ? null : (toE164(update.phoneNumber, defaultPhoneRegion()) ?? null),
          }
        : {}),
      ...(update.externalKey !== undefined ? { external_key: update.externalKey } : {}),
      ...(update.priority !== undefined ? { priority: update.priority } : {}),
      ...(statusChanged ? { status: LeadStatus.toNumber(update.status!), status_changed_time: change.now } : {}),
      last_modified_time: change.now,
      last_modified_by_user_id: change.userId,
    });
  if (statusChanged)
    await recordLeadEvent(trx, { type: 'lead.statusChanged', leadId: lead.id, previousStatus: lead.status, time: change.now });
}

/**
 * Clears a locked lead for good: its data, phone number and external key, the phone number and
 * external key on its calls, and the title and notes of its calendar events (each recorded as
 * calendarEvent.updated); the lead becomes Anonymized (lead.statusChanged).
 */
export async function anonymizeLeadRows(trx: Knex.Transaction, lead: LockedLead, change: { now: Date; userId: number }): Promise<void> {
  await trx.raw(
    `update leads set data = '{}'::jsonb, phone_number = null, phone_e164 = null, external_key = null, closure_data = '[]'::jsonb,
            status = ?, status_changed_time = ?, last_modified_time = ?, last_modified_by_user_id = ?
      where id = ?`,
    [LeadStatus.toNumber('Anonymized'), change.now, change.now, change.userId, lead.id],
  );
  // Calls name their lead by id, or only by unique id when the lead was unknown when the call was loaded.
  const calls = await trx.raw<{ rows: { unique_id: string }[] }>(
    `update calls set lead_phone_number = '', lead_external_key = null
      where lead_id = ? or (lead_id is null and unique_lead_id = ?)
      returning unique_id`,
    [lead.id, lead.uniqueId],
  );
  const events = await clearLeadCalendarEventTexts(trx, lead.uniqueId, change.now);
  // Hook events queued earlier hold copies of the lead, its calls and its calendar events as they were: cleared too.
  await trx.raw(
    `update hook_events
        set snapshot = case
              when type like 'lead.%' then jsonb_set(jsonb_set(jsonb_set(jsonb_set(snapshot,
                     '{row,phoneNumber}', 'null'), '{row,externalKey}', 'null'), '{row,dataJson}', '"{}"'), '{row,closureDataJson}', '"[]"')
              when type = 'call.ended' then jsonb_set(jsonb_set(snapshot, '{row,lead_phone_number}', '""'), '{row,lead_external_key}', 'null')
              else jsonb_set(jsonb_set(snapshot, '{title}', '""'), '{notes}', '""')
            end
      where (resource_id = ? and type like 'lead.%')
         or (resource_id = any(?::text[]) and type = 'call.ended')
         or (resource_id = any(?::text[]) and type like 'calendarEvent.%')`,
    [lead.uniqueId, calls.rows.map((c) => c.unique_id), events],
  );
  if (lead.status !== 'Anonymized') {
    await recordLeadEvent(trx, { type: 'lead.statusChanged', leadId: lead.id, previousStatus: lead.status, time: change.now });
  }
}
