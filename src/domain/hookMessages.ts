import { formatDateTime } from './datetime';
import {
  CLOSED_LEAD_STATUSES,
  DateTimeFormatName,
  EntryAccessName,
  LeadClosure,
  LeadClosureName,
  LeadStatus,
  LeadStatusName,
} from './enums';
import { leadKeyFields, visibleKeyFields, LeadFieldRule } from './leadData';
import type { LeadCampaign, LeadRow } from './leadRecords';
import { leadRowFor, leadToJson, visibleData, visibleFieldsByDefinition } from './leadSerializer';
import { callToJson, CallRow } from './callSerializer';
import { calendarEventToJson, CalendarEvent } from './calendarEventSerializer';
import type { OrgSnapshot, OrgUnitRecord } from './organization';
import type { HookMessage } from './hooks';

/**
 * Hook messages from event snapshots, through the API's own serializers: a lead event's data is
 * what GET /leads/{UniqueId} answers, a call's what GET /calls lists, a calendar event's what
 * the calendar endpoints answer — rendered for the hook's account (its entry access and its
 * DateTime format) from the resource as it was when it changed.
 */

/** A lead as it was when its event happened, with the names its row refers to. */
export interface LeadSnapshot {
  row: LeadRow;
  campaign: LeadCampaign;
  pool: string;
  /** Org codes by id of the users and the org unit the row refers to. */
  users: Record<string, string>;
  units: Record<string, string>;
  agentEmail: string | null;
  statusChangedTime: number;
}

export interface CallSnapshot {
  row: CallRow;
  /** The call's org-unit chain, root first. */
  units: OrgUnitRecord[];
  campaignCode: string;
  agentEmail: string | null;
}

/** A calendar event with its times as ISO strings (JSON). */
export type CalendarEventSnapshot = Omit<CalendarEvent, 'start' | 'end'> & { start: string; end: string };

export interface MessageOptions {
  type: string;
  /** Epoch milliseconds of the change. */
  occurredTime: number;
  zone: string;
  /** The hook account's DateTime format (default Offset). */
  dateTimeFormat?: DateTimeFormatName;
}

const EMPTY_ORG: OrgSnapshot = { units: new Map(), childrenOf: new Map(), users: new Map(), usersOf: new Map(), campaigns: new Map() };

