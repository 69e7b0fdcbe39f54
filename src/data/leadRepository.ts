import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { EntryAccess, EntryAccessName, FieldType, LeadStatus, LeadStatusName } from '../domain/enums';
import type { LeadFieldRule } from '../domain/leadData';
import type { LeadFilter } from '../domain/leadFilters';
import type { DuplicateSearch } from '../domain/duplicates';
import { openCursor, streamingLimit } from './cursorStream';
import { knexClient, queryPrepared, readAll } from './db';
import type { ProjectScope } from './projectScope';
import { projectSelectedSql } from './projectRepository';
import type { LeadLookups, LeadRow } from '../domain/leadRecords';
import { leadColumns, RAW_LEAD_COLUMNS } from '../domain/leadFields';
import { columnSelect, fieldSelect } from './fieldColumns';
import { toE164 } from '../domain/phoneNumber';
import { defaultPhoneRegion } from '../config/platform';
import type { DuplicateCheckName, DuplicateKeyName, DuplicateSettings, OnDuplicateName } from '../domain/duplicates';
import { pgIntervalToTimeSpan, PgInterval } from '../domain/timespan';
import { canonicalUniqueId } from '../domain/uniqueId';

/**
 * Leads in and out: the import (one database function: do-not-call, pool, lead, hook event), and the lead rows of
 * the exports, filtered in SQL by the account's project scope and the export filters and
 * read through a cursor.
 */

// ---- import ---------------------------------------------------------------------------------

export interface ImportCampaign {
  id: number;
  uniqueId: string;
  code: string;
  project: string;
  fields: LeadFieldRule[];
  /** Names of the fields an import's Update may change (the definition's editable fields). */
  editableFields: string[];
  /** The campaign's duplicate check defaults. */
  duplicates: DuplicateSettings;
}

interface FieldJson {
  name: string;
  importName: string | null;
  type: FieldType;
  required: boolean;
  access: number;
  externalKey: boolean;
  sortOrder: number;
  editable: boolean;
}

const toFieldRule = (f: FieldJson): LeadFieldRule => ({
  name: f.name,
  importName: f.importName,
  type: f.type,
  required: f.required,
  access: EntryAccess.toName(f.access),
  externalKey: f.externalKey,
  sortOrder: f.sortOrder,
});

const FIELDS_JSON = `coalesce((
    select json_agg(json_build_object('name', f.name, 'importName', f.import_name, 'type', f.type,
      'required', f.required, 'access', f.access, 'externalKey', f.external_key, 'sortOrder', f.sort_order,
      'editable', f.editable)
      order by f.sort_order, f.id)
    from lead_definition_fields f where f.lead_definition_id = c.lead_definition_id), '[]')`;

/**
 * Campaigns and their lead definitions change seldom and every import needs them: they are
 * kept for a few seconds per database, which spares one database round trip per import. A
 * change to a campaign or its lead definition reaches imports within this time.
 */
const IMPORT_CAMPAIGN_CACHE_MS = 5000;
const MAX_CACHED_CAMPAIGNS = 1000;
const campaignCache = new WeakMap<object, Map<string, { campaign: ImportCampaign; expires: number }>>();

function cacheOf(db: Knex | Knex.Transaction): Map<string, { campaign: ImportCampaign; expires: number }> {
  // A transaction's client shares its config object with the knex instance it came from.
  const key = knexClient(db).config;
  let cache = campaignCache.get(key);
  if (cache === undefined) {
    cache = new Map();
    campaignCache.set(key, cache);
  }
  return cache;
}

export interface ImportCampaignLookup {
  campaign: ImportCampaign;
  /**
   * Whether the campaign's project matches one of the account's patterns (decided in SQL);
   * undefined when the campaign came from the cache: insertLead then decides it in its statement.
   */
  visible: boolean | undefined;
}

interface ImportCampaignRow {
  id: number;
  unique_id: string;
  code: string;
  project: string;
  visible: boolean;
  fields: FieldJson[];
  duplicate_check: DuplicateCheckName | null;
  duplicate_key: DuplicateKeyName | null;
  duplicate_window: PgInterval | null;
  on_duplicate: OnDuplicateName | null;
}

