import { DateTime } from 'luxon';
import { CodecError } from './datetime';

/**
 * An ISO 8601 duration. Parts are non-negative; `negative` turns the whole span around.
 * Years, months and days are calendar steps; hours, minutes and seconds are exact time.
 * Only `seconds` may be fractional (millisecond precision).
 */
export interface TimeSpan {
  negative?: boolean;
  years: number;
  months: number;
  days: number;
  hours: number;
  minutes: number;
  seconds: number;
}

const SECOND_MS = 1000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

function span(years: number, months: number, days: number, hours: number, minutes: number, seconds: number, negative: boolean): TimeSpan {
  const ts: TimeSpan = { years, months, days, hours, minutes, seconds };
  const zero = years === 0 && months === 0 && days === 0 && hours === 0 && minutes === 0 && seconds === 0;
  if (negative && !zero) ts.negative = true;
  return ts;
}

// Case sensitive on purpose (docs/decisions.md, DateTime and TimeSpan): designators are upper case only.
const NUM = '(\\d+(?:[.,]\\d+)?)';
const ISO = new RegExp(`^(-)?P(?:${NUM}Y)?(?:${NUM}M)?(?:${NUM}W)?(?:${NUM}D)?(?:T(?:${NUM}H)?(?:${NUM}M)?(?:${NUM}S)?)?$`);
// .NET TimeSpan constant ("c") format: [-][d.]hh:mm:ss[.fffffff]; .NET also reads a one-digit hour.
const DOTNET = /^(-)?(?:(\d+)\.)?(\d{1,2}):(\d{2}):(\d{2})(?:\.(\d{1,7}))?$/;

const HINT = 'expected an ISO 8601 duration such as PT2H or P1DT12H (upper case), or d.hh:mm:ss';

/** Integer part and the fraction as a whole number of millionths, without float error. */
function splitNumber(text: string): { int: number; micro: number } {
  const [i, f = ''] = text.replace(',', '.').split('.');
  const int = Number(i);
  if (!Number.isSafeInteger(int)) throw new CodecError('duration part is too large');
  return { int, micro: Number((f + '000000').slice(0, 6)) };
}

/** Milliseconds of `micro` millionths of a unit, truncated to whole milliseconds. */
function fractionMs(micro: number, unitMs: number): number {
  return Math.trunc((micro * unitMs) / 1_000_000);
}

/**
 * ISO 8601 `PnYnMnWnDTnHnMnS` (case sensitive, a leading `-` for a negative span) or the .NET
 * form `[-][d.]hh:mm:ss[.fffffff]`. A fraction is allowed on the smallest part given; it is
 * spread over the smaller parts (`PT1.5H` = 1 h 30 min, `P1.5D` = 1 day 12 h) so that only
 * seconds stay fractional. Fractional years or months have no defined length and are refused.
 * Weeks are 7 days. Digits beyond milliseconds are dropped.
 */
export function parseTimeSpan(input: string): TimeSpan {
  if (typeof input !== 'string') throw new CodecError(HINT);
  const iso = ISO.exec(input);
  if (iso !== null) return fromIso(iso, input);
  const net = DOTNET.exec(input);
  if (net !== null) return fromDotNet(net);
  throw new CodecError(HINT);
}

function fromIso(m: RegExpExecArray, input: string): TimeSpan {
  const parts = m.slice(2, 9); // Y, M, W, D, H, M, S
  let last = -1;
  for (let i = 0; i < parts.length; i++) if (parts[i] !== undefined) last = i;
  if (last < 0) throw new CodecError(`${input} has no duration parts`);
  if (input.includes('T') && last < 4) throw new CodecError(`${input} has a T without time parts`);
  for (let i = 0; i < last; i++) {
    if (parts[i] !== undefined && /[.,]/.test(parts[i]!)) {
      throw new CodecError('only the smallest part of a duration may have a fraction');
    }
  }
  const n = parts.map((p) => (p === undefined ? { int: 0, micro: 0 } : splitNumber(p)));
  const [y, mo, w, d, h, mi, s] = n as [
    ReturnType<typeof splitNumber>,
    ReturnType<typeof splitNumber>,
    ReturnType<typeof splitNumber>,
    ReturnType<typeof splitNumber>,
    ReturnType<typeof splitNumber>,
    ReturnType<typeof splitNumber>,
    ReturnType<typeof splitNumber>,
  ];
  if (y.micro !== 0 || mo.micro !== 0) throw new CodecError('fractional years or months are not supported');
  // The single fraction, as exact milliseconds to spread over hours, minutes and seconds.
  const extraMs =
    fractionMs(w.micro, 7 * DAY_MS) +
    fractionMs(d.micro, DAY_MS) +
    fractionMs(h.micro, HOUR_MS) +
    fractionMs(mi.micro, MINUTE_MS) +
    fractionMs(s.micro, SECOND_MS);
  const extraDays = Math.floor(extraMs / DAY_MS); // only from a fraction of weeks
  let rest = extraMs - extraDays * DAY_MS;
  const extraHours = Math.floor(rest / HOUR_MS);
  rest -= extraHours * HOUR_MS;
  const extraMinutes = Math.floor(rest / MINUTE_MS);
  rest -= extraMinutes * MINUTE_MS;
  const days = w.int * 7 + d.int + extraDays;
  if (!Number.isSafeInteger(days)) throw new CodecError('duration part is too large');
  return span(y.int, mo.int, days, h.int + extraHours, mi.int + extraMinutes, s.int + rest / SECOND_MS, m[1] === '-');
}

