import { createHmac, randomBytes } from 'node:crypto';
import type { StoredAccount } from '../data/accountRepository';

/**
 * Verified credentials, cached so a password hash is not verified on every request. Keys are
 * a keyed hash of the Authorization header (the header itself is never kept), entries live
 * for a short TTL and are dropped when their account changes (same process or, through a
 * Redis message, another process such as `lcm`).
 */
export class CredentialCache {
  private readonly secret = randomBytes(32);
  private readonly entries = new Map<string, { account: StoredAccount; expiresAt: number }>();
  /** Credentials that failed, by the same keyed hash: a repeat is a 401 without a password check. */
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10000,
  ) {}

  key(authorization: string): string {
    return createHmac('sha256', this.secret).update(authorization).digest('base64');
  }

  get(key: string): StoredAccount | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.account;
  }

  set(key: string, account: StoredAccount): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) {
      // Oldest insertion first: Map keeps insertion order.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { account, expiresAt: this.now() + this.ttlMs });
  }

  /**
   * Remembers that these credentials failed, for as long as verified ones are kept but at most
   * `maxMs`. Any account change forgets every failure (a new account or password may make them valid).
   */
  rememberFailure(key: string, maxMs: number): void {
    const ttl = Math.min(this.ttlMs, maxMs);
    if (ttl <= 0) return;
    if (this.failures.size >= this.maxEntries) {
      const oldest = this.failures.keys().next().value;
      if (oldest !== undefined) this.failures.delete(oldest);
    }
    this.failures.set(key, this.now() + ttl);
  }

  failedRecently(key: string): boolean {
    const until = this.failures.get(key);
    if (until === undefined) return false;
    if (until <= this.now()) {
      this.failures.delete(key);
      return false;
    }
    return true;
  }

  invalidateAccount(accountId: number): void {
    for (const [key, entry] of this.entries) if (entry.account.id === accountId) this.entries.delete(key);
    this.failures.clear();
  }

  clear(): void {
    this.entries.clear();
    this.failures.clear();
  }
}