/** The campaign's duplicate defaults as stored (names; null: not set). */
function campaignDuplicateSettings(r: {
  duplicate_check: DuplicateCheckName | null;
  duplicate_key: DuplicateKeyName | null;
  duplicate_window: PgInterval | null;
  on_duplicate: OnDuplicateName | null;
}): DuplicateSettings {
  return {
    ...(r.duplicate_check !== null ? { check: r.duplicate_check } : {}),
    ...(r.duplicate_key !== null ? { key: r.duplicate_key } : {}),
    ...(r.duplicate_window !== null ? { window: pgIntervalToTimeSpan(r.duplicate_window) } : {}),
    ...(r.on_duplicate !== null ? { onDuplicate: r.on_duplicate } : {}),
  };
}

/** A campaign's duplicate check defaults (GET /campaigns/{Code}). */
export async function findCampaignDuplicateDefaults(db: Knex, campaignId: number): Promise<DuplicateSettings> {
  const row = await db('campaigns')
    .where({ id: campaignId })
    .first<Parameters<typeof campaignDuplicateSettings>[0] | undefined>(
      'duplicate_check',
      'duplicate_key',
      'duplicate_window',
      'on_duplicate',
    );
  return row === undefined ? {} : campaignDuplicateSettings(row);
}

/** The campaign a lead is imported into, with its lead definition's fields; undefined when unknown. */
export async function findImportCampaign(
  db: Knex | Knex.Transaction,
  code: string,
  scope: ProjectScope,
  options: { fresh?: boolean } = {},
): Promise<ImportCampaignLookup | undefined> {
  const cache = cacheOf(db);
  const now = Date.now();
  const hit = options.fresh ? undefined : cache.get(code);
  if (hit !== undefined && hit.expires > now) return { campaign: hit.campaign, visible: undefined };
  const { rows } = await db.raw<{ rows: ImportCampaignRow[] }>(
    `select c.id, c.unique_id, c.code, c.project, lower(c.project) like any(?::text[]) as visible, ${FIELDS_JSON} as fields,
            c.duplicate_check, c.duplicate_key, c.duplicate_window, c.on_duplicate
       from campaigns c where c.code = ?`,
    [scope.likePatterns, code],
  );
  const r = rows[0];
  if (!r) {
    cache.delete(code);
    return undefined;
  }
  const campaign: ImportCampaign = {
    id: r.id,
    uniqueId: r.unique_id,
    code: r.code,
    project: r.project,
    fields: r.fields.map(toFieldRule),
    editableFields: r.fields.filter((f) => f.editable).map((f) => f.name),
    duplicates: campaignDuplicateSettings(r),
  };
  if (cache.size >= MAX_CACHED_CAMPAIGNS) cache.clear();
  cache.set(code, { campaign, expires: now + IMPORT_CAMPAIGN_CACHE_MS });
  return { campaign, visible: r.visible };
}

/** Whether the campaign's project matches one of the account's patterns, decided in SQL. */
export async function isCampaignVisible(db: Knex | Knex.Transaction, campaignId: number, scope: ProjectScope): Promise<boolean> {
  const { rows } = await db.raw<{ rows: unknown[] }>(`select 1 from campaigns c where c.id = ? and lower(c.project) like any(?::text[])`, [
    campaignId,
    scope.likePatterns,
  ]);
  return rows.length > 0;
}

export interface NewLead {
  campaignId: number;
  poolName: string;
  data: Record<string, string>;
  phoneNumber: string | null;
  externalKey: string | null;
  /** The moment of insert (injected clock). */
  now: Date;
  /** The account's linked user: uploader and last modifier. */
  userId: number;
  /** The duplicate check to run first; none: the lead is stored whatever is there. */
  duplicateCheck?: DuplicateLookup;
}

/** A duplicate check as the import function runs it (src/domain/duplicates.ts decides it). */
export interface DuplicateLookup extends DuplicateSearch {
  byPhone: boolean;
  byExternalKey: boolean;
  /**
   * Update the duplicate with the editable fields of the new data (else nothing is written);
   * `entryAccess`, the importer's, limits what a lead of another definition takes.
   */
  update?: { patch: Record<string, string>; phoneNumber: string | null; externalKey: string | null; entryAccess: EntryAccessName };
}

