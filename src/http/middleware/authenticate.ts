import type express from 'express';
import type { RequestHandler } from 'express';
import passport from 'passport';
import { BasicStrategy } from 'passport-http';
import type { Knex } from 'knex';
import { findAccountByUsername, StoredAccount } from '../../data/accountRepository';
import { verifyPassword } from '../../domain/password';
import { textProblem } from '../../domain/textSafety';
import { HttpProblem } from '../problem';
import type { CredentialCache } from '../credentialCache';
import { BoundedWork, BoundedWorkFull } from '../../streams/boundedWork';
import { LoginFailureStore, MemoryLoginFailures, loginFailureLimitsFrom } from '../../ratelimit/loginFailures';
import type { Settings } from '../../config/settings';
import type { Metrics } from '../metrics';

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
 * subclass parses at the first colon and decodes UTF-8, then hands over to the same verify step.
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
    const header = req.headers.authorization;
    const match = header === undefined ? null : /^\s*basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
    if (!match) return this.fail(WWW_AUTHENTICATE, 401);
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) return this.fail(WWW_AUTHENTICATE, 401);
    const username = decoded.slice(0, colon);
    const password = decoded.slice(colon + 1);
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
  metrics?: Pick<Metrics, 'countRefused'>;
}

/** Password checks that may wait for a free slot; more are answered 503 at once. */
const PASSWORD_CHECK_QUEUE = 200;
/** Longest time failed credentials are remembered (and answered 401 without a check). */
const FAILED_CREDENTIAL_MS = 60_000;

/**
 * The login protection the settings describe (one per app): failures counted in `failures`
 * (the Redis-backed store from the composition root), or in this process when none is given.
 */
export function loginProtectionFrom(
  settings: Pick<
    Settings,
    'LOGIN_FAILURES_PER_ADDRESS' | 'LOGIN_FAILURES_PER_USER' | 'LOGIN_FAILURE_WINDOW_MS' | 'PASSWORD_CHECK_CONCURRENCY'
  >,
  metrics?: Pick<Metrics, 'countRefused'>,
  failures: LoginFailureStore = new MemoryLoginFailures(loginFailureLimitsFrom(settings)),
): LoginProtection {
  return {
    failures,
    checks: new BoundedWork(settings.PASSWORD_CHECK_CONCURRENCY, PASSWORD_CHECK_QUEUE),
    failureCacheMs: FAILED_CREDENTIAL_MS,
    ...(metrics ? { metrics } : {}),
  };
}

/**
 * HTTP Basic through passport-http (no sessions). The verify step, cheapest first: verified
 * credentials from the cache; an address (or address and username) with too many recent
 * failures gets a 429 with Retry-After; credentials that failed recently are a 401 without a
 * password check; otherwise the account is loaded and its scrypt hash checked, at most a few
 * at once, those from addresses with recent failures behind the others and never in every
 * slot (more waiting than the queue holds: a 503), and the outcome is remembered
 * (docs/decisions.md, Overload and timeouts).
 */
export function createAuthenticator(db: Knex, cache: CredentialCache, protection: LoginProtection): RequestHandler {
  const { failures, checks, metrics } = protection;
  // The failure stores answer in process when Redis fails, so they do not reject; should one
  // anyway, the request ends in the error handler rather than hanging.
  const forget = (p: Promise<void>) => p.catch(() => undefined);
  const verify = async (req: express.Request, username: string, password: string): Promise<StoredAccount | false> => {
    const key = cache.key(req.headers.authorization ?? '');
    const address = req.ip ?? req.socket.remoteAddress ?? '';
    const cached = cache.get(key);
    if (cached) {
      // Credentials already verified pass, also from an address that failed often (a shared NAT).
      // Not awaited: the request need not wait for Redis (its commands keep their order).
      void forget(failures.recordSuccess(address, username));
      return cached;
    }
    const { retryAfter: wait, suspect } = await failures.check(address, username);
    if (wait !== undefined) {
      metrics?.countRefused('login');
      throw new HttpProblem('rate_limited', `too many failed logins from this address; retry in ${wait} s`, undefined, {
        'Retry-After': String(wait),
      });
    }
    const failed = async () => {
      cache.rememberFailure(key, protection.failureCacheMs);
      await failures.recordFailure(address, username);
      return false as const;
    };
    if (cache.failedRecently(key)) return failed();
    let account: StoredAccount | undefined;
    try {
      account = await checks.run(
        async () => {
          const found = await findAccountByUsername(db, username);
          // Verify against a dummy hash for unknown users so timing does not reveal them.
          const ok = await verifyPassword(password, found?.passwordHash ?? DUMMY_HASH);
          return ok && found?.enabled ? found : undefined;
        },
        suspect ? 'low' : 'normal',
      ); // an address that guessed wrong waits behind the others
    } catch (err) {
      if (!(err instanceof BoundedWorkFull)) throw err;
      metrics?.countRefused('hashing');
      throw new HttpProblem('service_unavailable', 'too many logins are waiting for a password check; retry shortly', undefined, {
        'Retry-After': '1',
      });
    }
    if (!account) return failed();
    void forget(failures.recordSuccess(address, username));
    cache.set(key, account);
    return account;
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
