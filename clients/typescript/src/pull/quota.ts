import { parseList } from 'structured-headers';

/** One period as the server reported it: units left and seconds until it ends. */
export interface PeriodLeft {
  name: string;
  remaining: number;
  resetSeconds: number;
}

function nonNegativeInteger(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

/**
 * The periods of the standard `RateLimit` field (IETF httpapi draft: a Structured Field list
 * of `"name";r=<units left>;t=<seconds>`); undefined when absent or malformed, which the draft
 * says must be ignored.
 */
export function parseRateLimitField(value: string | null): PeriodLeft[] | undefined {
  if (!value) return undefined;
  try {
    const periods: PeriodLeft[] = [];
    for (const [item, params] of parseList(value)) {
      if (Array.isArray(item)) return undefined; // an inner list is not a service limit item
      const remaining = nonNegativeInteger(params.get('r'));
      if (typeof item !== 'string' || remaining === undefined) return undefined;
      periods.push({ name: item, remaining, resetSeconds: nonNegativeInteger(params.get('t')) ?? 0 });
    }
    return periods.length > 0 ? periods : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What is left of the request quota according to a response: the standard RateLimit field
 * when the server sent one (it also shows the daily remainder under fair use), else the
 * specification's X-Rate-Limit-Remaining and -Reset. Undefined when neither is there.
 */
export function periodsLeft(headers: Headers): PeriodLeft[] | undefined {
  const standard = parseRateLimitField(headers.get('RateLimit'));
  if (standard) return standard;
  const remaining = nonNegativeInteger(Number(headers.get('X-Rate-Limit-Remaining') ?? NaN));
  const reset = nonNegativeInteger(Number(headers.get('X-Rate-Limit-Reset') ?? NaN));
  if (remaining === undefined) return undefined;
  return [{ name: 'current', remaining, resetSeconds: reset ?? 0 }];
}

/**
 * Seconds to wait before the next request so it is not refused: 0 while every period has a
 * unit left (a fair-use request spends 1), else until the last exhausted period ends.
 */
export function secondsUntilQuota(periods: PeriodLeft[] | undefined): number {
  if (!periods) return 0;
  return Math.max(0, ...periods.filter((p) => p.remaining < 1).map((p) => p.resetSeconds));
}

/** Retry-After as seconds: delay-seconds or an HTTP-date; undefined when absent or unreadable. */
export function retryAfterSeconds(headers: Headers, now: number): number | undefined {
  const value = headers.get('Retry-After')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}