function fromDotNet(m: RegExpExecArray): TimeSpan {
  const hours = +m[3]!;
  const minutes = +m[4]!;
  const seconds = +m[5]!;
  if (hours > 23 || minutes > 59 || seconds > 59) throw new CodecError('hours, minutes or seconds out of range in d.hh:mm:ss');
  const days = m[2] === undefined ? 0 : Number(m[2]);
  if (!Number.isSafeInteger(days)) throw new CodecError('duration part is too large');
  const ms = m[6] === undefined ? 0 : +(m[6] + '00').slice(0, 3);
  return span(0, 0, days, hours, minutes, seconds + ms / SECOND_MS, m[1] === '-');
}

/** Up to three decimals, trailing zeros trimmed. */
function num(value: number): string {
  const ms = Math.round(value * 1000);
  const int = Math.trunc(ms / 1000);
  const frac = ms - int * 1000;
  if (frac === 0) return String(int);
  return (
    int +
    '.' +
    String(1000 + frac)
      .slice(1)
      .replace(/0+$/, '')
  );
}

/** Canonical ISO 8601: zero parts left out (`PT12M42S`, `P1DT2H`, `P1Y2M`), zero is `PT0S`. */
export function formatTimeSpan(ts: TimeSpan): string {
  let date = '';
  if (ts.years) date += num(ts.years) + 'Y';
  if (ts.months) date += num(ts.months) + 'M';
  if (ts.days) date += num(ts.days) + 'D';
  let time = '';
  if (ts.hours) time += num(ts.hours) + 'H';
  if (ts.minutes) time += num(ts.minutes) + 'M';
  if (Math.round(ts.seconds * 1000) !== 0) time += num(ts.seconds) + 'S';
  if (date === '' && time === '') return 'PT0S';
  return (ts.negative ? '-P' : 'P') + date + (time === '' ? '' : 'T' + time);
}

/**
 * Canonical TimeSpan of a duration in milliseconds (call durations). Days are 24 hours here:
 * a measured duration has no calendar, so 26 hours is `P1DT2H`. Hot path: plain arithmetic
 * and one string.
 */
export function formatMillis(ms: number): string {
  let rest = Math.round(ms);
  if (rest === 0) return 'PT0S';
  let out = 'P';
  if (rest < 0) {
    out = '-P';
    rest = -rest;
  }
  const days = Math.floor(rest / DAY_MS);
  rest -= days * DAY_MS;
  const hours = Math.floor(rest / HOUR_MS);
  rest -= hours * HOUR_MS;
  const minutes = Math.floor(rest / MINUTE_MS);
  rest -= minutes * MINUTE_MS;
  const seconds = Math.floor(rest / SECOND_MS);
  const millis = rest - seconds * SECOND_MS;
  if (days !== 0) out += days + 'D';
  if (hours === 0 && minutes === 0 && seconds === 0 && millis === 0) return out;
  out += 'T';
  if (hours !== 0) out += hours + 'H';
  if (minutes !== 0) out += minutes + 'M';
  if (seconds !== 0 || millis !== 0) {
    out += seconds;
    if (millis !== 0) {
      // .5, .25, .125: three digits with trailing zeros trimmed
      if (millis % 100 === 0) out += '.' + millis / 100;
      else if (millis % 10 === 0) out += (millis < 100 ? '.0' : '.') + millis / 10;
      else out += (millis < 10 ? '.00' : millis < 100 ? '.0' : '.') + millis;
    }
    out += 'S';
  }
  return out;
}

