import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Settings } from '../config/settings';
import { loginAttempt, loginFailed, loginSucceeded, LoginAttemptReply, LoginKeys } from '../data/loginRecords';

/**
 * Failed logins counted per client address and per (address, username) pair in fixed windows,
 * so guessing from one address is slowed to a few tries per window while the same account
 * stays usable from every other address (a lock per username alone would let anyone lock a
 * user out). An attempt is counted as a failure before its password check, in the same atomic
 * step as the check of the limits, and taken back when it succeeds: however many arrive at
 * once, at most the limit's worth of password checks run per window. Credentials that logged
 * in from an address are known-good there for a while and pass its limits.
 *
 * With Redis the counts are shared by every API instance (redisLoginFailures.ts), falling back
 * to Postgres while Redis is unreachable (failoverLoginFailures.ts); without Redis they live in
 * Postgres (this module). docs/decisions.md, Overload and timeouts.
 */
export interface LoginFailureLimits {
  /** Failures one address may have in a window, whatever the usernames. */
  perAddress: number;
  /** Failures one address may have against one username in a window. */
  perAddressAndUser: number;
  windowMs: number;
  /** How long a credential that logged in from an address stays known-good there. */
  knownGoodTtlMs: number;
}

/** The limits the settings describe. */
export function loginFailureLimitsFrom(
  settings: Pick<Settings, 'LOGIN_FAILURES_PER_ADDRESS' | 'LOGIN_FAILURES_PER_USER' | 'LOGIN_FAILURE_WINDOW_MS' | 'AUTH_KNOWN_GOOD_TTL'>,
): LoginFailureLimits {
  return {
    perAddress: settings.LOGIN_FAILURES_PER_ADDRESS,
    perAddressAndUser: settings.LOGIN_FAILURES_PER_USER,
    windowMs: settings.LOGIN_FAILURE_WINDOW_MS,
    knownGoodTtlMs: settings.AUTH_KNOWN_GOOD_TTL,
  };
}

/** What the store said about a login about to be checked. */
export type LoginAttempt =
  /** One failure counted in advance; `suspect`: the address had failures (or attempts) before this one. */
  | { kind: 'reserved'; suspect: boolean }
  /** The address or the pair is at its limit: nothing counted; retry after this many seconds. */
  | { kind: 'limited'; retryAfter: number }
  /** (Asked with knownGoodFirst) the pair has a known-good record: its tag, and ms until it expires. Nothing counted. */
  | { kind: 'knownGood'; tag: string; ttlMs: number };

export interface LoginSuccess {
  /** The attempt had counted a failure in advance: take it back. */
  reserved: boolean;
  /** Record the credential as known-good from the address with this tag (for knownGoodTtlMs). */
  knownGoodTag?: string;
}

export interface LoginFailureStore {
  /**
   * One atomic step before a password check. With `knownGoodFirst`, a known-good record of the
   * pair is returned without counting anything. Otherwise, when the address or the pair is at
   * its limit the answer is `limited`; else one failure is counted on both (`reserved`).
   */
  attempt(address: string, username: string, knownGoodFirst: boolean): Promise<LoginAttempt>;
  /** The password check passed: takes back a reserved failure, clears the pair's failures, records a known-good tag. */
  succeeded(address: string, username: string, outcome: LoginSuccess): Promise<void>;
  /** One failure on the address and the pair that reserved none (a failure answered without a check of its own). */
  failed(address: string, username: string): Promise<void>;
}

/** Whole seconds to wait (rounded up), at least 1. */
function waitSeconds(waitMs: number): number {
  return Math.max(1, Math.ceil(waitMs / 1000));
}

/** The store's answer to an attempt, from the reply both stores give (see login_attempt and ATTEMPT_LUA). */
export function toLoginAttempt(reply: Pick<LoginAttemptReply, 'status' | 'waitMs' | 'addressFailures' | 'tag' | 'tagMs'>): LoginAttempt {
  if (reply.status === 2) return { kind: 'knownGood', tag: reply.tag, ttlMs: reply.tagMs };
  if (reply.status === 1) return { kind: 'limited', retryAfter: waitSeconds(reply.waitMs) };
  return { kind: 'reserved', suspect: reply.addressFailures > 0 };
}

/**
 * Keys hold digests, never a raw address or username. The address digest is the Redis hash tag,
 * so an address's keys and its pairs' keys share one Redis Cluster slot (a script touches all three).
 */
export function loginFailureKeys(address: string, username: string): LoginKeys {
  const a = digest(`address\u0000${address}`);
  const u = digest(`user\u0000${username.toLowerCase()}`);
  return { address: `lf:{${a}}:a`, pair: `lf:{${a}}:u:${u}`, knownGood: `lf:{${a}}:k:${u}` };
}

function digest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url').slice(0, 22);
}

/** Where the Postgres store's rows live: '' without Redis, else the scope of a Redis's outage counts. */
const PRIMARY_LOGIN_SCOPE = '';

/**
 * Failed logins and known-good credentials in Postgres: the store without REDIS_URL, and the
 * fallback while Redis is down. One function call (one statement) per step; the database's
 * clock decides windows and expiries, the same for every process.
 */
export class PostgresLoginFailures implements LoginFailureStore {
  constructor(
    private readonly db: Knex,
    private readonly limits: LoginFailureLimits,
    private readonly scope: string = PRIMARY_LOGIN_SCOPE,
  ) {}

  async attempt(address: string, username: string, knownGoodFirst: boolean): Promise<LoginAttempt> {
    return toLoginAttempt(
      await loginAttempt(this.db, {
        scope: this.scope,
        keys: loginFailureKeys(address, username),
        perAddress: this.limits.perAddress,
        perPair: this.limits.perAddressAndUser,
        windowMs: this.limits.windowMs,
        knownGoodFirst,
      }),
    );
  }

  async succeeded(address: string, username: string, outcome: LoginSuccess): Promise<void> {
    const knownGood = outcome.knownGoodTag === undefined ? undefined : { tag: outcome.knownGoodTag, ttlMs: this.limits.knownGoodTtlMs };
    await loginSucceeded(this.db, this.scope, loginFailureKeys(address, username), outcome.reserved, knownGood);
  }

  async failed(address: string, username: string): Promise<void> {
    await loginFailed(this.db, this.scope, loginFailureKeys(address, username), this.limits.windowMs);
  }
}
