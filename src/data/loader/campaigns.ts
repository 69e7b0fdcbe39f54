import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { FieldType } from '../../domain/enums';

/** The loader's reads and upserts of lead definitions, campaigns and leads, by natural key. */

/** A campaign as the loader references it. */
export interface CampaignRef {
  id: number;
  campaignType: number;
  leadDefinitionId: number;
}

export async function findCampaign(trx: Knex.Transaction, code: string): Promise<CampaignRef | undefined> {
  const row = await trx('campaigns')
    .where({ code })
    .first<{ id: number; campaign_type: number; lead_definition_id: number } | undefined>('id', 'campaign_type', 'lead_definition_id');
  return row && { id: row.id, campaignType: row.campaign_type, leadDefinitionId: row.lead_definition_id };
}

/** A row of lead_definition_fields, without its id. */
export interface FieldRow {
  lead_definition_id: number;
  name: string;
  import_name: string | null;
  type: FieldType;
  required: boolean;
  sort_order: number;
  editable: boolean;
  access: number;
  external_key: boolean;
}

/** The fields of a lead definition, in the order they were stored. */
export function listFields(trx: Knex.Transaction, leadDefinitionId: number): Promise<FieldRow[]> {
  return trx<FieldRow>('lead_definition_fields').where({ lead_definition_id: leadDefinitionId }).orderBy('id');
}

export async function findLeadDefinitionId(trx: Knex.Transaction, name: string): Promise<number | undefined> {
  const row = await trx('lead_definitions').where({ name }).first<{ id: number } | undefined>('id');
  return row?.id;
}

/** Adds the definition or updates the one with its name, and replaces its fields as a whole; returns its id. */
export async function upsertLeadDefinition(
  trx: Knex.Transaction,
  definition: { name: string; uniqueId: string | undefined; fields: Omit<FieldRow, 'lead_definition_id'>[] },
): Promise<number> {
  const [def] = await trx('lead_definitions')
    .insert({ unique_id: definition.uniqueId ?? randomUUID(), name: definition.name })
    .onConflict('name')
    .merge(definition.uniqueId ? ['unique_id'] : ['name'])
    .returning<{ id: number }[]>('id');
  const id = def!.id;
  await trx('lead_definition_fields').where({ lead_definition_id: id }).delete();
  await trx('lead_definition_fields').insert(definition.fields.map((f) => ({ lead_definition_id: id, ...f })));
  return id;
}

/** The columns of a loaded campaign besides its unique id. */
export interface CampaignRow {
  code: string;
  name: string;
  project: string;
  lead_definition_id: number;
  campaign_type: number;
  max_attempts: number | null;
  /** Postgres intervals. */
  abandon_after: string | null;
  expire_after: string | null;
  private_expire_after: string | null;
  active: boolean;
  /** The duplicate check's defaults (null: none). */
  duplicate_check: string | null;
  duplicate_key: string | null;
  duplicate_window: string | null;
  on_duplicate: string | null;
}

/** Adds the campaign or updates the one with its code. */
export async function upsertCampaign(trx: Knex.Transaction, campaign: CampaignRow, uniqueId: string | undefined): Promise<void> {
  await trx('campaigns')
    .insert({ unique_id: uniqueId ?? randomUUID(), ...campaign })
    .onConflict('code')
    .merge([...Object.keys(campaign).filter((k) => k !== 'code'), ...(uniqueId ? ['unique_id'] : [])]);
}

/** The columns of a loaded lead besides its unique id. */
export interface LeadRow {
  campaign_id: number;
  pool_id: number;
  status: number;
  closure: number;
  priority: number;
  phone_number: string | null;
  /** The phone number in E.164 (the duplicate check's key). */
  phone_e164: string | null;
  external_key: string | null;
  /** JSON text. */
  data: string;
  upload_time: Date;
  last_modified_time: Date;
  first_processed_time: Date | null;
  status_changed_time: Date;
  owner_org_unit_id: number | null;
  uploaded_by_user_id: number | null;
  last_modified_by_user_id: number | null;
  first_processed_by_user_id: number | null;
}

/** The status of the lead with this unique id, if there is one. */
export async function findLeadStatus(trx: Knex.Transaction, uniqueId: string): Promise<number | undefined> {
  const row = await trx('leads').where({ unique_id: uniqueId }).first<{ status: number } | undefined>('status');
  return row?.status;
}

export async function findLeadId(trx: Knex.Transaction, uniqueId: string): Promise<number | undefined> {
  const row = await trx('leads').where({ unique_id: uniqueId }).first<{ id: number } | undefined>('id');
  return row?.id;
}

/** Adds the lead or updates the one with its unique id; returns its id. */
export async function upsertLead(trx: Knex.Transaction, lead: LeadRow, uniqueId: string): Promise<number> {
  const [row] = await trx('leads')
    .insert({ unique_id: uniqueId, ...lead })
    .onConflict('unique_id')
    .merge(Object.keys(lead))
    .returning<{ id: number }[]>('id');
  return row!.id;
}
