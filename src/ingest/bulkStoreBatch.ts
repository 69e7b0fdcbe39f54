import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { type EntryAccessName, LeadStatus, type LeadStatusName } from '../domain/enums';
import { duplicateField, duplicateMessage, type DuplicateRule, duplicateSearch } from '../domain/duplicates';
import { toE164 } from '../domain/phoneNumber';
import { defaultPhoneRegion } from '../config/platform';
import { findStoredDuplicates, lockDuplicateKeys, updateStoredDuplicates, type StoredDuplicate } from '../data/duplicateLookup';
import { decideBatch, type DuplicateCandidate, type RowDecision, rowKeys } from './bulkDuplicates';
import type { LeadDataError } from '../domain/leadData';
import type { ImportCampaign } from '../data/leadRepository';
import { ensureBatchPools, insertLeadBatch } from '../data/leadBatches';
import { recordLeadEvents } from '../data/hookEvents';
import { doNotCallStatuses, type DoNotCallStatus } from '../data/doNotCallRepository';
import type { ProjectScope } from '../data/projectScope';
import { poolNameAt } from './leadImportRules';
import { beginTransaction, commitTransaction } from '../data/transactions';
import { isConnectionFailure } from '../data/readSource';

/** A row of the body checked with the single import's rules: a lead to store, or why not. `digest`: see RowDigest. */
export type CheckedRow = ({ row: number; lead: PreparedLead } | { row: number; errors: LeadDataError[] }) & { digest?: string };

interface PreparedLead {
  data: Record<string, string>;
  phoneNumber: string | null;
  externalKey: string | null;
  pool?: string;
}

/** A batch's outcome: committed with its results, or not (and, when the import must say so, why). */
export type StoredBatch =
  { ok: true; text: string; rows: number } | { ok: false; stop?: 'campaign_unavailable' | 'key_conflict' | 'unavailable' | 'failed' };

/** A batch being stored: `locked` once it holds its locks (or gave up), `outcome` once it committed or not. */
export interface BatchInFlight {
  locked: Promise<void>;
  outcome: Promise<StoredBatch>;
}

/**
 * Lets a caller add its own writes to each batch's transaction (the idempotency record).
 * `digest`: the row digest after the batch's last row (when a RowDigest is given).
 */
export type BatchHook = (
  trx: Knex.Transaction,
  batch: { text: string; rows: number; rowsBefore: number; lastRow: number; digest?: string },
) => Promise<void>;

/** Thrown by a BatchHook: the batch is rolled back and the import ends with a key_conflict stop. */
export class BulkKeyConflict extends Error {
  constructor() {
    super('another request with the same Idempotency-Key stored rows meanwhile');
    this.name = 'BulkKeyConflict';
  }
}

