import type { Knex } from 'knex';
import type { ProjectScope } from './projectScope';

/**
 * Many leads of one campaign in one statement (bulk import, docs/decisions.md): the pools are
 * created first (ensureBatchPools, a statement of its own, so the insert's snapshot sees pools
 * another transaction created meanwhile), then every lead in one INSERT … SELECT FROM
 * unnest(…), with the project check in SQL as in the single import.
 */

interface BatchLead {
  /** Made by the caller, so a duplicate of the row in the same batch can name it before it is stored. */
  uniqueId: string;
  poolName: string;
  /** Storage number of the status the lead starts in (New, or DoNotCall for a listed number). */
  status: number;
  data: Record<string, string>;
  phoneNumber: string | null;
  /** The phone number in E.164 (the duplicate check's key); null when there is none or it cannot be read. */
  phoneE164: string | null;
  externalKey: string | null;
}

export interface LeadBatch {
  campaignId: number;
  /** The moment of insert: upload, modified and status-changed time of every lead. */
  now: Date;
  /** The account's linked user: uploader and last modifier. */
  userId: number;
  leads: BatchLead[];
}

export type InsertBatchResult =
  | { kind: 'inserted'; leads: { id: number; uniqueId: string }[] }
  /** The campaign is gone or no longer in the account's projects: nothing was inserted. */
  | { kind: 'campaign_unavailable' };

const ENSURE_POOLS = `
  insert into lead_pools (campaign_id, name)
  select c.id, n.name from campaigns c, unnest(?::text[]) as n(name)
   where c.id = ? and lower(c.project) like any(?::text[])
  on conflict (campaign_id, name) do nothing`;

const INSERT_LEADS = `
  insert into leads (unique_id, campaign_id, pool_id, status, closure, phone_number, phone_e164, external_key, data,
                     upload_time, last_modified_time, status_changed_time, uploaded_by_user_id, last_modified_by_user_id)
  select r.unique_id, c.id, p.id, r.status, 0, r.phone_number, r.phone_e164, r.external_key, r.data::jsonb, ?, ?, ?, ?, ?
    from unnest(?::text[], ?::text[], ?::smallint[], ?::text[], ?::text[], ?::text[], ?::text[]) with ordinality
           as r(unique_id, pool_name, status, phone_number, phone_e164, external_key, data, ord)
    join campaigns c on c.id = ? and lower(c.project) like any(?::text[])
    join lead_pools p on p.campaign_id = c.id and p.name = r.pool_name
   order by r.ord
  returning id, unique_id`;

/**
 * Creates the pools the batch's leads go into (where missing). Its own step so that batches
 * stored side by side can take it in input order (src/ingest/bulkImport.ts): a batch waits here
 * for an earlier batch that created the same pool, never the other way round.
 */
export async function ensureBatchPools(trx: Knex.Transaction, batch: LeadBatch, scope: ProjectScope): Promise<void> {
  if (batch.leads.length === 0) return;
  const poolNames = [...new Set(batch.leads.map((l) => l.poolName))];
  await trx.raw(ENSURE_POOLS, [poolNames, batch.campaignId, scope.likePatterns]);
}

/** Inserts the batch's leads in order inside `trx`, after ensureBatchPools. */
export async function insertLeadBatch(trx: Knex.Transaction, batch: LeadBatch, scope: ProjectScope): Promise<InsertBatchResult> {
  if (batch.leads.length === 0) return { kind: 'inserted', leads: [] };
  const uniqueIds = batch.leads.map((l) => l.uniqueId);
  const { rows } = await trx.raw<{ rows: { id: string | number; unique_id: string }[] }>(INSERT_LEADS, [
    batch.now,
    batch.now,
    batch.now,
    batch.userId,
    batch.userId,
    uniqueIds,
    batch.leads.map((l) => l.poolName),
    batch.leads.map((l) => l.status),
    batch.leads.map((l) => l.phoneNumber),
    batch.leads.map((l) => l.phoneE164),
    batch.leads.map((l) => l.externalKey),
    batch.leads.map((l) => JSON.stringify(l.data)),
    batch.campaignId,
    scope.likePatterns,
  ] as unknown as Knex.RawBinding[]);
  if (rows.length !== batch.leads.length) {
    // The campaign left the account's projects or was removed: the caller rolls back.
    return { kind: 'campaign_unavailable' };
  }
  const idByUniqueId = new Map<string, number>(rows.map((r) => [r.unique_id, Number(r.id)]));
  return { kind: 'inserted', leads: uniqueIds.map((uniqueId) => ({ id: idByUniqueId.get(uniqueId)!, uniqueId })) };
}
