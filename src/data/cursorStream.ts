import net from 'node:net';
import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import pg from 'pg';
import QueryStream from 'pg-query-stream';
import { discardConnection, isUnusable } from './connectionHealth';
import { knexClient } from './db';

/** SQL with native Postgres placeholders ($1, $2, ...), as `builder.toSQL().toNative()` gives it. */
interface NativeQuery {
  sql: string;
  bindings: readonly unknown[];
}

/** Anything knex can compile (a query builder or db.raw), or native SQL. */
export type CursorQuery = { toSQL(): { toNative(): Knex.SqlNative } } | NativeQuery;

/** pg's per-query type parsers (`types` of pg's QueryConfig). */
export interface CursorTypes {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (value: string) => unknown;
}

export interface CursorOptions {
  /**
   * Rows per fetch (one round trip) and the stream's high-water mark. At most three batches are
   * in memory: the stream buffer, one fetched ahead, one arriving. Default 1000: 100 paid for
   * the round trips, 5000 was slower again (cache, GC) in measurements on a calls-like table.
   */
  batchSize?: number;
  /** Type parsers for this query only, e.g. to keep timestamptz as Postgres text. */
  types?: CursorTypes;
  /** Aborting destroys the cursor; while openCursor is pending, it rejects with the reason. */
  signal?: AbortSignal;
}

const DEFAULT_BATCH_SIZE = 1000;

const TIMESTAMPTZ_OID = 1184;
const TIMESTAMP_OID = 1114;
const keepText = (value: string): string => value;

/**
 * Parsers that leave timestamp and timestamptz columns as Postgres text (ISO DateStyle, in the
 * connection's time zone, e.g. `2026-05-06 10:16:41.25+02`); every other type as pg parses it.
 * Parsing into Date costs more than a microsecond per value, the largest single cost of a wide
 * export row; a string function turns this text into the API's ISO form far cheaper.
 */
export const timestampsAsText: CursorTypes = {
  getTypeParser(oid, format) {
    if (oid === TIMESTAMPTZ_OID || oid === TIMESTAMP_OID) return keepText;
    return pg.types.getTypeParser(oid, format ?? 'text') as (value: string) => unknown;
  },
};

// A close sent while a fetch is running waits for that fetch. Past this grace period the
// running statement is cancelled, so a client leaving a slow query frees the connection.
const CANCEL_AFTER_MS = 100;
// If the server never confirms the close, the connection is not trusted again: it is ended.
export const CLOSE_TIMEOUT_MS = 5000;
const CANCEL_REQUEST_CODE = 80877102;

export type PgConnection = pg.Client & {
  readyForQuery: boolean;
  processID: number | null;
  secretKey: number | null;
};

// pg-cursor's states: initialized → submitted → idle ⇄ busy → done, or error.
type CursorState = 'initialized' | 'submitted' | 'idle' | 'busy' | 'done' | 'error';

interface PgCursor {
  state: CursorState;
  read(rows: number, cb: (err: Error | undefined, rows: unknown[]) => void): void;
  close(cb: (err?: Error) => void): void;
}

/** A pooled connection; an abort while the pool is full gives up waiting (and returns it later). */
export async function acquire(db: Knex, signal: AbortSignal | undefined): Promise<PgConnection> {
  const acquiring = knexClient(db).acquireConnection() as Promise<PgConnection>;
  if (!signal) return acquiring;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([acquiring, aborted]);
  } catch (err) {
    if (signal.aborted) {
      acquiring.then(
        (conn) => knexClient(db).releaseConnection(conn),
        () => undefined,
      );
    }
    throw err;
  } finally {
    signal.removeEventListener('abort', onAbort!);
  }
}

function toNative(query: CursorQuery): NativeQuery {
  if ('toSQL' in query) {
    const native = query.toSQL().toNative();
    return { sql: native.sql, bindings: native.bindings };
  }
  return query;
}

/** A connection that failed, ended or was given up on (src/data/connectionHealth.ts). */
export function isBroken(conn: PgConnection): boolean {
  return isUnusable(conn);
}

