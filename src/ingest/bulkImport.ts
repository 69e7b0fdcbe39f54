import type { Knex } from 'knex';
import type { EntryAccessName } from '../domain/enums';
import { canSeeField, LeadDataError, leadDataMapper, MappedLeadData } from '../domain/leadData';
import { parseBulkRow, UNDECODABLE_MESSAGE, unreadableRow } from '../domain/bulkRows';
import type { ImportCampaign } from '../data/leadRepository';
import { hasSpareConnections } from '../data/db';
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
  UndecodableHeaderError,
} from '../streams/bodyRecords';
import { isUtf8 } from '../streams/encoding';
import { INVALID_BYTE } from '../streams/utf8Text';
import type { DuplicateRule } from '../domain/duplicates';
import { batchesOf } from '../streams/batches';
import { BoundedWork } from '../streams/boundedWork';
import { storeBatch, type BatchHook, type BatchInFlight, type BatchTarget, type CheckedRow, type StoredBatch } from './bulkStoreBatch';

/**
 * Bulk import (docs/decisions.md, Bulk import), a pipeline of four stages: the rows of one
 * request body are read as they arrive (rowItems), checked one by one with the single import's
 * rules, grouped into batches (batchesOf), and each batch stored by storeBatch in a transaction
 * of its own, at most BULK_PARALLEL_BATCHES at once (storeInOrder, through BoundedWork). The
 * import yields the results of each batch only after the batch is committed, and in body
 * order, so every result a client receives is a stored row; a batch whose results are never
 * asked for (the client left) is rolled back instead of committed where still possible.
 *
 * Backpressure: one batch is prepared while the others are stored; nothing more is read until
 * the consumer takes the committed results. So a slow reader of the answer slows the reading
 * of the body, and memory holds at most BULK_PARALLEL_BATCHES + 1 batches.
 */

export type BulkFormat = 'json' | 'ndjson' | 'csv';

interface BulkBody {
  reader: BodyReader;
  format: BulkFormat;
  /** Character encoding of the body (iconv-lite name). */
  encoding: string;
  /** CSV field separator. */
  separator: string;
}

