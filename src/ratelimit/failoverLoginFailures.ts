import type { LoginAttempt, LoginFailureStore, LoginSuccess } from './loginFailures';
import { withinDeadline } from '../data/redis';

/** The Redis health the request counters track (FailoverCounterStore), shared with this store. */
export interface SharedRedisHealth {
  readonly redisHealthy: boolean;
  /** How long a Redis call waits before the count is made in Postgres. */
  readonly commandTimeoutMs: number;
  markDown(err: unknown): void;
}

/**
 * Failed logins counted in Redis while the request counters find it healthy, in Postgres
 * otherwise (the counts every process shares during the outage): a failed Redis call marks
 * Redis down for both (the counters' probe brings both back). Failures and known-good records
 * kept in Postgres during an outage are not copied to Redis: windows are minutes long, and a
 * credential missing its record is checked like any other.
 */
export class FailoverLoginFailures implements LoginFailureStore {
  constructor(
    private readonly primary: LoginFailureStore,
    private readonly fallback: LoginFailureStore,
    private readonly health: SharedRedisHealth,
  ) {}

  attempt(address: string, username: string, knownGoodFirst: boolean): Promise<LoginAttempt> {
    return this.route((s) => s.attempt(address, username, knownGoodFirst));
  }

  succeeded(address: string, username: string, outcome: LoginSuccess): Promise<void> {
    return this.route((s) => s.succeeded(address, username, outcome));
  }

  failed(address: string, username: string): Promise<void> {
    return this.route((s) => s.failed(address, username));
  }

  private async route<T>(op: (store: LoginFailureStore) => Promise<T>): Promise<T> {
    if (this.health.redisHealthy) {
      try {
        return await withinDeadline(op(this.primary), this.health.commandTimeoutMs);
      } catch (err) {
        // Any failure: a login must never turn into a 500 for want of Redis.
        this.health.markDown(err);
      }
    }
    return op(this.fallback);
  }
}
