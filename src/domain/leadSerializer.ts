import { formatDateTime } from './datetime';
import { DateTimeFormatName, Enumeration, EntryAccessName, LeadClosure, LeadStatus } from './enums';
import { compileIncludes, Expander, IncludeType } from './include';
import { canSeeField, LeadFieldRule } from './leadData';
import { CAMPAIGN, ORG_UNIT, organizationGraph, USER } from './organizationGraph';
import { csvQuoter } from './textEscaping';
import type { OrgSnapshot } from './organization';
import type { LeadCampaign, LeadLookups, LeadRow, RawLeadRow } from './leadRecords';

/**
 * Lead rows (src/data/leadRepository.ts) → Lead JSON (the OpenAPI document; docs/decisions.md, Leads), lead CSV lines and RawLeads
 * lines. Rows carry ids; names come from the request's LeadLookups. Data fields are filtered by
 * the account's lead definition entry access: only fields of the lead's definition whose access
 * level the account reaches are written (a value stored under a name the definition no longer
 * has is never written). In JSON, `data` keeps the order Postgres stores jsonb keys in, so the
 * export copies the stored text whenever nothing has to be left out (`dataVisible`, decided in
 * SQL); the CSV columns and the RawLeads rows follow the definitions' sort order.
 */

/** Names indexed by stored number: one array read per value. */
function nameTable(e: Enumeration<string>): string[] {
  const table: string[] = [];
  for (const name of e.names) table[e.toNumber(name)] = name;
  return table;
}
const STATUS = nameTable(LeadStatus);
const CLOSURE = nameTable(LeadClosure);

function statusName(n: number): string {
  const name = STATUS[n];
  if (name === undefined) throw new Error(`unknown lead status number ${n}`);
  return name;
}
function closureName(n: number): string {
  const name = CLOSURE[n];
  if (name === undefined) throw new Error(`unknown lead closure number ${n}`);
  return name;
}

/** Per lead definition id, the names of the fields the account may see, in sort order. */
export type VisibleFields = Map<number, string[]>;

export function visibleFieldsByDefinition(definitions: Map<number, LeadFieldRule[]>, access: EntryAccessName): VisibleFields {
  const out: VisibleFields = new Map();
  for (const [id, fields] of definitions) {
    out.set(
      id,
      [...fields]
        .sort((a, b) => a.sortOrder - b.sortOrder)
        .filter((f) => canSeeField(access, f.access))
        .map((f) => f.name),
    );
  }
  return out;
}

/** Per lead definition id, the set of visible field names. */
function visibleSets(visible: VisibleFields): Map<number, Set<string>> {
  return new Map([...visible].map(([id, names]) => [id, new Set(names)]));
}

/** The lead's data with only the visible fields, in stored order. */
export function visibleData(data: Record<string, string>, visible: ReadonlySet<string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (visible === undefined) return out;
  for (const name in data) if (visible.has(name)) out[name] = data[name]!;
  return out;
}

export function campaignOf(lookups: LeadLookups, id: number): LeadCampaign {
  const c = lookups.campaigns.get(id);
  if (c === undefined) throw new Error(`campaign ${id} of an exported lead is not in the request's lookups`);
  return c;
}

export function poolOf(lookups: LeadLookups, id: number): string {
  const p = lookups.pools.get(id);
  if (p === undefined) throw new Error(`pool ${id} of an exported lead is not in the request's lookups`);
  return p;
}

function codeOf(map: Map<number, string>, id: number | null): string | undefined {
  return id === null ? undefined : map.get(id);
}

export interface LeadSerializerOptions {
  zone: string;
  /** How DateTimes are written (default `Offset`); one per request. */
  dateTimeFormat?: DateTimeFormatName;
  /** From visibleFieldsByDefinition(lookups.definitions, account entry access). */
  visible: VisibleFields;
  lookups: LeadLookups;
  /** Lower-case include names (src/domain/include.ts parseIncludeNames). */
  include: ReadonlySet<string>;
  /** Resolves included campaigns, org units and users; only read when something is included. */
  org: OrgSnapshot;
}

/** The lead properties `Include` expands; without it they are compact references. */
const LEAD_INCLUDES = ['campaign', 'ownerOrgUnit', 'uploadedByUser', 'lastModifiedByUser', 'firstProcessedByUser'] as const;

