import { formatDateTime } from './datetime';
import { formatMillis } from './timespan';
import {
  CallEndCause,
  CallLeadStatus,
  CampaignType,
  Enumeration,
  LeadClosure,
  PreCallLeadStatus,
  RecordingType,
} from './enums';
import { compileIncludes, Expander, IncludeType } from './include';
import type { OrgSnapshot, OrgUnitRecord } from '../data/organizationRepository';
import { CAMPAIGN, ORG_UNIT, ORG_UNIT_PROPERTIES, organizationGraph, renderOrgUnit, USER } from './organizationGraph';

/**
 * Call rows (as src/data/callRepository.ts selects them) → Call JSON objects (spec 2.2) and
 * FlattenedCall CSV lines (spec 2.3). This is the hot path of the calls exports: enum names
 * come from arrays indexed by the stored number, times are formatted from epoch milliseconds
 * with the cached-offset formatter, durations with plain arithmetic, and the org-unit chain of
 * a call is rendered once per distinct chain per request.
 */

/** The call columns both shapes share; times are epoch milliseconds, durations milliseconds. */
export interface CallRowBase {
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
}

/** JSON rows carry references, resolved from the request's snapshot. */
export interface CallRow extends CallRowBase {
  campaign_id: number;
  user_id: number;
  ou0_id: number;
  ou1_id: number | null;
  ou2_id: number | null;
  ou3_id: number | null;
  ou4_id: number | null;
}

/** CSV rows carry the flattened names, joined in SQL. */
export interface FlatCallRow extends CallRowBase {
  campaign_code: string;
  campaign_name: string;
  campaign_project: string;
  user_org_code: string;
  user_username: string;
  user_name: string;
  ou0_code: string;
  ou1_code: string | null;
  ou2_code: string | null;
  ou3_code: string | null;
  ou4_code: string | null;
}