/** A CancelRequest on a separate socket (protocol 3.0); resolves when the server has handled it. */
export function sendCancelRequest(conn: PgConnection): Promise<void> {
  return new Promise((resolve) => {
    if (conn.processID == null || conn.secretKey == null) {
      resolve();
      return;
    }
    const host = conn.host || 'localhost';
    const socket = host.startsWith('/') ? net.connect(`${host}/.s.PGSQL.${conn.port}`) : net.connect(conn.port, host);
    const packet = Buffer.alloc(16);
    packet.writeInt32BE(16, 0);
    packet.writeInt32BE(CANCEL_REQUEST_CODE, 4);
    packet.writeInt32BE(conn.processID, 8);
    packet.writeInt32BE(conn.secretKey, 12);
    socket.setTimeout(CLOSE_TIMEOUT_MS, () => socket.destroy());
    socket.once('connect', () => socket.end(packet));
    socket.once('error', () => socket.destroy());
    // The server closes the socket after signalling the backend.
    socket.once('close', () => resolve());
  });
}

/**
 * pg-query-stream with the pooled connection's lifetime tied to the stream: the connection goes
 * back to knex's pool exactly once, when the cursor has finished or, after destroy, when
 * Postgres has confirmed the portal closed (Close + Sync → ReadyForQuery), so the connection
 * never carries an open portal or implicit transaction into its next use.
 */
class CursorStream extends QueryStream {
  declare cursor: PgCursor;
  private released = false;
  private fetching = false;
  private exhausted = false;
  private wanted = false;
  private ready: unknown[] | undefined;
  /** What a destroy left to do once the fetch in flight has its answer (closing the portal). */
  private afterFetch: (() => void) | undefined;
  onFirstBatch: (() => void) | undefined;

  /** The connection's transaction status when the cursor opened ('T' inside a caller's transaction). */
  private readonly idleStatus: string | null;

  constructor(
    native: NativeQuery,
    config: QueryStream.Config,
    private readonly batchSize: number,
    private readonly db: Knex,
    private readonly conn: PgConnection,
  ) {
    super(native.sql, native.bindings as unknown[], { ...config, batchSize });
    this.idleStatus = conn.getTransactionStatus();
  }

  override _read(): void {
    this.wanted = true;
    this.pump();
  }

  /**
   * One batch is fetched ahead: the next Execute goes out before the current batch is pushed,
   * so Postgres produces batch n+1 while the pipeline serialises batch n (two cores at work
   * instead of taking turns). Nothing more is fetched until the consumer asks again, so the
   * read-ahead is bounded by the stream buffer plus two batches.
   */
  private pump(): void {
    if (this.wanted && this.ready !== undefined) {
      const rows = this.ready;
      this.ready = undefined;
      this.wanted = false;
      if (!this.exhausted) this.fetch();
      for (let i = 0; i < rows.length; i++) this.push(rows[i]);
      // Pushing runs the consumer synchronously, which may have destroyed this stream.
      if (this.destroyed) return;
      if (this.exhausted) this.push(null);
      if (this.onFirstBatch) {
        const notify = this.onFirstBatch;
        this.onFirstBatch = undefined;
        notify();
      }
    } else if (!this.fetching && this.ready === undefined && !this.exhausted) {
      this.fetch();
    }
  }

  private fetch(): void {
    this.fetching = true;
    this.cursor.read(this.batchSize, (err, rows) => {
      this.fetching = false;
      // A fetch in flight when the stream was destroyed still completes: drop its rows, and
      // close the portal now that Postgres has answered it.
      if (this.destroyed) {
        const next = this.afterFetch;
        this.afterFetch = undefined;
        next?.();
        return;
      }
      if (err) {
        this.destroy(err);
        return;
      }
      if (rows.length < this.batchSize) {
        this.exhausted = true;
        // The cursor is done (CommandComplete, ReadyForQuery): hand the connection back now,
        // even though the consumer may still be working through the last batch.
        if (this.cursor.state === 'done' && this.conn.readyForQuery) this.release(false);
      }
      this.ready = rows;
      this.pump();
    });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.released) {
      callback(error);
      return;
    }
    const conn = this.conn;
    let finished = false;
    let cancelling: Promise<void> | undefined;
    const timers: NodeJS.Timeout[] = [];

    const finish = (dispose: boolean): void => {
      if (finished) return;
      finished = true;
      for (const t of timers) clearTimeout(t);
      // Left as it was found: idle, or (on a transaction's connection) still in that transaction,
      // possibly failed by a cancel: the transaction's owner rolls it back.
      const status = conn.getTransactionStatus();
      const asFound = status === this.idleStatus || status === null || (this.idleStatus === 'T' && status === 'E');
      this.release(dispose || isBroken(conn) || !asFound);
      callback(error);
    };
    const closed = (): void => {
      // Release only once the cancel (if any) has been delivered, so it cannot hit the
      // connection's next query.
      if (cancelling) void cancelling.then(() => finish(false));
      else finish(false);
    };