/** Whether a request's include names need anything from the organisation snapshot. */
export function leadIncludesNeedSnapshot(include: ReadonlySet<string>): boolean {
  return LEAD_INCLUDES.some((n) => include.has(n.toLowerCase()));
}

/** Whether a request's include names need the users in the snapshot. */
export function leadIncludesNeedUsers(include: ReadonlySet<string>): boolean {
  return ['uploadedbyuser', 'lastmodifiedbyuser', 'firstprocessedbyuser', 'users'].some((n) => include.has(n));
}

const ref = (orgCode: string | undefined) => (orgCode === undefined ? undefined : { orgCode });

/** The Lead object without includes: compact references, absent values left out. */
function renderLead(
  row: LeadRow,
  zone: string,
  visible: Map<number, Set<string>>,
  lookups: LeadLookups,
  format?: DateTimeFormatName,
): Record<string, unknown> {
  const campaign = campaignOf(lookups, row.campaignId);
  return {
    uniqueId: row.uniqueId,
    status: statusName(row.status),
    closure: closureName(row.closure),
    priority: row.priority,
    phoneNumber: row.phoneNumber ?? undefined,
    externalKey: row.externalKey ?? undefined,
    pool: poolOf(lookups, row.poolId),
    campaign: { uniqueId: campaign.uniqueId, code: campaign.code },
    data: visibleData(JSON.parse(row.dataJson) as Record<string, string>, visible.get(campaign.leadDefinitionId)),
    uploadTime: formatDateTime(row.uploadTime, zone, format),
    lastModifiedTime: formatDateTime(row.lastModifiedTime, zone, format),
    firstProcessedTime: row.firstProcessedTime === null ? undefined : formatDateTime(row.firstProcessedTime, zone, format),
    ownerOrgUnit: ref(codeOf(lookups.units, row.ownerOrgUnitId)),
    uploadedByUser: ref(codeOf(lookups.users, row.uploadedByUserId)),
    lastModifiedByUser: ref(codeOf(lookups.users, row.lastModifiedByUserId)),
    firstProcessedByUser: ref(codeOf(lookups.users, row.firstProcessedByUserId)),
    closureData: JSON.parse(row.closureDataJson),
  };
}

/** A cache of JSON fragments by id: each distinct campaign, pool or reference is written once. */
function fragmentCache(make: (id: number) => string): (id: number | null) => string {
  const cache = new Map<number, string>();
  return (id) => {
    if (id === null) return '';
    let text = cache.get(id);
    if (text === undefined) cache.set(id, (text = make(id)));
    return text;
  };
}

/**
 * Row → Lead JSON text, without includes: the export's hot path. Writes exactly what
 * `JSON.stringify(renderLead(row))` writes (same properties, order and values) as one string
 * built directly: no intermediate objects, and the fragments for campaigns, pools and
 * references built once per distinct id; closure data is copied as the JSON text Postgres gave.
 */
