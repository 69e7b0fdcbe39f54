import { CallEndCause, CallLeadStatus, CampaignType, LeadClosure, PreCallLeadStatus, RecordingType } from './enums';
import { BOOL, DATE_TIME, enumType, Field, INT, TEXT, TIME_SPAN } from './fieldTable';

/** A call row from a cursor: the call's fields (times in epoch milliseconds) and its references. */
export interface CallRow {
  unique_id: string;
  unique_lead_id: string;
  lead_phone_number: string;
  lead_external_key: string | null;
  end_cause: number;
  in_progress: boolean;
  connected: boolean;
  incoming: boolean;
  start_ms: number;
  connect_ms: number | null;
  end_ms: number | null;
  preview_ms: number;
  dialing_ms: number | null;
  conversation_ms: number | null;
  wrap_up_ms: number | null;
  lead_status: number | null;
  pre_call_lead_status: number | null;
  lead_closure: number | null;
  campaign_type: number | null;
  /** References resolved from the request's snapshot; the org-unit chain as one text key `ou0 ou1 ...`, root first. */
  campaign_id: number;
  user_id: number;
  ou_chain: string;
}

/**
 * The plain fields of a Call (the OpenAPI document), in the order JSON and CSV write them:
 * after the complex properties (`campaign`, `user`, `organizationalUnits`) in JSON, before the
 * reference columns (CALL_REFERENCE_CSV_NAMES) in CSV.
 */
export const CALL_FIELDS = [
  { name: 'uniqueId', column: 'unique_id', row: 'unique_id', type: TEXT, present: 'always' },
  { name: 'uniqueLeadId', column: 'unique_lead_id', row: 'unique_lead_id', type: TEXT, present: 'always' },
  {
    name: 'leadPhoneNumber',
    column: 'lead_phone_number',
    row: 'lead_phone_number',
    type: TEXT,
    present: 'always',
    description:
      "The lead's phone number as the call recorded it. Call data: written whatever the account's lead definition entry access, while a lead's phoneNumber is left out when its field is above that access.",
  },
  {
    name: 'leadExternalKey',
    column: 'lead_external_key',
    row: 'lead_external_key',
    type: TEXT,
    present: 'optional',
    description:
      "The lead's external key as the call recorded it. Call data: written whatever the account's lead definition entry access, while a lead's externalKey is left out when its field is above that access.",
  },
  { name: 'endCause', column: 'end_cause', row: 'end_cause', type: enumType(CallEndCause, 'end cause'), present: 'always' },
  { name: 'inProgress', column: 'in_progress', row: 'in_progress', type: BOOL, present: 'always' },
  { name: 'connected', column: 'connected', row: 'connected', type: BOOL, present: 'always' },
  { name: 'incoming', column: 'incoming', row: 'incoming', type: BOOL, present: 'always' },
  { name: 'startTime', column: 'start_time', row: 'start_ms', type: DATE_TIME, present: 'always' },
  { name: 'connectTime', column: 'connect_time', row: 'connect_ms', type: DATE_TIME, present: 'optional' },
  { name: 'endTime', column: 'end_time', row: 'end_ms', type: DATE_TIME, present: 'optional' },
  { name: 'previewDuration', column: 'preview_ms', row: 'preview_ms', type: TIME_SPAN, present: 'always' },
  { name: 'dialingDuration', column: 'dialing_ms', row: 'dialing_ms', type: TIME_SPAN, present: 'optional' },
  { name: 'conversationDuration', column: 'conversation_ms', row: 'conversation_ms', type: TIME_SPAN, present: 'optional' },
  { name: 'wrapUpDuration', column: 'wrap_up_ms', row: 'wrap_up_ms', type: TIME_SPAN, present: 'optional' },
  {
    name: 'leadStatus',
    column: 'lead_status',
    row: 'lead_status',
    type: enumType(CallLeadStatus, 'call lead status'),
    present: 'optional',
  },
  {
    name: 'preCallLeadStatus',
    column: 'pre_call_lead_status',
    row: 'pre_call_lead_status',
    type: enumType(PreCallLeadStatus, 'pre-call lead status'),
    present: 'optional',
  },
  { name: 'leadClosure', column: 'lead_closure', row: 'lead_closure', type: enumType(LeadClosure, 'lead closure'), present: 'optional' },
  {
    name: 'campaignType',
    column: 'campaign_type',
    row: 'campaign_type',
    type: enumType(CampaignType, 'campaign type'),
    present: 'optional',
  },
] as const satisfies readonly Field<CallRow>[];

