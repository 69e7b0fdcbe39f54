import { IANAZone } from 'luxon';
import type { DateTimeFormatName } from './enums';

/** A value on the wire that does not follow its format; the message is shown to API callers. */
export class CodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodecError';
  }
}

const MINUTE_MS = 60_000;
const BUCKET_MS = 15 * MINUTE_MS;
const DAY_MS = 86_400_000;
/** Per-zone cache bound; one year of 15-minute buckets is about 35 000 entries. */
const MAX_BUCKETS_PER_ZONE = 200_000;

interface OffsetEntry {
  /** Offset in milliseconds, whole minutes. */
  ms: number;
  /** `+HH:MM` / `-HH:MM`. */
  suffix: string;
}

/**
 * Offsets of one zone cached per 15-minute UTC bucket. Every transition of the modern tz
 * database falls on a 15-minute UTC boundary, so one lookup serves a whole bucket; a bucket
 * that does contain a transition (historic local mean times) is marked and computed per value.
 */
class ZoneOffsets {
  private readonly zone: IANAZone;
  private readonly buckets = new Map<number, OffsetEntry | null>();
  private readonly entries = new Map<number, OffsetEntry>();
  private lastBucket = NaN;
  private lastEntry: OffsetEntry | null = null;

  constructor(name: string) {
    const zone = IANAZone.create(name);
    if (!zone.isValid) throw new RangeError(`unknown time zone ${name}`);
    this.zone = zone;
  }

  at(ms: number): OffsetEntry {
    const bucket = Math.floor(ms / BUCKET_MS);
    if (bucket === this.lastBucket && this.lastEntry !== null) return this.lastEntry;
    let entry = this.buckets.get(bucket);
    if (entry === undefined) {
      const start = bucket * BUCKET_MS;
      const first = this.exact(start);
      const last = this.exact(start + BUCKET_MS - 1);
      entry = first === last ? this.entry(first) : null;
      if (this.buckets.size >= MAX_BUCKETS_PER_ZONE) this.buckets.clear();
      this.buckets.set(bucket, entry);
    }
    this.lastBucket = bucket;
    this.lastEntry = entry;
    return entry ?? this.entry(this.exact(ms));
  }

  /** Offset in ms, truncated to whole minutes so `+HH:MM` plus the wall time names the exact instant. */
  private exact(ms: number): number {
    return Math.trunc(this.zone.offset(ms)) * MINUTE_MS;
  }

  private entry(offsetMs: number): OffsetEntry {
    let e = this.entries.get(offsetMs);
    if (e === undefined) {
      const abs = Math.abs(offsetMs) / MINUTE_MS;
      const hh = Math.floor(abs / 60);
      const mm = abs % 60;
      e = {
        ms: offsetMs,
        suffix: (offsetMs < 0 ? '-' : '+') + (hh < 10 ? '0' : '') + hh + ':' + (mm < 10 ? '0' : '') + mm,
      };
      this.entries.set(offsetMs, e);
    }
    return e;
  }
}

const zones = new Map<string, ZoneOffsets>();

function offsets(zone: string): ZoneOffsets {
  let z = zones.get(zone);
  if (z === undefined) {
    z = new ZoneOffsets(zone);
    zones.set(zone, z);
  }
  return z;
}

/** UTC offset of `zone` at the instant, in milliseconds (whole minutes). */
export function zoneOffsetMs(value: Date | number, zone: string): number {
  return offsets(zone).at(toMs(value)).ms;
}

function toMs(value: Date | number): number {
  const ms = typeof value === 'number' ? value : value.getTime();
  if (!Number.isFinite(ms)) throw new RangeError('invalid date');
  return ms;
}

/** Date.UTC without its 0–99 → 1900–1999 year mapping. */
function utcMs(y: number, mo: number, d: number, h: number, mi: number, s: number, ms: number): number {
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  date.setUTCHours(h, mi, s, ms);
  return date.getTime();
}

/** The wall times a DateTime can be written as: four-digit years. */
const FIRST_WRITABLE = utcMs(0, 1, 1, 0, 0, 0, 0);
const LAST_WRITABLE = utcMs(9999, 12, 31, 23, 59, 59, 999);

/** The wall times DateTime inputs may name (docs/decisions.md, DateTime and TimeSpan). */
const FIRST_INPUT = utcMs(1900, 1, 1, 0, 0, 0, 0);
const LAST_INPUT = LAST_WRITABLE;

/** Whether a wall time (epoch ms of the local clock) is written as it is: its year has four digits. */
export function isWritableWallTime(wallMs: number): boolean {
  return wallMs >= FIRST_WRITABLE && wallMs <= LAST_WRITABLE;
}

/**
 * `yyyy-MM-ddTHH:mm:ss.SSS` of the local wall time (no offset). A wall time beyond the years
 * 0000–9999 (only ever stored before inputs were bounded) is written as the nearest one that
 * has four digits: a DateTime the API writes always does.
 */