// The database function of db/migrations/20261231000001_duplicate_update_definitions.ts, its parameters by name.
const IMPORT_LEAD = `
  select outcome, lead_id, lead_status, dup_unique_id, matched from lcm_import_lead(
    p_campaign_id => $1, p_like_patterns => $2, p_pool_name => $3, p_unique_id => $4, p_phone_number => $5,
    p_phone_e164 => $6, p_external_key => $7, p_data => $8::jsonb, p_now => $9, p_user_id => $10,
    p_dup_scope => $11, p_dup_phone_e164 => $12, p_dup_external_key => $13, p_dup_since => $14, p_dup_statuses => $15,
    p_dup_update => $16, p_patch => $17::jsonb, p_patch_phone => $18, p_patch_external_key => $19, p_dup_access => $20)`;

export type InsertLeadResult =
  | { kind: 'inserted'; id: number; uniqueId: string; status: LeadStatusName }
  /** A stored lead matched the duplicate check: nothing was written (or, `updated`, its data was merged). */
  | { kind: 'duplicate'; uniqueId: string; matched: 'phone' | 'externalKey'; updated: boolean }
  | { kind: 'forbidden' }
  | { kind: 'unknown_campaign' };

/**
 * Imports a lead in one statement (one round trip, and outside a transaction one transaction of
 * its own): if the campaign is in the account's projects, the do-not-call lists decide its
 * status (under their shared lock), its pool is found or created, the lead inserted and its
 * lead.created hook event recorded.
 */
export async function insertLead(db: Knex | Knex.Transaction, lead: NewLead, scope: ProjectScope): Promise<InsertLeadResult> {
  const uniqueId = randomUUID();
  const e164 = lead.phoneNumber === null ? null : (toE164(lead.phoneNumber, defaultPhoneRegion()) ?? null);
  const dup = lead.duplicateCheck;
  const { rows } = await queryPrepared<{
    outcome: string;
    lead_id: number | null;
    lead_status: number | null;
    dup_unique_id: string | null;
    matched: 'phone' | 'externalKey' | null;
  }>(db, 'lcm_import_lead', IMPORT_LEAD, [
    lead.campaignId,
    scope.likePatterns,
    lead.poolName,
    uniqueId,
    lead.phoneNumber,
    e164,
    lead.externalKey,
    JSON.stringify(lead.data),
    lead.now,
    lead.userId,
    dup?.scope ?? null,
    dup?.byPhone ? e164 : null,
    dup?.byExternalKey ? lead.externalKey : null,
    dup?.since ?? null,
    dup?.statuses ?? null,
    dup?.update !== undefined,
    JSON.stringify(dup?.update?.patch ?? {}),
    dup?.update?.phoneNumber ?? null,
    dup?.update?.externalKey ?? null,
    EntryAccess.toNumber(dup?.update?.entryAccess ?? 'None'),
  ]);
  const row = rows[0]!;
  if (row.outcome === 'duplicate' || row.outcome === 'updated') {
    return { kind: 'duplicate', uniqueId: row.dup_unique_id!, matched: row.matched!, updated: row.outcome === 'updated' };
  }
  if (row.outcome === 'forbidden') return { kind: 'forbidden' };
  if (row.outcome === 'unknown_campaign') return { kind: 'unknown_campaign' };
  return { kind: 'inserted', id: Number(row.lead_id), uniqueId, status: LeadStatus.toName(row.lead_status!) };
}

// ---- export ---------------------------------------------------------------------------------

// The campaign, pool, user and org-unit names come from LeadLookups, loaded once per request, not
// from joins; the only joins say what the entry access reaches of each lead's definition
// (memoized per campaign), so `dataVisible` costs Postgres one jsonb subtraction per row and
// phoneNumber and externalKey (read where data holds them under vf.phone_field and vf.key_field,
// src/domain/leadFields.ts) one comparison each.
const LEAD_COLUMNS = [
  ...leadColumns(
    (run) => fieldSelect(run, 'l'),
    (c) => columnSelect(c, 'l'),
  ),
  `(l.data - coalesce(vf.names, '{}')) = '{}'::jsonb as "dataVisible"`,
].join(', ');