/** What every batch of one import is stored with. */
export interface BatchTarget {
  db: Knex;
  /** The moment of each batch's insert decides its automatic pool. */
  clock: () => Date;
  zone: string;
  logger: { error(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
  userId: number;
  /** The importer's: what an Update may change in a stored lead of another lead definition. */
  entryAccess: EntryAccessName;
  scope: ProjectScope;
  campaign: ImportCampaign;
  /** The request's pool (a row may name its own); none: the automatic pool. */
  pool?: string;
  /** The duplicate check (the request's parameters over the campaign's defaults); none: every valid row is stored. */
  duplicates?: DuplicateRule;
  /** Batches may be stored side by side: each then waits for its locks no longer than PARALLEL_LOCK_TIMEOUT. */
  parallel: boolean;
  /** The client's abort: a batch of a client that left is rolled back unless its commit began. */
  signal: AbortSignal;
  onBatch?: BatchHook;
}

const NEW: LeadStatusName = 'New';

/** A valid row's result: stored (with its status), or what the duplicate check made of it. */
function rowResult(
  row: number,
  candidate: DuplicateCandidate,
  decision: RowDecision,
  status: DoNotCallStatus | undefined,
  onDuplicate: DuplicateRule['onDuplicate'] | undefined,
): object {
  switch (decision.kind) {
    case 'insert':
      return { row, success: true, uniqueId: candidate.uniqueId, status: status ?? NEW };
    case 'updated':
      return { row, success: true, uniqueId: decision.uniqueId, updated: true };
    case 'duplicate':
      return onDuplicate === 'Skip'
        ? { row, success: true, uniqueId: decision.uniqueId, duplicate: true }
        : {
            row,
            success: false,
            duplicateOf: decision.uniqueId,
            errors: [{ field: duplicateField(decision.matched), message: duplicateMessage(decision.uniqueId) }],
          };
  }
}

/** The duplicate check's decisions for a batch's valid rows, and the stored leads it updates. */
async function checkDuplicates(
  trx: Knex.Transaction,
  rule: DuplicateRule,
  target: BatchTarget,
  candidates: DuplicateCandidate[],
  now: Date,
): Promise<ReturnType<typeof decideBatch>> {
  // The same locks and lookup as the single import, before the do-not-call lock as there.
  const keys = candidates.map((row) => rowKeys(rule, row));
  await lockDuplicateKeys(trx, keys);
  const stored: (StoredDuplicate | undefined)[] = await findStoredDuplicates(
    trx,
    duplicateSearch(rule, now, target.zone),
    target.campaign,
    target.scope.likePatterns,
    keys,
  );
  return decideBatch(rule, target.campaign, candidates, stored);
}
/** How long a batch stored beside another waits for a lock (see storeBatch). */
const PARALLEL_LOCK_TIMEOUT = '10s';

/**
 * Stores one batch in a transaction of its own. With a batch before it still in flight, the
 * expensive part (the insert) runs beside that batch's, and everything that must keep input
 * order waits for it: the locks (the do-not-call lists' and new pools', taken after the
 * earlier batch took its own), then the events, the idempotency record and the commit (only
 * once the earlier batch committed; rolled back if it did not). Every wait is on the batch
 * before, so two batches never wait on each other; a lock wait that other work turns into a
 * cycle anyway ends at lock_timeout (the import stops) instead of hanging. `locked` is called
 * once this batch holds its locks or gave up, so the next batch may take its own.
 */
export async function storeBatch(
  rows: CheckedRow[],
  target: BatchTarget,
  order: { before: BatchInFlight | undefined; locked: () => void },
): Promise<StoredBatch> {
  const { before, locked } = order;
  const { signal, onBatch } = target;
  try {
    const valid = rows.filter((i): i is Extract<CheckedRow, { lead: PreparedLead }> => 'lead' in i);
    const region = defaultPhoneRegion();
    const candidates: DuplicateCandidate[] = valid.map(({ lead }) => ({
      uniqueId: randomUUID(),
      data: lead.data,
      phoneNumber: lead.phoneNumber,
      phoneE164: lead.phoneNumber === null ? null : (toE164(lead.phoneNumber, region) ?? null),
      externalKey: lead.externalKey,
    }));
    const rule = target.duplicates;
    // What the duplicate check decided for each valid row (all inserted without a check).
    let decisions: RowDecision[] = candidates.map(() => ({ kind: 'insert' }));
    // The status of each inserted row: New, or the do-not-call list's when its number is listed.
    const statuses = new Map<DuplicateCandidate, DoNotCallStatus | undefined>();
    const results = () => {
      let k = 0;
      return rows
        .map((item) => {
          if (!('lead' in item)) return JSON.stringify({ row: item.row, success: false, errors: item.errors });
          const candidate = candidates[k]!;
          const decision = decisions[k++]!;
          return JSON.stringify(rowResult(item.row, candidate, decision, statuses.get(candidate), rule?.onDuplicate));
        })
        .join(',\n');
    };
    // Nothing to store: no locks to take (the `finally` below lets the next batch go on).
    if (valid.length === 0 && onBatch === undefined) return { ok: true, text: results(), rows: rows.length };
    const trx = await beginTransaction(target.db);
    try {
      if (target.parallel) await trx.raw(`set local lock_timeout = '${PARALLEL_LOCK_TIMEOUT}'`);
      const now = target.clock();
      await before?.locked;
      let updates: ReturnType<typeof decideBatch>['updates'] = [];
      if (rule !== undefined && candidates.length > 0) ({ decisions, updates } = await checkDuplicates(trx, rule, target, candidates, now));
      const inserting = valid.flatMap(({ lead }, i) => (decisions[i]!.kind === 'insert' ? [{ lead, candidate: candidates[i]! }] : []));
      const listed = await doNotCallStatuses(
        trx,
        target.campaign.id,
        inserting.map(({ candidate }) => candidate.phoneNumber),
        now,
      );
      inserting.forEach(({ candidate }, i) => statuses.set(candidate, listed[i]));
      const leadBatch = {
        campaignId: target.campaign.id,
        now,
        userId: target.userId,
        leads: inserting.map(({ lead, candidate }, i) => ({
          uniqueId: candidate.uniqueId,
          poolName: poolNameAt(lead.pool ?? target.pool, now, target.zone),
          status: LeadStatus.toNumber(listed[i] ?? NEW),
          data: candidate.data,
          phoneNumber: candidate.phoneNumber,
          phoneE164: candidate.phoneE164,
          externalKey: candidate.externalKey,
        })),
      };
      await ensureBatchPools(trx, leadBatch, target.scope);
      locked();
      const inserted = await insertLeadBatch(trx, leadBatch, target.scope);
      if (before !== undefined && !(await before.outcome).ok) {
        await trx.rollback();
        return { ok: false };
      }
      if (inserted.kind === 'campaign_unavailable') {
        await trx.rollback();
        return { ok: false, stop: 'campaign_unavailable' };
      }
      // lead.created for each stored lead, in the batch's transaction (no lead without its event).
      await recordLeadEvents(
        trx,
        'lead.created',
        inserted.leads.map((l) => ({ leadId: l.id })),
        now,
      );
      await updateStoredDuplicates(trx, updates, {
        now,
        userId: target.userId,
        campaignId: target.campaign.id,
        entryAccess: target.entryAccess,
      });
      const text = results();
      const last = rows[rows.length - 1]!;
      await onBatch?.(trx, {
        text,
        rows: rows.length,
        rowsBefore: rows[0]!.row - 1,
        lastRow: last.row,
        ...(last.digest !== undefined ? { digest: last.digest } : {}),
      });
      // A client that left gets no acknowledgement: its batch is not committed either.
      if (signal.aborted) {
        await trx.rollback();
        return { ok: false };
      }
      await commitTransaction(trx);
      return { ok: true, text, rows: rows.length };
    } catch (err) {
      if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
      throw err;
    }
  } catch (err) {
    if (err instanceof BulkKeyConflict) return { ok: false, stop: 'key_conflict' };
    if (signal.aborted) return { ok: false, stop: 'failed' };
    // The database went away: the client may send the rest again (the batch was not committed).
    if (isConnectionFailure(err)) {
      target.logger.warn({ err }, 'bulk import: the database went away while storing a batch');
      return { ok: false, stop: 'unavailable' };
    }
    target.logger.error({ err }, 'bulk import: a batch could not be stored');
    return { ok: false, stop: 'failed' };
  } finally {
    locked();
  }
}
