import { Readable } from 'node:stream';
import { beginTransaction } from './transactions';
import type { Knex } from 'knex';
import pg from 'pg';
import { acquire, CLOSE_TIMEOUT_MS, isBroken, PgConnection } from './cursorStream';
import { CopyOut } from './copyOut';
import { discardConnection } from './connectionHealth';
import { withDeadline } from './deadline';
import { knexClient } from './db';

/**
 * One bulk export on one connection: a read-only REPEATABLE READ transaction holding the
 * settings a streamed export needs, in which the export first reads what names its rows (the
 * organisation snapshot, lead lookups: through `session.db`) and then streams the rows with
 * `COPY (SELECT …) TO STDOUT (FORMAT binary)`. Everything the export reads comes from one
 * snapshot, and no export ever holds one connection while waiting for a second.
 *
 * Where the connection comes from is a ConnectionSource: the app's pool by default; a bounded
 * export pool or a read replica plug in there.
 */

export type { PgConnection };

export interface ConnectionSource {
  /** A connection for one export; rejects with the signal's reason if it aborts while waiting. */
  acquire(signal?: AbortSignal): Promise<PgConnection>;
  /** Gives the connection back; `dispose`: it is not in a clean state and must be closed. */
  release(conn: PgConnection, dispose: boolean): void;
  /** A knex instance of the same database (builds the session's transaction on the connection). */
  readonly db: Knex;
}

/** Connections from a knex instance's own pool. */
export function poolConnections(db: Knex): ConnectionSource {
  return {
    db,
    acquire: (signal) => acquire(db, signal),
    release(conn, dispose) {
      // Not left clean: the pool drops it.
      if (dispose) discardConnection(conn);
      try {
        void knexClient(db)
          .releaseConnection(conn)
          .catch(() => undefined);
      } catch {
        // The pool is already destroyed (shutdown): nothing to give back to.
      }
    },
  };
}

/**
 * Session settings of an export, local to its transaction (each only where the server knows
 * it): no JIT compilation before the first row (an export's cost estimate is far above
 * `jit_above_cost`, so a server with JIT compiles every export first), no statement or
 * transaction timeout cutting a long export that is read at the client's pace (the rows are
 * one statement now, where a cursor made one per batch), no parallel workers held for as
 * long as a client reads.
 */
const EXPORT_SETTINGS: Record<string, string> = {
  jit: 'off',
  statement_timeout: '0',
  transaction_timeout: '0',
  idle_in_transaction_session_timeout: '0',
  max_parallel_workers_per_gather: '0',
};

const SETTINGS_SQL = `select set_config(s.name, s.value, true) from (values ${Object.keys(EXPORT_SETTINGS)
  .map(() => '(?, ?)')
  .join(', ')}) s(name, value) where current_setting(s.name, true) is not null`;

export class ExportSession {
  private closing: Promise<void> | undefined;
  private failed = false;
  private copying: CopyOut | undefined;
  private markClosed!: () => void;
  /** Settles once the session has closed (however that came about). */
  readonly closed = new Promise<void>((resolve) => {
    this.markClosed = resolve;
  });

  private constructor(
    private readonly source: ConnectionSource,
    private readonly conn: PgConnection,
    /** Queries on the session's connection, inside its transaction. */
    readonly db: Knex.Transaction,
  ) {}

  /**
   * Takes a connection from `source` and starts the export's transaction. Close the session
   * with close(), or through the stream of copy(), which closes it when it closes. Aborting
   * `signal` closes it too.
   */
  static async open(source: ConnectionSource, signal?: AbortSignal): Promise<ExportSession> {
    signal?.throwIfAborted();
    const conn = await source.acquire(signal);
    let trx: Knex.Transaction;
    try {
      trx = await beginTransaction(source.db, {
        connection: conn,
        isolationLevel: 'repeatable read',
        readOnly: true,
      });
      await trx.raw(SETTINGS_SQL, Object.entries(EXPORT_SETTINGS).flat());
    } catch (err) {
      source.release(conn, true);
      throw err;
    }
    const session = new ExportSession(source, conn, trx);
    if (signal) {
      const onAbort = () => void session.close();
      signal.addEventListener('abort', onAbort, { once: true });
      void session.closed.then(() => signal.removeEventListener('abort', onAbort));
      if (signal.aborted) onAbort();
    }
    return session;
  }

  /**
   * Streams `COPY (sql) TO STDOUT (FORMAT binary)` on the session's connection. Resolves
   * once the first data has arrived (or the COPY ended), so an error Postgres reports before
   * the first row rejects here; later errors destroy the stream. Destroying the stream
   * cancels the COPY; the session closes (transaction ended, connection given back) when the
   * stream has closed, and only then does the stream emit 'close'.
   *
   * `sql` must be a complete SELECT with its values inlined as literals (COPY takes no
   * parameters): see inlineBindings.
   */
  async copy(sql: string): Promise<Readable> {
    if (this.closing) throw new Error('export session is closed');
    if (this.copying) throw new Error('export session is already copying');
    const copy = new CopyOut(this.conn, `COPY (${sql}) TO STDOUT (FORMAT binary)`, (clean) => {
      if (!clean) this.failed = true;
      this.copying = undefined;
      return this.close();
    });
    this.copying = copy;
    try {
      await copy.ready;
    } catch (err) {
      if (!copy.closed) await new Promise((resolve) => copy.once('close', resolve));
      throw err;
    }
    return copy;
  }

  /** Ends the transaction and gives the connection back, once; a running COPY is cancelled first. */
  close(): Promise<void> {
    if (this.copying) {
      // The COPY stream closes the session once its cancel is through.
      if (!this.copying.destroyed) this.copying.destroy();
      return this.closed;
    }
    this.closing ??= this.finish().finally(() => this.markClosed());
    return this.closing;
  }

  private async finish(): Promise<void> {
    const conn = this.conn;
    let dispose = this.failed || isBroken(conn);
    if (!dispose) {
      try {
        // A read-only transaction: commit and rollback are the same; rollback also ends an aborted one.
        await withDeadline(this.db.rollback(), CLOSE_TIMEOUT_MS, () => new Error('timed out'));
      } catch {
        dispose = true;
      }
    }
    const status = conn.getTransactionStatus();
    this.source.release(conn, dispose || isBroken(conn) || (status !== 'I' && status !== null));
  }
}

/**
 * Inlines `$1, $2, …` of native SQL as literals, for COPY (which takes no parameters): numbers
 * as numbers, strings and Dates as quoted literals (Dates as ISO instants, cast to timestamptz),
 * arrays as ARRAY[…] of the same, null as NULL. A value of another kind is refused.
 */
export function inlineBindings(native: { sql: string; bindings: readonly unknown[] }): string {
  const escapeLiteral = pg.escapeLiteral;
  const literal = (v: unknown): string => {
    if (v === null || v === undefined) return 'NULL';
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new RangeError('a non-finite number cannot be inlined');
      return String(v);
    }
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    if (typeof v === 'string') return escapeLiteral(v);
    if (v instanceof Date) return `${escapeLiteral(v.toISOString())}::timestamptz`;
    if (Array.isArray(v)) return `ARRAY[${v.map(literal).join(', ')}]`;
    throw new TypeError(`cannot inline a ${typeof v} into SQL`);
  };
  return native.sql.replace(/\$(\d+)/g, (_, n: string) => {
    const i = Number(n) - 1;
    if (i < 0 || i >= native.bindings.length) throw new RangeError(`no binding for $${n}`);
    return literal(native.bindings[i]);
  });
}