interface BulkImportDeps {
  db: Knex;
  /** The moment of each batch's insert decides its automatic pool. */
  clock: () => Date;
  zone: string;
  logger: { error(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };
}

interface BulkImportOptions {
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

interface BulkImportRequest {
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
  /**
   * CSV header names that are not fields of the lead definition, or (`undecodableIn`, the body's
   * encoding) that hold bytes not valid in it (only ever before the first row).
   */
  | { reason: 'header'; errors: LeadDataError[]; rows: number; undecodableIn?: string }
  | { reason: 'campaign_unavailable'; rows: number }
  /** Another request with the same Idempotency-Key stored rows, or the rows differ from its. */
  | { reason: 'key_conflict'; rows: number }
  /** The database could not be reached while storing a batch (nothing of it was stored). */
  | { reason: 'unavailable'; rows: number }
  | { reason: 'failed'; rows: number };

export type BulkPiece =
  /** The results of a committed batch: JSON objects joined by ",\n", one per row in order. */
  { kind: 'results'; text: string; rows: number } | { kind: 'stopped'; stop: BulkStop };

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
interface RowTracking {
  chain: RowDigest;
  skipRows: number;
  prefixDigest?: string;
}

type RowItem = CheckedRow;
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
  mapping: { zone: string; entryAccess: EntryAccessName; maxValueBytes: number; encoding: string },
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
    } else if (err instanceof UndecodableHeaderError) {
      const errors = err.columns.map((field) => ({ field, message: UNDECODABLE_MESSAGE }));
      stop = { reason: 'header', errors, rows: row, undecodableIn: mapping.encoding };
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
export async function readBulkBody(run: BodyReading, chain: RowDigest): Promise<void> {
  for await (const _ of rowItemsOf(run, chain));
}

/** What reading a body's rows needs of an import run. */
type BodyReading = { deps: Pick<BulkImportDeps, 'zone'>; importer: Pick<BulkImporter, 'entryAccess'> } & Pick<
  BulkImportRun,
  'request' | 'body' | 'options'
>;

/** The body's rows checked with the single import's rules, and the stop that ends them early. */
function rowItemsOf(run: BodyReading, chain?: RowDigest): AsyncGenerator<RowItem | StopItem> {
  const { deps, request, body, options } = run;
  const { entryAccess } = run.importer;
  const mapping = { zone: deps.zone, entryAccess, maxValueBytes: options.maxValueBytes, encoding: body.encoding };
  return rowItems(bodyRecords(body, request.campaign, entryAccess, options), request, mapping, chain);
}

function prepareRow(
  row: number,
  value: unknown,
  request: BulkImportRequest,
  mapData: (input: Record<string, string>) => MappedLeadData,
  maxValueBytes: number,
): RowItem {
  const parsed = parseBulkRow(value, { maxValueBytes, undecodable: INVALID_BYTE });
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

/** One bulk import: who imports what, from which body, with which limits. */
export interface BulkImportRun {
  deps: BulkImportDeps;
  importer: BulkImporter;
  request: BulkImportRequest;
  body: BulkBody;
  options: BulkImportOptions;
  /** The client's abort: the import stops, and a batch not yet committing is rolled back. */
  signal: AbortSignal;
  /** Writes of the caller's own in each batch's transaction (the idempotency record). */
  onBatch?: BatchHook;
  /** Resuming under an Idempotency-Key. */
  tracking?: RowTracking;
}

/**
 * Runs one bulk import, yielding the results of each committed batch and, when the body broke
 * or a batch could not be stored, a final stop. Stops (returns) when `signal` aborts: the
 * batch in flight is then rolled back unless its commit had already begun.
 */
export async function* runBulkImport(run: BulkImportRun): AsyncGenerator<BulkPiece> {
  const { deps, importer, request, options, signal, tracking } = run;
  const items = rowItemsOf(run, tracking?.chain);
  let stop: BulkStop | undefined;
  const rows = untilStop(tracking ? afterPrefix(items, tracking) : items, (s) => (stop = s));
  const batches = batchesOf(rows, options.batchSize, options.maxBatchDelayMs);
  const target: BatchTarget = {
    ...deps,
    userId: importer.userId,
    entryAccess: importer.entryAccess,
    scope: importer.scope,
    campaign: request.campaign,
    ...(request.pool !== undefined ? { pool: request.pool } : {}),
    ...(request.duplicates !== undefined ? { duplicates: request.duplicates } : {}),
    parallel: options.parallelBatches > 1,
    signal,
    ...(run.onBatch ? { onBatch: run.onBatch } : {}),
  };
  // Rows numbers go on after the rows an earlier request with the same key stored.
  let answered = tracking?.skipRows ?? 0;
  try {
    for await (const stored of storeInOrder(batches, target, options.parallelBatches)) {
      if (!stored.ok) {
        if (stored.stop) stop = { reason: stored.stop, rows: answered };
        break;
      }
      answered += stored.rows;
      yield { kind: 'results', text: stored.text, rows: stored.rows };
    }
  } catch (err) {
    // The body fails to read once its client has gone: nothing to tell anyone.
    if (signal.aborted) return;
    throw err;
  }
  if (signal.aborted) return;
  if (stop !== undefined) yield { kind: 'stopped', stop };
}

/** The rows of `items`; a stop item ends them and goes to `onStop`. */
async function* untilStop(items: AsyncIterable<RowItem | StopItem>, onStop: (stop: BulkStop) => void): AsyncGenerator<RowItem> {
  for await (const item of items) {
    if ('stop' in item) {
      onStop(item.stop);
      return;
    }
    yield item;
  }
}

/**
 * Stores each batch as it comes, at most `parallel` at once (BoundedWork runs them in arrival
 * order; one more batch, the one prepared meanwhile, may wait for a slot), and yields their
 * outcomes in batch order, each as soon as it and those before it are known. Ends after the
 * first batch that was not committed, when the batches end, or at once when the client leaves;
 * either way only after every batch in flight has finished.
 */
async function* storeInOrder(batches: AsyncGenerator<RowItem[]>, target: BatchTarget, parallel: number): AsyncGenerator<StoredBatch> {
  const { db, signal } = target;
  const work = new BoundedWork(parallel, 1);
  /** Batches launched, oldest first: stored or waiting for a slot. */
  const flights: BatchInFlight[] = [];
  let next: Promise<IteratorResult<RowItem[]>> | undefined;
  let ended = false;

  const launch = (rows: RowItem[]): void => {
    const earlier = [...flights];
    const before = earlier[earlier.length - 1];
    let markLocked!: () => void;
    const locked = new Promise<void>((resolve) => (markLocked = resolve));
    const outcome = work
      .run(async (): Promise<StoredBatch> => {
        if (signal.aborted) return { ok: false };
        // Beside the batches before it only when the pool has connections to spare (one for it
        // and one for everyone else): never wait for a connection while holding one.
        if (earlier.length > 0 && !hasSpareConnections(db, 2)) await Promise.all(earlier.map((f) => f.outcome));
        return storeBatch(rows, target, { before, locked: markLocked });
      })
      .finally(markLocked);
    flights.push({ locked, outcome });
  };

  try {
    for (;;) {
      const mayTake = !ended && flights.length <= parallel;
      if (mayTake) next ??= batches.next();
      else if (flights.length === 0) return;
      const wake = await unlessAborted<{ batch: IteratorResult<RowItem[]> } | { stored: StoredBatch }>(signal, [
        ...(mayTake ? [next!.then((batch) => ({ batch }))] : []),
        ...(flights.length > 0 ? [flights[0]!.outcome.then((stored) => ({ stored }))] : []),
      ]);
      if (wake === undefined) return;
      if ('batch' in wake) {
        next = undefined;
        if (wake.batch.done) ended = true;
        else launch(wake.batch.value);
        continue;
      }
      flights.shift();
      yield wake.stored;
      if (!wake.stored.ok) return;
    }
  } finally {
    // Stop reading the body (without waiting for a row that may never come), and let the
    // batches in flight finish: committed, or rolled back when the client left or one before
    // them failed.
    void batches.return(undefined).catch(() => undefined);
    for (const flight of flights) await flight.outcome;
  }
}

/**
 * The first of `waits` to settle, or undefined once `signal` aborts. The abort listener is made
 * for this wait and dropped after it: one promise raced again and again would keep every
 * race's outcome until the request ends, as memory growing with the body.
 */
async function unlessAborted<T>(signal: AbortSignal, waits: Promise<T>[]): Promise<T | undefined> {
  let listener: (() => void) | undefined;
  const aborted = new Promise<undefined>((resolve) => {
    listener = () => resolve(undefined);
    if (signal.aborted) resolve(undefined);
    else signal.addEventListener('abort', listener, { once: true });
  });
  try {
    // Raced even when the signal has aborted already: the race is what handles a wait that
    // rejects later (the body's read, failing with the client's `aborted`), which left
    // unhandled would end the process.
    return await Promise.race([aborted, ...waits]);
  } finally {
    signal.removeEventListener('abort', listener!);
  }
}
