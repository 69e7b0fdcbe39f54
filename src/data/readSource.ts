import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';
import { ConnectionSource, poolConnections, PgConnection } from './exportSession';
import { withDeadline } from './deadline';

/**
 * The connection source of bulk, lag-tolerant reads (every export, the window lists of calls
 * and ready periods among them: src/data/exportSession.ts): a streaming replica
 * (DATABASE_READ_URL) while it is up and close enough behind the primary, else the primary's
 * export connections. Writes, reads right after a write and small lookups use the primary pool
 * and never come here.
 *
 * A replica connection is checked with one round trip before an export gets it: a replica
 * that fails then (refused, reset, shutting down, no answer in time) is marked down at once
 * and the export takes a primary connection instead, so the request never sees the failure; a
 * periodic check notices when the replica is back. Once the export's session has started, a
 * failure is the export's, as it would be on the primary. A replica pool with no connection
 * free in time is not a replica failure: that wait times out as the primary's would.
 */

export type ReplicaState = 'up' | 'down' | 'not-configured';

export interface ReadSourceOptions {
  /** Export connections on the primary (its export pool). */
  primary: ConnectionSource;
  /** The replica's pool (createDb of DATABASE_READ_URL); this source does not close it. */
  replica?: Knex;
  /** How often the replica is checked (reachable, and its replay lag). */
  checkIntervalMs?: number;
  /** A replica further behind than this counts as down: its answers would be too old. */
  maxLagMs?: number;
  /** Longest wait for a check's answer, and for the round trip that checks a replica connection. */
  checkTimeoutMs?: number;
}

export interface ReadSourceEvents {
  /** An export read the primary although a replica is configured; reason: it was down, or it failed this export. */
  fallback: [reason: 'down' | 'error'];
  /** The replica's state changed (with the failure or the lag that decided it). */
  state: [state: ReplicaState, detail: { err?: unknown; lagMs?: number }];
}

const CONNECTION_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'EAI_AGAIN',
]);

/**
 * An error that says the database could not be reached or went away, as opposed to an error
 * of the query itself (which the primary would answer the same way).
 */
export function isConnectionFailure(err: unknown): boolean {
  const e = err as { code?: string; name?: string; message?: string } | undefined;
  if (!e) return false;
  if (e.code && CONNECTION_ERRNOS.has(e.code)) return true;
  // SQLSTATE class 08 (connection exception), 57P01-03 (shutting down, crashed, not yet accepting).
  if (e.code && (/^08/.test(e.code) || /^57P0[123]$/.test(e.code))) return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(e.message ?? '');
}

// Replay lag: 0 while everything received is replayed (an idle primary sends nothing, and the
// last replay time would only grow); otherwise the age of the last replayed transaction.
const LAG_SQL = `
  select case
    when not pg_is_in_recovery() then 0
    when pg_last_wal_receive_lsn() is not null and pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
    else coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000, 0)
  end::float8 as lag_ms`;

export class ReadSource extends EventEmitter<ReadSourceEvents> implements ConnectionSource {
  private current: ReplicaState;
  private lag: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private readonly checkIntervalMs: number;
  private readonly maxLagMs: number;
  private readonly checkTimeoutMs: number;
  private readonly replicaConnections: ConnectionSource | undefined;
  /** Which source each connection handed out came from, to give it back there. */
  private readonly lent = new WeakMap<PgConnection, ConnectionSource>();

  constructor(private readonly options: ReadSourceOptions) {
    super();
    this.current = options.replica ? 'up' : 'not-configured';
    this.checkIntervalMs = options.checkIntervalMs ?? 2000;
    this.maxLagMs = options.maxLagMs ?? 30_000;
    this.checkTimeoutMs = options.checkTimeoutMs ?? 2000;
    this.replicaConnections = options.replica ? poolConnections(options.replica) : undefined;
  }

  get state(): ReplicaState {
    return this.current;
  }

  /** The replica's replay lag at the last check, in ms; undefined without a replica or a check. */
  get lagMs(): number | undefined {
    return this.lag;
  }

  /** Builds the session's transaction on whichever connection it got (the same SQL dialect on both). */
  get db(): Knex {
    return this.options.primary.db;
  }

  async acquire(signal?: AbortSignal): Promise<PgConnection> {
    const replica = this.replicaConnections;
    if (replica) {
      if (this.current === 'up') {
        const conn = await this.replicaConnection(replica, signal);
        if (conn) return this.lend(conn, replica);
        this.emit('fallback', 'error');
      } else {
        this.emit('fallback', 'down');
      }
    }
    return this.lend(await this.options.primary.acquire(signal), this.options.primary);
  }

  release(conn: PgConnection, dispose: boolean): void {
    const source = this.lent.get(conn) ?? this.options.primary;
    this.lent.delete(conn);
    source.release(conn, dispose);
  }

  private lend(conn: PgConnection, source: ConnectionSource): PgConnection {
    this.lent.set(conn, source);
    return conn;
  }

  /**
   * A checked replica connection, or undefined when the replica failed (it is then marked
   * down). Errors that are not the replica's (an abort, a busy pool) are thrown.
   */
  private async replicaConnection(replica: ConnectionSource, signal?: AbortSignal): Promise<PgConnection | undefined> {
    let conn: PgConnection;
    try {
      conn = await replica.acquire(signal);
    } catch (err) {
      if (!isConnectionFailure(err)) throw err;
      this.setState('down', { err });
      return undefined;
    }
    try {
      await withTimeout(conn.query('select 1'), this.checkTimeoutMs, 'replica connection');
      return conn;
    } catch (err) {
      replica.release(conn, true);
      this.setState('down', { err });
      return undefined;
    }
  }

  /** Checks the replica now, then every checkIntervalMs until close(). Resolves after the first check. */
  async start(): Promise<void> {
    if (!this.options.replica || this.timer) return;
    this.timer = setInterval(() => void this.check(), this.checkIntervalMs);
    this.timer.unref();
    await this.check();
  }

  /** One check: reachable and not too far behind → up; otherwise down. */
  check(): Promise<void> {
    const replica = this.options.replica;
    if (!replica) return Promise.resolve();
    this.checking ??= (async () => {
      try {
        const answer = replica.raw(LAG_SQL) as unknown as Promise<{ rows: { lag_ms: number }[] }>;
        const { rows } = await withTimeout(answer, this.checkTimeoutMs, 'replica check');
        this.lag = Number(rows[0]!.lag_ms);
        if (this.lag > this.maxLagMs) this.setState('down', { lagMs: this.lag });
        else this.setState('up', { lagMs: this.lag });
      } catch (err) {
        this.setState('down', { err });
      } finally {
        this.checking = undefined;
      }
    })();
    return this.checking;
  }

  /** Stops the checks; the pools belong to whoever made them. */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private setState(state: ReplicaState, detail: { err?: unknown; lagMs?: number }): void {
    if (state === this.current) return;
    this.current = state;
    this.emit('state', state, detail);
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return withDeadline(promise, ms, () => new Error(`${what} got no answer within ${ms} ms`));
}
