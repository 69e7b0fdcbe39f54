import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { LeadStatus, LeadStatusName } from '../domain/enums';
import type { EntryAccessName } from '../domain/enums';
import { canSeeField, LeadDataError, leadDataMapper, MappedLeadData } from '../domain/leadData';
import { parseBulkRow, unreadableRow } from '../domain/bulkRows';
import type { ImportCampaign } from '../data/leadRepository';
import { ensureBatchPools, insertLeadBatch } from '../data/leadBatches';
import { hasSpareConnections } from '../data/db';
import { recordLeadEvents } from '../data/hookEvents';
import { doNotCallStatuses, DoNotCallStatus } from '../data/doNotCallRepository';
import type { ProjectScope } from '../data/projectScope';
import {
  BodyIdleError,
  BodyReader,
  BodyRecord,
  BodyTooLargeError,
  csvRecords,
  decodeText,
  jsonArrayRecords,
  MalformedBodyError,
  ndjsonRecords,
} from '../streams/bodyRecords';
import { isUtf8 } from '../streams/encoding';
import { poolNameAt } from './leadImportRules';
import { countedStatusNumbers, duplicateField, duplicateMessage, DuplicateRule, windowStart } from '../domain/duplicates';
import { toE164 } from '../domain/phoneNumber';
import { defaultPhoneRegion } from '../config/platform';
import { findStoredDuplicates, lockDuplicateKeys, updateStoredDuplicates, StoredDuplicate } from '../data/duplicateLookup';
import { CheckedRow, decideBatch, RowDecision, rowKeys } from './bulkDuplicates';

/**
 * Bulk import (docs/decisions.md, Bulk import): the rows of one request body are read as they
 * arrive, checked one by one with the single import's rules, and stored in batches (one
 * transaction per batch). The import yields the results of each batch only after the batch is
 * committed, so every result a client receives is a stored row; a batch whose results are
 * never asked for (the client left) is rolled back instead of committed where still possible.
 *
 * Backpressure: the next batch is prepared while one is committed; nothing more is read until
 * the consumer takes the committed results. So a slow reader of the answer slows the reading
 * of the body, and memory holds at most two batches.
 */

export type BulkFormat = 'json' | 'ndjson' | 'csv';

export interface BulkBody {
  reader: BodyReader;
  format: BulkFormat;
  /** Character encoding of the body (iconv-lite name). */
  encoding: string;
  /** CSV field separator. */
  separator: string;
}

export interface BulkImportDeps {
  db: Knex;
  /** The moment of each batch's insert decides its automatic pool. */
  clock: () => Date;
  zone: string;
  logger: { error(obj: object, msg?: string): void };
}

export interface BulkImportOptions {
  /** Rows per batch (per transaction). */
  batchSize: number;
  /** A partial batch is stored once the body has been quiet this long. */
  maxBatchDelayMs: number;
  /** Largest row in UTF-8 bytes, in any format (BULK_ROW_MAX_BYTES); a larger one fails alone. */
  maxRowBytes: number;
  /** Batches stored side by side at most (each in a transaction and connection of its own). */
  parallelBatches: number;
  /** Largest lead value in UTF-8 bytes (LEAD_VALUE_MAX_BYTES); a row holding a larger one fails. */
  maxValueBytes: number;
}

export interface BulkImporter {
  userId: number;
  scope: ProjectScope;
  /** Fields above it are treated as fields the lead definition does not have. */
  entryAccess: EntryAccessName;
}

export interface BulkImportRequest {
  campaign: ImportCampaign;
  /** The request's pool (a row may name its own); none: the automatic pool. */
  pool?: string;
  /** The duplicate check (the request's parameters over the campaign's defaults); none: every valid row is stored. */
  duplicates?: DuplicateRule;
}

/** Why the import ended before the end of the body. `rows`: how many rows were answered. */
export type BulkStop =
  | { reason: 'malformed'; message: string; rows: number }
  | { reason: 'too_large'; limit: number; rows: number }
  | { reason: 'idle'; idleMs: number; rows: number }
  /** CSV header names that are not fields of the lead definition (only ever before the first row). */
  | { reason: 'header'; errors: LeadDataError[]; rows: number }
  | { reason: 'campaign_unavailable'; rows: number }
  /** Another request with the same Idempotency-Key stored rows, or the rows differ from its. */
  | { reason: 'key_conflict'; rows: number }
  | { reason: 'failed'; rows: number };

export type BulkPiece =
  /** The results of a committed batch: JSON objects joined by ",\n", one per row in order. */
  { kind: 'results'; text: string; rows: number } | { kind: 'stopped'; stop: BulkStop };

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

