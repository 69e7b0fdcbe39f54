import type { Settings } from '../config/settings';

/**
 * Failed logins counted per client address and per (address, username) pair in fixed windows,
 * so guessing from one address is slowed to a few tries per window while the same account
 * stays usable from every other address (a lock per username alone would let anyone lock a
 * user out). With Redis the counts are shared by every API instance (redisLoginFailures.ts),
 * falling back to counting in process while Redis is unreachable (failoverLoginFailures.ts);
 * without Redis they live in process (docs/decisions.md, Overload and timeouts).
 */
export interface LoginFailureLimits {
  /** Failures one address may have in a window, whatever the usernames. */
  perAddress: number;
  /** Failures one address may have against one username in a window. */
  perAddressAndUser: number;
  windowMs: number;
}

/** The limits the settings describe. */
export function loginFailureLimitsFrom(
  settings: Pick<Settings, 'LOGIN_FAILURES_PER_ADDRESS' | 'LOGIN_FAILURES_PER_USER' | 'LOGIN_FAILURE_WINDOW_MS'>,
): LoginFailureLimits {
  return {
    perAddress: settings.LOGIN_FAILURES_PER_ADDRESS,
    perAddressAndUser: settings.LOGIN_FAILURES_PER_USER,
    windowMs: settings.LOGIN_FAILURE_WINDOW_MS,
  };
}

/** What the counts say about a login about to be checked. */
export interface LoginFailureCheck {
  /** Seconds until the address (or the pair) may try again; undefined when it may now. */
  retryAfter?: number;
  /** The address failed in the current window: its password checks wait behind the others. */
  suspect: boolean;
}

export interface LoginFailureStore {
  check(address: string, username: string): Promise<LoginFailureCheck>;
  /** Counts one failed login of `username` from `address`. */
  recordFailure(address: string, username: string): Promise<void>;
  /** A successful login clears the pair's count (the address's stays). */
  recordSuccess(address: string, username: string): Promise<void>;
}

interface Window {
  count: number;
  resetAt: number;
}

/** Entries kept at most; the oldest go first, so a flood of addresses cannot grow memory. */
const MAX_ENTRIES = 100_000;

/** Counts in this process: the store without Redis, and the fallback while Redis is down. */
export class MemoryLoginFailures implements LoginFailureStore {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limits: LoginFailureLimits,
    private readonly now: () => number = Date.now,
  ) {}

  check(address: string, username: string): Promise<LoginFailureCheck> {
    const now = this.now();
    let wait = 0;
    for (const [key, limit] of this.keys(address, username)) {
      const w = this.current(key, now);
      if (w && w.count >= limit) wait = Math.max(wait, w.resetAt - now);
    }
    return Promise.resolve({ retryAfter: waitSeconds(wait), suspect: this.current(`a:${address}`, now) !== undefined });
  }

  recordFailure(address: string, username: string): Promise<void> {
    const now = this.now();
    for (const [key] of this.keys(address, username)) {
      const w = this.current(key, now);
      if (w) w.count++;
      else {
        if (this.windows.size >= MAX_ENTRIES) this.windows.delete(this.windows.keys().next().value!);
        this.windows.set(key, { count: 1, resetAt: now + this.limits.windowMs });
      }
    }
    return Promise.resolve();
  }

  recordSuccess(address: string, username: string): Promise<void> {
    this.windows.delete(pairKey(address, username));
    return Promise.resolve();
  }

  private keys(address: string, username: string): [string, number][] {
    return [
      [`a:${address}`, this.limits.perAddress],
      [pairKey(address, username), this.limits.perAddressAndUser],
    ];
  }

  private current(key: string, now: number): Window | undefined {
    const w = this.windows.get(key);
    if (w && w.resetAt <= now) {
      this.windows.delete(key);
      return undefined;
    }
    return w;
  }
}

/** Whole seconds to wait (rounded up), undefined for none. */
export function waitSeconds(waitMs: number): number | undefined {
  return waitMs > 0 ? Math.ceil(waitMs / 1000) : undefined;
}

function pairKey(address: string, username: string): string {
  return `p:${address}\u0000${username.toLowerCase()}`;
}