// Per lead definition: the names of the fields the entry access reaches, and the names of the
// fields the phone number (the first phone field in sort order) and the external key come from
// when it reaches them (as visibleKeyFields in src/domain/leadData.ts; NULL otherwise). One
// binding: the entry access level (number).
const VISIBLE_FIELDS_JOIN = `
  join campaigns lc on lc.id = l.campaign_id
  left join (select lead_definition_id,
                    array_agg(name) filter (where access <= va.level) as names,
                    (array_agg(case when access <= va.level then name end order by sort_order, id)
                       filter (where type = 'phone'))[1] as phone_field,
                    min(name) filter (where external_key and access <= va.level) as key_field
               from lead_definition_fields, (select ?::smallint as level) va
              group by lead_definition_id) vf
    on vf.lead_definition_id = lc.lead_definition_id`;

interface Sql {
  sql: string;
  bindings: Knex.RawBinding[];
}

/** Conditions on `campaigns c`: the account's projects always (in SQL), then the filter's projects and campaigns. */
function campaignConditions(filter: LeadFilter, scope: ProjectScope, campaignIds?: number[]): Sql {
  const parts = ['lower(c.project) like any(?::text[])'];
  const bindings: Knex.RawBinding[] = [scope.likePatterns];
  if (campaignIds) {
    parts.push('c.id = any(?::bigint[])');
    bindings.push(campaignIds);
  }
  if (filter.projectPatterns) {
    const selected = projectSelectedSql('c.project', filter.projectPatterns);
    parts.push(selected.sql);
    bindings.push(...selected.bindings);
  }
  if (filter.campaignKeys) {
    parts.push('(c.code = any(?::text[]) or c.unique_id = any(?::text[]))');
    bindings.push(filter.campaignKeys, filter.campaignKeys.map(canonicalUniqueId));
  }
  return { sql: parts.join(' and '), bindings };
}

/** The WHERE clause of a lead query over `leads l`. */
function leadConditions(filter: LeadFilter, scope: ProjectScope): Sql {
  const campaigns = campaignConditions(filter, scope);
  const rows = leadRowConditions(filter);
  return {
    sql: [`l.campaign_id in (select c.id from campaigns c where ${campaigns.sql})`, ...rows.parts].join(' and '),
    bindings: [...campaigns.bindings, ...rows.bindings],
  };
}

/** The filter's conditions on the lead itself (times, statuses, closures, unique ids), over `leads l`. */
export function leadRowConditions(filter: LeadFilter): { parts: string[]; bindings: Knex.RawBinding[] } {
  const parts: string[] = [];
  const bindings: Knex.RawBinding[] = [];
  if (filter.modifiedFrom) {
    parts.push('l.last_modified_time >= ?');
    bindings.push(filter.modifiedFrom);
  }
  if (filter.modifiedTo) {
    parts.push('l.last_modified_time < ?');
    bindings.push(filter.modifiedTo);
  }
  if (filter.statuses) {
    parts.push('l.status = any(?::smallint[])');
    bindings.push(filter.statuses);
  }
  if (filter.closures) {
    parts.push('l.closure = any(?::smallint[])');
    bindings.push(filter.closures);
  }
  if (filter.uniqueIds) {
    parts.push('l.unique_id = any(?::text[])');
    bindings.push(filter.uniqueIds);
  }
  return { parts, bindings };
}

export interface LeadCursorOptions {
  batchSize?: number;
  signal?: AbortSignal;
}

/**
 * The export query: the leads matching the filter, ordered by last modified time then unique id;
 * `access` is the account's entry access (for `dataVisible`).
 */
function leadExportQuery(db: Knex, filter: LeadFilter, scope: ProjectScope, access: EntryAccessName): Knex.Raw {
  const where = leadConditions(filter, scope);
  return db.raw(
    `select ${LEAD_COLUMNS}
       from leads l ${VISIBLE_FIELDS_JOIN}
      where ${where.sql}
      order by l.last_modified_time, l.unique_id
      ${streamingLimit(filter.limit)}`,
    [EntryAccess.toNumber(access), ...where.bindings],
  );
}

/** The leads of leadExportQuery as a cursor stream of LeadRow. */
export function openLeadCursor(
  db: Knex,
  filter: LeadFilter,
  scope: ProjectScope,
  access: EntryAccessName,
  options: LeadCursorOptions = {},
): Promise<Readable> {
  return openCursor(db, leadExportQuery(db, filter, scope, access), options);
}