/** A running digest of the rows read: each record, then how the body ended. */
export interface RowDigest {
  add(entry: unknown): void;
  readonly digest: string;
}

/**
 * Resuming under an Idempotency-Key: every record goes into `chain`; rows 1..skipRows were
 * stored by an earlier request and are only checked (the digest after row skipRows must be
 * `prefixDigest`), not stored again.
 */
export interface RowTracking {
  chain: RowDigest;
  skipRows: number;
  prefixDigest?: string;
}

interface PreparedLead {
  data: Record<string, string>;
  phoneNumber: string | null;
  externalKey: string | null;
  pool?: string;
}

type RowItem = ({ row: number; lead: PreparedLead } | { row: number; errors: LeadDataError[] }) & { digest?: string };
type StopItem = { stop: BulkStop };

class HeaderRefused extends Error {
  constructor(readonly errors: LeadDataError[]) {
    super('the CSV header names columns that are not fields of the lead definition');
  }
}

function bodyRecords(
  body: BulkBody,
  campaign: ImportCampaign,
  entryAccess: EntryAccessName,
  options: BulkImportOptions,
): AsyncIterable<BodyRecord> {
  const bytes = body.reader.chunks();
  const utf8 = isUtf8(body.encoding);
  switch (body.format) {
    case 'json':
      return utf8
        ? jsonArrayRecords(bytes, options.maxRowBytes)
        : jsonArrayRecords(decodeText(bytes, body.encoding), options.maxRowBytes, body.encoding);
    case 'ndjson':
      return ndjsonRecords(decodeText(bytes, body.encoding), options.maxRowBytes);
    case 'csv':
      return csvRecords(decodeText(bytes, body.encoding), {
        separator: body.separator,
        maxRowBytes: options.maxRowBytes,
        onHeader: (names) => {
          const known = new Set(
            campaign.fields
              .filter((f) => canSeeField(entryAccess, f.access))
              .flatMap((f) => [f.name.toLowerCase(), ...(f.importName ? [f.importName.toLowerCase()] : [])]),
          );
          const unknown = names.filter((n) => !known.has(n.toLowerCase()));
          if (unknown.length > 0) {
            throw new HeaderRefused(unknown.map((field) => ({ field, message: "is not a field of the campaign's lead definition" })));
          }
        },
      });
  }
}

/**
 * Numbers the records and checks each row; ends with a stop item when the body broke. With a
 * chain, each record (a broken one as a marker: parser messages may depend on how the body
 * was cut into chunks) and then the end go into it.
 */
async function* rowItems(
  records: AsyncIterable<BodyRecord>,
  request: BulkImportRequest,
  mapping: { zone: string; entryAccess: EntryAccessName; maxValueBytes: number },
  chain?: RowDigest,
): AsyncGenerator<RowItem | StopItem> {
  const mapData = leadDataMapper(request.campaign.fields, mapping.zone, mapping.entryAccess);
  let row = 0;
  const withDigest = (item: RowItem): RowItem => {
    if (chain) item.digest = chain.digest;
    return item;
  };
  let stop: BulkStop | undefined;
  try {
    for await (const record of records) {
      row++;
      chain?.add(record);
      if ('invalid' in record) {
        yield withDigest({ row, errors: unreadableRow(record.invalid) });
        continue;
      }
      yield withDigest(prepareRow(row, record.value, request, mapData, mapping.maxValueBytes));
    }
  } catch (err) {
    if (err instanceof MalformedBodyError) {
      if (err.inRecord) {
        row++;
        chain?.add({ broken: true });
        yield withDigest({ row, errors: unreadableRow(err.message) });
      }
      stop = { reason: 'malformed', message: err.message, rows: row };
    } else if (err instanceof BodyTooLargeError) {
      stop = { reason: 'too_large', limit: err.limit, rows: row };
    } else if (err instanceof BodyIdleError) {
      stop = { reason: 'idle', idleMs: err.idleMs, rows: row };
    } else if (err instanceof HeaderRefused) {
      stop = { reason: 'header', errors: err.errors, rows: row };
    } else {
      throw err;
    }
  }
  chain?.add({ end: stop?.reason ?? 'end', rows: row });
  if (stop) yield { stop };
}

/**
 * Leaves out rows 1..skipRows (stored by an earlier request with the same key) once the body
 * proved to hold the same rows there; a body that differs, or ends before, is a key_conflict.
 */