    if (isBroken(conn) || this.cursor.state === 'initialized') {
      finish(true);
      return;
    }
    timers.push(
      setTimeout(() => finish(true), CLOSE_TIMEOUT_MS),
      setTimeout(() => {
        if (!finished) cancelling = sendCancelRequest(conn);
      }, CANCEL_AFTER_MS),
    );
    const closePortal = (): void => {
      const state = this.cursor.state;
      if (state === 'done' || state === 'error') {
        // pg-cursor already sent Sync (on completion or error); wait for ReadyForQuery.
        // Closing again would put a Close without Sync on the wire.
        if (conn.readyForQuery) finish(false);
        else conn.connection.once('readyForQuery', closed);
      } else {
        this.cursor.close(closed);
      }
    };
    // Not while a fetch is in flight: should its answer begin with the portal's description,
    // pg-cursor takes the portal for open again and closes it a second time when the result
    // completes, and the second ReadyForQuery would end the connection's next query early.
    if (this.fetching) this.afterFetch = closePortal;
    else closePortal();
  }

  private release(dispose: boolean): void {
    if (this.released) return;
    this.released = true;
    // Not closed cleanly: the pool drops it.
    if (dispose) discardConnection(this.conn);
    try {
      void knexClient(this.db)
        .releaseConnection(this.conn)
        .catch(() => undefined);
    } catch {
      // The pool is already destroyed (shutdown): nothing to give back to.
    }
  }
}

/**
 * Runs a query as a server-side cursor on a connection of its own and returns an object-mode
 * Readable of row objects, read in batches only as fast as the consumer asks (backpressure).
 *
 * Resolves once the first batch has arrived (or the result ended), so errors Postgres reports
 * before the first row (bad SQL, bad parameters, an error in the first rows) reject here and
 * can still become a problem response; later errors arrive as a stream error.
 *
 * Destroying the stream, its end, or an error closes the cursor and releases the connection
 * exactly once.
 */
export async function openCursor(db: Knex, query: CursorQuery, options: CursorOptions = {}): Promise<Readable> {
  const { signal } = options;
  signal?.throwIfAborted();
  const native = toNative(query);
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError('batchSize must be a positive integer');
  const config: QueryStream.Config = {};
  if (options.types) config.types = options.types;

  const conn = await acquire(db, signal);
  const stream = new CursorStream(native, config, batchSize, db, conn);
  // An idle pooled connection submits at once (Parse/Bind/Describe); nothing waits in pg's queue.
  conn.query(stream);
  // An error while nobody listens yet (between this resolving and the consumer's pipeline)
  // must not crash the process. The stream keeps it (readable.errored) and pipeline or
  // for await report it to the consumer.
  stream.on('error', () => undefined);

  // Destroy without an error: the consumer sees a premature close, and an abort after this
  // resolved is not an error of the query.
  const onAbort = (): void => {
    stream.destroy();
  };
  if (signal) {
    signal.addEventListener('abort', onAbort, { once: true });
    stream.once('close', () => signal.removeEventListener('abort', onAbort));
  }

  let settle: ((err?: Error) => void) | undefined;
  const onError = (err: Error): void => settle?.(err);
  const onClose = (): void => settle?.(signal?.aborted ? (signal.reason as Error) : new Error('cursor closed before its first batch'));
  try {
    await new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err));
      stream.onFirstBatch = () => settle?.();
      stream.once('error', onError);
      stream.once('close', onClose);
      if (signal?.aborted) onAbort();
      else stream.read(0);
    });
  } catch (err) {
    if (!stream.closed) await new Promise((resolve) => stream.once('close', resolve));
    throw err;
  } finally {
    settle = undefined;
    stream.onFirstBatch = undefined;
    stream.off('error', onError);
    stream.off('close', onClose);
  }
  return stream;
}

/**
 * The LIMIT clause of an export: `LIMIT (SELECT n)`, or `LIMIT (SELECT NULL)` (no limit at all)
 * without one. The planner cannot see the value when it plans, so it plans for the first tenth
 * of the rows, as it does for a declared cursor (cursor_tuple_fraction): an export then streams
 * from the (last_modified_time, unique_id) index at once, instead of sorting every matching lead
 * before its first row (seconds, on disk, for a large export); the call exports likewise.
 */
export function streamingLimit(limit: number | undefined): string {
  if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) throw new RangeError('limit must be a non-negative integer');
  return `limit (select ${limit === undefined ? 'null' : limit}::bigint)`;
}