/** FlattenedCall columns in the order of spec 2.3. */
export const FLATTENED_CALL_COLUMNS = [
  'uniqueId',
  'uniqueLeadId',
  'leadPhoneNumber',
  'leadExternalKey',
  'endCause',
  'inProgress',
  'connected',
  'incoming',
  'startTime',
  'connectTime',
  'endTime',
  'previewDuration',
  'dialingDuration',
  'conversationDuration',
  'wrapUpDuration',
  'leadStatus',
  'preCallLeadStatus',
  'leadClosure',
  'campaignType',
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

/** Names indexed by stored number: one array read per value instead of a Map lookup. */
function nameTable(e: Enumeration<string>): string[] {
  const table: string[] = [];
  for (const name of e.names) table[e.toNumber(name)] = name;
  return table;
}

const END_CAUSE = nameTable(CallEndCause);
const LEAD_STATUS = nameTable(CallLeadStatus);
const PRE_CALL_LEAD_STATUS = nameTable(PreCallLeadStatus);
const LEAD_CLOSURE = nameTable(LeadClosure);
const CAMPAIGN_TYPE = nameTable(CampaignType);
const RECORDING_TYPE = nameTable(RecordingType);

function enumName(table: string[], value: number, what: string): string {
  const name = table[value];
  if (name === undefined) throw new Error(`unknown ${what} number ${value}`);
  return name;
}

function optionalEnumName(table: string[], value: number | null, what: string): string | undefined {
  return value === null ? undefined : enumName(table, value, what);
}

/**
 * The chain of a call rendered as OrgUnit objects, cached by its deepest unit: calls of one
 * user share a chain, so the arrays are built a handful of times per request and shared by
 * every row (JSON.stringify does not mind sharing).
 */
class ChainCache {
  private readonly byDeepest = new Map<number, { ids: (number | null)[]; out: Record<string, unknown>[] }>();

  constructor(private readonly units: Map<number, OrgUnitRecord>) {}

  get(row: CallRow): Record<string, unknown>[] {
    const deepest = row.ou4_id ?? row.ou3_id ?? row.ou2_id ?? row.ou1_id ?? row.ou0_id;
    const hit = this.byDeepest.get(deepest);
    if (
      hit !== undefined &&
      hit.ids[0] === row.ou0_id &&
      hit.ids[1] === row.ou1_id &&
      hit.ids[2] === row.ou2_id &&
      hit.ids[3] === row.ou3_id &&
      hit.ids[4] === row.ou4_id
    ) {
      return hit.out;
    }
    const out = chainUnits(row, this.units).map(renderOrgUnit);
    // The first chain seen for a deepest unit is kept; a call stored under an older tree
    // shape renders fresh each time (rare: units seldom move).
    if (hit === undefined) {
      this.byDeepest.set(deepest, { ids: [row.ou0_id, row.ou1_id, row.ou2_id, row.ou3_id, row.ou4_id], out });
    }
    return out;
  }
}

/** The org units of a call's stored chain, root first. */
function chainUnits(row: CallRow, units: Map<number, OrgUnitRecord>): OrgUnitRecord[] {
  const out: OrgUnitRecord[] = [];
  for (const id of [row.ou0_id, row.ou1_id, row.ou2_id, row.ou3_id, row.ou4_id]) {
    if (id === null) break;
    const unit = units.get(id);
    if (unit !== undefined) out.push(unit);
  }
  return out;
}

/** The call fields of spec 2.2 after the three complex ones; absent optional fields are left out. */
function renderCallFields(row: CallRowBase, zone: string, out: Record<string, unknown>): Record<string, unknown> {
  out.uniqueId = row.unique_id;
  out.uniqueLeadId = row.unique_lead_id;
  out.leadPhoneNumber = row.lead_phone_number;
  out.leadExternalKey = row.lead_external_key ?? undefined;
  out.endCause = enumName(END_CAUSE, row.end_cause, 'end cause');
  out.inProgress = row.in_progress;
  out.connected = row.connected;
  out.incoming = row.incoming;
  out.startTime = formatDateTime(row.start_ms, zone);
  out.connectTime = row.connect_ms === null ? undefined : formatDateTime(row.connect_ms, zone);
  out.endTime = row.end_ms === null ? undefined : formatDateTime(row.end_ms, zone);
  out.previewDuration = formatMillis(row.preview_ms);
  out.dialingDuration = row.dialing_ms === null ? undefined : formatMillis(row.dialing_ms);
  out.conversationDuration = row.conversation_ms === null ? undefined : formatMillis(row.conversation_ms);
  out.wrapUpDuration = row.wrap_up_ms === null ? undefined : formatMillis(row.wrap_up_ms);
  out.leadStatus = optionalEnumName(LEAD_STATUS, row.lead_status, 'call lead status');
  out.preCallLeadStatus = optionalEnumName(PRE_CALL_LEAD_STATUS, row.pre_call_lead_status, 'pre-call lead status');
  out.leadClosure = optionalEnumName(LEAD_CLOSURE, row.lead_closure, 'lead closure');
  out.campaignType = optionalEnumName(CAMPAIGN_TYPE, row.campaign_type, 'campaign type');
  return out;
}

export interface CallSerializerOptions {
  zone: string;
  /** Lower-case include names (src/domain/include.ts parseIncludeNames). */
  include: ReadonlySet<string>;
  org: OrgSnapshot;
}

/** Whether a request's include names need the users in the snapshot. */
export function callIncludesNeedUsers(include: ReadonlySet<string>): boolean {
  return include.has('user') || include.has('users');
}

/**
 * Row → Call object, with `Include` expanded through the generic engine. `organizationalUnits`
 * is always present: when no OrgUnit property is requested it is the cached flat chain;
 * otherwise the chain goes through the engine as an always-named property, so parent,
 * children and users of those units follow the rules of spec 4.4 like any other.
 */
export function callToJson(options: CallSerializerOptions): Expander<CallRow> {
  const { zone, org } = options;
  const unitsExpand = ORG_UNIT_PROPERTIES.some((p) => options.include.has(p));
  const chains = new ChainCache(org.units);
  const call: IncludeType<CallRow> = {
    identity: (row) => row.unique_id,
    render: (row) =>
      renderCallFields(row, zone, {
        campaign: undefined,
        user: undefined,
        organizationalUnits: unitsExpand ? undefined : chains.get(row),
      }),
    properties: {
      campaign: { type: CAMPAIGN, many: false, resolve: (row) => org.campaigns.get(row.campaign_id) },
      user: { type: USER, many: false, resolve: (row) => org.users.get(row.user_id) },
      ...(unitsExpand
        ? { organizationalUnits: { type: ORG_UNIT, many: true, resolve: (row: CallRow) => chainUnits(row, org.units) } }
        : {}),
    },
  };
  const names = new Set(options.include);
  if (unitsExpand) names.add('organizationalunits');
  return compileIncludes<CallRow>(organizationGraph(org, { Call: call }), 'Call', names);
}

/**
 * RFC 4180 quoting for one separator: a value holding the separator, a quote, CR or LF is
 * quoted with inner quotes doubled. Values whose alphabet cannot hold the separator (times,
 * durations, enum names, booleans) skip the check when the separator is not in it.
 */
export function csvQuoter(separator: string): (value: string) => string {
  const needsQuotes = new RegExp(`[${separator.replace(/[\\\]^-]/g, '\\$&')}"\\r\\n]`);
  return (value) => (needsQuotes.test(value) ? '"' + value.replace(/"/g, '""') + '"' : value);
}

/** The header line of the CSV export (CRLF included). */
export function flattenedCallHeader(separator: string): string {
  const quote = csvQuoter(separator);
  return FLATTENED_CALL_COLUMNS.map(quote).join(separator) + '\r\n';
}

/**
 * Row → one FlattenedCall CSV line (CRLF included): absent values empty, booleans
 * `true`/`false`, times and durations as in JSON.
 */
export function callToCsvLine(options: { zone: string; separator: string }): (row: FlatCallRow) => string {
  const { zone } = options;
  const s = options.separator;
  const quote = csvQuoter(s);
  // Generated values (times, durations, enum names, booleans) use only these characters; with
  // a separator outside them they never need quoting.
  const generatedSafe = !/[0-9A-Za-z:.+\-"\r\n]/.test(s);
  const gen = generatedSafe ? (v: string) => v : quote;
  const opt = (v: string | null) => (v === null ? '' : quote(v));
  const optGen = (v: string | undefined) => (v === undefined ? '' : gen(v));
  const time = (ms: number | null) => (ms === null ? '' : gen(formatDateTime(ms, zone)));
  const dur = (ms: number | null) => (ms === null ? '' : gen(formatMillis(ms)));
  const bool = (b: boolean) => gen(b ? 'true' : 'false');
  return (r) =>
    quote(r.unique_id) + s +
    quote(r.unique_lead_id) + s +
    quote(r.lead_phone_number) + s +
    opt(r.lead_external_key) + s +
    gen(enumName(END_CAUSE, r.end_cause, 'end cause')) + s +
    bool(r.in_progress) + s +
    bool(r.connected) + s +
    bool(r.incoming) + s +
    time(r.start_ms) + s +
    time(r.connect_ms) + s +
    time(r.end_ms) + s +
    dur(r.preview_ms) + s +
    dur(r.dialing_ms) + s +
    dur(r.conversation_ms) + s +
    dur(r.wrap_up_ms) + s +
    optGen(optionalEnumName(LEAD_STATUS, r.lead_status, 'call lead status')) + s +
    optGen(optionalEnumName(PRE_CALL_LEAD_STATUS, r.pre_call_lead_status, 'pre-call lead status')) + s +
    optGen(optionalEnumName(LEAD_CLOSURE, r.lead_closure, 'lead closure')) + s +
    optGen(optionalEnumName(CAMPAIGN_TYPE, r.campaign_type, 'campaign type')) + s +
    quote(r.campaign_code) + s +
    quote(r.campaign_name) + s +
    quote(r.campaign_project) + s +
    quote(r.user_org_code) + s +
    quote(r.user_username) + s +
    quote(r.user_name) + s +
    quote(r.ou0_code) + s +
    opt(r.ou1_code) + s +
    opt(r.ou2_code) + s +
    opt(r.ou3_code) + s +
    opt(r.ou4_code) + '\r\n';
}

/** Recording rows of /calls/{UniqueId}/recordings. */
export interface RecordingRow {
  start_ms: number;
  end_ms: number | null;
  recording_type: number;
  file_name: string;
}

export function recordingToJson(row: RecordingRow, zone: string): Record<string, unknown> {
  return {
    startTime: formatDateTime(row.start_ms, zone),
    endTime: row.end_ms === null ? undefined : formatDateTime(row.end_ms, zone),
    recordingType: enumName(RECORDING_TYPE, row.recording_type, 'recording type'),
    fileName: row.file_name,
  };
}

/** Ready-period rows of /calls/agentreadyperiods. */
export interface ReadyPeriodRow {
  unique_id: string;
  org_code: string;
  campaign_id: number;
  start_ms: number;
  seconds: number;
  campaign_type: number;
}

export function readyPeriodToJson(org: OrgSnapshot, zone: string): (row: ReadyPeriodRow) => Record<string, unknown> {
  const campaigns = new Map<number, Record<string, unknown>>();
  return (row) => {
    let campaign = campaigns.get(row.campaign_id);
    if (campaign === undefined) {
      const c = org.campaigns.get(row.campaign_id);
      if (c === undefined) throw new Error(`campaign ${row.campaign_id} is not in the snapshot`);
      campaign = { uniqueId: c.uniqueId, name: c.name, code: c.code, project: c.project, leadDefinitionUniqueId: c.leadDefinitionUniqueId };
      campaigns.set(row.campaign_id, campaign);
    }
    return {
      uniqueId: row.unique_id,
      orgCode: row.org_code,
      campaign,
      startTime: formatDateTime(row.start_ms, zone),
      seconds: row.seconds,
      campaignType: enumName(CAMPAIGN_TYPE, row.campaign_type, 'campaign type'),
    };
  };
}
