import type { DateTimeFormatName, EntryAccessName } from './enums';
import { csvCells, csvNames, jsonMembers, objectRenderer } from './fieldTable';
import { compileIncludes, Expander, IncludeType } from './include';
import { canSeeField, visibleKeyFields, LeadFieldRule, VisibleKeyFields } from './leadData';
import { LEAD_HEAD_FIELDS, LEAD_REFERENCES, LEAD_TIME_FIELDS, LeadReference } from './leadFields';
import { CAMPAIGN, ORG_UNIT, organizationGraph, USER } from './organizationGraph';
import { csvQuoter } from './textEscaping';
import type { OrgSnapshot } from './organization';
import type { LeadCampaign, LeadLookups, LeadRow, RawLeadRow } from './leadRecords';

/**
 * Lead rows (src/data/leadRepository.ts) → Lead JSON (the OpenAPI document; docs/decisions.md, Leads), lead CSV lines and RawLeads
 * lines. The plain fields come from the field table (src/domain/leadFields.ts); the steps
 * between and after its runs (pool, campaign, data, the references, closure data) are written
 * here. Rows carry ids; names come from the request's LeadLookups. Data fields are filtered by
 * the account's lead definition entry access: only fields of the lead's definition whose access
 * level the account reaches are written (a value stored under a name the definition no longer
 * has is never written). In JSON, `data` keeps the order Postgres stores jsonb keys in, so the
 * export copies the stored text whenever nothing has to be left out (`dataVisible`, decided in
 * SQL); the CSV columns and the RawLeads rows follow the definitions' sort order. The rows'
 * `phoneNumber` and `externalKey` are already NULL where the account does not see the field
 * they come from (decided in SQL as well; src/domain/leadFields.ts). The transcoded
 * exports (src/export/leadTranscoder.ts) derive their bytes from the same table; golden tests
 * compare them with this text, whose fields are JSON.stringify of the object form and CSV cells
 * of its values.
 */

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

/**
 * What the account's entry access reaches of a campaign's lead definition: the data field names
 * (in sort order), and the fields `phoneNumber` and `externalKey` come from where it sees them
 * (visibleKeyFields; null where it does not).
 */
export interface LeadVisibility extends VisibleKeyFields {
  names: string[];
}

/** Per campaign of the request's lookups, its LeadVisibility: the lead COPY's list of them (src/data/exportQueries.ts). */
export function leadVisibilityByCampaign(lookups: LeadLookups, access: EntryAccessName): Map<number, LeadVisibility> {
  const names = visibleFieldsByDefinition(lookups.definitions, access);
  const byDefinition = new Map<number, LeadVisibility>();
  for (const [id, fields] of lookups.definitions) {
    byDefinition.set(id, { names: names.get(id)!, ...visibleKeyFields(fields, access) });
  }
  const none: LeadVisibility = { names: [], phone: null, key: null };
  return new Map([...lookups.campaigns].map(([id, c]) => [id, byDefinition.get(c.leadDefinitionId) ?? none]));
}

/**
 * A stored lead (a hook snapshot) as the lead SELECTs read it for an account that sees the phone
 * and external-key fields `keys` names: the phone number or key is read only where the lead's
 * data holds the same value under that field, else as NULL.
 */
