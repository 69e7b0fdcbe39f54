import type express from 'express';
import type { RequestHandler } from 'express';
import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Knex } from 'knex';
import { findAccountByUsername, StoredAccount } from '../../data/accountRepository';
import { credentialTag, sameTag, verifyPassword } from '../../domain/password';
import { textProblem } from '../../domain/textSafety';
import { HttpProblem } from '../problem';
import type { CredentialCache, KnownGoodMark } from '../credentialCache';
import { BoundedWork, BoundedWorkFull, WorkPriority } from '../../streams/boundedWork';
import type { LoginFailureStore } from '../../ratelimit/loginFailures';
import type { Settings } from '../../config/settings';
import type { LoginMetrics } from '../metrics/loginMetrics';
import { clientAddress } from '../clientAddress';
import { basicCredentials } from '../basicCredentials';

const WWW_AUTHENTICATE = 'Basic realm="lead-call-api", charset="UTF-8"';

function unauthorized(detail = 'valid HTTP Basic credentials are required'): HttpProblem {
  return new HttpProblem('unauthorized', detail, undefined, { 'WWW-Authenticate': WWW_AUTHENTICATE });
}

declare module 'express-serve-static-core' {
  interface Request {
    account?: StoredAccount;
  }
}

type VerifyWithRequest = (
  req: express.Request,
  username: string,
  password: string,
  done: (err: unknown, user?: StoredAccount | false) => void,
) => void;

/**
 * passport-http's BasicStrategy splits the decoded credentials at every colon, which cuts a
 * password containing one (RFC 7617 allows it; only the user-id cannot contain a colon). This
 * subclass parses at the first colon (src/http/basicCredentials.ts), then hands over to the same verify step.
 */
class Rfc7617BasicStrategy extends BasicStrategy {
  // Bound onto the strategy by passport for each authentication attempt.
  declare fail: (challenge: string, status: number) => void;
  declare error: (err: Error) => void;
  declare success: (user: StoredAccount) => void;

  constructor(private readonly verifyWithRequest: VerifyWithRequest) {
    super({ passReqToCallback: true, realm: 'lead-call-api' }, verifyWithRequest as never);
  }

  override authenticate(req: express.Request): void {
    const credentials = basicCredentials(req.headers.authorization);
    if (!credentials) return this.fail(WWW_AUTHENTICATE, 401);
    const { username, password } = credentials;
    // No account has a NUL in its name (Postgres text cannot hold one): a 401 without a query.
    if (textProblem(username) !== undefined || textProblem(password) !== undefined) return this.fail(WWW_AUTHENTICATE, 401);
    this.verifyWithRequest(req, username, password, (err, user) => {
      if (err) return this.error(err as Error);
      if (!user) return this.fail(WWW_AUTHENTICATE, 401);
      this.success(user);
    });
  }
}

export interface LoginProtection {
  failures: LoginFailureStore;
  /** Bounds concurrent password checks (scrypt) and those waiting for one. */
  checks: BoundedWork;
  /** Longest time a failed credential is remembered (within the credential cache's TTL). */
  failureCacheMs: number;
  /** How long a known-good record lasts (AUTH_KNOWN_GOOD_TTL): one with less than half of it left is written again. */
  knownGoodTtlMs: number;
  metrics?: Pick<LoginMetrics, 'countRefused' | 'countPasswordCheck'>;
}

/** Password checks that may wait for a free slot; more are answered 503 at once. */
const PASSWORD_CHECK_QUEUE = 200;
/** Longest time failed credentials are remembered (and answered 401 without a check). */
const FAILED_CREDENTIAL_MS = 60_000;

/** The login protection the settings describe (one per app), counting in `failures` (composition root). */
export function loginProtectionFrom(
  settings: Pick<Settings, 'PASSWORD_CHECK_CONCURRENCY' | 'AUTH_KNOWN_GOOD_TTL'>,
  failures: LoginFailureStore,
  metrics?: Pick<LoginMetrics, 'countRefused' | 'countPasswordCheck'>,
): LoginProtection {
  return {
    failures,
    checks: new BoundedWork(settings.PASSWORD_CHECK_CONCURRENCY, PASSWORD_CHECK_QUEUE),
    failureCacheMs: FAILED_CREDENTIAL_MS,
    knownGoodTtlMs: settings.AUTH_KNOWN_GOOD_TTL,
    ...(metrics ? { metrics } : {}),
  };
}

