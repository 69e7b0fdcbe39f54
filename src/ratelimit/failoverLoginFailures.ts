import type { LoginFailureCheck, LoginFailureStore } from './loginFailures';

/** The Redis health the request counters track (FailoverCounterStore), shared with this store. */
export interface SharedRedisHealth {
  readonly redisHealthy: boolean;
  markDown(err: unknown): void;
}

/**
 * Failed logins counted in Redis while the request counters find it healthy, in process
 * otherwise: a failed Redis call marks Redis down for both (the counters' probe brings both
 * back). Counts made in process during an outage stay there, as for request counting.
 */
export class FailoverLoginFailures implements LoginFailureStore {
  constructor(
    private readonly primary: LoginFailureStore,
    private readonly fallback: LoginFailureStore,
    private readonly health: SharedRedisHealth,
  ) {}

  check(address: string, username: string): Promise<LoginFailureCheck> {
    return this.route((s) => s.check(address, username));
  }

  recordFailure(address: string, username: string): Promise<void> {
    return this.route((s) => s.recordFailure(address, username));
  }

  recordSuccess(address: string, username: string): Promise<void> {
    return this.route((s) => s.recordSuccess(address, username));
  }

  private async route<T>(op: (store: LoginFailureStore) => Promise<T>): Promise<T> {
    if (this.health.redisHealthy) {
      try {
        return await op(this.primary);
      } catch (err) {
        // Any failure: a login must never turn into a 500 for want of Redis.
        this.health.markDown(err);
      }
    }
    return op(this.fallback);
  }
}
