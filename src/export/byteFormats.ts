import { formatDateTime, isWritableWallTime, zoneOffsetMs } from '../domain/datetime';
import type { DateTimeFormatName } from '../domain/enums';
import type { ByteWriter } from './byteWriter';

/**
 * The API's DateTime and TimeSpan text written as bytes: the same characters as
 * formatDateTime (src/domain/datetime.ts) and formatMillis (src/domain/timespan.ts), without
 * a string per value.
 */

const DAY_MS = 86_400_000;

/** Length of a four-digit-year value, the only ones the fast path takes. */
const PLAIN_LENGTH: Record<DateTimeFormatName, number> = { Offset: 29, Local: 27 };

/**
 * Writes DateTimes of one export. Rows come in time order, so the local date and the offset
 * of the previous value almost always still hold: then only the time of day is computed and
 * its digits written; the date (`yyyy-MM-ddT`) and the end (`+02:00`, or `0000`) are
 * copied. A new day or offset takes one formatDateTime call.
 */
export class DateTimeWriter {
  private dayStart = NaN;
  private dayEnd = NaN;
  private offset = NaN;
  private readonly prefix = new Uint8Array(11);
  private suffix = new Uint8Array(0);
  private readonly plainLength: number;

  constructor(
    private readonly zone: string,
    private readonly mode: DateTimeFormatName = 'Offset',
  ) {
    this.plainLength = PLAIN_LENGTH[mode];
  }

  /**
   * Epoch milliseconds as the API's DateTime, without quotes. A fractional value is written as
   * formatDateTime writes it: the wall time is the Date of `ms + offset`, truncated.
   */
  write(w: ByteWriter, ms: number): void {
    const off = zoneOffsetMs(ms, this.zone);
    const local = Math.trunc(ms + off);
    if (!(local >= this.dayStart && local < this.dayEnd && off === this.offset)) {
      const full = formatDateTime(ms, this.zone, this.mode);
      if (full.length !== this.plainLength || !isWritableWallTime(local)) {
        w.ascii(full);
        return;
      }
      for (let i = 0; i < 11; i++) this.prefix[i] = full.charCodeAt(i);
      this.suffix = Buffer.from(full.slice(23), 'latin1');
      this.offset = off;
      this.dayStart = Math.floor(local / DAY_MS) * DAY_MS;
      this.dayEnd = this.dayStart + DAY_MS;
    }
    // An int32 from here on (a day has 86,400,000 ms): integer division and remainder, no float modulo.
    let t = (local - this.dayStart) | 0;
    const h = (t / 3_600_000) | 0;
    t -= h * 3_600_000;
    const m = (t / 60_000) | 0;
    t -= m * 60_000;
    const s = (t / 1000) | 0;
    t -= s * 1000;
    const suffix = this.suffix;
    w.room(23 + suffix.length);
    const b = w.buf;
    let p = w.pos;
    const prefix = this.prefix;
    for (let i = 0; i < 11; i++) b[p++] = prefix[i]!;
    b[p++] = 48 + ((h / 10) | 0);
    b[p++] = 48 + (h % 10);
    b[p++] = 0x3a;
    b[p++] = 48 + ((m / 10) | 0);
    b[p++] = 48 + (m % 10);
    b[p++] = 0x3a;
    b[p++] = 48 + ((s / 10) | 0);
    b[p++] = 48 + (s % 10);
    b[p++] = 0x2e;
    b[p++] = 48 + ((t / 100) | 0);
    b[p++] = 48 + (((t / 10) | 0) % 10);
    b[p++] = 48 + (t % 10);
    for (let i = 0; i < suffix.length; i++) b[p++] = suffix[i]!;
    w.pos = p;
  }
}

const SECOND_MS = 1000;
const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/**
 * A duration in milliseconds as the canonical TimeSpan formatMillis writes (`PT12M42S`,
 * `P1DT2H`, `PT1.5S`, `PT0S`; days of 24 hours), without quotes.
 */
export function writeMillis(w: ByteWriter, ms: number): void {
  let rest = Math.round(ms);
  if (rest === 0) {
    w.ascii('PT0S');
    return;
  }
  w.room(48);
  const b = w.buf;
  let p = w.pos;
  if (rest < 0) {
    b[p++] = 0x2d;
    rest = -rest;
  }
  b[p++] = 0x50; // P
  const days = Math.floor(rest / DAY_MS);
  // Less than a day from here on, an int32: integer division and remainder, no float modulo.
  rest = (rest - days * DAY_MS) | 0;
  const hours = (rest / HOUR_MS) | 0;
  rest -= hours * HOUR_MS;
  const minutes = (rest / MINUTE_MS) | 0;
  rest -= minutes * MINUTE_MS;
  const seconds = (rest / SECOND_MS) | 0;
  const millis = rest - seconds * SECOND_MS;
  if (days !== 0) {
    p = digits(b, p, days);
    b[p++] = 0x44; // D
  }
  if (hours !== 0 || minutes !== 0 || seconds !== 0 || millis !== 0) {
    b[p++] = 0x54; // T
    if (hours !== 0) {
      p = digits(b, p, hours);
      b[p++] = 0x48; // H
    }
    if (minutes !== 0) {
      p = digits(b, p, minutes);
      b[p++] = 0x4d; // M
    }
    if (seconds !== 0 || millis !== 0) {
      p = digits(b, p, seconds);
      if (millis !== 0) {
        b[p++] = 0x2e;
        // Three digits with trailing zeros trimmed: .5, .25, .125, .05, .005
        const d1 = (millis / 100) | 0;
        const d2 = ((millis / 10) | 0) % 10;
        const d3 = millis % 10;
        b[p++] = 48 + d1;
        if (d2 !== 0 || d3 !== 0) b[p++] = 48 + d2;
        if (d3 !== 0) b[p++] = 48 + d3;
      }
      b[p++] = 0x53; // S
    }
  }
  w.pos = p;
}

/** Decimal digits of a non-negative safe integer. */
function digits(b: Buffer, p: number, n: number): number {
  if (n < 10) {
    b[p++] = 48 + n;
    return p;
  }
  if (n < 100) {
    b[p++] = 48 + ((n / 10) | 0);
    b[p++] = 48 + (n % 10);
    return p;
  }
  const s = String(n);
  for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i);
  return p;
}