/**
 * The outcome of one password check that requests with the same Authorization value share:
 * the account, false for wrong credentials, or `unchecked` when there is no outcome to share
 * (the request that started it was refused at its address, `retryAfter` its wait; or a
 * background check could not run): the others then try on their own.
 */
type CheckOutcome = StoredAccount | false | { unchecked: true; retryAfter: number };

const isUnchecked = (o: CheckOutcome): o is { unchecked: true; retryAfter: number } => typeof o === 'object' && 'unchecked' in o;

function tooManyFailures(wait: number): HttpProblem {
  return new HttpProblem('rate_limited', `too many failed logins from this address; retry in ${wait} s`, undefined, {
    'Retry-After': String(wait),
  });
}

/** The client's address as the login-failure counts key it; worked out only where needed (a cached login does not). */
function loginAddress(req: express.Request): string {
  return clientAddress(req) ?? '';
}

/**
 * HTTP Basic through passport-http (no sessions). The verify step, cheapest first
 * (docs/decisions.md, Overload and timeouts):
 * - verified credentials come from the cache, with no other work; one in the last fifth of its
 *   time to live is checked again in the background, while requests go on being served;
 * - a check already running for the same Authorization value is waited for, not repeated;
 * - credentials that failed recently are a 401 without a password check;
 * - otherwise one atomic step of the failure store (the address's known-good record of the
 *   username, else a reserved failure or a 429), then the scrypt check, at most a few at once:
 *   known-good credentials first, addresses with recent failures last and never in every slot
 *   (more waiting than the queue holds: a 503). A passed check takes its reservation back and
 *   records the credential as known-good from the address.
 */
