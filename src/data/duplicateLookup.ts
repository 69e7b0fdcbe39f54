import type { Knex } from 'knex';
import { recordLeadEvents } from './hookEvents';
import type { DuplicateLookup } from './leadRepository';
import { EntryAccess, type EntryAccessName } from '../domain/enums';

/**
 * The duplicate check of a bulk import's batch (docs/decisions.md, Duplicates on import), with
 * the database functions the single import uses (db/migrations/20261222000011_duplicate_check.ts):
 * the same locks on the normalised keys, the same lookup, per row of the batch.
 */

/** A row's keys as the check compares them; null: not checked. */
export interface RowKeys {
  phoneE164: string | null;
  externalKey: string | null;
}

export interface StoredDuplicate {
  id: number;
  uniqueId: string;
  matched: 'phone' | 'externalKey';
  /** Its campaign has the import campaign's lead definition (an Update then merges every editable field as sent). */
  sameDefinition: boolean;
}

// The same lock keys as lcm_lock_duplicate_keys, every key of the batch in hash order: a batch and
// a single import that share keys take them in one order and never wait on each other.
const LOCK_KEYS = `
  select count(pg_advisory_xact_lock(h)) from (
    select distinct hashtextextended(k, 0) as h
      from unnest(?::text[]) as k
     where k is not null
     order by 1) s`;

/** Takes the locks on the batch's keys, held until the batch's transaction ends. */
export async function lockDuplicateKeys(trx: Knex.Transaction, keys: RowKeys[]): Promise<void> {
  const names = keys.flatMap((k) => [
    ...(k.phoneE164 !== null ? [`lcm duplicate phone ${k.phoneE164}`] : []),
    ...(k.externalKey !== null ? [`lcm duplicate external key ${k.externalKey}`] : []),
  ]);
  if (names.length > 0) await trx.raw(LOCK_KEYS, [names]);
}

const FIND = `
  select k.ord, d.dup_id, d.dup_unique_id, d.matched,
         (select c.lead_definition_id from leads l join campaigns c on c.id = l.campaign_id where l.id = d.dup_id)
           is not distinct from (select c.lead_definition_id from campaigns c where c.id = ?) as same_definition
    from unnest(?::text[], ?::text[]) with ordinality as k(phone, ext, ord)
    cross join lateral lcm_find_duplicate(?, ?, ?, ?::text[], k.phone, k.ext, ?::timestamptz, ?::smallint[]) d
   order by k.ord`;

/** The stored duplicate of each row (after lockDuplicateKeys), undefined where there is none. */
export async function findStoredDuplicates(
  trx: Knex.Transaction,
  check: Pick<DuplicateLookup, 'scope' | 'since' | 'statuses'>,
  campaign: { id: number; project: string },
  likePatterns: string[],
  keys: RowKeys[],
): Promise<(StoredDuplicate | undefined)[]> {
  const found: (StoredDuplicate | undefined)[] = keys.map(() => undefined);
  if (keys.every((k) => k.phoneE164 === null && k.externalKey === null)) return found;
  const { rows } = await trx.raw<{
    rows: { ord: string; dup_id: string; dup_unique_id: string; matched: 'phone' | 'externalKey'; same_definition: boolean }[];
  }>(FIND, [
    campaign.id,
    keys.map((k) => k.phoneE164),
    keys.map((k) => k.externalKey),
    check.scope,
    campaign.id,
    campaign.project,
    likePatterns,
    check.since ?? null,
    check.statuses ?? null,
  ] as unknown as Knex.RawBinding[]);
  for (const r of rows) {
    found[Number(r.ord) - 1] = { id: Number(r.dup_id), uniqueId: r.dup_unique_id, matched: r.matched, sameDefinition: r.same_definition };
  }
  return found;
}

/** The merge of one stored lead: its editable fields' new values, and its phone and external key when those fields are editable. */
export interface DuplicateUpdate {
  leadId: number;
  patch: Record<string, string>;
  phoneNumber: string | null;
  phoneE164: string | null;
  externalKey: string | null;
}

// Each merge as the stored lead's definition takes it (lcm_duplicate_patch, as the single import's).
const UPDATE = `
  update leads l
     set data = l.data || n.patch,
         phone_number = coalesce(n.patch_phone, l.phone_number),
         phone_e164 = case when n.patch_phone is null then l.phone_e164 else u.phone_e164 end,
         external_key = coalesce(n.patch_external_key, l.external_key),
         last_modified_time = ?, last_modified_by_user_id = ?
    from unnest(?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[]) as u(id, patch, phone_number, phone_e164, external_key)
    cross join lateral lcm_duplicate_patch(u.id, ?, ?, u.patch::jsonb, u.phone_number, u.external_key) n
   where l.id = u.id`;

/**
 * Merges each stored duplicate (one entry per lead) and records its lead.updated event, in the
 * batch's transaction. `campaignId` and `entryAccess`: the import's campaign and the importer's
 * entry access, which decide what a lead of another definition takes.
 */
export async function updateStoredDuplicates(
  trx: Knex.Transaction,
  updates: DuplicateUpdate[],
  change: { now: Date; userId: number; campaignId: number; entryAccess: EntryAccessName },
): Promise<void> {
  if (updates.length === 0) return;
  await trx.raw(UPDATE, [
    change.now,
    change.userId,
    updates.map((u) => u.leadId),
    updates.map((u) => JSON.stringify(u.patch)),
    updates.map((u) => u.phoneNumber),
    updates.map((u) => u.phoneE164),
    updates.map((u) => u.externalKey),
    change.campaignId,
    EntryAccess.toNumber(change.entryAccess),
  ] as unknown as Knex.RawBinding[]);
  await recordLeadEvents(
    trx,
    'lead.updated',
    updates.map((u) => ({ leadId: u.leadId })),
    change.now,
  );
}
