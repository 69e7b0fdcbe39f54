import type { Request, Response } from 'express';
import type { Endpoint } from '../endpoint';
import type { AppServices } from '../services';
import type { StoredAccount } from '../../data/accountRepository';
import { FAIR_USE_HEADER, isFairUseHeader, minuteLimit, requestWeight } from '../../domain/requestWeight';
import type { ConsumeInput, ConsumeResult } from '../../data/counterStore';
import { HttpProblem } from '../problem';

/** The daily limit of a service for an account: its override, else the setting's default. */
export function dailyLimitFor(endpoint: Pick<Endpoint, 'service' | 'bulk'>, account: Pick<StoredAccount, 'limits'>, services: AppServices): number {
  const override = account.limits[endpoint.service];
  if (override !== undefined) return override;
  return endpoint.bulk ? services.settings.DEFAULT_BULK_DAILY_LIMIT : services.settings.DEFAULT_DAILY_LIMIT;
}

/**
 * Weighted request counting (spec 8, DESIGN §7): one atomic store call checks and spends both
 * the daily and (under fair use) the minute budget; every authenticated response carries
 * the X-Rate-Limit headers, and a refused request is a 429 that spent nothing.
 */
function consumeInput(endpoint: Endpoint, req: Request, services: AppServices): ConsumeInput {
  const account = req.account!;
  const dailyLimit = dailyLimitFor(endpoint, account, services);
  const fairUse = isFairUseHeader(req.get(FAIR_USE_HEADER));
  const now = services.clock();
  return {
    accountId: account.id,
    service: endpoint.service,
    weight: requestWeight({
      dailyLimit,
      fairUse,
      now,
      zone: services.settings.PLATFORM_TIMEZONE,
      offHoursWeight: services.settings.OFF_HOURS_WEIGHT,
    }),
    dailyLimit,
    minuteLimit: fairUse ? minuteLimit(dailyLimit) : null,
    now: now.getTime(),
  };
}

function setRateHeaders(res: Response, result: ConsumeResult): void {
  res.setHeader('X-Rate-Limit-Limit', String(result.limit));
  res.setHeader('X-Rate-Limit-Remaining', String(result.remaining));
  res.setHeader('X-Rate-Limit-Reset', String(result.resetSeconds));
}

/**
 * Weighted request counting (spec 8, DESIGN §7): one atomic store call checks and spends both
 * the daily and (under fair use) the minute budget; every authenticated response carries
 * the X-Rate-Limit headers, and a refused request is a 429 that spent nothing.
 */
export async function countRequest(endpoint: Endpoint, req: Request, res: Response, services: AppServices): Promise<void> {
  const result = await services.counter.consume(consumeInput(endpoint, req, services));
  setRateHeaders(res, result);
  if (!result.allowed) {
    const retryAfter = String(result.retryAfterSeconds ?? result.resetSeconds);
    throw new HttpProblem(
      'rate_limited',
      `the ${result.exceeded ?? 'daily'} request limit of service ${endpoint.service} is used up; retry in ${retryAfter} s`,
      undefined,
      { 'Retry-After': retryAfter },
    );
  }
}

/** The rate-limit headers of the current periods for a response that spends nothing (403). */
export async function showRateHeaders(endpoint: Endpoint, req: Request, res: Response, services: AppServices): Promise<void> {
  setRateHeaders(res, await services.counter.peek(consumeInput(endpoint, req, services)));
}
