/**
 * Request counting (docs/decisions.md, Request counting): per account and service, a 24-hour period that starts
 * at the first admitted request, and under the fair use policy a minute window that likewise
 * starts at the first admitted request in it (a fixed window, not a calendar minute).
 *
 * The decision for one request, given the windows current at its time: when adding its weight
 * would pass the daily limit, it is refused on the daily period; else when it would pass the
 * minute limit (fair use only), on the minute period; else the weight is added to each window
 * that applies, opening a window that is not running. The daily limit is checked first: when
 * both would be exceeded, the daily period is the one to wait for. The Redis store makes it in a
 * Lua script, the Postgres store in a SQL function (count_request,
 * db/migrations/20261206000001_request_counters.ts), each in one atomic step; both share the
 * header choice (`toConsumeResult`), and one test matrix holds both to the same answers.
 */

export const DAY_MS = 24 * 60 * 60 * 1000;
export const MINUTE_MS = 60 * 1000;

export interface ConsumeInput {
  accountId: number;
  service: string;
  /** What this request adds to each counter that applies (see requestWeight). */
  weight: number;
  dailyLimit: number;
  /** The minute limit when the caller opted in to fair use; null otherwise. */
  minuteLimit: number | null;
  /** Caller's clock in ms since the epoch; injectable so tests can move through periods. */
  now: number;
}

/**
 * The outcome plus the rate-limit header values, already chosen as docs/decisions.md (Request counting) says: the daily period
 * without fair use, the minute period under fair use, the exceeded period when refused.
 */
export interface ConsumeResult {
  allowed: boolean;
  /** X-Rate-Limit-Limit */
  limit: number;
  /** X-Rate-Limit-Remaining, in counter units (a weight-8 request spends 8). */
  remaining: number;
  /** X-Rate-Limit-Reset: whole seconds left in the period, rounded up. */
  resetSeconds: number;
  /** Retry-After when refused: the seconds until the exceeded period ends. */
  retryAfterSeconds?: number;
  exceeded?: 'daily' | 'minute';
  /**
   * Every period that applies to the request, daily first, then the minute period under fair
   * use: the RateLimit-Policy and RateLimit headers describe each of them.
   */
  periods: PeriodState[];
}

/** One counting period as the standard RateLimit headers describe it. */
export interface PeriodState {
  name: 'daily' | 'minute';
  /** The period's length in seconds (86400 or 60). */
  windowSeconds: number;
  limit: number;
  remaining: number;
  resetSeconds: number;
}

/** One row of /myaccount/request/counts. */
export interface ServiceCount {
  service: string;
  count: number;
  periodStart: Date;
  resetSeconds: number;
  /** Spent in the current minute window (fair use requests only); 0 when none is open. */
  minuteCount: number;
}

export interface CounterStore {
  /** Checks both limits and, only when both hold, adds the weight to each counter that applies. */
  consume(input: ConsumeInput): Promise<ConsumeResult>;
  /**
   * The header values of the current periods without spending anything: for responses that
   * carry the rate-limit headers but are not counted (a 403 for a missing right).
   */
  peek(input: ConsumeInput): Promise<ConsumeResult>;
  /** The services with an unexpired daily period, sorted by name. */
  counts(accountId: number, now: number): Promise<ServiceCount[]>;
  close(): Promise<void>;
  /** A store that fails over from Redis to Postgres: how that went (for metrics). */
  fallbackStats?(): FallbackStats;
}

export interface FallbackStats {
  redisHealthy: boolean;
  /** Times Redis became unreachable and counting moved to Postgres. */
  fallbacks: number;
  /** Store operations answered from Postgres because Redis was unreachable. */
  fallbackOperations: number;
}

/** A counting window: when its period started (ms) and what was spent in it. */
export interface Window {
  start: number;
  count: number;
}

/** The window if its period is still running at `now`; a period ends `lengthMs` after its start. */
export function currentWindow(w: Window | undefined, lengthMs: number, now: number): Window | undefined {
  return w !== undefined && now < w.start + lengthMs ? w : undefined;
}

/** One (account, service) pair's windows as a store holds them (ended ones included). */
export interface CounterEntry {
  accountId: number;
  service: string;
  daily?: Window;
  minute?: Window;
}

export interface Tally {
  exceeded?: 'daily' | 'minute';
  /** The current windows: after the increment when admitted, unchanged when refused. */
  daily?: Window;
  minute?: Window;
}

export function resetSeconds(w: Window | undefined, lengthMs: number, now: number): number {
  // No open period: the next admitted request starts a full one. The clamp keeps a request
  // from a host whose clock runs behind the period start from seeing more than a full period.
  const left = w === undefined ? lengthMs : Math.min(lengthMs, w.start + lengthMs - now);
  return Math.ceil(left / 1000);
}

function periodHeaders(limit: number, w: Window | undefined, lengthMs: number, now: number) {
  return {
    limit,
    remaining: Math.max(0, limit - (w?.count ?? 0)),
    resetSeconds: resetSeconds(w, lengthMs, now),
  };
}

function periodStates(input: ConsumeInput, t: Tally): PeriodState[] {
  const { now, minuteLimit } = input;
  const periods: PeriodState[] = [
    { name: 'daily', windowSeconds: DAY_MS / 1000, ...periodHeaders(input.dailyLimit, t.daily, DAY_MS, now) },
  ];
  if (minuteLimit !== null) {
    periods.push({ name: 'minute', windowSeconds: MINUTE_MS / 1000, ...periodHeaders(minuteLimit, t.minute, MINUTE_MS, now) });
  }
  return periods;
}

export function toConsumeResult(input: ConsumeInput, t: Tally): ConsumeResult {
  const periods = periodStates(input, t);
  const byName = (name: PeriodState['name']) => {
    const { limit, remaining, resetSeconds } = periods.find((p) => p.name === name)!;
    return { limit, remaining, resetSeconds };
  };
  if (t.exceeded) {
    const p = byName(t.exceeded);
    return { allowed: false, ...p, retryAfterSeconds: p.resetSeconds, exceeded: t.exceeded, periods };
  }
  return { allowed: true, ...byName(input.minuteLimit !== null ? 'minute' : 'daily'), periods };
}

/** Rejects input the counters cannot represent; a bug in the caller, not a client error. */
export function assertConsumeInput(input: ConsumeInput): void {
  const positiveInt = (n: number) => Number.isSafeInteger(n) && n > 0;
  if (!Number.isSafeInteger(input.accountId)) throw new TypeError(`bad accountId ${input.accountId}`);
  if (input.service === '') throw new TypeError('empty service name');
  if (!positiveInt(input.weight)) throw new TypeError(`bad weight ${input.weight}`);
  // A daily limit of 0 is allowed: it shuts a service off for an account.
  if (!Number.isSafeInteger(input.dailyLimit) || input.dailyLimit < 0) {
    throw new TypeError(`bad dailyLimit ${input.dailyLimit}`);
  }
  if (input.minuteLimit !== null && !positiveInt(input.minuteLimit)) {
    throw new TypeError(`bad minuteLimit ${input.minuteLimit}`);
  }
  if (!Number.isSafeInteger(input.now)) throw new TypeError(`bad now ${input.now}`);
}