/** Like openLeadCursor with only the columns of the RawLeads export. */
export function openRawLeadCursor(db: Knex, filter: LeadFilter, scope: ProjectScope, options: LeadCursorOptions = {}): Promise<Readable> {
  const where = leadConditions(filter, scope);
  const query = db.raw(
    `select ${RAW_LEAD_COLUMNS.map((c) => columnSelect(c, 'l')).join(', ')}
       from leads l
      where ${where.sql}
      order by l.last_modified_time, l.unique_id
      ${streamingLimit(filter.limit)}`,
    where.bindings,
  );
  return openCursor(db, query, options);
}

/**
 * One lead by unique id, if it exists and its campaign is in the account's projects, with its
 * row version (Postgres's xmin, new with every write of the row): what its ETag is made from.
 */
export async function findLead(
  db: Knex,
  uniqueId: string,
  scope: ProjectScope,
  access: EntryAccessName,
): Promise<(LeadRow & { version: string }) | undefined> {
  const where = leadConditions({ uniqueIds: [uniqueId] }, scope);
  const { rows } = await db.raw<{ rows: (LeadRow & { version: string })[] }>(
    `select ${LEAD_COLUMNS}, l.xmin::text as "version" from leads l ${VISIBLE_FIELDS_JOIN} where ${where.sql}`,
    [EntryAccess.toNumber(access), ...where.bindings],
  );
  return rows[0];
}

/** Whether a lead with this unique id exists in a campaign the scope can see (a reference check). */
export async function leadVisible(db: Knex, uniqueId: string, scope: ProjectScope): Promise<boolean> {
  const where = leadConditions({ uniqueIds: [uniqueId] }, scope);
  const { rows } = await db.raw<{ rows: unknown[] }>(`select 1 from leads l where ${where.sql} limit 1`, where.bindings);
  return rows.length > 0;
}

/**
 * The names a request's lead rows need: campaigns the filter can reach (narrowed to
 * `campaignIds` when given), their pools and lead definitions, and every user's and org unit's
 * org code. Load it after the cursor has started: every pool or campaign a row of the cursor's
 * snapshot refers to exists by then.
 */
export async function loadLeadLookups(db: Knex, filter: LeadFilter, scope: ProjectScope, campaignIds?: number[]): Promise<LeadLookups> {
  const where = campaignConditions(filter, scope, campaignIds);
  type Rows = { rows: unknown[] };
  const [campaigns, pools, users, units, definitions] = await readAll<
    [Rows, Rows, { id: number; org_code: string }[], { id: number; org_code: string }[], Map<number, LeadFieldRule[]>]
  >(db, [
    () => db.raw(`select c.id, c.unique_id, c.code, c.lead_definition_id from campaigns c where ${where.sql}`, where.bindings),
    () =>
      db.raw(
        `select p.id, p.name from lead_pools p where p.campaign_id in (select c.id from campaigns c where ${where.sql})`,
        where.bindings,
      ),
    () => db('users').select('id', 'org_code'),
    () => db('org_units').select('id', 'org_code'),
    () => definitionFields(db, where),
  ]);
  return {
    campaigns: new Map(
      (campaigns.rows as { id: number; unique_id: string; code: string; lead_definition_id: number }[]).map((c) => [
        c.id,
        { uniqueId: c.unique_id, code: c.code, leadDefinitionId: c.lead_definition_id },
      ]),
    ),
    pools: new Map((pools.rows as { id: number; name: string }[]).map((p) => [p.id, p.name])),
    users: new Map(users.map((u) => [u.id, u.org_code])),
    units: new Map(units.map((u) => [u.id, u.org_code])),
    definitions,
  };
}

async function definitionFields(db: Knex, campaigns: Sql): Promise<Map<number, LeadFieldRule[]>> {
  const { rows } = await db.raw<{ rows: { id: number; fields: FieldJson[] }[] }>(
    `select d.id, ${FIELDS_JSON.replace('c.lead_definition_id', 'd.id')} as fields
       from lead_definitions d
      where d.id in (select c.lead_definition_id from campaigns c where ${campaigns.sql})`,
    campaigns.bindings,
  );
  return new Map(rows.map((r) => [r.id, r.fields.map(toFieldRule)]));
}