export function createAuthenticator(db: Knex, cache: CredentialCache, protection: LoginProtection): RequestHandler {
  const { failures, checks, metrics, knownGoodTtlMs } = protection;
  const flights = new Map<string, Promise<CheckOutcome>>();

  /** Runs `check` as the one check of `key` that later requests with the same key wait for. */
  const fly = (key: string, check: () => Promise<CheckOutcome>): Promise<CheckOutcome> => {
    const flight = check().finally(() => flights.delete(key));
    flights.set(key, flight);
    return flight;
  };

  /** One scrypt check of the stored account (loaded now unless given) in a bounded slot. */
  const checkPassword = (username: string, password: string, priority: WorkPriority, loaded?: StoredAccount | null) =>
    checks.run(async () => {
      const found = loaded === undefined ? await findAccountByUsername(db, username) : (loaded ?? undefined);
      // Verify against a dummy hash for unknown users so timing does not reveal them.
      const passed = await verifyPassword(password, found?.passwordHash ?? DUMMY_HASH);
      metrics?.countPasswordCheck(passed);
      return passed && found?.enabled ? found : undefined;
    }, priority);

  /** A full login: the failure store's step, the check, and what the outcome changes. */
  const login = async (key: string, address: string, username: string, password: string): Promise<CheckOutcome> => {
    const generation = cache.generation;
    let attempt = await failures.attempt(address, username, true);
    let loaded: StoredAccount | null | undefined;
    let knownGoodUntil: number | undefined;
    if (attempt.kind === 'knownGood') {
      loaded = (await findAccountByUsername(db, username)) ?? null;
      if (loaded !== null && sameTag(credentialTag(loaded.passwordHash, password), attempt.tag)) {
        knownGoodUntil = Date.now() + attempt.ttlMs;
      } else {
        attempt = await failures.attempt(address, username, false);
      }
    }
    if (attempt.kind === 'limited') return { unchecked: true, retryAfter: attempt.retryAfter };
    const reserved = attempt.kind === 'reserved';
    const priority: WorkPriority =
      knownGoodUntil !== undefined ? 'high' : attempt.kind === 'reserved' && attempt.suspect ? 'low' : 'normal';
    let account: StoredAccount | undefined;
    try {
      account = await checkPassword(username, password, priority, loaded);
    } catch (err) {
      if (!(err instanceof BoundedWorkFull)) {
        // The check could not run (the database failed): nothing says these credentials are wrong,
        // so the reserved failure is taken back, or an outage would leave every address suspect.
        if (reserved) await failures.succeeded(address, username, { reserved: true }).catch(() => undefined);
        throw err;
      }
      // A refused check stays counted as a failure: a flood that fills the queue is not let off.
      metrics?.countRefused('hashing');
      throw new HttpProblem('service_unavailable', 'too many logins are waiting for a password check; retry shortly', undefined, {
        'Retry-After': '1',
      });
    }
    if (!account) {
      cache.rememberFailure(key, protection.failureCacheMs);
      if (!reserved) await failures.failed(address, username);
      return false;
    }
    const mark = await recordSuccess(address, username, password, account, reserved, knownGoodUntil);
    cache.set(key, account, generation, mark);
    return account;
  };

  /**
   * A passed check: the reservation taken back and the known-good record written, unless there
   * is nothing to change (no reservation, and a record with more than half its time left).
   */
  const recordSuccess = async (
    address: string,
    username: string,
    password: string,
    account: StoredAccount,
    reserved: boolean,
    knownGoodUntil: number | undefined,
  ): Promise<KnownGoodMark> => {
    const now = Date.now();
    const fresh = knownGoodUntil !== undefined && knownGoodUntil - now > knownGoodTtlMs / 2;
    if (reserved || !fresh) {
      await failures.succeeded(address, username, {
        reserved,
        ...(fresh ? {} : { knownGoodTag: credentialTag(account.passwordHash, password) }),
      });
    }
    return { address, until: fresh ? knownGoodUntil : now + knownGoodTtlMs };
  };

  /**
   * The background check of a cached credential near the end of its time to live: the cache is
   * renewed (with the account as stored now), or the entry dropped if the password no longer
   * holds. Errors and a full queue leave the entry to expire (requests waiting for this check
   * then make their own).
   */
  const refresh = (key: string, address: string, username: string, password: string, mark: KnownGoodMark | undefined): void => {
    if (flights.has(key)) return;
    void fly(key, async () => {
      const generation = cache.generation;
      const account = await checkPassword(username, password, 'high').catch(() => null);
      if (account === null) return { unchecked: true, retryAfter: 0 };
      if (!account) {
        cache.delete(key);
        cache.rememberFailure(key, protection.failureCacheMs);
        return false;
      }
      const known = mark?.address === address ? mark.until : undefined;
      // A known-good record not written now is written by a later check.
      const written = await recordSuccess(address, username, password, account, false, known).catch(() => undefined);
      cache.set(key, account, generation, written);
      return account;
    }).catch(() => undefined);
  };

  const verify = async (req: express.Request, username: string, password: string): Promise<StoredAccount | false> => {
    const key = cache.key(req.headers.authorization ?? '');
    for (;;) {
      // Credentials already verified pass, also from an address that failed often (a shared NAT).
      const cached = cache.get(key);
      if (cached) {
        if (cached.refreshDue) refresh(key, loginAddress(req), username, password, cached.knownGood);
        return cached.account;
      }
      const flight = flights.get(key);
      if (flight) {
        const outcome = await flight;
        if (isUnchecked(outcome)) continue;
        // The same wrong credentials again: a failure of this address too.
        if (outcome === false) await failures.failed(loginAddress(req), username);
        return outcome;
      }
      if (cache.failedRecently(key)) {
        const attempt = await failures.attempt(loginAddress(req), username, false);
        if (attempt.kind === 'limited') {
          metrics?.countRefused('login');
          throw tooManyFailures(attempt.retryAfter);
        }
        return false; // the reserved failure stands
      }
      const outcome = await fly(key, () => login(key, loginAddress(req), username, password));
      if (isUnchecked(outcome)) {
        metrics?.countRefused('login');
        throw tooManyFailures(outcome.retryAfter);
      }
      return outcome;
    }
  };
  const strategy = new Rfc7617BasicStrategy((req, username, password, done) => {
    verify(req, username, password).then(
      (account) => done(null, account),
      (err: unknown) => done(err),
    );
  });
  const authenticator = new passport.Passport();
  authenticator.use('basic', strategy);

  return (req, res, next) => {
    const authenticate = authenticator.authenticate('basic', { session: false }, (err: unknown, account: StoredAccount | false) => {
      if (err) return next(err);
      if (!account) return next(unauthorized());
      req.account = account;
      next();
    }) as RequestHandler;
    void authenticate(req, res, next);
  };
}

// scrypt hash of a random password, used only to spend the same time on unknown usernames.
const DUMMY_HASH = 'scrypt$16384$8$1$c29tZS1kdW1teS1zYWx0$' + Buffer.alloc(32, 7).toString('base64');
