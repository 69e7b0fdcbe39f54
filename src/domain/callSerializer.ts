import { dateTimeFormatter, formatDateTime } from './datetime';
import type { DateTimeFormatName } from './enums';
import { formatMillis } from './timespan';
import { CallEndCause, CallLeadStatus, CampaignType, Enumeration, LeadClosure, PreCallLeadStatus, RecordingType } from './enums';
import { compileIncludes, Expander, IncludeType } from './include';
import { csvQuoter, jsonString } from './textEscaping';
import type { OrgSnapshot, OrgUnitRecord } from './organization';
import {
  CAMPAIGN,
  ORG_UNIT,
  ORG_UNIT_PROPERTIES,
  organizationGraph,
  renderCampaign,
  renderOrgUnit,
  renderUser,
  USER,
} from './organizationGraph';

/**
 * Call rows (as src/data/callRepository.ts selects them) → Call JSON text and FlattenedCall CSV
 * lines (both in the OpenAPI document). This is the hot path of the calls exports: enum names
 * come from arrays indexed by the stored number, times are formatted from epoch milliseconds
 * by a per-request formatter that reuses the date part of the previous value, durations with
 * plain arithmetic, and the org-unit chain, campaign and user of a call are serialised once per
 * distinct value per request. Measured on this project's 2-core machine: building a Call
 * object and JSON.stringify-ing it ran at about 80k rows/s; writing the text directly runs
 * several times faster (bench/exports.ts).
 */

