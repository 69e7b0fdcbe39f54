import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { Knex } from 'knex';
import { openCursor, CursorOptions } from './cursorStream';
import { isAcquireTimeout, withConnection } from './db';
import { isConnectionFailure } from './readSource';
import { copyEscape, copyRows, copyTimestamp } from './copyIn';
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

/** An entry as a line of COPY text format; an unknown client address is NULL. */
function copyLine(e: RequestLogEntry): string {
  const address = e.clientAddress === undefined ? '\\N' : copyEscape(e.clientAddress);
  return `${e.accountId}\t${copyTimestamp(e.time)}\t${copyEscape(e.requestId)}\t${copyEscape(e.method)}\t${copyEscape(e.path)}\t${copyEscape(e.service)}\t${e.status}\t${e.weight}\t${e.durationMs}\t${e.bytesSent}\t${address}\n`;
}

/**
 * Collects entries and writes them every `flushMs` in batches. While Postgres cannot be reached
 * the entries stay pending and are written when it is back; memory stays bounded by
 * `maxPending`, past which new entries are dropped (counted). A batch Postgres refuses for
 * its content is dropped (counted) rather than retried for ever.
 */
export class RequestLogWriter extends EventEmitter<RequestLogEvents> {
  private pending: RequestLogEntry[] = [];
  private writing: Promise<void> | undefined;
  private down = false;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly db: Knex,
    private readonly options: RequestLogWriterOptions,
  ) {
    super();
    this.timer = setInterval(() => void this.flush(), options.flushMs);
    this.timer.unref();
  }

  /** Takes an entry for the next batch; drops it (counted) when the pending entries are at their cap. */
  record(entry: RequestLogEntry): void {
    if (this.pending.length >= this.options.maxPending) {
      this.emit('dropped', 'overflow', 1);
      return;
    }
    this.pending.push(entry);
  }

  /** Entries waiting to be written. */
  get size(): number {
    return this.pending.length;
  }

  /** Writes what is pending now (one flush at a time); settles when done, never rejects. */
  flush(): Promise<void> {
    this.writing ??= this.writeAll().finally(() => {
      this.writing = undefined;
    });
    return this.writing;
  }

  /** Stops the timer and writes what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async writeAll(): Promise<void> {
    const batchSize = this.options.batchSize ?? 2000;
    while (this.pending.length > 0) {
      const batch = this.pending.slice(0, batchSize);
      try {
        await this.write(batch);
      } catch (err) {
        if (isConnectionFailure(err) || isAcquireTimeout(err)) {
          // Kept for the next flush: Postgres is down or busy, not the entries at fault.
          if (!this.down) this.emit('unreachable', true, err);
          this.down = true;
          return;
        }
        this.emit('dropped', 'rejected', batch.length);
      }
      if (this.down) this.emit('unreachable', false);
      this.down = false;
      this.pending.splice(0, batch.length);
    }
  }

  /** One batch, one COPY: all of it is stored or none (a value Postgres refuses fails the batch). */
  private async write(batch: RequestLogEntry[]): Promise<void> {
    await withConnection(this.db, (conn) => copyRows(conn, 'request_log', COLUMNS, () => batch.map(copyLine)));
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