/** Exact length in milliseconds, days counted as 24 hours; years and months have none. */
export function timeSpanToMillis(ts: TimeSpan): number {
  if (ts.years || ts.months) throw new CodecError('a duration with years or months has no fixed length');
  const ms = ts.days * DAY_MS + ts.hours * HOUR_MS + ts.minutes * MINUTE_MS + Math.round(ts.seconds * 1000);
  return ts.negative ? -ms : ms;
}

/**
 * `start` plus the span in `zone`: years, months and days are calendar steps (a day across a
 * DST change is 23 or 25 hours; 31 January + 1 month is the last day of February); hours,
 * minutes and seconds are exact time, added after the calendar steps. A wall time that lands
 * in a DST gap moves forward; in an overlap Luxon keeps the offset `start` had when it can.
 */
export function addTimeSpan(start: Date, ts: TimeSpan, zone: string): Date {
  const sign = ts.negative ? -1 : 1;
  let dt = DateTime.fromJSDate(start, { zone });
  if (!dt.isValid) throw new RangeError(`invalid start or zone ${zone}`);
  if (ts.years || ts.months || ts.days) {
    dt = dt.plus({ years: sign * ts.years, months: sign * ts.months, days: sign * ts.days });
  }
  const exact = ts.hours * HOUR_MS + ts.minutes * MINUTE_MS + Math.round(ts.seconds * 1000);
  return new Date(dt.toMillis() + sign * exact);
}

/**
 * The end of a window of `span` after `start` (added in platform time, as addTimeSpan): the
 * windows of the calls lists and of the request log. A negative span, or one that reaches past
 * the year 9999 (the last a DateTime or Postgres holds; `P99999999Y` is input, not a 500), is a
 * CodecError naming why.
 */
export function windowEnd(start: Date, span: TimeSpan, zone: string): Date {
  if (span.negative) throw new CodecError('must not be negative');
  const end = addTimeSpan(start, span, zone);
  if (!Number.isFinite(end.getTime()) || end.getUTCFullYear() > 9999) throw new CodecError('reaches beyond the year 9999');
  return end;
}

/**
 * Postgres interval input in its own style, e.g. `1 years 2 mons 3 days 04:05:06.5`; a negative
 * span signs every part (`-1 years -3 days -04:05:06`). The time part is normalised to
 * `h:mm:ss` (hours may exceed 23) because Postgres rejects minutes or seconds above 59 there.
 */
export function timeSpanToPgInterval(ts: TimeSpan): string {
  const sign = ts.negative ? '-' : '';
  const parts: string[] = [];
  if (ts.years) parts.push(`${sign}${ts.years} years`);
  if (ts.months) parts.push(`${sign}${ts.months} mons`);
  if (ts.days) parts.push(`${sign}${ts.days} days`);
  const ms = ts.hours * HOUR_MS + ts.minutes * MINUTE_MS + Math.round(ts.seconds * 1000);
  if (ms !== 0 || parts.length === 0) {
    const h = Math.floor(ms / HOUR_MS);
    const m = Math.floor((ms % HOUR_MS) / MINUTE_MS);
    const s = (ms % MINUTE_MS) / SECOND_MS;
    const ss = num(s);
    parts.push(`${sign}${h < 10 ? '0' : ''}${h}:${m < 10 ? '0' : ''}${m}:${s < 10 ? '0' : ''}${ss}`);
  }
  return parts.join(' ');
}

/** The object node-postgres (postgres-interval) returns for an `interval` column. */
export interface PgInterval {
  years?: number;
  months?: number;
  days?: number;
  hours?: number;
  minutes?: number;
  seconds?: number;
  milliseconds?: number;
}

/**
 * TimeSpan of a Postgres interval. Postgres allows mixed signs (`1 mon -1 days`), a TimeSpan
 * does not: those are refused. Microseconds are dropped to milliseconds.
 */
export function pgIntervalToTimeSpan(value: PgInterval): TimeSpan {
  const years = value.years ?? 0;
  const months = value.months ?? 0;
  const days = value.days ?? 0;
  const hours = value.hours ?? 0;
  const minutes = value.minutes ?? 0;
  const millis = Math.trunc((value.seconds ?? 0) * 1000 + (value.milliseconds ?? 0));
  const all = [years, months, days, hours, minutes, millis];
  const negative = all.some((v) => v < 0);
  if (negative && all.some((v) => v > 0)) throw new CodecError('interval with mixed signs has no TimeSpan');
  const abs = Math.abs;
  const s = Math.floor(abs(millis) / SECOND_MS);
  return span(abs(years), abs(months), abs(days), abs(hours), abs(minutes), s + (abs(millis) - s * SECOND_MS) / SECOND_MS, negative);
}