export function leadRowFor(row: LeadRow, keys: VisibleKeyFields): LeadRow {
  if (row.phoneNumber === null && row.externalKey === null) return row;
  const data = JSON.parse(row.dataJson) as Record<string, unknown>;
  const shown = (value: string | null, field: string | null) => (value !== null && field !== null && data[field] === value ? value : null);
  const phoneNumber = shown(row.phoneNumber, keys.phone);
  const externalKey = shown(row.externalKey, keys.key);
  return phoneNumber === row.phoneNumber && externalKey === row.externalKey ? row : { ...row, phoneNumber, externalKey };
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

/** A reference's org code, named by the lookup it points into. */
function referenceCode(lookups: LeadLookups, r: LeadReference, row: LeadRow): string | undefined {
  return codeOf(lookups[r.of], row[r.row]);
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
const LEAD_INCLUDES = ['campaign', ...LEAD_REFERENCES.map((r) => r.name)];

/** Whether a request's include names need anything from the organisation snapshot. */
export function leadIncludesNeedSnapshot(include: ReadonlySet<string>): boolean {
  return LEAD_INCLUDES.some((n) => include.has(n.toLowerCase()));
}

/** Whether a request's include names need the users in the snapshot. */
export function leadIncludesNeedUsers(include: ReadonlySet<string>): boolean {
  return [...LEAD_REFERENCES.filter((r) => r.of === 'users').map((r) => r.name.toLowerCase()), 'users'].some((n) => include.has(n));
}

/**
 * Row → the Lead object without includes, for one request: the table's fields, compact
 * references, absent values left out (as `undefined`).
 */
function leadRenderer(
  zone: string,
  visible: Map<number, Set<string>>,
  lookups: LeadLookups,
  format?: DateTimeFormatName,
): (row: LeadRow) => Record<string, unknown> {
  const head = objectRenderer(LEAD_HEAD_FIELDS, zone, format);
  const times = objectRenderer(LEAD_TIME_FIELDS, zone, format);
  return (row) => {
    const campaign = campaignOf(lookups, row.campaignId);
    const out = head(row, {});
    out.pool = poolOf(lookups, row.poolId);
    out.campaign = { uniqueId: campaign.uniqueId, code: campaign.code };
    out.data = visibleData(JSON.parse(row.dataJson) as Record<string, string>, visible.get(campaign.leadDefinitionId));
    times(row, out);
    for (const r of LEAD_REFERENCES) {
      const orgCode = referenceCode(lookups, r, row);
      out[r.name] = orgCode === undefined ? undefined : { orgCode };
    }
    out.closureData = JSON.parse(row.closureDataJson);
    return out;
  };
}

/**
 * The JSON text of the steps between and after the table's runs, written once per distinct id
 * by both the cursor path and the transcoder.
 */
export const LEAD_JSON = {
  pool: (name: string) => ',"pool":' + JSON.stringify(name),
  /** Up to the data's value. */
  campaign: (c: LeadCampaign) =>
    ',"campaign":{"uniqueId":' + JSON.stringify(c.uniqueId) + ',"code":' + JSON.stringify(c.code) + '},"data":',
  reference: (r: LeadReference, orgCode: string) => ',' + JSON.stringify(r.name) + ':{"orgCode":' + JSON.stringify(orgCode) + '}',
  closureData: ',"closureData":',
};

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
 * Row → Lead JSON text, without includes: the cursor path of the export. Writes what
 * `JSON.stringify` of the object form writes (same properties, order and values): the table's
 * fields through JSON.stringify, the fragments for campaigns, pools and references built once
 * per distinct id, and the data (when all of it is visible) and closure data copied as the JSON
 * text Postgres gave.
 */
export function leadToJsonText(
  zone: string,
  visible: VisibleFields,
  lookups: LeadLookups,
  format?: DateTimeFormatName,
): (row: LeadRow) => string {
  const sets = visibleSets(visible);
  const none = new Set<string>();
  const head = jsonMembers(LEAD_HEAD_FIELDS, zone, format, true);
  const times = jsonMembers(LEAD_TIME_FIELDS, zone, format);
  // Per campaign: the campaign's text (up to `"data":`) and the visible field names.
  const campaigns = new Map<number, { text: string; visible: Set<string> }>();
  const campaignText = (id: number) => {
    let c = campaigns.get(id);
    if (c === undefined) {
      const campaign = campaignOf(lookups, id);
      c = { text: LEAD_JSON.campaign(campaign), visible: sets.get(campaign.leadDefinitionId) ?? none };
      campaigns.set(id, c);
    }
    return c;
  };
  const pool = fragmentCache((id) => LEAD_JSON.pool(poolOf(lookups, id)));
  const references = LEAD_REFERENCES.map((r) => ({
    row: r.row,
    text: fragmentCache((id) => {
      const orgCode = lookups[r.of].get(id);
      return orgCode === undefined ? '' : LEAD_JSON.reference(r, orgCode);
    }),
  }));
  return (r) => {
    const c = campaignText(r.campaignId);
    let text = head(r) + pool(r.poolId) + c.text + visibleDataText(r.dataJson, r.dataVisible, c.visible) + times(r);
    for (const ref of references) text += ref.text(r[ref.row]);
    return text + LEAD_JSON.closureData + r.closureDataJson + '}';
  };
}

/**
 * The data's JSON text: the stored text when every key is visible (the common case, decided in
 * SQL), otherwise the visible keys only, in stored order.
 */
export function visibleDataText(json: string, allVisible: boolean, visibleNames: ReadonlySet<string>): string {
  if (allVisible) return json;
  const q = JSON.stringify;
  const values = JSON.parse(json) as Record<string, string>;
  let out = '';
  for (const name in values) if (visibleNames.has(name)) out += (out === '' ? '{' : ',') + q(name) + ':' + q(values[name]);
  return out === '' ? '{}' : out + '}';
}

/**
 * Row → Lead object. `Include` names among LEAD_INCLUDES replace the compact references by
 * full Campaign, OrgUnit and User objects through the generic engine, so nested names
 * (`parent`, `campaigns`, ...) follow the include rules (docs/decisions.md, Include engine) like everywhere else; an object already
 * written in full for the same lead stays a compact reference.
 */
export function leadToJson(options: LeadSerializerOptions): Expander<LeadRow> {
  const { zone, lookups, org, dateTimeFormat } = options;
  const render = leadRenderer(zone, visibleSets(options.visible), lookups, dateTimeFormat);
  const properties: IncludeType<LeadRow>['properties'] = {
    campaign: { type: CAMPAIGN, many: false, resolve: (row) => org.campaigns.get(row.campaignId) ?? null },
  };
  for (const r of LEAD_REFERENCES) {
    properties[r.name] =
      r.of === 'units'
        ? { type: ORG_UNIT, many: false, resolve: (row) => (row[r.row] === null ? null : (org.units.get(row[r.row]!) ?? null)) }
        : { type: USER, many: false, resolve: (row) => (row[r.row] === null ? null : (org.users.get(row[r.row]!) ?? null)) };
  }
  const lead: IncludeType<LeadRow> = { identity: (row) => row.uniqueId, render, properties };
  return compileIncludes<LeadRow>(organizationGraph(org, { Lead: lead }), 'Lead', options.include);
}

// ---- CSV --------------------------------------------------------------------------------------

/** The lead columns of the saved-search CSV, before the data fields. */
const LEAD_CSV_COLUMNS = [
  ...csvNames(LEAD_HEAD_FIELDS),
  'pool',
  'campaignUniqueId',
  'campaignCode',
  ...csvNames(LEAD_TIME_FIELDS),
  ...LEAD_REFERENCES.map((r) => r.csv),
];

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

/**
 * Row → one CSV line (CRLF included): the table's fields as the cells of their object-form
 * values (absent values empty, times as in JSON), pool and campaign, the references' org codes,
 * then the data columns.
 */
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
  const head = objectRenderer(LEAD_HEAD_FIELDS, zone, dateTimeFormat);
  const times = objectRenderer(LEAD_TIME_FIELDS, zone, dateTimeFormat);
  const headCells = csvCells(LEAD_HEAD_FIELDS, s, quote);
  const timeCells = csvCells(LEAD_TIME_FIELDS, s, quote);
  const empty = s.repeat(columns.names.length);
  return (r) => {
    const campaign = campaignOf(lookups, r.campaignId);
    let line =
      headCells(head(r, {})) +
      s +
      quote(poolOf(lookups, r.poolId)) +
      s +
      quote(campaign.uniqueId) +
      s +
      quote(campaign.code) +
      s +
      timeCells(times(r, {}));
    for (const ref of LEAD_REFERENCES) {
      const code = referenceCode(lookups, ref, r);
      line += s + (code === undefined ? '' : quote(code));
    }
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