/** The call columns both shapes share; times are epoch milliseconds, durations milliseconds. */
interface CallRowBase {
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

/**
 * A call row: the call's own columns plus references (campaign, user, and the stored org-unit
 * chain as one text key `ou0 ou1 ...`, root first) resolved from the request's snapshot. Few
 * columns matter: the driver's per-column cost is most of a row's cost.
 */
export interface CallRow extends CallRowBase {
  campaign_id: number;
  user_id: number;
  ou_chain: string;
}

/** FlattenedCall columns in their documented order (the OpenAPI document, /calls/csv). */
const FLATTENED_CALL_COLUMNS = [
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

/** The org units of a stored chain key (`ou0 ou1 ...`), root first. */
function chainUnits(chain: string, units: Map<number, OrgUnitRecord>): OrgUnitRecord[] {
  const out: OrgUnitRecord[] = [];
  for (const id of chain.split(' ')) {
    const unit = units.get(Number(id));
    if (unit !== undefined) out.push(unit);
  }
  return out;
}

/**
 * Per-request memo of a rendering by key (a chain key, a campaign or user id): calls share a
 * handful of chains, campaigns and users, so each is rendered once and the text reused.
 */
function memo<K, V>(render: (key: K) => V): (key: K) => V {
  const done = new Map<K, V>();
  return (key) => {
    let value = done.get(key);
    if (value === undefined) {
      value = render(key);
      done.set(key, value);
    }
    return value;
  };
}

/** The Call fields after the three complex ones; absent optional fields are left out. */
function renderCallFields(row: CallRowBase, time: (ms: number) => string, out: Record<string, unknown>): Record<string, unknown> {
  out.uniqueId = row.unique_id;
  out.uniqueLeadId = row.unique_lead_id;
  out.leadPhoneNumber = row.lead_phone_number;
  out.leadExternalKey = row.lead_external_key ?? undefined;
  out.endCause = enumName(END_CAUSE, row.end_cause, 'end cause');
  out.inProgress = row.in_progress;
  out.connected = row.connected;
  out.incoming = row.incoming;
  out.startTime = time(row.start_ms);
  out.connectTime = row.connect_ms === null ? undefined : time(row.connect_ms);
  out.endTime = row.end_ms === null ? undefined : time(row.end_ms);
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
  /** How DateTimes are written (default `Offset`); one per request. */
  dateTimeFormat?: DateTimeFormatName;
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
 * children and users of those units follow the include rules (docs/decisions.md, Include engine) like any other.
 */
export function callToJson(options: CallSerializerOptions): Expander<CallRow> {
  const { org } = options;
  const time = dateTimeFormatter(options.zone, options.dateTimeFormat);
  const unitsExpand = ORG_UNIT_PROPERTIES.some((p) => options.include.has(p));
  // Flat org units are shared by every row of a chain (JSON.stringify does not mind sharing).
  const flatChain = memo((chain: string) => chainUnits(chain, org.units).map(renderOrgUnit));
  const call: IncludeType<CallRow> = {
    identity: (row) => row.unique_id,
    render: (row) =>
      renderCallFields(row, time, {
        campaign: undefined,
        user: undefined,
        organizationalUnits: unitsExpand ? undefined : flatChain(row.ou_chain),
      }),
    properties: {
      campaign: { type: CAMPAIGN, many: false, resolve: (row) => org.campaigns.get(row.campaign_id) },
      user: { type: USER, many: false, resolve: (row) => org.users.get(row.user_id) },
      ...(unitsExpand
        ? { organizationalUnits: { type: ORG_UNIT, many: true, resolve: (row: CallRow) => chainUnits(row.ou_chain, org.units) } }
        : {}),
    },
  };
  const names = new Set(options.include);
  if (unitsExpand) names.add('organizationalunits');
  return compileIncludes<CallRow>(organizationGraph(org, { Call: call }), 'Call', names);
}

/** Names that give Campaign, User or OrgUnit objects a complex property. */
const NESTED_NAMES = ['parent', 'children', 'users', 'campaigns', 'organizationalunits'];

/**
 * Row → Call JSON text. With `Include` limited to `campaign` and/or `user` (and unknown
 * names), every nested object renders flat, so the text is written directly with the chain,
 * campaign and user serialised once each per request; any other include goes through the
 * engine (callToJson) and JSON.stringify. Both give the same text.
 */
export function callToJsonText(options: CallSerializerOptions): (row: CallRow) => string {
  const { org, include } = options;
  if (NESTED_NAMES.some((n) => include.has(n))) {
    const expand = callToJson(options);
    return (row) => JSON.stringify(expand(row));
  }
  const time = dateTimeFormatter(options.zone, options.dateTimeFormat);
  const chain = memo((key: string) => JSON.stringify(chainUnits(key, org.units).map(renderOrgUnit)));
  // A reference the snapshot lacks is a named single property without a value: null.
  const campaign = include.has('campaign')
    ? memo((id: number) => {
        const c = org.campaigns.get(id);
        return c === undefined ? 'null' : JSON.stringify(renderCampaign(c));
      })
    : undefined;
  const user = include.has('user')
    ? memo((id: number) => {
        const u = org.users.get(id);
        return u === undefined ? 'null' : JSON.stringify(renderUser(u, org));
      })
    : undefined;
  return (r) => {
    let out = '{';
    if (campaign !== undefined) out += '"campaign":' + campaign(r.campaign_id) + ',';
    if (user !== undefined) out += '"user":' + user(r.user_id) + ',';
    out +=
      '"organizationalUnits":' +
      chain(r.ou_chain) +
      ',"uniqueId":' +
      jsonString(r.unique_id) +
      ',"uniqueLeadId":' +
      jsonString(r.unique_lead_id) +
      ',"leadPhoneNumber":' +
      jsonString(r.lead_phone_number);
    if (r.lead_external_key !== null) out += ',"leadExternalKey":' + jsonString(r.lead_external_key);
    out +=
      ',"endCause":"' +
      enumName(END_CAUSE, r.end_cause, 'end cause') +
      '","inProgress":' +
      (r.in_progress ? 'true' : 'false') +
      ',"connected":' +
      (r.connected ? 'true' : 'false') +
      ',"incoming":' +
      (r.incoming ? 'true' : 'false') +
      ',"startTime":"' +
      time(r.start_ms) +
      '"';
    if (r.connect_ms !== null) out += ',"connectTime":"' + time(r.connect_ms) + '"';
    if (r.end_ms !== null) out += ',"endTime":"' + time(r.end_ms) + '"';
    out += ',"previewDuration":"' + formatMillis(r.preview_ms) + '"';
    if (r.dialing_ms !== null) out += ',"dialingDuration":"' + formatMillis(r.dialing_ms) + '"';
    if (r.conversation_ms !== null) out += ',"conversationDuration":"' + formatMillis(r.conversation_ms) + '"';
    if (r.wrap_up_ms !== null) out += ',"wrapUpDuration":"' + formatMillis(r.wrap_up_ms) + '"';
    if (r.lead_status !== null) out += ',"leadStatus":"' + enumName(LEAD_STATUS, r.lead_status, 'call lead status') + '"';
    if (r.pre_call_lead_status !== null) {
      out += ',"preCallLeadStatus":"' + enumName(PRE_CALL_LEAD_STATUS, r.pre_call_lead_status, 'pre-call lead status') + '"';
    }
    if (r.lead_closure !== null) out += ',"leadClosure":"' + enumName(LEAD_CLOSURE, r.lead_closure, 'lead closure') + '"';
    if (r.campaign_type !== null) out += ',"campaignType":"' + enumName(CAMPAIGN_TYPE, r.campaign_type, 'campaign type') + '"';
    return out + '}';
  };
}

/** The header line of the CSV export (CRLF included). */
export function flattenedCallHeader(separator: string): string {
  const quote = csvQuoter(separator);
  return FLATTENED_CALL_COLUMNS.map(quote).join(separator) + '\r\n';
}

/**
 * Row → one FlattenedCall CSV line (CRLF included): absent values empty, booleans
 * `true`/`false`, times and durations as in JSON. The campaign, user and org-unit columns are
 * quoted and joined once per campaign, user and chain of the request's snapshot.
 */
export function callToCsvLine(options: {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  separator: string;
  org: OrgSnapshot;
}): (row: CallRow) => string {
  const { org } = options;
  const s = options.separator;
  const quote = csvQuoter(s);
  const special = new RegExp(`[${s.replace(/[\\\]^-]/g, '\\$&')}"\\r\\n]`);
  const format = dateTimeFormatter(options.zone, options.dateTimeFormat);
  // Generated values (times, durations, enum names, booleans) use only these characters; with
  // a separator outside them they never need quoting.
  const generatedSafe = !/[0-9A-Za-z:.+\-"\r\n]/.test(s);
  const plain = (v: string) => v;
  const gen = generatedSafe ? plain : quote;
  const optGen = (v: string | undefined) => (v === undefined ? '' : gen(v));
  const time = (ms: number | null) => (ms === null ? '' : gen(format(ms)));
  const dur = (ms: number | null) => (ms === null ? '' : gen(formatMillis(ms)));
  const bool = (b: boolean) => gen(b ? 'true' : 'false');
  // campaignCode;campaignName;campaignProject — empty when the snapshot lacks the campaign.
  const campaign = memo((id: number) => {
    const c = org.campaigns.get(id);
    return c === undefined ? s + s : quote(c.code) + s + quote(c.name) + s + quote(c.project);
  });
  // userOrgCode;userUsername;userName
  const user = memo((id: number) => {
    const u = org.users.get(id);
    return u === undefined ? s + s : quote(u.orgCode) + s + quote(u.username) + s + quote(u.name);
  });
  // organizationalUnit0OrgCode..organizationalUnit4OrgCode
  const chain = memo((key: string) => {
    const codes = chainUnits(key, org.units).map((u) => quote(u.orgCode));
    while (codes.length < 5) codes.push('');
    return codes.join(s);
  });
  return (r) => {
    // One test over the row's own stored text (the characters looked for are single ones, so
    // concatenation cannot create a match): most rows need no quoting at all.
    const q = special.test(r.unique_id + r.unique_lead_id + r.lead_phone_number + (r.lead_external_key ?? '')) ? quote : plain;
    return (
      q(r.unique_id) +
      s +
      q(r.unique_lead_id) +
      s +
      q(r.lead_phone_number) +
      s +
      (r.lead_external_key === null ? '' : q(r.lead_external_key)) +
      s +
      gen(enumName(END_CAUSE, r.end_cause, 'end cause')) +
      s +
      bool(r.in_progress) +
      s +
      bool(r.connected) +
      s +
      bool(r.incoming) +
      s +
      time(r.start_ms) +
      s +
      time(r.connect_ms) +
      s +
      time(r.end_ms) +
      s +
      dur(r.preview_ms) +
      s +
      dur(r.dialing_ms) +
      s +
      dur(r.conversation_ms) +
      s +
      dur(r.wrap_up_ms) +
      s +
      optGen(optionalEnumName(LEAD_STATUS, r.lead_status, 'call lead status')) +
      s +
      optGen(optionalEnumName(PRE_CALL_LEAD_STATUS, r.pre_call_lead_status, 'pre-call lead status')) +
      s +
      optGen(optionalEnumName(LEAD_CLOSURE, r.lead_closure, 'lead closure')) +
      s +
      optGen(optionalEnumName(CAMPAIGN_TYPE, r.campaign_type, 'campaign type')) +
      s +
      campaign(r.campaign_id) +
      s +
      user(r.user_id) +
      s +
      chain(r.ou_chain) +
      '\r\n'
    );
  };
}

/** Recording rows of /calls/{UniqueId}/recordings. */
export interface RecordingRow {
  start_ms: number;
  end_ms: number | null;
  recording_type: number;
  file_name: string;
}

export function recordingToJson(row: RecordingRow, zone: string, format?: DateTimeFormatName): Record<string, unknown> {
  return {
    startTime: formatDateTime(row.start_ms, zone, format),
    endTime: row.end_ms === null ? undefined : formatDateTime(row.end_ms, zone, format),
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

export function readyPeriodToJson(
  org: OrgSnapshot,
  zone: string,
  format?: DateTimeFormatName,
): (row: ReadyPeriodRow) => Record<string, unknown> {
  const time = dateTimeFormatter(zone, format);
  const campaigns = new Map<number, Record<string, unknown>>();
  return (row) => {
    let campaign = campaigns.get(row.campaign_id);
    if (campaign === undefined) {
      const c = org.campaigns.get(row.campaign_id);
      if (c === undefined) throw new Error(`campaign ${row.campaign_id} is not in the snapshot`);
      campaign = {
        uniqueId: c.uniqueId,
        name: c.name,
        code: c.code,
        project: c.project,
        leadDefinitionUniqueId: c.leadDefinitionUniqueId,
        active: c.active,
      };
      campaigns.set(row.campaign_id, campaign);
    }
    return {
      uniqueId: row.unique_id,
      orgCode: row.org_code,
      campaign,
      startTime: time(row.start_ms),
      seconds: row.seconds,
      campaignType: enumName(CAMPAIGN_TYPE, row.campaign_type, 'campaign type'),
    };
  };
}
