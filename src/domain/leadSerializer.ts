import { formatDateTime } from './datetime';
import { Enumeration, EntryAccessName, LeadClosure, LeadStatus } from './enums';
import { compileIncludes, Expander, IncludeType } from './include';
import { canSeeField, LeadFieldRule } from './leadData';
import { CAMPAIGN, ORG_UNIT, organizationGraph, USER } from './organizationGraph';
import { csvQuoter } from './callSerializer';
import type { OrgSnapshot } from '../data/organizationRepository';
import type { LeadRow, RawLeadRow } from '../data/leadRepository';

/**
 * Lead rows (src/data/leadRepository.ts) → Lead JSON (DESIGN §6), lead CSV lines and RawLeads
 * lines. Data fields are filtered by the account's lead definition entry access: only fields
 * of the lead's definition whose access level the account reaches are written, in the
 * definition's sort order.
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

/** The lead's data with only the visible fields, in sort order; fields without a value are left out. */
export function visibleData(data: Record<string, string>, visible: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (visible === undefined) return out;
  for (let i = 0; i < visible.length; i++) {
    const name = visible[i]!;
    const value = data[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}

export interface LeadSerializerOptions {
  zone: string;
  visible: VisibleFields;
  /** Lower-case include names (src/domain/include.ts parseIncludeNames). */
  include: ReadonlySet<string>;
  /** Resolves included campaigns, org units and users; only read when something is included. */
  org: OrgSnapshot;
}

/** The lead properties `Include` expands; without it they are compact references. */
export const LEAD_INCLUDES = ['campaign', 'ownerOrgUnit', 'uploadedByUser', 'lastModifiedByUser', 'firstProcessedByUser'] as const;

/** Whether a request's include names need anything from the organisation snapshot. */
export function leadIncludesNeedSnapshot(include: ReadonlySet<string>): boolean {
  return LEAD_INCLUDES.some((n) => include.has(n.toLowerCase()));
}

/** Whether a request's include names need the users in the snapshot. */
export function leadIncludesNeedUsers(include: ReadonlySet<string>): boolean {
  return ['uploadedbyuser', 'lastmodifiedbyuser', 'firstprocessedbyuser', 'users'].some((n) => include.has(n));
}

const ref = (orgCode: string | null) => (orgCode === null ? undefined : { orgCode });

/** The Lead object without includes: compact references, absent values left out. */
export function renderLead(row: LeadRow, zone: string, visible: VisibleFields): Record<string, unknown> {
  return {
    uniqueId: row.uniqueId,
    status: statusName(row.status),
    closure: closureName(row.closure),
    priority: row.priority,
    phoneNumber: row.phoneNumber ?? undefined,
    externalKey: row.externalKey ?? undefined,
    pool: row.pool,
    campaign: { uniqueId: row.campaignUniqueId, code: row.campaignCode },
    data: visibleData(row.data, visible.get(row.leadDefinitionId)),
    uploadTime: formatDateTime(row.uploadTime, zone),
    lastModifiedTime: formatDateTime(row.lastModifiedTime, zone),
    firstProcessedTime: row.firstProcessedTime === null ? undefined : formatDateTime(row.firstProcessedTime, zone),
    ownerOrgUnit: ref(row.ownerOrgCode),
    uploadedByUser: ref(row.uploadedByOrgCode),
    lastModifiedByUser: ref(row.lastModifiedByOrgCode),
    firstProcessedByUser: ref(row.firstProcessedByOrgCode),
    closureData: JSON.parse(row.closureDataJson),
  };
}

/**
 * Row → Lead JSON text, without includes: the export's hot path. Writes exactly what
 * `JSON.stringify(renderLead(row))` writes (same properties, order and values), but as one
 * string built directly, without the intermediate objects; closure data is copied as the JSON
 * text Postgres gave.
 */
export function leadToJsonText(zone: string, visible: VisibleFields): (row: LeadRow) => string {
  const q = JSON.stringify;
  // Per definition: the visible field names and their `"name":` prefixes.
  const keys = new Map<number, { names: string[]; prefixes: string[] }>();
  for (const [id, names] of visible) keys.set(id, { names, prefixes: names.map((n) => q(n) + ':') });
  const ref = (name: string, orgCode: string | null) => (orgCode === null ? '' : ',"' + name + '":{"orgCode":' + q(orgCode) + '}');
  return (r) => {
    let data = '{';
    const k = keys.get(r.leadDefinitionId);
    if (k !== undefined) {
      const values = r.data;
      for (let i = 0; i < k.names.length; i++) {
        const v = values[k.names[i]!];
        if (v !== undefined) data += (data.length === 1 ? '' : ',') + k.prefixes[i] + q(v);
      }
    }
    data += '}';
    return (
      '{"uniqueId":' + q(r.uniqueId) +
      ',"status":"' + statusName(r.status) +
      '","closure":"' + closureName(r.closure) +
      '","priority":' + r.priority +
      (r.phoneNumber === null ? '' : ',"phoneNumber":' + q(r.phoneNumber)) +
      (r.externalKey === null ? '' : ',"externalKey":' + q(r.externalKey)) +
      ',"pool":' + q(r.pool) +
      ',"campaign":{"uniqueId":' + q(r.campaignUniqueId) + ',"code":' + q(r.campaignCode) + '}' +
      ',"data":' + data +
      ',"uploadTime":"' + formatDateTime(r.uploadTime, zone) +
      '","lastModifiedTime":"' + formatDateTime(r.lastModifiedTime, zone) + '"' +
      (r.firstProcessedTime === null ? '' : ',"firstProcessedTime":"' + formatDateTime(r.firstProcessedTime, zone) + '"') +
      ref('ownerOrgUnit', r.ownerOrgCode) +
      ref('uploadedByUser', r.uploadedByOrgCode) +
      ref('lastModifiedByUser', r.lastModifiedByOrgCode) +
      ref('firstProcessedByUser', r.firstProcessedByOrgCode) +
      ',"closureData":' + r.closureDataJson +
      '}'
    );
  };
}

/**
 * Row → Lead object. `Include` names among LEAD_INCLUDES replace the compact references by
 * full Campaign, OrgUnit and User objects through the generic engine, so nested names
 * (`parent`, `campaigns`, ...) follow spec 4.4 like everywhere else; an object already
 * written in full for the same lead stays a compact reference.
 */
export function leadToJson(options: LeadSerializerOptions): Expander<LeadRow> {
  const { zone, visible, org } = options;
  const userOf = (id: number | null) => (id === null ? null : (org.users.get(id) ?? null));
  const lead: IncludeType<LeadRow> = {
    identity: (row) => row.uniqueId,
    render: (row) => renderLead(row, zone, visible),
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
export const LEAD_CSV_COLUMNS = [
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
    const cells: (string | undefined)[] = new Array(names.length).fill(undefined);
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
export function leadToCsvLine(options: { zone: string; separator: string; columns: DataColumns }): (row: LeadRow) => string {
  const { zone, columns } = options;
  const s = options.separator;
  const quote = csvQuoter(s);
  const opt = (v: string | null) => (v === null ? '' : quote(v));
  const time = (ms: number | null) => (ms === null ? '' : quote(formatDateTime(ms, zone)));
  const empty = s.repeat(columns.names.length);
  return (r) => {
    let line =
      quote(r.uniqueId) + s +
      quote(statusName(r.status)) + s +
      quote(closureName(r.closure)) + s +
      quote(String(r.priority)) + s +
      opt(r.phoneNumber) + s +
      opt(r.externalKey) + s +
      quote(r.pool) + s +
      quote(r.campaignUniqueId) + s +
      quote(r.campaignCode) + s +
      time(r.uploadTime) + s +
      time(r.lastModifiedTime) + s +
      time(r.firstProcessedTime) + s +
      opt(r.ownerOrgCode) + s +
      opt(r.uploadedByOrgCode) + s +
      opt(r.lastModifiedByOrgCode) + s +
      opt(r.firstProcessedByOrgCode);
    const cells = columns.byDefinition.get(r.leadDefinitionId);
    if (cells === undefined) return line + empty + '\r\n';
    for (let i = 0; i < cells.length; i++) {
      const name = cells[i];
      const value = name === undefined ? undefined : r.data[name];
      line += s + (value === undefined ? '' : quote(value));
    }
    return line + '\r\n';
  };
}

export const RAW_LEAD_COLUMNS = ['UniqueLeadId', 'FieldName', 'FieldValue'] as const;

export function rawLeadsHeader(separator: string): string {
  const quote = csvQuoter(separator);
  return RAW_LEAD_COLUMNS.map(quote).join(separator) + '\r\n';
}

/** Row → its RawLeads lines, one per visible data field with a value, in sort order ('' for none). */
export function rawLeadLines(options: { separator: string; visible: VisibleFields }): (row: RawLeadRow) => string {
  const s = options.separator;
  const quote = csvQuoter(s);
  return (r) => {
    const fields = options.visible.get(r.leadDefinitionId);
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