function localIso(ms: number, entry: OffsetEntry): string {
  const wall = Math.min(Math.max(ms + entry.ms, FIRST_WRITABLE), LAST_WRITABLE);
  const iso = new Date(wall).toISOString();
  return iso.slice(0, iso.length - 1);
}

/**
 * A DateTime as the API writes it, local wall time in `zone` (docs/decisions.md, Wire):
 * - `Offset` (default): `2026-05-06T10:16:41.000+02:00`, milliseconds and the explicit
 *   offset, never `Z`;
 * - `Local`: `2026-05-06T10:16:41.0000000`, seven fraction digits and no offset, the form
 *   clients of the live service read (an hour that repeats when summer time ends reads the
 *   same twice: that is the form's nature).
 * Hot path: a cached offset and one Date, no Luxon per value.
 */
export function formatDateTime(value: Date | number, zone: string, format: DateTimeFormatName = 'Offset'): string {
  const ms = toMs(value);
  const entry = offsets(zone).at(ms);
  return format === 'Local' ? localIso(ms, entry) + '0000' : localIso(ms, entry) + entry.suffix;
}

const TWO = Array.from({ length: 100 }, (_, i) => (i < 10 ? '0' : '') + i);
const THREE = Array.from({ length: 1000 }, (_, i) => (i < 10 ? '00' : i < 100 ? '0' : '') + i);

/** Length of a four-digit-year value in each format, the only ones the fast path takes. */
const PLAIN_LENGTH: Record<DateTimeFormatName, number> = { Offset: 29, Local: 27 };

/**
 * formatDateTime for one stream of instants (an export, one answer), same output: rows come
 * in time order, so the local date and the offset of the previous value almost always still
 * hold, and only the time of day is computed (arithmetic and two lookup tables, no Date per
 * value). A new day or offset takes one formatDateTime call. Correct in any order, fastest in
 * time order; one formatter per request, so the format is chosen once there.
 */
export function dateTimeFormatter(zone: string, format: DateTimeFormatName = 'Offset'): (ms: number) => string {
  let dayStart = NaN;
  let dayEnd = NaN;
  let offset = NaN;
  let prefix = '';
  let suffix = '';
  const plainLength = PLAIN_LENGTH[format];
  return (ms) => {
    const off = zoneOffsetMs(ms, zone);
    const local = ms + off;
    // Only four-digit years and whole milliseconds take the fast path (a wall time beyond them is
    // written clamped; a fraction, as hook snapshots of leads carry, is truncated by the Date).
    if (!(local >= dayStart && local < dayEnd && off === offset && Number.isInteger(ms))) {
      const full = formatDateTime(ms, zone, format);
      if (full.length !== plainLength || !Number.isInteger(ms) || !isWritableWallTime(local)) return full;
      prefix = full.slice(0, 11);
      // `+02:00` after the milliseconds, or the four digits that make seven.
      suffix = full.slice(23);
      offset = off;
      dayStart = Math.floor(local / DAY_MS) * DAY_MS;
      dayEnd = dayStart + DAY_MS;
    }
    let t = local - dayStart;
    const h = (t / 3_600_000) | 0;
    t -= h * 3_600_000;
    const m = (t / 60_000) | 0;
    t -= m * 60_000;
    const sec = (t / 1000) | 0;
    return prefix + TWO[h] + ':' + TWO[m] + ':' + TWO[sec] + '.' + THREE[t - sec * 1000] + suffix;
  };
}

/** `yyyyMMddHHmmss` in `zone` (CSV file names). */
export function formatCompactLocal(value: Date | number, zone: string): string {
  const ms = toMs(value);
  const s = localIso(ms, offsets(zone).at(ms));
  const t = s.length - 23; // extended years (more than 4 digits) shift every position
  return (
    s.slice(0, 4 + t) +
    s.slice(5 + t, 7 + t) +
    s.slice(8 + t, 10 + t) +
    s.slice(11 + t, 13 + t) +
    s.slice(14 + t, 16 + t) +
    s.slice(17 + t, 19 + t)
  );
}

/** `yyyy-MM-dd` of the local date in `zone` (lead pool names). */
export function localDate(value: Date | number, zone: string): string {
  const ms = toMs(value);
  const s = localIso(ms, offsets(zone).at(ms));
  return s.slice(0, s.length - 13);
}

/** Local hour 0–23 in `zone` (production hours). */
export function localHour(value: Date | number, zone: string): number {
  const ms = toMs(value);
  return new Date(ms + offsets(zone).at(ms).ms).getUTCHours();
}