export function leadToJsonText(
  zone: string,
  visible: VisibleFields,
  lookups: LeadLookups,
  format?: DateTimeFormatName,
): (row: LeadRow) => string {
  const q = JSON.stringify;
  const sets = visibleSets(visible);
  const none = new Set<string>();
  // Per campaign: the campaign's text (up to `"data":`) and the visible field names.
  const campaigns = new Map<number, { text: string; visible: Set<string> }>();
  const campaignText = (id: number) => {
    let c = campaigns.get(id);
    if (c === undefined) {
      const campaign = campaignOf(lookups, id);
      c = {
        text: ',"campaign":{"uniqueId":' + q(campaign.uniqueId) + ',"code":' + q(campaign.code) + '},"data":',
        visible: sets.get(campaign.leadDefinitionId) ?? none,
      };
      campaigns.set(id, c);
    }
    return c;
  };
  // The stored text when every key is visible (the common case, decided in SQL); otherwise the
  // visible keys only.
  const dataText = (json: string, allVisible: boolean, visibleNames: Set<string>): string => {
    if (allVisible) return json;
    const values = JSON.parse(json) as Record<string, string>;
    let out = '';
    for (const name in values) if (visibleNames.has(name)) out += (out === '' ? '{' : ',') + q(name) + ':' + q(values[name]);
    return out === '' ? '{}' : out + '}';
  };
  const pool = fragmentCache((id) => ',"pool":' + q(poolOf(lookups, id)));
  const reference = (name: string, map: Map<number, string>) =>
    fragmentCache((id) => {
      const orgCode = map.get(id);
      return orgCode === undefined ? '' : ',"' + name + '":{"orgCode":' + q(orgCode) + '}';
    });
  const owner = reference('ownerOrgUnit', lookups.units);
  const uploadedBy = reference('uploadedByUser', lookups.users);
  const lastModifiedBy = reference('lastModifiedByUser', lookups.users);
  const firstProcessedBy = reference('firstProcessedByUser', lookups.users);
  return (r) => {
    const c = campaignText(r.campaignId);
    return (
      '{"uniqueId":' +
      q(r.uniqueId) +
      ',"status":"' +
      statusName(r.status) +
      '","closure":"' +
      closureName(r.closure) +
      '","priority":' +
      r.priority +
      (r.phoneNumber === null ? '' : ',"phoneNumber":' + q(r.phoneNumber)) +
      (r.externalKey === null ? '' : ',"externalKey":' + q(r.externalKey)) +
      pool(r.poolId) +
      c.text +
      dataText(r.dataJson, r.dataVisible, c.visible) +
      ',"uploadTime":"' +
      formatDateTime(r.uploadTime, zone, format) +
      '","lastModifiedTime":"' +
      formatDateTime(r.lastModifiedTime, zone, format) +
      '"' +
      (r.firstProcessedTime === null ? '' : ',"firstProcessedTime":"' + formatDateTime(r.firstProcessedTime, zone, format) + '"') +
      owner(r.ownerOrgUnitId) +
      uploadedBy(r.uploadedByUserId) +
      lastModifiedBy(r.lastModifiedByUserId) +
      firstProcessedBy(r.firstProcessedByUserId) +
      ',"closureData":' +
      r.closureDataJson +
      '}'
    );
  };
}

/**
 * Row → Lead object. `Include` names among LEAD_INCLUDES replace the compact references by
 * full Campaign, OrgUnit and User objects through the generic engine, so nested names
 * (`parent`, `campaigns`, ...) follow the include rules (docs/decisions.md, Include engine) like everywhere else; an object already
 * written in full for the same lead stays a compact reference.
 */
export function leadToJson(options: LeadSerializerOptions): Expander<LeadRow> {
  const { zone, lookups, org, dateTimeFormat } = options;
  const visible = visibleSets(options.visible);
  const userOf = (id: number | null) => (id === null ? null : (org.users.get(id) ?? null));
  const lead: IncludeType<LeadRow> = {
    identity: (row) => row.uniqueId,
    render: (row) => renderLead(row, zone, visible, lookups, dateTimeFormat),
    properties: {
      campaign: { type: CAMPAIGN, many: false, resolve: (row) => org.campaigns.get(row.campaignId) ?? null },
      ownerOrgUnit: {
        type: ORG_UNIT,
        many: false,
        resolve: (row) => (row.ownerOrgUnitId === null ? null : (org.units.get(row.ownerOrgUnitId) ?? null)),
      },
      uploadedByUser: { type: USER, many: false, resolve: (row) => userOf(row.uploadedByUserId) },
      lastModifiedByUser: { type: USER, many: false, resolve: (row) => userOf(row.lastModifiedByUserId) },
      firstProcessedByUser: { type: USER, many: false, resolve: (row) => userOf(row.firstProcessedByUserId) },
    },
  };
  return compileIncludes<LeadRow>(organizationGraph(org, { Lead: lead }), 'Lead', options.include);
}

// ---- CSV --------------------------------------------------------------------------------------

/** The lead columns of the saved-search CSV, before the data fields. */
const LEAD_CSV_COLUMNS = [
  'uniqueId',
  'status',
  'closure',
  'priority',
  'phoneNumber',
  'externalKey',
  'pool',
  'campaignUniqueId',
  'campaignCode',
  'uploadTime',
  'lastModifiedTime',
  'firstProcessedTime',
  'ownerOrgUnitOrgCode',
  'uploadedByUserOrgCode',
  'lastModifiedByUserOrgCode',
  'firstProcessedByUserOrgCode',
] as const;

/**
 * The data columns of a CSV over several lead definitions: every visible field, by sort order
 * (then name), one column per name (names compared case-insensitively, the first spelling
 * kept). Per definition, the field name that fills each column (undefined = empty cell).
 */
export interface DataColumns {
  names: string[];
  byDefinition: Map<number, (string | undefined)[]>;
}

