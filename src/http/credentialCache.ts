import { hash, randomBytes } from 'node:crypto';
import type { StoredAccount } from '../data/accountRepository';

/** A cached credential as `get` returns it. */
export interface CachedCredential {
  account: StoredAccount;
  /** In the last fifth of its time to live: time to check it again in the background. */
  refreshDue: boolean;
  /** The address whose known-good record this process last wrote or saw for it, and until when that record lasts (ms). */
  knownGood?: KnownGoodMark;
}

export interface KnownGoodMark {
  address: string;
  until: number;
}

interface Entry {
  account: StoredAccount;
  expiresAt: number;
  knownGood?: KnownGoodMark;
}

/**
 * Verified credentials, cached so a password hash is not verified on every request. Keys are
 * a keyed hash of the Authorization header (the header itself is never kept), entries live
 * for a short TTL and are dropped when their account changes (same process or, through a
 * Postgres notification, another process such as `lcm`). An entry in the last fifth of its TTL asks
 * to be checked again ahead of time (`refreshDue`), so a busy credential is re-checked once in
 * the background rather than by every request that would find it expired.
 */
export class CredentialCache {
  /** Random per cache (per process): no one else can compute a key from a header. */
  private readonly secret = randomBytes(32).toString('base64');
  private readonly entries = new Map<string, Entry>();
  /** Credentials that failed, by the same keyed hash: a repeat is a 401 without a password check. */
  private readonly failures = new Map<string, number>();
  private changes = 0;
  /** The generation of each account's last change, the most recent `maxEntries` of them. */
  private readonly changedAt = new Map<number, number>();
  /** Checks that started before this generation cache nothing: a clear, or a change no longer in `changedAt`. */
  private floor = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10000,
  ) {}

  /**
   * Changes with every account change the cache hears of: a check that started before a change
   * of its own account (or before a clear) must not cache what it read (pass the value taken at
   * its start to `set`). Changes of other accounts do not matter: on a busy node they would
   * otherwise keep every check of that moment out of the cache.
   */
  get generation(): number {
    return this.changes;
  }

  /**
   * SHA-256 of the secret and the header, in one call (crypto.hash): keys never leave the
   * process, so the secret prefix does what an HMAC would (no key can be computed, or
   * looked up in a precomputed table, without the secret) at a fraction of its cost per
   * request (an Hmac object and its key set up on every call).
   */
  key(authorization: string): string {
    return hash('sha256', this.secret + authorization, 'base64');
  }

  get(key: string): CachedCredential | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const now = this.now();
    if (entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return { account: entry.account, refreshDue: now >= entry.expiresAt - this.ttlMs / 5, knownGood: entry.knownGood };
  }

  /** Caches verified credentials, unless an account changed since `generation` was taken. */
  set(key: string, account: StoredAccount, generation: number, knownGood?: KnownGoodMark): void {
    if (this.ttlMs <= 0 || generation < this.floor || (this.changedAt.get(account.id) ?? 0) > generation) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      // Oldest insertion first: Map keeps insertion order.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { account, expiresAt: this.now() + this.ttlMs, knownGood });
  }

  delete(key: string): void {
    this.entries.delete(key);
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
    this.changes++;
    this.changedAt.delete(accountId);
    this.changedAt.set(accountId, this.changes);
    if (this.changedAt.size > this.maxEntries) {
      const [oldest, at] = this.changedAt.entries().next().value ?? [];
      if (oldest !== undefined && at !== undefined) {
        this.changedAt.delete(oldest);
        this.floor = Math.max(this.floor, at);
      }
    }
    for (const [key, entry] of this.entries) if (entry.account.id === accountId) this.entries.delete(key);
    this.failures.clear();
  }

  clear(): void {
    this.changes++;
    this.floor = this.changes;
    this.changedAt.clear();
    this.entries.clear();
    this.failures.clear();
  }
}