// yyyy-MM-dd, then optionally T/space + HH:mm[:ss[.fff]] and an offset. A space before an
// unsigned offset (`HH:MM`, `HHMM` or `HH`) stands for `+`: an unencoded `+` in a query string
// arrives as a space, and Java's and PHP's formats write `+0100`. A space may also come before a
// signed offset, `Z`, `UTC` or `GMT`, as Ruby's `Time#to_s` (`2026-05-06 10:16:41 +0200`,
// `… UTC`) and Go's layouts write them.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?: ?([Zz]|UTC|GMT)| ?([+-])(\d{2})(?::?(\d{2}))?| (\d{2})(?::?(\d{2}))?)?)?$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/**
 * UTC instant of a local wall time in `zone`. Deterministic disambiguation, the `compatible`
 * rule of Temporal and java.time:
 * - a wall time in a DST gap (`2026-03-29T02:30` in Copenhagen) moves forward by the length of
 *   the gap (03:30+02:00) — what Luxon does too;
 * - a wall time in a DST overlap (`2026-10-25T02:30`) is the earlier instant (02:30+02:00).
 *   Luxon is not used here because its choice in an overlap depends on the offset at the
 *   current clock time, so the same input would parse differently in summer and winter.
 */
function localToUtc(wallMs: number, zone: string): number {
  const z = offsets(zone);
  const before = z.at(wallMs - DAY_MS).ms;
  const after = z.at(wallMs + DAY_MS).ms;
  const validBefore = z.at(wallMs - before).ms === before;
  if (before === after) {
    if (validBefore) return wallMs - before;
  } else {
    const validAfter = z.at(wallMs - after).ms === after;
    if (validBefore && validAfter) return wallMs - Math.max(before, after);
    if (validBefore) return wallMs - before;
    if (validAfter) return wallMs - after;
  }
  // Gap: read the wall time with the offset in force before the gap.
  return wallMs - before;
}

const FORMAT_HINT = 'expected an ISO 8601 date and time such as 2026-05-06T10:16:41+02:00, or a date such as 2026-05-06';

/**
 * ISO 8601 combined date and time, or a date alone. With an offset or `Z` the instant is taken
 * as is; without one it is wall time in `zone`; a date alone is local midnight. Digits beyond
 * milliseconds are dropped (truncated, like Luxon). The instant must lie between 1900-01-01
 * and 9999-12-31 in `zone` (docs/decisions.md, DateTime and TimeSpan), where the zone gives
 * it an offset: outside, Postgres and the four-digit years of the output cannot follow.
 */
export function parseDateTime(input: string, zone: string): Date {
  const ms = readDateTime(input, zone);
  const offset = offsets(zone).at(ms).ms;
  if (!Number.isFinite(offset)) throw new CodecError(`the time zone ${zone} gives no offset for this date and time`);
  const wall = ms + offset;
  // West of UTC the last hours of 9999 are year 10000 in UTC, which Postgres's input does not take.
  if (wall < FIRST_INPUT || wall > LAST_INPUT || ms > LAST_WRITABLE) {
    throw new CodecError(`must lie between 1900-01-01 and 9999-12-31 (${zone} time)`);
  }
  return new Date(ms);
}

/**
 * Whether `input` is a DateTime in form (ISO 8601, a real calendar day and time), whatever its
 * year: lead data values of a date or datetime field are kept and written as text, never as an
 * instant, so the range of DateTime inputs does not apply to them.
 */
export function isDateTimeText(input: string, zone: string): boolean {
  try {
    readDateTime(input, zone);
    return true;
  } catch {
    return false;
  }
}

/** The instant `input` names, in epoch milliseconds, without the range check. */
function readDateTime(input: string, zone: string): number {
  if (typeof input !== 'string') throw new CodecError(FORMAT_HINT);
  const m = DATE_TIME.exec(input.trim());
  if (m === null) throw new CodecError(FORMAT_HINT);
  const year = +m[1]!;
  const month = +m[2]!;
  const day = +m[3]!;
  const hour = m[4] === undefined ? 0 : +m[4];
  const minute = m[5] === undefined ? 0 : +m[5];
  const second = m[6] === undefined ? 0 : +m[6];
  const milli = m[7] === undefined ? 0 : +(m[7] + '00').slice(0, 3);
  if (month < 1 || month > 12) throw new CodecError(`month ${m[2]} is out of range`);
  if (day < 1 || day > daysInMonth(year, month)) throw new CodecError(`day ${m[3]} is out of range for ${m[1]}-${m[2]}`);
  if (hour > 23) throw new CodecError(`hour ${m[4]} is out of range`);
  if (minute > 59) throw new CodecError(`minute ${m[5]} is out of range`);
  if (second > 59) throw new CodecError(`second ${m[6]} is out of range`);
  const wall = utcMs(year, month, day, hour, minute, second, milli);

  let offsetMs: number | undefined;
  if (m[8] !== undefined) offsetMs = 0;
  else if (m[9] !== undefined || m[12] !== undefined) {
    const sign = m[9] === '-' ? -1 : 1;
    const oh = +(m[10] ?? m[12])!;
    const om = +(m[11] ?? m[13] ?? '0');
    if (oh > 23 || om > 59) throw new CodecError('offset is out of range');
    offsetMs = sign * (oh * 60 + om) * MINUTE_MS;
  }
  const ms = offsetMs === undefined ? localToUtc(wall, zone) : wall - offsetMs;
  if (!Number.isFinite(ms)) throw new CodecError(`the time zone ${zone} gives no offset for this date and time`);
  return ms;
}