/** JSON.stringify drops absent values, as the API's JSON does. */
const plain = (value: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;

const text = (value: string | number | null | undefined): string | undefined =>
  value === undefined || value === null ? undefined : String(value);

/**
 * A lead snapshot as GET /leads/{UniqueId} answers the lead (without includes) to an account of
 * this entry access and DateTime format, `fields` being its lead definition's fields; with the
 * names of the data fields that account sees and the row as it reads it (phone number and
 * external key left out where it does not see their fields, as the lead SELECTs leave them out).
 */
export function leadSnapshotToJson(
  snapshot: LeadSnapshot,
  options: { zone: string; dateTimeFormat?: DateTimeFormatName; entryAccess: EntryAccessName; fields: LeadFieldRule[] },
): { lead: Record<string, unknown>; visibleFields: string[]; row: LeadRow } {
  const { campaign } = snapshot;
  const row = leadRowFor(snapshot.row, visibleKeyFields(options.fields, options.entryAccess));
  const definitions = new Map([[campaign.leadDefinitionId, options.fields]]);
  const lookups = {
    campaigns: new Map([[row.campaignId, campaign]]),
    pools: new Map([[row.poolId, snapshot.pool]]),
    users: new Map(Object.entries(snapshot.users).map(([id, code]) => [Number(id), code])),
    units: new Map(Object.entries(snapshot.units).map(([id, code]) => [Number(id), code])),
    definitions,
  };
  const visible = visibleFieldsByDefinition(definitions, options.entryAccess);
  const expand = leadToJson({
    zone: options.zone,
    dateTimeFormat: options.dateTimeFormat ?? 'Offset',
    visible,
    lookups,
    include: new Set(),
    org: EMPTY_ORG,
  });
  return { lead: plain(expand(row)), visibleFields: visible.get(campaign.leadDefinitionId) ?? [], row };
}

export function leadMessage(
  snapshot: LeadSnapshot,
  options: MessageOptions & { entryAccess: EntryAccessName; fields: LeadFieldRule[]; previousStatus?: LeadStatusName },
): HookMessage {
  const { campaign } = snapshot;
  const { lead: data, visibleFields, row } = leadSnapshotToJson(snapshot, options);
  if (options.previousStatus !== undefined) data.previousStatus = options.previousStatus;
  const status = LeadStatus.toName(row.status);
  return {
    type: options.type,
    timestamp: formatDateTime(options.occurredTime, options.zone, options.dateTimeFormat),
    data,
    values: {
      EventType: options.type,
      Timestamp: formatDateTime(options.occurredTime, options.zone, options.dateTimeFormat),
      UniqueId: row.uniqueId,
      LeadUniqueId: row.uniqueId,
      CampaignCode: campaign.code,
      LeadStatus: status,
      PreviousStatus: options.previousStatus,
      Closure: text(data.closure as string | undefined),
      PhoneNumber: text(row.phoneNumber),
      ExternalKey: text(row.externalKey),
      Pool: snapshot.pool,
      AgentEmail: text(snapshot.agentEmail),
      ClosedDate: CLOSED_LEAD_STATUSES.includes(status)
        ? formatDateTime(snapshot.statusChangedTime, options.zone, options.dateTimeFormat)
        : undefined,
    },
    dataFields: visibleData(JSON.parse(row.dataJson) as Record<string, string>, new Set(visibleFields)),
  };
}

export function callMessage(snapshot: CallSnapshot, options: MessageOptions): HookMessage {
  const org: OrgSnapshot = { ...EMPTY_ORG, units: new Map(snapshot.units.map((u) => [u.id, u])) };
  const data = plain(
    callToJson({ zone: options.zone, dateTimeFormat: options.dateTimeFormat ?? 'Offset', include: new Set(), org })(snapshot.row),
  );
  return {
    type: options.type,
    timestamp: formatDateTime(options.occurredTime, options.zone, options.dateTimeFormat),
    data,
    values: {
      EventType: options.type,
      Timestamp: formatDateTime(options.occurredTime, options.zone, options.dateTimeFormat),
      UniqueId: snapshot.row.unique_id,
      LeadUniqueId: snapshot.row.unique_lead_id,
      CampaignCode: snapshot.campaignCode,
      LeadStatus: text(data.leadStatus as string | undefined),
      Closure: text(data.leadClosure as string | undefined),
      PhoneNumber: snapshot.row.lead_phone_number,
      ExternalKey: text(snapshot.row.lead_external_key),
      AgentEmail: text(snapshot.agentEmail),
    },
    dataFields: {},
  };
}

export function calendarEventMessage(snapshot: CalendarEventSnapshot, options: MessageOptions): HookMessage {
  const event: CalendarEvent = { ...snapshot, start: new Date(snapshot.start), end: new Date(snapshot.end) };
  return {
    type: options.type,
    timestamp: formatDateTime(options.occurredTime, options.zone, options.dateTimeFormat),
    data: plain(calendarEventToJson(event, options.zone, options.dateTimeFormat)),
    values: {
      EventType: options.type,
      Timestamp: formatDateTime(options.occurredTime, options.zone, options.dateTimeFormat),
      UniqueId: snapshot.uniqueId,
      LeadUniqueId: snapshot.leadUniqueId,
    },
    dataFields: {},
  };
}

/**
 * A real-looking lead for `GET /hooks/{UniqueId}/example` and `hook.test` deliveries: the
 * hook's campaign (or a sample one), one value per data field of its lead definition, and the
 * status and closure the hook's filters ask for (else a lead processed with success).
 */
export function sampleLeadSnapshot(options: {
  now: number;
  campaign?: { uniqueId: string; code: string; leadDefinitionId: number };
  fields?: LeadFieldRule[];
  agentEmail?: string | null;
  status?: LeadStatusName | null;
  closure?: LeadClosureName | null;
}): { snapshot: LeadSnapshot; fields: LeadFieldRule[] } {
  const fields: LeadFieldRule[] = options.fields ?? [
    { name: 'Name', importName: null, type: 'text', required: true, access: 'None', externalKey: false, sortOrder: 0 },
    { name: 'Phone', importName: null, type: 'phone', required: true, access: 'None', externalKey: false, sortOrder: 1 },
    { name: 'Email', importName: null, type: 'email', required: false, access: 'None', externalKey: false, sortOrder: 2 },
  ];
  const sampleValue: Record<LeadFieldRule['type'], string> = {
    text: 'Jane Doe',
    number: '42',
    date: '2026-05-06',
    datetime: '2026-05-06T10:16:41',
    boolean: 'true',
    phone: '+4512345678',
    email: 'jane.doe@example.com',
  };
  const data: Record<string, string> = {};
  for (const f of fields) data[f.name] = f.type === 'text' && f.name.toLowerCase() !== 'name' ? `Sample ${f.name}` : sampleValue[f.type];
  const campaign = options.campaign ?? { uniqueId: '9f3c2a10-5b1e-4c2d-8a77-0c4b2e6f1d35', code: 'SAMPLE', leadDefinitionId: 0 };
  const modified = options.now - 60_000;
  // The number and the key as an import stores them: the values of their fields.
  const { phoneField, keyField } = leadKeyFields(fields);
  const row: LeadRow = {
    uniqueId: '5d1f7c3e-2a9b-4e61-b8d0-7f4a1c2e9b58',
    status: LeadStatus.toNumber(options.status ?? 'UserProcessed'),
    closure: LeadClosure.toNumber(options.closure ?? 'Success'),
    priority: 0,
    phoneNumber: phoneField ? (data[phoneField.name] ?? null) : null,
    externalKey: keyField ? (data[keyField.name] ?? null) : null,
    campaignId: 0,
    poolId: 0,
    dataJson: JSON.stringify(data),
    dataVisible: true,
    uploadTime: options.now - 86_400_000,
    lastModifiedTime: modified,
    firstProcessedTime: modified - 600_000,
    ownerOrgUnitId: null,
    uploadedByUserId: null,
    lastModifiedByUserId: null,
    firstProcessedByUserId: null,
    closureDataJson: '[]',
  };
  return {
    snapshot: {
      row,
      campaign: { ...campaign, leadDefinitionId: campaign.leadDefinitionId },
      pool: 'Sample pool',
      users: {},
      units: {},
      agentEmail: options.agentEmail ?? 'agent@example.com',
      statusChangedTime: modified,
    },
    fields,
  };
}

/** A real-looking call for examples of `call.ended`. */
export function sampleCallSnapshot(now: number, campaignCode = 'SAMPLE'): CallSnapshot {
  const start = now - 300_000;
  return {
    row: {
      unique_id: '1e7b9c4d-3f2a-4b5c-9d8e-6f7a8b9c0d1e',
      unique_lead_id: '5d1f7c3e-2a9b-4e61-b8d0-7f4a1c2e9b58',
      lead_phone_number: '+4512345678',
      lead_external_key: null,
      end_cause: 0,
      in_progress: false,
      connected: true,
      incoming: false,
      start_ms: start,
      connect_ms: start + 12_000,
      end_ms: start + 240_000,
      preview_ms: 4_000,
      dialing_ms: 8_000,
      conversation_ms: 228_000,
      wrap_up_ms: 30_000,
      lead_status: 200,
      pre_call_lead_status: 0,
      lead_closure: 1,
      campaign_type: 1,
      campaign_id: 0,
      user_id: 0,
      ou_chain: '1',
    },
    units: [{ id: 1, uniqueId: '7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d', orgCode: 'SALES', name: 'Sales', level: 0, parentId: null }],
    campaignCode,
    agentEmail: 'agent@example.com',
  };
}

/** A real-looking calendar event for examples of the calendarEvent events. */
export function sampleCalendarEventSnapshot(now: number): CalendarEventSnapshot {
  const start = new Date(now + 86_400_000);
  return {
    uniqueId: '8c7d6e5f-4a3b-4c2d-9e1f-0a9b8c7d6e5f',
    calendarCode: 'SAMPLE-CALENDAR',
    leadUniqueId: '5d1f7c3e-2a9b-4e61-b8d0-7f4a1c2e9b58',
    title: 'Call back about the offer',
    notes: 'Prefers mornings',
    start: start.toISOString(),
    end: new Date(start.getTime() + 1_800_000).toISOString(),
    source: 'CRM',
    externalId: 'CRM-1234',
  };
}
