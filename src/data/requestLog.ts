import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { openCursor, CursorOptions } from './cursorStream';
import { isAcquireTimeout, withConnection } from './db';
import { isConnectionFailure } from './readSource';
import { copyChunks, copyEscape, copyTimestamp } from './copyIn';
import type { RequestLogRow } from '../domain/requestLog';

/**
 * The account's request log (docs/decisions.md, "The account's request log"): entries are
 * collected in memory by RequestLogWriter and written in batches, one COPY each, off the
 * request path; readers stream one account's entries of a time window.
 */

/** An entry as it is collected: the row read back, with its account and an address that may be unknown. */
export interface RequestLogEntry extends Omit<RequestLogRow, 'clientAddress'> {
  accountId: number;
  clientAddress: string | undefined;
}

/** Why entries were not written: the pending entries were at their cap, or Postgres refused the batch itself. */
type RequestLogDropReason = 'overflow' | 'rejected';

export interface RequestLogWriterOptions {
  flushMs: number;
  /** Entries held at most (waiting or being written); newer ones are dropped past this. */
  maxPending: number;
  /** Entries per statement. */
  batchSize?: number;
}

interface RequestLogEvents {
  /** Entries that will not be written, and why. */
  dropped: [reason: RequestLogDropReason, entries: number];
  /** Postgres could not be reached for a batch (true) or could again (false); told once per change. */
  unreachable: [down: boolean, err?: unknown];
}

/** The columns a batch is copied into, in the order of a line's values (copyLine). */
const COLUMNS = [
  'account_id',
  'time',
  'request_id',
  'method',
  'path',
  'service',
  'status',
  'weight',
  'duration_ms',
  'bytes_sent',
  'client_address',
] as const;

/**
 * An entry as a line of COPY text format; an unknown client address is NULL. The request id
 * (letters, digits, `_`, `.`, `-` or a UUID), the method (an HTTP token) and the service (the
 * API's own name) cannot hold a tab, newline or backslash: only path and address are escaped.
 * The duration goes to the microsecond: the column is a `real`, and the shortest text of a
 * double with all its digits takes several times as long to make.
 */
function copyLine(e: RequestLogEntry): string {
  const address = e.clientAddress === undefined ? '\\N' : copyEscape(e.clientAddress);
  return `${e.accountId}\t${copyTimestamp(e.time)}\t${e.requestId}\t${e.method}\t${copyEscape(e.path)}\t${e.service}\t${e.status}\t${e.weight}\t${Math.round(e.durationMs * 1000) / 1000}\t${e.bytesSent}\t${address}\n`;
}

/**
 * A batch of entries as the COPY text it will be sent as, encoded when each entry is taken:
 * entries waiting for their write are bytes outside the JavaScript heap, which the garbage
 * collector neither traces nor moves, rather than an object each.
 */
interface PendingBatch {
  text: Buffer;
  /** Bytes of `text` used. */
  bytes: number;
  entries: number;
  /** Taken for a write: later entries go to a new batch. */
  sealed: boolean;
}

/**
 * The sizes of a batch's buffer (an entry is about 150 bytes): twice the last batch's bytes
 * within these bounds, so a quiet server keeps small buffers and a busy one fills a few large ones.
 */
const MIN_BATCH_BYTES = 16 * 1024;
const MAX_BATCH_BYTES = 512 * 1024;

/**
 * Collects entries and writes them every `flushMs` in batches. While Postgres cannot be reached
 * the entries stay pending and are written when it is back; memory stays bounded by
 * `maxPending`, past which new entries are dropped (counted). A batch Postgres refuses for
 * its content is dropped (counted) rather than retried for ever.
 */
export class RequestLogWriter extends EventEmitter<RequestLogEvents> {
  private readonly batches: PendingBatch[] = [];
  private pendingEntries = 0;
  private writing: Promise<void> | undefined;
  private following: Promise<void> | undefined;
  private down = false;
  private readonly timer: NodeJS.Timeout;
  private readonly batchSize: number;
  /** Bytes of the batch last filled or taken for a write: the next buffer's size follows it. */
  private lastBatchBytes = 0;

  constructor(
    private readonly db: Knex,
    private readonly options: RequestLogWriterOptions,
  ) {
    super();
    this.batchSize = options.batchSize ?? 2000;
    this.timer = setInterval(() => void this.flush(), options.flushMs);
    this.timer.unref();
  }

