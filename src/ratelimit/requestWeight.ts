import { localHour } from '../domain/datetime';

/** Request-counting rules (docs/decisions.md, Request counting), free of HTTP and storage. */

/** High-limit means more than 10000 allowed requests per day: 10000 itself is not high-limit. */
const HIGH_LIMIT_THRESHOLD = 10000;
const PRODUCTION_HOURS_WEIGHT = 8;
/** Production hours in platform local time: 08:00 inclusive to 21:00 exclusive. */
const PRODUCTION_START_HOUR = 8;
const PRODUCTION_END_HOUR = 21;
const MINUTE_LIMIT_FLOOR = 240;
export const FAIR_USE_HEADER = 'X-Rate-Limit-Fair-Use-Policy';
const FAIR_USE_VALUE = 'minute rated';

export function isHighLimit(dailyLimit: number): boolean {
  return dailyLimit > HIGH_LIMIT_THRESHOLD;
}

/** The fair use minute limit: max(ceil(daily / (24*60)), 240). */
export function minuteLimit(dailyLimit: number): number {
  return Math.max(Math.ceil(dailyLimit / (24 * 60)), MINUTE_LIMIT_FLOOR);
}

/** True when the header opts in to the fair use policy (case-insensitive, surrounding blanks ignored). */
export function isFairUseHeader(value: string | undefined): boolean {
  return value !== undefined && value.trim().toLowerCase() === FAIR_USE_VALUE;
}

function isProductionHour(now: Date, zone: string): boolean {
  // The cached-offset codec: Luxon here cost ~14 µs on every counted request.
  const hour = localHour(now, zone);
  return hour >= PRODUCTION_START_HOUR && hour < PRODUCTION_END_HOUR;
}

/**
 * What one request adds to the daily counter. Fair use always adds 1; otherwise high-limit
 * services add 8 in production hours and `offHoursWeight` (OFF_HOURS_WEIGHT) outside them.
 */
export function requestWeight(input: { dailyLimit: number; fairUse: boolean; now: Date; zone: string; offHoursWeight: number }): number {
  if (input.fairUse || !isHighLimit(input.dailyLimit)) return 1;
  return isProductionHour(input.now, input.zone) ? PRODUCTION_HOURS_WEIGHT : input.offHoursWeight;
}
