import type { Request, Response } from 'express';
import type { Settings } from '../config/settings';
import type { StoredAccount } from '../data/accountRepository';
import { FAIR_USE_HEADER, isFairUseHeader, minuteLimit, requestWeight } from './requestWeight';
import type { ConsumeInput, ConsumeResult, CounterStore, PeriodState } from './counterStore';

/**
 * Weighted request counting (docs/decisions.md, "Request counting"): one atomic store call
 * checks and spends both the daily and (under fair use) the minute budget, and every
 * authenticated response carries the X-Rate-Limit headers. A refused request spent nothing;
 * the HTTP layer answers it with a 429.
 */

/** A counted service: its stable name, and whether it is a large-data service (bulk limits). */
export interface CountedService {
  service: string;
  bulk?: boolean;
}

/** What counting needs from the composition root. */
export interface CountingDeps {
  settings: Pick<Settings, 'DEFAULT_DAILY_LIMIT' | 'DEFAULT_BULK_DAILY_LIMIT' | 'PLATFORM_TIMEZONE' | 'OFF_HOURS_WEIGHT'>;
  counter: CounterStore;
  /** Injected so tests can move through production hours, periods and midnights. */
  clock: () => Date;
}

type CountedAccount = Pick<StoredAccount, 'id' | 'limits'>;

/** The daily limit of a service for an account: its override, else the setting's default. */
export function dailyLimitFor(service: CountedService, account: Pick<StoredAccount, 'limits'>, settings: CountingDeps['settings']): number {
  const override = account.limits[service.service];
  if (override !== undefined) return override;
  return service.bulk ? settings.DEFAULT_BULK_DAILY_LIMIT : settings.DEFAULT_DAILY_LIMIT;
}

function consumeInput(service: CountedService, account: CountedAccount, req: Request, deps: CountingDeps): ConsumeInput {
  const dailyLimit = dailyLimitFor(service, account, deps.settings);
  const fairUse = isFairUseHeader(req.get(FAIR_USE_HEADER));
  const now = deps.clock();
  return {
    accountId: account.id,
    service: service.service,
    weight: requestWeight({
      dailyLimit,
      fairUse,
      now,
      zone: deps.settings.PLATFORM_TIMEZONE,
      offHoursWeight: deps.settings.OFF_HOURS_WEIGHT,
    }),
    dailyLimit,
    minuteLimit: fairUse ? minuteLimit(dailyLimit) : null,
    now: now.getTime(),
  };
}

/**
 * The standard fields of the IETF httpapi RateLimit draft, as Structured Field lists: one
 * policy per period that applies (`"daily";q=5000;w=86400`, and `"minute";q=240;w=60` under
 * fair use) and its current service limit (`"daily";r=4950;t=3600`). Quota units are counter
 * units: a weighted request spends its weight. The policy names are fixed tokens of ours and
 * the parameters non-negative integers, so the serialisation needs no escaping.
 */
function rateLimitPolicyField(periods: readonly PeriodState[]): string {
  return periods.map((p) => `"${p.name}";q=${p.limit};w=${p.windowSeconds}`).join(', ');
}

function rateLimitField(periods: readonly PeriodState[]): string {
  return periods.map((p) => `"${p.name}";r=${p.remaining};t=${p.resetSeconds}`).join(', ');
}

function setRateHeaders(res: Response, result: ConsumeResult): void {
  res.setHeader('X-Rate-Limit-Limit', String(result.limit));
  res.setHeader('X-Rate-Limit-Remaining', String(result.remaining));
  res.setHeader('X-Rate-Limit-Reset', String(result.resetSeconds));
  res.setHeader('RateLimit-Policy', rateLimitPolicyField(result.periods));
  // A refused request names only the exhausted period, so Retry-After (its end) is never
  // earlier than the effective window of a period listed beside it.
  const current = result.exceeded ? result.periods.filter((p) => p.name === result.exceeded) : result.periods;
  res.setHeader('RateLimit', rateLimitField(current));
}

/**
 * Counts one request and sets its rate-limit headers; the result says whether it was admitted
 * and what it spent (`weight`, 0 when refused).
 */
export async function countRequest(
  service: CountedService,
  account: CountedAccount,
  req: Request,
  res: Response,
  deps: CountingDeps,
): Promise<ConsumeResult & { weight: number }> {
  const input = consumeInput(service, account, req, deps);
  const result = await deps.counter.consume(input);
  setRateHeaders(res, result);
  return { ...result, weight: result.allowed ? input.weight : 0 };
}

/** The rate-limit headers of the current periods for a response that spends nothing (403). */
export async function showRateHeaders(
  service: CountedService,
  account: CountedAccount,
  req: Request,
  res: Response,
  deps: CountingDeps,
): Promise<void> {
  setRateHeaders(res, await deps.counter.peek(consumeInput(service, account, req, deps)));
}