async function* afterPrefix(items: AsyncIterable<RowItem | StopItem>, tracking: RowTracking): AsyncGenerator<RowItem | StopItem> {
  const { skipRows, prefixDigest } = tracking;
  const conflict: StopItem = { stop: { reason: 'key_conflict', rows: 0 } };
  let passed = skipRows === 0;
  for await (const item of items) {
    if ('stop' in item) {
      yield passed ? item : conflict;
      return;
    }
    if (item.row > skipRows) {
      yield item;
      continue;
    }
    if (item.row === skipRows) {
      if (prefixDigest !== undefined && item.digest !== prefixDigest) {
        yield conflict;
        return;
      }
      passed = true;
    }
  }
  if (!passed) yield conflict;
}

/**
 * Reads a whole body into `chain` without storing anything: whether a retry under a finished
 * Idempotency-Key sends the same request.
 */
export async function readBulkBody(
  deps: Pick<BulkImportDeps, 'zone'>,
  importer: Pick<BulkImporter, 'entryAccess'>,
  request: BulkImportRequest,
  body: BulkBody,
  options: BulkImportOptions,
  chain: RowDigest,
): Promise<void> {
  const { entryAccess } = importer;
  const records = bodyRecords(body, request.campaign, entryAccess, options);
  for await (const _ of rowItems(records, request, { zone: deps.zone, entryAccess, maxValueBytes: options.maxValueBytes }, chain));
}

function prepareRow(
  row: number,
  value: unknown,
  request: BulkImportRequest,
  mapData: (input: Record<string, string>) => MappedLeadData,
  maxValueBytes: number,
): RowItem {
  const parsed = parseBulkRow(value, maxValueBytes);
  if (!parsed.ok) return { row, errors: parsed.errors };
  const { input } = parsed;
  if (input.campaignCode !== undefined && input.campaignCode !== request.campaign.code) {
    return { row, errors: [{ field: 'CampaignCode', message: `must be the request's CampaignCode (${request.campaign.code})` }] };
  }
  const mapped = mapData(input.data);
  if (mapped.errors.length > 0) return { row, errors: mapped.errors };
  return {
    row,
    lead: {
      data: mapped.data,
      phoneNumber: mapped.phoneNumber,
      externalKey: mapped.externalKey,
      ...(input.pool !== undefined ? { pool: input.pool } : {}),
    },
  };
}

const NEW: LeadStatusName = 'New';

const SCOPES = { Campaign: 'campaign', Project: 'project', Account: 'account' } as const;