/** The reference columns of a call: its campaign, its user and its org-unit chain (root first). */
const CALL_REFERENCE_COLUMNS = ['campaign_id', 'user_id', 'ou0_id', 'ou1_id', 'ou2_id', 'ou3_id', 'ou4_id'] as const;

/** The CSV columns after the fields, written from the references. */
export const CALL_REFERENCE_CSV_NAMES = [
  'campaignCode',
  'campaignName',
  'campaignProject',
  'userOrgCode',
  'userUsername',
  'userName',
  'organizationalUnit0OrgCode',
  'organizationalUnit1OrgCode',
  'organizationalUnit2OrgCode',
  'organizationalUnit3OrgCode',
  'organizationalUnit4OrgCode',
] as const;

export type CallCopyColumn = (typeof CALL_FIELDS)[number]['column'] | (typeof CALL_REFERENCE_COLUMNS)[number];

/**
 * The columns of the calls COPY in order (src/data/exportQueries.ts selects them): `fields`
 * maps the table's fields, `column` each of CALL_REFERENCE_COLUMNS.
 */
export function callColumns<T>(fields: (run: readonly Field<CallRow>[]) => T[], column: (c: CallCopyColumn) => T): T[] {
  return [...fields(CALL_FIELDS), ...CALL_REFERENCE_COLUMNS.map(column)];
}

/** A ready-period row of /calls/agentreadyperiods. */
export interface ReadyPeriodRow {
  unique_id: string;
  org_code: string;
  campaign_id: number;
  start_ms: number;
  seconds: number;
  campaign_type: number;
}

/** The fields of an AgentReadyPeriod before its `campaign` object (from `ready_periods r` and `users u`). */
export const READY_PERIOD_HEAD_FIELDS = [
  { name: 'uniqueId', column: 'unique_id', row: 'unique_id', type: TEXT, present: 'always' },
  { name: 'orgCode', column: 'org_code', source: 'u', row: 'org_code', type: TEXT, present: 'always' },
] as const satisfies readonly Field<ReadyPeriodRow>[];

/** The fields of an AgentReadyPeriod after its `campaign` object (from `ready_periods r` and `campaigns cp`). */
export const READY_PERIOD_TAIL_FIELDS = [
  { name: 'startTime', column: 'start_time', row: 'start_ms', type: DATE_TIME, present: 'always' },
  { name: 'seconds', column: 'seconds', row: 'seconds', type: INT, present: 'always' },
  {
    name: 'campaignType',
    column: 'campaign_type',
    source: 'cp',
    row: 'campaign_type',
    type: enumType(CampaignType, 'campaign type'),
    present: 'always',
  },
] as const satisfies readonly Field<ReadyPeriodRow>[];

/** A recording row of /calls/{UniqueId}/recordings. */
export interface RecordingRow {
  start_ms: number;
  end_ms: number | null;
  recording_type: number;
  file_name: string;
}

/** The fields of a Recording (from `recordings`). */
export const RECORDING_FIELDS = [
  { name: 'startTime', column: 'start_time', row: 'start_ms', type: DATE_TIME, present: 'always' },
  { name: 'endTime', column: 'end_time', row: 'end_ms', type: DATE_TIME, present: 'optional' },
  {
    name: 'recordingType',
    column: 'recording_type',
    row: 'recording_type',
    type: enumType(RecordingType, 'recording type'),
    present: 'always',
  },
  { name: 'fileName', column: 'file_name', row: 'file_name', type: TEXT, present: 'always' },
] as const satisfies readonly Field<RecordingRow>[];
