import { DateTime } from 'luxon';
import {
  CodecError,
  dateTimeFormatter,
  formatCompactLocal,
  formatDateTime,
  isDateTimeText,
  localDate,
  localHour,
  parseDateTime,
  zoneOffsetMs,
} from '../../src/domain/datetime';

const CPH = 'Europe/Copenhagen';
const iso = (d: Date) => d.toISOString();

describe('parseDateTime', () => {
  it('when the value has Z, then it is taken as UTC', () => {
    expect(iso(parseDateTime('2026-05-06T08:16:41Z', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06t08:16:41z', CPH))).toBe('2026-05-06T08:16:41.000Z');
  });

  it('when the value has an offset, then the offset is used whatever the zone', () => {
    expect(iso(parseDateTime('2026-05-06T10:16:41+02:00', 'America/New_York'))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41-0330', CPH))).toBe('2026-05-06T13:46:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41+05', CPH))).toBe('2026-05-06T05:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41-00:00', CPH))).toBe('2026-05-06T10:16:41.000Z');
  });

  it('when a query string turned the + of an offset into a space, then it is read as +, whether the offset is HH:MM, HHMM or HH', () => {
    expect(iso(parseDateTime('2026-05-06T10:16:41 02:00', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41 0200', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41.123 0530', CPH))).toBe('2026-05-06T04:46:41.123Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41 02', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(() => parseDateTime('2026-05-06T10:16:41 2', CPH)).toThrow();
  });

  it('when a space comes before a signed offset, Z, UTC or GMT (Ruby, Go), then it is read as without the space', () => {
    expect(iso(parseDateTime('2026-05-06 10:16:41 +0200', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41 -03:30', CPH))).toBe('2026-05-06T13:46:41.000Z');
    expect(iso(parseDateTime('2026-05-06 10:16:41 UTC', CPH))).toBe('2026-05-06T10:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41GMT', CPH))).toBe('2026-05-06T10:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41 Z', CPH))).toBe('2026-05-06T10:16:41.000Z');
    expect(() => parseDateTime('2026-05-06T10:16:41  +0200', CPH)).toThrow();
    expect(() => parseDateTime('2026-05-06T10:16:41 CET', CPH)).toThrow();
    expect(() => parseDateTime('2026-05-06 UTC', CPH)).toThrow();
  });

  it('when the value has no offset, then it is wall time in the zone', () => {
    expect(iso(parseDateTime('2026-05-06T10:16:41', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-01-06T10:16:41', CPH))).toBe('2026-01-06T09:16:41.000Z');
    expect(iso(parseDateTime('2026-01-06T10:16:41', 'Asia/Kolkata'))).toBe('2026-01-06T04:46:41.000Z');
  });

  it('when the value is a date alone, then it is local midnight', () => {
    expect(iso(parseDateTime('2026-05-06', CPH))).toBe('2026-05-05T22:00:00.000Z');
    expect(iso(parseDateTime('2026-12-06', CPH))).toBe('2026-12-05T23:00:00.000Z');
  });

  it('when the separator is a space or seconds are missing, then it still parses', () => {
    expect(iso(parseDateTime('2026-05-06 10:16:41', CPH))).toBe('2026-05-06T08:16:41.000Z');
    expect(iso(parseDateTime('2026-05-06T10:16', CPH))).toBe('2026-05-06T08:16:00.000Z');
    expect(iso(parseDateTime('2026-05-06 10:16Z', CPH))).toBe('2026-05-06T10:16:00.000Z');
  });

  it('when the value has fractional seconds, then milliseconds are kept and finer digits dropped', () => {
    expect(iso(parseDateTime('2026-05-06T10:16:41.5Z', CPH))).toBe('2026-05-06T10:16:41.500Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41,25Z', CPH))).toBe('2026-05-06T10:16:41.250Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41.1234567Z', CPH))).toBe('2026-05-06T10:16:41.123Z');
    expect(iso(parseDateTime('2026-05-06T10:16:41.9999999Z', CPH))).toBe('2026-05-06T10:16:41.999Z');
  });

  it('when surrounded by whitespace, then it is trimmed', () => {
    expect(iso(parseDateTime('  2026-05-06T10:16:41Z ', CPH))).toBe('2026-05-06T10:16:41.000Z');
  });

  it('when the wall time falls in a DST gap, then it moves forward by the gap like Luxon', () => {
    const d = parseDateTime('2026-03-29T02:30', CPH);
    expect(formatDateTime(d, CPH)).toBe('2026-03-29T03:30:00.000+02:00');
    expect(d.getTime()).toBe(DateTime.fromObject({ year: 2026, month: 3, day: 29, hour: 2, minute: 30 }, { zone: CPH }).toMillis());
    expect(formatDateTime(parseDateTime('2026-03-08T02:30', 'America/New_York'), 'America/New_York')).toBe('2026-03-08T03:30:00.000-04:00');
    // Lord Howe moves 30 minutes: 02:15 does not exist on 2026-10-04.
    expect(formatDateTime(parseDateTime('2026-10-04T02:15', 'Australia/Lord_Howe'), 'Australia/Lord_Howe')).toBe(
      '2026-10-04T02:45:00.000+11:00',
    );
  });

  it('when the wall time is ambiguous in a DST overlap, then the earlier instant is taken', () => {
    expect(formatDateTime(parseDateTime('2026-10-25T02:30', CPH), CPH)).toBe('2026-10-25T02:30:00.000+02:00');
    expect(iso(parseDateTime('2026-10-25T02:30', CPH))).toBe('2026-10-25T00:30:00.000Z');
    expect(formatDateTime(parseDateTime('2026-11-01T01:30', 'America/New_York'), 'America/New_York')).toBe('2026-11-01T01:30:00.000-04:00');
    expect(formatDateTime(parseDateTime('2026-04-05T01:45', 'Australia/Lord_Howe'), 'Australia/Lord_Howe')).toBe(
      '2026-04-05T01:45:00.000+11:00',
    );
  });

  it('when the wall time is just outside a transition, then it is unambiguous', () => {
    expect(formatDateTime(parseDateTime('2026-03-29T01:59:59.999', CPH), CPH)).toBe('2026-03-29T01:59:59.999+01:00');
    expect(formatDateTime(parseDateTime('2026-03-29T03:00', CPH), CPH)).toBe('2026-03-29T03:00:00.000+02:00');
    expect(formatDateTime(parseDateTime('2026-10-25T03:00', CPH), CPH)).toBe('2026-10-25T03:00:00.000+01:00');
    expect(formatDateTime(parseDateTime('2026-10-25T01:59', CPH), CPH)).toBe('2026-10-25T01:59:00.000+02:00');
  });

  it('when a leap day exists, then it parses, and when it does not, then it is rejected', () => {
    expect(iso(parseDateTime('2028-02-29T00:00Z', CPH))).toBe('2028-02-29T00:00:00.000Z');
    expect(iso(parseDateTime('2000-02-29T00:00Z', CPH))).toBe('2000-02-29T00:00:00.000Z');
    expect(() => parseDateTime('2026-02-29', CPH)).toThrow(CodecError);
    expect(() => parseDateTime('1900-02-29', CPH)).toThrow(CodecError);
  });

  it('when the year is below 100, then it is not mapped to the 1900s (the range refuses it; its form is a DateTime)', () => {
    expect(() => parseDateTime('0099-03-01T00:00Z', CPH)).toThrow(/between 1900-01-01 and 9999-12-31/);
    expect(isDateTimeText('0099-03-01T00:00Z', CPH)).toBe(true);
  });

  describe('range', () => {
    it('when the instant is the first or the last of 1900-01-01 to 9999-12-31 in the zone, then it parses', () => {
      expect(iso(parseDateTime('1900-01-01', CPH))).toBe('1899-12-31T23:00:00.000Z');
      expect(iso(parseDateTime('1899-12-31T23:00:00Z', CPH))).toBe('1899-12-31T23:00:00.000Z');
      expect(iso(parseDateTime('9999-12-31T23:59:59.999', CPH))).toBe('9999-12-31T22:59:59.999Z');
      expect(iso(parseDateTime('9999-12-31T23:59:59.999+01:00', CPH))).toBe('9999-12-31T22:59:59.999Z');
    });

    it.each([
      ['a millisecond before it in the zone', '1899-12-31T22:59:59.999Z'],
      ['local time before 1900', '1899-12-31T23:59:59'],
      ['year 1, which local mean time puts in year 0', '0001-01-01'],
      ['year 0', '0000-01-01T00:00:00'],
      ['9999 at -14:00, which is 10000 in the zone', '9999-12-31T23:59:59-14:00'],
      ['a millisecond after it in the zone', '9999-12-31T23:00:00Z'],
    ])('when the value is %s, then it is a CodecError naming the range', (_name, input) => {
      expect(() => parseDateTime(input, CPH)).toThrow(/must lie between 1900-01-01 and 9999-12-31 \(Europe\/Copenhagen time\)/);
    });

    it('when the zone is west of UTC, then the last hours of 9999 (year 10000 in UTC) are refused too', () => {
      expect(iso(parseDateTime('9999-12-31T12:00:00', 'America/New_York'))).toBe('9999-12-31T17:00:00.000Z');
      expect(() => parseDateTime('9999-12-31T20:00:00', 'America/New_York')).toThrow(CodecError);
    });

    it('when lead data is checked for a DateTime form, then any year of four digits is one and a broken day is not', () => {
      expect(isDateTimeText('1850-06-01', CPH)).toBe(true);
      expect(isDateTimeText('0001-01-01T10:00:00', CPH)).toBe(true);
      expect(isDateTimeText('1850-02-30', CPH)).toBe(false);
      expect(isDateTimeText('soon', CPH)).toBe(false);
    });
  });

  it.each([
    '',
    '   ',
    'garbage',
    '2026-13-01',
    '2026-00-10',
    '2026-04-31',
    '2026-05-00',
    '2026-05-06T24:00',
    '2026-05-06T10:60',
    '2026-05-06T10:16:60',
    '2026-05-06T10:16:41+24:00',
    '2026-05-06T10:16:41+02:60',
    '2026-5-6',
    '26-05-06',
    '20260506T101641Z',
    '2026-05-06T',
    '2026-05-06T10',
    '2026-05-06T10:16:41.',
    '2026-05-06T10:16:41Z+02:00',
    '2026-05-06Z',
    '2026-W19-3',
    '2026-126',
    '1715000000',
    '2026-05-06T10:16:41 +02:00 CET',
  ])('when the value is %j, then it is a CodecError', (input) => {
    expect(() => parseDateTime(input, CPH)).toThrow(CodecError);
  });

  it('when rejected, then the message is readable', () => {
    expect(() => parseDateTime('garbage', CPH)).toThrow(/expected an ISO 8601 date and time/);
    expect(() => parseDateTime('2026-13-01', CPH)).toThrow(/month 13 is out of range/);
  });

  it('when the value is formatted and parsed again, then the instant is the same', () => {
    for (const t of [0, 1_780_000_000_000, 1_792_884_600_000, -1_000_000_000_000]) {
      expect(parseDateTime(formatDateTime(t, CPH), 'UTC').getTime()).toBe(t);
    }
  });
});

describe('formatDateTime', () => {
  it('when formatting, then local wall time, milliseconds and an explicit offset are written', () => {
    expect(formatDateTime(new Date('2026-05-06T08:16:41Z'), CPH)).toBe('2026-05-06T10:16:41.000+02:00');
    expect(formatDateTime(new Date('2026-01-06T08:16:41.007Z'), CPH)).toBe('2026-01-06T09:16:41.007+01:00');
    expect(formatDateTime(Date.parse('2026-01-06T08:16:41Z'), 'Asia/Kolkata')).toBe('2026-01-06T13:46:41.000+05:30');
    expect(formatDateTime(Date.parse('2026-01-06T08:16:41Z'), 'America/St_Johns')).toBe('2026-01-06T04:46:41.000-03:30');
  });

  it('when the zone is UTC, then the offset is +00:00, never Z', () => {
    expect(formatDateTime(new Date('2026-05-06T08:16:41Z'), 'UTC')).toBe('2026-05-06T08:16:41.000+00:00');
  });

  it('when the instant is around a transition, then each side has its own offset', () => {
    expect(formatDateTime(Date.parse('2026-03-29T00:59:59.999Z'), CPH)).toBe('2026-03-29T01:59:59.999+01:00');
    expect(formatDateTime(Date.parse('2026-03-29T01:00:00.000Z'), CPH)).toBe('2026-03-29T03:00:00.000+02:00');
    expect(formatDateTime(Date.parse('2026-10-25T00:30:00.000Z'), CPH)).toBe('2026-10-25T02:30:00.000+02:00');
    expect(formatDateTime(Date.parse('2026-10-25T01:30:00.000Z'), CPH)).toBe('2026-10-25T02:30:00.000+01:00');
  });

  it('when the zone had a local mean time offset with seconds, then the string still names the exact instant', () => {
    const t = Date.parse('1850-06-01T12:00:00Z');
    const s = formatDateTime(t, CPH);
    expect(s).toMatch(/^1850-06-01T12:53:00\.000\+00:53$/);
    expect(Date.parse(s)).toBe(t);
  });

  it('when a transition falls inside a 15-minute bucket (1893 in Copenhagen), then each side still gets its offset', () => {
    // Local mean time +00:53:28 ended at 1893-04-01T00:00 local, 1893-03-31T23:06:32Z.
    let lo = Date.parse('1893-03-31T00:00:00Z');
    let hi = Date.parse('1893-04-02T00:00:00Z');
    const off = (t: number) => DateTime.fromMillis(t, { zone: CPH }).offset;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (off(mid) === off(lo)) lo = mid;
      else hi = mid;
    }
    expect(hi % (15 * 60_000)).not.toBe(0);
    expect(formatDateTime(hi - 1, CPH)).toMatch(/\+00:53$/);
    expect(formatDateTime(hi, CPH)).toBe('1893-04-01T00:06:32.000+01:00');
    for (let t = hi - 3000; t <= hi + 3000; t += 500) expect(Date.parse(formatDateTime(t, CPH))).toBe(t);
  });

  it('when the value is an invalid date, then it throws', () => {
    expect(() => formatDateTime(new Date(NaN), CPH)).toThrow(RangeError);
  });

  it('when the zone is unknown, then it throws', () => {
    expect(() => formatDateTime(0, 'Mars/Olympus')).toThrow(RangeError);
  });

  it('when the wall time is beyond the years 0000 to 9999 (stored before inputs were bounded), then the nearest four-digit one is written', () => {
    const year10000 = Date.parse('+010000-01-01T12:00:00Z');
    expect(formatDateTime(year10000, CPH)).toBe('9999-12-31T23:59:59.999+01:00');
    expect(formatDateTime(year10000, CPH, 'Local')).toBe('9999-12-31T23:59:59.9990000');
    expect(dateTimeFormatter(CPH)(year10000)).toBe('9999-12-31T23:59:59.999+01:00');
    expect(formatDateTime(Date.parse('-000001-06-01T00:00:00Z'), 'UTC')).toBe('0000-01-01T00:00:00.000+00:00');
  });

  it.each([CPH, 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe'])(
    'when many random instants in %s are formatted, then each equals Luxon',
    (zone) => {
      let seed = 12345;
      const random = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed / 2147483648;
      };
      const from = Date.parse('1990-01-01T00:00:00Z');
      const to = Date.parse('2040-01-01T00:00:00Z');
      const samples: number[] = [];
      for (let i = 0; i < 10000; i++) samples.push(Math.floor(from + random() * (to - from)));
      // Dense samples around each transition of 2024–2027, where bucket edges matter.
      const offsetAt = (t: number) => DateTime.fromMillis(t, { zone }).offset;
      for (let t = Date.parse('2024-01-01T00:00:00Z'); t < Date.parse('2028-01-01T00:00:00Z'); t += 86_400_000) {
        if (offsetAt(t) === offsetAt(t + 86_400_000)) continue;
        let lo = t;
        let hi = t + 86_400_000;
        while (hi - lo > 1) {
          const mid = Math.floor((lo + hi) / 2);
          if (offsetAt(mid) === offsetAt(lo)) lo = mid;
          else hi = mid;
        }
        for (let d = -5_400_000; d <= 5_400_000; d += 59_999) samples.push(hi + d);
        samples.push(hi - 1, hi, hi + 1);
      }
      const mismatches: string[] = [];
      for (const t of samples) {
        const luxon = DateTime.fromMillis(t, { zone });
        const ours = formatDateTime(t, zone);
        if (ours !== luxon.toISO() || zoneOffsetMs(t, zone) !== luxon.offset * 60_000) mismatches.push(`${t}: ${ours} != ${luxon.toISO()}`);
      }
      expect(mismatches).toEqual([]);
      expect(samples.length).toBeGreaterThan(zone === 'Asia/Kolkata' ? 9999 : 11000);
    },
  );
});

describe('local parts', () => {
  const t = new Date('2026-05-06T22:16:41.123Z'); // 00:16:41 on 7 May in Copenhagen

  it('when a compact local stamp is asked, then it is yyyyMMddHHmmss in the zone', () => {
    expect(formatCompactLocal(t, CPH)).toBe('20260507001641');
    expect(formatCompactLocal(t, 'UTC')).toBe('20260506221641');
  });

  it('when the local date is asked, then it is the date in the zone', () => {
    expect(localDate(t, CPH)).toBe('2026-05-07');
    expect(localDate(t, 'America/New_York')).toBe('2026-05-06');
  });

  it('when the local hour is asked, then it is 0–23 in the zone', () => {
    expect(localHour(t, CPH)).toBe(0);
    expect(localHour(t, 'UTC')).toBe(22);
    expect(localHour(new Date('2026-01-06T07:59:59Z'), CPH)).toBe(8);
    expect(localHour(new Date('2026-07-06T19:00:00Z'), CPH)).toBe(21);
  });
});