/** A valid row's result: stored (with its status), or what the duplicate check made of it. */
function rowResult(
  row: number,
  checked: CheckedRow,
  decision: RowDecision,
  status: DoNotCallStatus | undefined,
  onDuplicate: DuplicateRule['onDuplicate'] | undefined,
): object {
  switch (decision.kind) {
    case 'insert':
      return { row, success: true, uniqueId: checked.uniqueId, status: status ?? NEW };
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

type Committed = { ok: true; text: string; rows: number } | { ok: false; stop?: 'campaign_unavailable' | 'key_conflict' | 'failed' };
type Pulled = { done: true } | { done: false; item: RowItem | StopItem } | { error: unknown };
type Wake = { kind: 'pulled'; pulled: Pulled } | { kind: 'committed'; committed: Committed } | { kind: 'tick' } | { kind: 'aborted' };
/** A batch being stored: `locked` once it holds its locks (or gave up), `outcome` once it committed or not. */
type Flight = { locked: Promise<void>; outcome: Promise<Committed> };
/** How long a batch stored beside another waits for a lock (see `store` in runBulkImport). */
const PARALLEL_LOCK_TIMEOUT = '10s';

/**
 * Runs one bulk import, yielding the results of each committed batch and, when the body broke
 * or a batch could not be stored, a final stop. Stops (returns) when `signal` aborts: the
 * batch in flight is then rolled back unless its commit had already begun.
 */
export async function* runBulkImport(
  deps: BulkImportDeps,
  importer: BulkImporter,
  request: BulkImportRequest,
  body: BulkBody,
  options: BulkImportOptions,
  signal: AbortSignal,
  onBatch?: BatchHook,
  tracking?: RowTracking,
): AsyncGenerator<BulkPiece> {
  const { entryAccess } = importer;
  const mapping = { zone: deps.zone, entryAccess, maxValueBytes: options.maxValueBytes };
  const items = rowItems(bodyRecords(body, request.campaign, entryAccess, options), request, mapping, tracking?.chain);
  const source = tracking ? afterPrefix(items, tracking) : items;
  const pull = (): Promise<Pulled> =>
    source.next().then(
      (r): Pulled => (r.done ? { done: true } : { done: false, item: r.value }),
      (error: unknown): Pulled => ({ error }),
    );
  // A wait for the abort, made afresh for each wait of the loop below and dropped after it: a
  // single promise raced again and again would keep every race's outcome (each row read) until
  // the request ends, as memory growing with the body.
  const abortWait = (): { wake: Promise<Wake>; drop(): void } => {
    let listener: (() => void) | undefined;
    const wake = new Promise<Wake>((resolve) => {
      listener = () => resolve({ kind: 'aborted' });
      signal.addEventListener('abort', listener, { once: true });
    });
    return { wake, drop: () => signal.removeEventListener('abort', listener!) };
  };

  const rule = request.duplicates;
  const statusNumbers = rule === undefined ? undefined : countedStatusNumbers(rule);
  const since = (now: Date): { since?: Date } => {
    const start = rule === undefined ? undefined : windowStart(rule, now, deps.zone);
    return start === undefined ? {} : { since: start };
  };

  // Rows numbers go on after the rows an earlier request with the same key stored.
  let answered = tracking?.skipRows ?? 0;
  let batch: RowItem[] = [];
  let batchStarted = 0;
  let pending: Promise<Pulled> | undefined;
  /** Batches being stored, oldest first; their results are yielded in this order. */
  const flights: Flight[] = [];
  let ended = false;
  let stop: BulkStop | undefined;

  /**
   * Stores one batch in a transaction of its own. With a batch before it still in flight, the
   * expensive part (the insert) runs beside that batch's, and everything that must keep input
   * order waits for it: the locks (the do-not-call lists' and new pools', taken after the
   * earlier batch took its own), then the events, the idempotency record and the commit (only
   * once the earlier batch committed; rolled back if it did not). Every wait is on the batch
   * before, so two batches never wait on each other; a lock wait that other work turns into a
   * cycle anyway ends at lock_timeout (the import stops) instead of hanging.
   */
  const store = async (items: RowItem[], before: Flight | undefined, locked: () => void): Promise<Committed> => {
    try {
      const valid = items.filter((i): i is Extract<RowItem, { lead: PreparedLead }> => 'lead' in i);
      const region = defaultPhoneRegion();
      const checked: CheckedRow[] = valid.map(({ lead }) => ({
        uniqueId: randomUUID(),
        data: lead.data,
        phoneNumber: lead.phoneNumber,
        phoneE164: lead.phoneNumber === null ? null : (toE164(lead.phoneNumber, region) ?? null),
        externalKey: lead.externalKey,
      }));
      // What the duplicate check decided for each valid row (all inserted without a check).
      let decisions: RowDecision[] = checked.map(() => ({ kind: 'insert' }));
      // The status of each inserted row: New, or the do-not-call list's when its number is listed.
      const statuses = new Map<CheckedRow, DoNotCallStatus | undefined>();
      const results = () => {
        let k = 0;
        return items
          .map((item) => {
            if (!('lead' in item)) return JSON.stringify({ row: item.row, success: false, errors: item.errors });
            const row = checked[k]!;
            const decision = decisions[k++]!;
            return JSON.stringify(rowResult(item.row, row, decision, statuses.get(row), rule?.onDuplicate));
          })
          .join(',\n');
      };
      // Nothing to store: no locks to take (the `finally` below lets the next batch go on).
      if (valid.length === 0 && onBatch === undefined) return { ok: true, text: results(), rows: items.length };
      const trx = await deps.db.transaction();
      try {
        if (options.parallelBatches > 1) await trx.raw(`set local lock_timeout = '${PARALLEL_LOCK_TIMEOUT}'`);
        const now = deps.clock();
        await before?.locked;
        let updates: Parameters<typeof updateStoredDuplicates>[1] = [];
        if (rule !== undefined && checked.length > 0) {
          // The same locks and lookup as the single import, before the do-not-call lock as there.
          const keys = checked.map((row) => rowKeys(rule, row));
          await lockDuplicateKeys(trx, keys);
          const stored: (StoredDuplicate | undefined)[] = await findStoredDuplicates(
            trx,
            { scope: SCOPES[rule.check], ...since(now), ...(statusNumbers !== undefined ? { statuses: statusNumbers } : {}) },
            request.campaign,
            importer.scope.likePatterns,
            keys,
          );
          ({ decisions, updates } = decideBatch(rule, request.campaign, checked, stored));
        }
        const inserting = valid.flatMap(({ lead }, i) => (decisions[i]!.kind === 'insert' ? [{ lead, row: checked[i]! }] : []));
        const listed = await doNotCallStatuses(
          trx,
          request.campaign.id,
          inserting.map(({ row }) => row.phoneNumber),
          now,
        );
        inserting.forEach(({ row }, i) => statuses.set(row, listed[i]));
        const leadBatch = {
          campaignId: request.campaign.id,
          now,
          userId: importer.userId,
          leads: inserting.map(({ lead, row }, i) => ({
            uniqueId: row.uniqueId,
            poolName: poolNameAt(lead.pool ?? request.pool, now, deps.zone),
            status: LeadStatus.toNumber(listed[i] ?? NEW),
            data: row.data,
            phoneNumber: row.phoneNumber,
            phoneE164: row.phoneE164,
            externalKey: row.externalKey,
          })),
        };
        await ensureBatchPools(trx, leadBatch, importer.scope);
        locked();
        const inserted = await insertLeadBatch(trx, leadBatch, importer.scope);
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
        await updateStoredDuplicates(trx, updates, { now, userId: importer.userId });
        const text = results();
        const last = items[items.length - 1]!;
        await onBatch?.(trx, {
          text,
          rows: items.length,
          rowsBefore: items[0]!.row - 1,
          lastRow: last.row,
          ...(last.digest !== undefined ? { digest: last.digest } : {}),
        });
        // A client that left gets no acknowledgement: its batch is not committed either.
        if (signal.aborted) {
          await trx.rollback();
          return { ok: false };
        }
        await trx.commit();
        return { ok: true, text, rows: items.length };
      } catch (err) {
        if (!trx.isCompleted()) await trx.rollback().catch(() => undefined);
        throw err;
      }
    } catch (err) {
      if (err instanceof BulkKeyConflict) return { ok: false, stop: 'key_conflict' };
      if (!signal.aborted) deps.logger.error({ err }, 'bulk import: a batch could not be stored');
      return { ok: false, stop: 'failed' };
    } finally {
      locked();
    }
  };

  const launch = (items: RowItem[]): void => {
    let markLocked!: () => void;
    const locked = new Promise<void>((resolve) => (markLocked = resolve));
    flights.push({ locked, outcome: store(items, flights[flights.length - 1], markLocked) });
  };

  // A second batch goes to Postgres beside the first only when the pool has connections to
  // spare (one for it and one for everyone else): never wait for a connection while holding one.
  const mayLaunch = (): boolean => flights.length === 0 || (flights.length < options.parallelBatches && hasSpareConnections(deps.db, 2));

  try {
    for (;;) {
      if (signal.aborted) return;
      const full = batch.length >= options.batchSize;
      if (batch.length > 0 && (full || ended || Date.now() - batchStarted >= options.maxBatchDelayMs) && mayLaunch()) {
        launch(batch);
        batch = [];
        continue;
      }
      if (ended && flights.length === 0) break;

      const abort = abortWait();
      const waits: Promise<Wake>[] = [abort.wake];
      if (!ended && !full) {
        pending ??= pull();
        waits.push(pending.then((pulled): Wake => ({ kind: 'pulled', pulled })));
      }
      let timer: NodeJS.Timeout | undefined;
      if (flights.length > 0) {
        waits.push(flights[0]!.outcome.then((committed): Wake => ({ kind: 'committed', committed })));
      } else if (batch.length > 0) {
        const wait = Math.max(0, batchStarted + options.maxBatchDelayMs - Date.now());
        waits.push(new Promise<Wake>((resolve) => (timer = setTimeout(() => resolve({ kind: 'tick' }), wait))));
      }
      const wake = await Promise.race(waits);
      abort.drop();
      if (timer !== undefined) clearTimeout(timer);

      if (wake.kind === 'aborted') return;
      if (wake.kind === 'committed') {
        flights.shift();
        const c = wake.committed;
        if (!c.ok) {
          if (c.stop) stop = { reason: c.stop, rows: answered };
          break;
        }
        answered += c.rows;
        yield { kind: 'results', text: c.text, rows: c.rows };
        continue;
      }
      if (wake.kind === 'pulled') {
        pending = undefined;
        const p = wake.pulled;
        if ('error' in p) {
          if (signal.aborted) return;
          throw p.error;
        }
        if (p.done) {
          ended = true;
          continue;
        }
        if ('stop' in p.item) {
          stop = p.item.stop;
          ended = true;
          continue;
        }
        if (batch.length === 0) batchStarted = Date.now();
        batch.push(p.item);
      }
    }
    if (stop !== undefined) yield { kind: 'stopped', stop };
  } finally {
    // Stop reading the body (without waiting for a row that may never come), and let the
    // batches in flight finish: committed, or rolled back when the client left or one before
    // them failed.
    void source.return(undefined).catch(() => undefined);
    for (const flight of flights) await flight.outcome;
  }
}