  /** Takes an entry for the next batch; drops it (counted) when the pending entries are at their cap. */
  record(entry: RequestLogEntry): void {
    if (this.pendingEntries >= this.options.maxPending) {
      this.emit('dropped', 'overflow', 1);
      return;
    }
    const line = copyLine(entry);
    // A UTF-16 code unit is at most 3 bytes of UTF-8: room for the line without measuring it.
    const room = line.length * 3;
    let batch = this.batches.at(-1);
    if (batch === undefined || batch.sealed || batch.entries >= this.batchSize || batch.bytes + room > batch.text.length) {
      if (batch !== undefined && !batch.sealed) this.lastBatchBytes = batch.bytes;
      const bytes = Math.min(MAX_BATCH_BYTES, Math.max(MIN_BATCH_BYTES, 2 * this.lastBatchBytes));
      batch = { text: Buffer.allocUnsafe(Math.max(bytes, room)), bytes: 0, entries: 0, sealed: false };
      this.batches.push(batch);
    }
    batch.bytes += batch.text.write(line, batch.bytes);
    batch.entries += 1;
    this.pendingEntries += 1;
  }

  /** Entries waiting to be written. */
  get size(): number {
    return this.pendingEntries;
  }

  /** Bytes of the buffers that hold the waiting entries. */
  get heldBytes(): number {
    let bytes = 0;
    for (const batch of this.batches) bytes += batch.text.length;
    return bytes;
  }

  /** Writes what is pending now (one flush at a time); settles when done, never rejects. */
  flush(): Promise<void> {
    if (this.writing === undefined) {
      this.writing = this.writeAll().finally(() => {
        this.writing = undefined;
      });
      return this.writing;
    }
    // The flush under way writes only what there was when it began: one more follows it, shared
    // by every call made meanwhile.
    this.following ??= this.writing.then(() => {
      this.following = undefined;
      return this.flush();
    });
    return this.following;
  }

  /** Stops the timer and writes what is pending, also what a flush under way left for the next. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    do await this.flush();
    while (this.pendingEntries > 0 && !this.down);
  }

  /**
   * Writes the batches there are when it starts (the last of them takes entries until its turn
   * comes); later entries wait for the next flush. Under steady traffic that makes one COPY a
   * flush, not one after the other for as long as entries keep coming. A batch taken for a write
   * is sealed: while Postgres cannot be reached only that one waits part-filled.
   */
  private async writeAll(): Promise<void> {
    const batches = this.batches.length;
    for (let i = 0; i < batches; i++) {
      const batch = this.batches[0]!;
      if (!batch.sealed) this.lastBatchBytes = batch.bytes;
      batch.sealed = true;
      try {
        await this.write(batch);
      } catch (err) {
        if (isConnectionFailure(err) || isAcquireTimeout(err)) {
          // Kept for the next flush: Postgres is down or busy, not the entries at fault.
          if (!this.down) this.emit('unreachable', true, err);
          this.down = true;
          return;
        }
        this.emit('dropped', 'rejected', batch.entries);
      }
      if (this.down) this.emit('unreachable', false);
      this.down = false;
      this.batches.shift();
      this.pendingEntries -= batch.entries;
    }
  }

  /** One batch, one COPY: all of it is stored or none (a value Postgres refuses fails the batch). */
  private async write(batch: PendingBatch): Promise<void> {
    const text = batch.text.subarray(0, batch.bytes);
    await withConnection(this.db, (conn) => copyChunks(conn, 'request_log', COLUMNS, [text]));
  }
}

export interface RequestLogFilter {
  from: Date;
  /** Exclusive. */
  to: Date;
  statuses?: number[];
  services?: string[];
}

/** One account's entries of a time window, oldest first, as a cursor stream of RequestLogRow (src/domain/requestLog.ts). */
export function openRequestLogCursor(
  db: Knex | Knex.Transaction,
  accountId: number,
  filter: RequestLogFilter,
  options: CursorOptions = {},
): Promise<Readable> {
  const parts = ['l.account_id = ?', 'l.time >= ?', 'l.time < ?'];
  const bindings: Knex.RawBinding[] = [accountId, filter.from, filter.to];
  if (filter.statuses) {
    parts.push('l.status = any(?::smallint[])');
    bindings.push(filter.statuses);
  }
  if (filter.services) {
    parts.push('lower(l.service) = any(?::text[])');
    bindings.push(filter.services.map((s) => s.toLowerCase()));
  }
  const query = db.raw(
    `select (extract(epoch from l.time) * 1000)::float8 as "time", l.request_id as "requestId", l.method, l.path, l.service,
            l.status, l.weight, l.duration_ms::float8 as "durationMs", l.bytes_sent::float8 as "bytesSent", l.client_address as "clientAddress"
       from request_log l where ${parts.join(' and ')} order by l.time, l.request_id`,
    bindings,
  );
  return openCursor(db as Knex, query, options);
}
