import { EventEmitter } from 'node:events';
import type { Knex } from 'knex';

/**
 * The one connection source for bulk, lag-tolerant reads (the exports and the window lists):
 * a streaming replica (DATABASE_READ_URL) while it is up and close enough behind the primary,
 * the primary otherwise. Writes, reads right after a write and small lookups stay on the
 * primary pool; they never come here.
 *
 * `read(open)` runs `open` (a query, or the opening of a cursor up to its first batch) against
 * the chosen database. A replica that fails before answering (refused, reset, shutting down,
 * no connection in time) is marked down at once and the same `open` runs on the primary, so
 * the request never sees the failure; a background check notices when the replica is back.
 * Once a stream has started, a failure is the stream's, as it would be on the primary.
 *
 * The primary given here is the pool bulk reads may use on the primary. It is the place to
 * bound them: pass a pool of its own (or a wrapper that admits a bounded number of reads) and
 * exports on the primary cannot take the connections that small requests need.
 */

export type ReplicaState = 'up' | 'down' | 'not-configured';

export interface ReadSourceOptions {
  primary: Knex;
  replica?: Knex;
  /** How often the replica is checked (reachable, and its replay lag). */
  checkIntervalMs?: number;
  /** A replica further behind than this counts as down: its answers would be too old. */
  maxLagMs?: number;
  /** Longest wait for a check's answer. */
  checkTimeoutMs?: number;
}

export interface ReadSourceEvents {
  /** A read went to the primary although a replica is configured; reason: it was down, or it failed this read. */
  fallback: [reason: 'down' | 'error'];
  /** The replica's state changed (with the failure or the lag that decided it). */
  state: [state: ReplicaState, detail: { err?: unknown; lagMs?: number }];
}

/** The part of the source an endpoint uses. */
export interface BulkReads {
  read<T>(open: (db: Knex) => Promise<T>): Promise<T>;
}

const CONNECTION_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

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
  if (e.name === 'KnexTimeoutError') return true;
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

export class ReadSource extends EventEmitter<ReadSourceEvents> implements BulkReads {
  private current: ReplicaState;
  private lag: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;
  private readonly checkIntervalMs: number;
  private readonly maxLagMs: number;
  private readonly checkTimeoutMs: number;

  constructor(private readonly options: ReadSourceOptions) {
    super();
    this.current = options.replica ? 'up' : 'not-configured';
    this.checkIntervalMs = options.checkIntervalMs ?? 2000;
    this.maxLagMs = options.maxLagMs ?? 30_000;
    this.checkTimeoutMs = options.checkTimeoutMs ?? 2000;
  }

  get state(): ReplicaState {
    return this.current;
  }

  /** The replica's replay lag at the last check, in ms; undefined without a replica or a check. */
  get lagMs(): number | undefined {
    return this.lag;
  }

  get primary(): Knex {
    return this.options.primary;
  }

  async read<T>(open: (db: Knex) => Promise<T>): Promise<T> {
    const { replica, primary } = this.options;
    if (!replica) return open(primary);
    if (this.current === 'up') {
      try {
        return await open(replica);
      } catch (err) {
        if (!isConnectionFailure(err)) throw err;
        this.setState('down', { err });
        this.emit('fallback', 'error');
        return open(primary);
      }
    }
    this.emit('fallback', 'down');
    return open(primary);
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
      let timeout: NodeJS.Timeout | undefined;
      try {
        const answer = replica.raw(LAG_SQL) as unknown as Promise<{ rows: { lag_ms: number }[] }>;
        const { rows } = await Promise.race([
          answer,
          new Promise<never>((_, reject) => {
            timeout = setTimeout(() => reject(new Error(`replica check got no answer within ${this.checkTimeoutMs} ms`)), this.checkTimeoutMs);
          }),
        ]);
        this.lag = Number(rows[0].lag_ms);
        if (this.lag > this.maxLagMs) this.setState('down', { lagMs: this.lag });
        else this.setState('up', { lagMs: this.lag });
      } catch (err) {
        this.setState('down', { err });
      } finally {
        clearTimeout(timeout);
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