export function dataColumns(definitions: Map<number, LeadFieldRule[]>, access: EntryAccessName): DataColumns {
  const all: LeadFieldRule[] = [];
  for (const fields of definitions.values()) for (const f of fields) if (canSeeField(access, f.access)) all.push(f);
  all.sort((a, b) => a.sortOrder - b.sortOrder || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const names: string[] = [];
  const index = new Map<string, number>();
  for (const f of all) {
    const key = f.name.toLowerCase();
    if (!index.has(key)) {
      index.set(key, names.length);
      names.push(f.name);
    }
  }
  const byDefinition = new Map<number, (string | undefined)[]>();
  for (const [id, fields] of definitions) {
    const cells = new Array<string | undefined>(names.length).fill(undefined);
    for (const f of fields) if (canSeeField(access, f.access)) cells[index.get(f.name.toLowerCase())!] = f.name;
    byDefinition.set(id, cells);
  }
  return { names, byDefinition };
}

export function leadCsvHeader(columns: DataColumns, separator: string): string {
  const quote = csvQuoter(separator);
  return [...LEAD_CSV_COLUMNS, ...columns.names].map(quote).join(separator) + '\r\n';
}

/** Row → one CSV line (CRLF included): absent values empty, times as in JSON. */
export function leadToCsvLine(options: {
  zone: string;
  dateTimeFormat?: DateTimeFormatName;
  separator: string;
  columns: DataColumns;
  lookups: LeadLookups;
}): (row: LeadRow) => string {
  const { zone, columns, lookups, dateTimeFormat } = options;
  const s = options.separator;
  const quote = csvQuoter(s);
  const opt = (v: string | null | undefined) => (v === null || v === undefined ? '' : quote(v));
  const time = (ms: number | null) => (ms === null ? '' : quote(formatDateTime(ms, zone, dateTimeFormat)));
  const empty = s.repeat(columns.names.length);
  return (r) => {
    const campaign = campaignOf(lookups, r.campaignId);
    let line =
      quote(r.uniqueId) +
      s +
      quote(statusName(r.status)) +
      s +
      quote(closureName(r.closure)) +
      s +
      quote(String(r.priority)) +
      s +
      opt(r.phoneNumber) +
      s +
      opt(r.externalKey) +
      s +
      quote(poolOf(lookups, r.poolId)) +
      s +
      quote(campaign.uniqueId) +
      s +
      quote(campaign.code) +
      s +
      time(r.uploadTime) +
      s +
      time(r.lastModifiedTime) +
      s +
      time(r.firstProcessedTime) +
      s +
      opt(codeOf(lookups.units, r.ownerOrgUnitId)) +
      s +
      opt(codeOf(lookups.users, r.uploadedByUserId)) +
      s +
      opt(codeOf(lookups.users, r.lastModifiedByUserId)) +
      s +
      opt(codeOf(lookups.users, r.firstProcessedByUserId));
    const cells = columns.byDefinition.get(campaign.leadDefinitionId);
    if (cells === undefined) return line + empty + '\r\n';
    const data = JSON.parse(r.dataJson) as Record<string, string>;
    for (let i = 0; i < cells.length; i++) {
      const name = cells[i];
      const value = name === undefined ? undefined : data[name];
      line += s + (value === undefined ? '' : quote(value));
    }
    return line + '\r\n';
  };
}

const RAW_LEAD_COLUMNS = ['UniqueLeadId', 'FieldName', 'FieldValue'] as const;

export function rawLeadsHeader(separator: string): string {
  const quote = csvQuoter(separator);
  return RAW_LEAD_COLUMNS.map(quote).join(separator) + '\r\n';
}

/** Row → its RawLeads lines, one per visible data field with a value, in sort order ('' for none). */
export function rawLeadLines(options: { separator: string; visible: VisibleFields; lookups: LeadLookups }): (row: RawLeadRow) => string {
  const s = options.separator;
  const quote = csvQuoter(s);
  const { lookups } = options;
  return (r) => {
    const fields = options.visible.get(campaignOf(lookups, r.campaignId).leadDefinitionId);
    if (fields === undefined) return '';
    const id = quote(r.uniqueId) + s;
    let out = '';
    for (let i = 0; i < fields.length; i++) {
      const name = fields[i]!;
      const value = r.data[name];
      if (value !== undefined) out += id + quote(name) + s + quote(value) + '\r\n';
    }
    return out;
  };
}
