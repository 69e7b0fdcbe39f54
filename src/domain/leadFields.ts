import { LeadClosure, LeadStatus } from './enums';
import { DATE_TIME, enumType, Field, INT, TEXT } from './fieldTable';
import type { LeadRow, RawLeadRow } from './leadRecords';

/**
 * The field table of a Lead (src/domain/fieldTable.ts). JSON and CSV write a lead in this order:
 *
 *   LEAD_HEAD_FIELDS · pool, campaign, data · LEAD_TIME_FIELDS · LEAD_REFERENCES · closureData
 *
 * The two runs of plain fields come from the table; what lies between and after them are steps
 * of their own (names from the request's lookups, data limited by entry access, the references
 * expanded by Include, closure data copied as stored), in src/domain/leadSerializer.ts and
 * src/export/leadTranscoder.ts. leadColumns gives every column in that order, for the cursor
 * SELECT (src/data/leadRepository.ts) and the COPY (src/data/exportQueries.ts).
 */

/**
 * The plain fields before `pool`. `phoneNumber` and `externalKey` are the values of the phone and
 * external-key fields (leadKeyFields in src/domain/leadData.ts): the lead SELECTs read them only
 * where the lead's data holds the same value under the field `vf.phone_field` / `vf.key_field`
 * names, their join naming those fields only when the reader's entry access reaches them
 * (src/data/leadRepository.ts, src/data/exportQueries.ts). So every form leaves them out as it
 * leaves out those fields in `data`, also a value stored from another field before the
 * definition changed.
 */
export const LEAD_HEAD_FIELDS = [
  { name: 'uniqueId', column: 'unique_id', row: 'uniqueId', type: TEXT, present: 'always' },
  { name: 'status', column: 'status', row: 'status', type: enumType(LeadStatus, 'lead status'), present: 'always' },
  { name: 'closure', column: 'closure', row: 'closure', type: enumType(LeadClosure, 'lead closure'), present: 'always' },
  { name: 'priority', column: 'priority', row: 'priority', type: INT, present: 'always' },
  {
    name: 'phoneNumber',
    column: 'phone_number',
    row: 'phoneNumber',
    type: TEXT,
    present: 'optional',
    sameAsDataField: 'vf.phone_field',
    description:
      "The value of the lead definition's phone field (its first field of type phone). Absent when the lead has none, when that field is above the account's lead definition entry access (as its value is left out of `data`), or when the number was taken from another field before the definition changed.",
  },
  {
    name: 'externalKey',
    column: 'external_key',
    row: 'externalKey',
    type: TEXT,
    present: 'optional',
    sameAsDataField: 'vf.key_field',
    description:
      "The value of the lead definition's external-key field. Absent when the lead has none, when that field is above the account's lead definition entry access (as its value is left out of `data`), or when the key was taken from another field before the definition changed.",
  },
] as const satisfies readonly Field<LeadRow>[];

/** The plain fields after `data`. */
export const LEAD_TIME_FIELDS = [
  { name: 'uploadTime', column: 'upload_time', row: 'uploadTime', type: DATE_TIME, present: 'always' },
  { name: 'lastModifiedTime', column: 'last_modified_time', row: 'lastModifiedTime', type: DATE_TIME, present: 'always' },
  { name: 'firstProcessedTime', column: 'first_processed_time', row: 'firstProcessedTime', type: DATE_TIME, present: 'optional' },
] as const satisfies readonly Field<LeadRow>[];

/** A column a step reads (not a plain field): a cursor reads it as `row`, jsonb as its text. */
export interface LeadColumn {
  column: string;
  row: keyof LeadRow;
  jsonb?: true;
}

/** The columns of the steps between the head and the time fields. */
export const LEAD_CAMPAIGN = { column: 'campaign_id', row: 'campaignId' } as const satisfies LeadColumn;
export const LEAD_POOL = { column: 'pool_id', row: 'poolId' } as const satisfies LeadColumn;
export const LEAD_DATA = { column: 'data', row: 'dataJson', jsonb: true } as const satisfies LeadColumn;
/** The last property. */
export const LEAD_CLOSURE_DATA = { column: 'closure_data', row: 'closureDataJson', jsonb: true } as const satisfies LeadColumn;

/**
 * A lead's reference to an org unit or a user: `{ orgCode }` in JSON (the full object with
 * Include), the org code in the CSV column `csv`; absent (empty) when not set or unknown.
 */
export interface LeadReference extends LeadColumn {
  name: string;
  csv: string;
  row: 'ownerOrgUnitId' | 'uploadedByUserId' | 'lastModifiedByUserId' | 'firstProcessedByUserId';
  /** Which of the request's lookups names it. */
  of: 'units' | 'users';
}

/** The references after the time fields, in order. */
export const LEAD_REFERENCES: readonly LeadReference[] = [
  { name: 'ownerOrgUnit', csv: 'ownerOrgUnitOrgCode', column: 'owner_org_unit_id', row: 'ownerOrgUnitId', of: 'units' },
  { name: 'uploadedByUser', csv: 'uploadedByUserOrgCode', column: 'uploaded_by_user_id', row: 'uploadedByUserId', of: 'users' },
  {
    name: 'lastModifiedByUser',
    csv: 'lastModifiedByUserOrgCode',
    column: 'last_modified_by_user_id',
    row: 'lastModifiedByUserId',
    of: 'users',
  },
  {
    name: 'firstProcessedByUser',
    csv: 'firstProcessedByUserOrgCode',
    column: 'first_processed_by_user_id',
    row: 'firstProcessedByUserId',
    of: 'users',
  },
];

/**
 * Every column of a lead in the order the API writes the lead: `fields` maps each run of plain
 * fields, `column` each step's column.
 */
export function leadColumns<T>(fields: (run: readonly Field<LeadRow>[]) => T[], column: (c: LeadColumn) => T): T[] {
  return [
    ...fields(LEAD_HEAD_FIELDS),
    column(LEAD_CAMPAIGN),
    column(LEAD_POOL),
    column(LEAD_DATA),
    ...fields(LEAD_TIME_FIELDS),
    ...LEAD_REFERENCES.map(column),
    column(LEAD_CLOSURE_DATA),
  ];
}

/**
 * The names of the lead COPY's columns, in order: where the transcoder finds each (the COPY
 * selects them through leadColumns, each field in its type's form, then `data_visible`,
 * computed per request).
 */
export const LEAD_COPY_COLUMNS: readonly string[] = leadColumns(
  (run) => run.map((f) => f.column),
  (c) => c.column,
);

/** The columns of the RawLeads export, in order: the COPY's and the cursor's (as `row`). */
export const RAW_LEAD_COLUMNS = [
  { column: 'unique_id', row: 'uniqueId' },
  { column: 'campaign_id', row: 'campaignId' },
  { column: 'data', row: 'data' },
] as const satisfies readonly { column: string; row: keyof RawLeadRow }[];
