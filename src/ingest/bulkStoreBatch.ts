import type { Knex } from 'knex';
import { LeadStatus, type LeadStatusName } from '../domain/enums';
import type { LeadDataError } from '../domain/leadData';
import type { ImportCampaign } from '../data/leadRepository';
import { ensureBatchPools, insertLeadBatch } from '../data/leadBatches';
import { recordLeadEvents } from '../data/hookEvents';
import { doNotCallStatuses, type DoNotCallStatus } from '../data/doNotCallRepository';
import type { ProjectScope } from '../data/projectScope';
import { poolNameAt } from './leadImportRules';

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
  { ok: true; text: string; rows: number } | { ok: false; stop?: 'campaign_unavailable' | 'key_conflict' | 'failed' };

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
  logger: { error(obj: object, msg?: string): void };
  userId: number;
  scope: ProjectScope;
  campaign: ImportCampaign;
  /** The request's pool (a row may name its own); none: the automatic pool. */
  pool?: string;
  /** Batches may be stored side by side: each then waits for its locks no longer than PARALLEL_LOCK_TIMEOUT. */
  parallel: boolean;
  /** The client's abort: a batch of a client that left is rolled back unless its commit began. */
  signal: AbortSignal;
  onBatch?: BatchHook;
}

const NEW: LeadStatusName = 'New';
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
    // The status of each valid row: New, or the do-not-call list's when its number is listed.
    let statuses: (DoNotCallStatus | undefined)[] = [];
    const results = (leads: { uniqueId: string }[]) => {
      let k = 0;
      return rows
        .map((item) =>
          'lead' in item
            ? JSON.stringify({ row: item.row, success: true, uniqueId: leads[k]!.uniqueId, status: statuses[k++] ?? NEW })
            : JSON.stringify({ row: item.row, success: false, errors: item.errors }),
        )
        .join(',\n');
    };
    // Nothing to store: no locks to take (the `finally` below lets the next batch go on).
    if (valid.length === 0 && onBatch === undefined) return { ok: true, text: results([]), rows: rows.length };
    const trx = await target.db.transaction();
    try {
      if (target.parallel) await trx.raw(`set local lock_timeout = '${PARALLEL_LOCK_TIMEOUT}'`);
      const now = target.clock();
      await before?.locked;
      statuses = await doNotCallStatuses(
        trx,
        target.campaign.id,
        valid.map(({ lead }) => lead.phoneNumber),
        now,
      );
      const leadBatch = {
        campaignId: target.campaign.id,
        now,
        userId: target.userId,
        leads: valid.map(({ lead }, i) => ({
          poolName: poolNameAt(lead.pool ?? target.pool, now, target.zone),
          status: LeadStatus.toNumber(statuses[i] ?? NEW),
          data: lead.data,
          phoneNumber: lead.phoneNumber,
          externalKey: lead.externalKey,
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
      const stored = inserted.leads;
      // lead.created for each stored lead, in the batch's transaction (no lead without its event).
      await recordLeadEvents(
        trx,
        'lead.created',
        stored.map((l) => ({ leadId: l.id })),
        now,
      );
      const text = results(stored);
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
      await trx.commit();
      return { ok: true, text, rows: rows.length };
    } catch (err) {
      if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
      throw err;
    }
  } catch (err) {
    if (err instanceof BulkKeyConflict) return { ok: false, stop: 'key_conflict' };
    if (!signal.aborted) target.logger.error({ err }, 'bulk import: a batch could not be stored');
    return { ok: false, stop: 'failed' };
  } finally {
    locked();
  }
}
