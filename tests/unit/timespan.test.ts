import { Duration } from 'luxon';
import { CodecError, formatDateTime, parseDateTime } from '../../src/domain/datetime';
import {
  addTimeSpan,
  formatMillis,
  formatTimeSpan,
  parseTimeSpan,
  pgIntervalToTimeSpan,
  timeSpanToMillis,
  timeSpanToPgInterval,
  TimeSpan,
} from '../../src/domain/timespan';

const CPH = 'Europe/Copenhagen';
const ts = (p: Partial<TimeSpan>): TimeSpan => ({ years: 0, months: 0, days: 0, hours: 0, minutes: 0, seconds: 0, ...p });

describe('parseTimeSpan, ISO 8601', () => {
  it.each<[string, Partial<TimeSpan>]>([
    ['PT2H', { hours: 2 }],
    ['PT12M42S', { minutes: 12, seconds: 42 }],
    ['P1DT2H', { days: 1, hours: 2 }],
    ['P1Y2M3DT4H5M6S', { years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6 }],
    ['P1Y2M', { years: 1, months: 2 }],
    ['P3D', { days: 3 }],
    ['PT0S', {}],
    ['P0D', {}],
    ['P2W', { days: 14 }],
    ['P1W2D', { days: 9 }],
    ['PT90M', { minutes: 90 }],
    ['PT36H', { hours: 36 }],
    ['P1M', { months: 1 }],
    ['PT1M', { minutes: 1 }],
  ])('when the value is %s, then the parts are read', (input, expected) => {
    expect(parseTimeSpan(input)).toEqual(ts(expected));
  });

  it('when the smallest part has a fraction, then it is spread over the smaller parts', () => {
    expect(parseTimeSpan('PT1.5S')).toEqual(ts({ seconds: 1.5 }));
    expect(parseTimeSpan('PT1,25S')).toEqual(ts({ seconds: 1.25 }));
    expect(parseTimeSpan('PT1.5H')).toEqual(ts({ hours: 1, minutes: 30 }));
    expect(parseTimeSpan('PT0.5M')).toEqual(ts({ seconds: 30 }));
    expect(parseTimeSpan('P1.5D')).toEqual(ts({ days: 1, hours: 12 }));
    expect(parseTimeSpan('P0.5W')).toEqual(ts({ days: 3, hours: 12 }));
    expect(parseTimeSpan('PT2H0.01M')).toEqual(ts({ hours: 2, seconds: 0.6 }));
    expect(parseTimeSpan('PT4.35S')).toEqual(ts({ seconds: 4.35 }));
    expect(parseTimeSpan('PT0.0001S')).toEqual(ts({}));
  });

  it('when the value starts with -, then the span is negative', () => {
    expect(parseTimeSpan('-PT2H')).toEqual(ts({ hours: 2, negative: true }));
    expect(parseTimeSpan('-PT0S').negative).toBeUndefined();
  });

  it.each([
    '',
    'P',
    'PT',
    'P1DT',
    'pt2h',
    'PT2h',
    'p1d',
    'P1d',
    'Pt2H',
    '2H',
    'PT-2H',
    'P-1D',
    '+PT2H',
    '--PT2H',
    'PT1.5H30M',
    'P1.5DT2H',
    'P0.5Y',
    'P1.5M',
    'PT2H3H',
    'PT2S3M',
    'P2DT',
    'PT1.S',
    'PT.5S',
    'P1H',
    'PT1D',
    ' PT2H',
    'PT2H ',
    'PT99999999999999999999H',
    'garbage',
  ])('when the value is %j, then it is a CodecError', (input) => {
    expect(() => parseTimeSpan(input)).toThrow(CodecError);
  });

  it('when rejected, then the message is readable', () => {
    expect(() => parseTimeSpan('pt2h')).toThrow(/expected an ISO 8601 duration/);
    expect(() => parseTimeSpan('PT1.5H30M')).toThrow(/only the smallest part/);
  });
});

describe('parseTimeSpan, .NET constant form', () => {
  it.each<[string, Partial<TimeSpan>]>([
    ['00:12:42', { minutes: 12, seconds: 42 }],
    ['3.00:00:00', { days: 3 }],
    ['1.02:03:04.5', { days: 1, hours: 2, minutes: 3, seconds: 4.5 }],
    ['00:00:01.1234567', { seconds: 1.123 }],
    ['23:59:59', { hours: 23, minutes: 59, seconds: 59 }],
    ['-01:00:00', { hours: 1, negative: true }],
    ['-1.00:00:00', { days: 1, negative: true }],
    ['00:00:00', {}],
    ['1:00:00', { hours: 1 }],
  ])('when the value is %s, then the parts are read', (input, expected) => {
    expect(parseTimeSpan(input)).toEqual(ts(expected));
  });

  it.each(['24:00:00', '00:60:00', '00:00:60', '100:00:00', '00:0:00', '00:00', '1.', '00:00:00.12345678', '1:02:03:04', '00:00:00.'])(
    'when the value is %j, then it is a CodecError',
    (input) => {
      expect(() => parseTimeSpan(input)).toThrow(CodecError);
    },
  );
});

describe('formatTimeSpan', () => {
  it.each<[Partial<TimeSpan>, string]>([
    [{ minutes: 12, seconds: 42 }, 'PT12M42S'],
    [{ hours: 2 }, 'PT2H'],
    [{ days: 1, hours: 2 }, 'P1DT2H'],
    [{ years: 1, months: 2 }, 'P1Y2M'],
    [{}, 'PT0S'],
    [{ negative: true }, 'PT0S'],
    [{ seconds: 1.5 }, 'PT1.5S'],
    [{ seconds: 0.25 }, 'PT0.25S'],
    [{ seconds: 0.001 }, 'PT0.001S'],
    [{ seconds: 1.0004 }, 'PT1S'],
    [{ seconds: 4.35 }, 'PT4.35S'],
    [{ years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6.5 }, 'P1Y2M3DT4H5M6.5S'],
    [{ hours: 2, negative: true }, '-PT2H'],
    [{ minutes: 90 }, 'PT90M'],
  ])('when the span is %j, then it is written %s', (span, expected) => {
    expect(formatTimeSpan(ts(span))).toBe(expected);
  });

  it('when a canonical value is parsed and formatted, then it is unchanged', () => {
    for (const s of ['PT12M42S', 'PT2H', 'P1DT2H', 'P1Y2M', 'PT0S', 'PT1.5S', '-P1Y2M3DT4H5M6.789S', 'PT0.05S']) {
      expect(formatTimeSpan(parseTimeSpan(s))).toBe(s);
    }
  });

  it('when a .NET value is formatted, then it comes out as ISO 8601', () => {
    expect(formatTimeSpan(parseTimeSpan('3.00:00:00'))).toBe('P3D');
    expect(formatTimeSpan(parseTimeSpan('00:12:42'))).toBe('PT12M42S');
    expect(formatTimeSpan(parseTimeSpan('1.02:03:04.5'))).toBe('P1DT2H3M4.5S');
  });
});

describe('formatMillis', () => {
  it.each<[number, string]>([
    [0, 'PT0S'],
    [1, 'PT0.001S'],
    [10, 'PT0.01S'],
    [12, 'PT0.012S'],
    [100, 'PT0.1S'],
    [120, 'PT0.12S'],
    [123, 'PT0.123S'],
    [1500, 'PT1.5S'],
    [42_000, 'PT42S'],
    [762_000, 'PT12M42S'],
    [7_200_000, 'PT2H'],
    [3_600_000 + 1, 'PT1H0.001S'],
    [86_400_000, 'P1D'],
    [93_600_000, 'P1DT2H'],
    [-1500, '-PT1.5S'],
    [1500.4, 'PT1.5S'],
  ])('when the duration is %d ms, then it is %s', (ms, expected) => {
    expect(formatMillis(ms)).toBe(expected);
  });

  it('when compared with a parse round trip over many values, then they agree', () => {
    for (let ms = 0; ms < 200_000_000; ms += 987_653) {
      expect(timeSpanToMillis(parseTimeSpan(formatMillis(ms)))).toBe(ms);
    }
  });

  it('when compared with Luxon over many values, then the length is the same', () => {
    for (let ms = 1; ms < 100_000_000; ms += 1_234_567) {
      expect(Duration.fromISO(formatMillis(ms)).as('milliseconds')).toBe(ms);
    }
  });
});

describe('timeSpanToMillis', () => {
  it('when the span has days, hours, minutes and seconds, then days are 24 hours', () => {
    expect(timeSpanToMillis(parseTimeSpan('P1DT2H3M4.5S'))).toBe(93_784_500);
    expect(timeSpanToMillis(parseTimeSpan('-PT1S'))).toBe(-1000);
    expect(timeSpanToMillis(parseTimeSpan('PT0S'))).toBe(0);
  });

  it('when the span has years or months, then it is a CodecError', () => {
    expect(() => timeSpanToMillis(parseTimeSpan('P1M'))).toThrow(CodecError);
    expect(() => timeSpanToMillis(parseTimeSpan('P1Y'))).toThrow(CodecError);
  });
});

describe('addTimeSpan', () => {
  const at = (s: string) => parseDateTime(s, CPH);
  const add = (start: string, span: string, zone = CPH) => formatDateTime(addTimeSpan(at(start), parseTimeSpan(span), zone), zone);

  it('when a day is added across the spring change, then the wall time is kept (23 hours)', () => {
    expect(add('2026-03-28T12:00', 'P1D')).toBe('2026-03-29T12:00:00.000+02:00');
    expect(addTimeSpan(at('2026-03-28T12:00'), parseTimeSpan('P1D'), CPH).getTime() - at('2026-03-28T12:00').getTime()).toBe(
      23 * 3_600_000,
    );
  });

  it('when 24 hours are added across the spring change, then it is exact time', () => {
    expect(add('2026-03-28T12:00', 'PT24H')).toBe('2026-03-29T13:00:00.000+02:00');
  });

  it('when a day is added across the autumn change, then the wall time is kept (25 hours)', () => {
    expect(add('2026-10-24T12:00', 'P1D')).toBe('2026-10-25T12:00:00.000+01:00');
  });

  it('when a month is added to 31 January, then it is the end of February', () => {
    expect(add('2026-01-31T10:00', 'P1M')).toBe('2026-02-28T10:00:00.000+01:00');
    expect(add('2028-01-31T10:00', 'P1M')).toBe('2028-02-29T10:00:00.000+01:00');
  });

  it('when a year is added to a leap day, then it is 28 February', () => {
    expect(add('2028-02-29T10:00', 'P1Y')).toBe('2029-02-28T10:00:00.000+01:00');
  });

  it('when calendar and time parts are mixed, then calendar steps come first', () => {
    expect(add('2026-03-28T02:30', 'P1DT1H')).toBe('2026-03-29T04:30:00.000+02:00');
  });

  it('when a day lands in a DST gap, then the wall time moves forward', () => {
    expect(add('2026-03-28T02:30', 'P1D')).toBe('2026-03-29T03:30:00.000+02:00');
  });

  it('when the span is negative, then it is subtracted', () => {
    expect(add('2026-03-29T12:00', '-P1D')).toBe('2026-03-28T12:00:00.000+01:00');
    expect(add('2026-03-01T00:00', '-PT1.5S')).toBe('2026-02-28T23:59:58.500+01:00');
    expect(add('2026-03-31T10:00', '-P1M')).toBe('2026-02-28T10:00:00.000+01:00');
  });

  it('when the zone differs, then the calendar is that zone’s', () => {
    const start = parseDateTime('2026-03-07T12:00:00-05:00', 'UTC');
    expect(formatDateTime(addTimeSpan(start, parseTimeSpan('P1D'), 'America/New_York'), 'America/New_York')).toBe(
      '2026-03-08T12:00:00.000-04:00',
    );
    expect(formatDateTime(addTimeSpan(start, parseTimeSpan('P1D'), 'UTC'), 'America/New_York')).toBe('2026-03-08T13:00:00.000-04:00');
  });

  it('when the span is zero, then the instant is unchanged', () => {
    const d = at('2026-05-06T10:16:41.123');
    expect(addTimeSpan(d, parseTimeSpan('PT0S'), CPH).getTime()).toBe(d.getTime());
  });
});

describe('Postgres intervals', () => {
  it.each<[string, string]>([
    ['P1Y2M3DT4H5M6.5S', '1 years 2 mons 3 days 04:05:06.5'],
    ['-P1Y2M3DT4H5M6.5S', '-1 years -2 mons -3 days -04:05:06.5'],
    ['PT0S', '00:00:00'],
    ['P3D', '3 days'],
    ['PT90M', '01:30:00'],
    ['PT100H', '100:00:00'],
    ['PT59.999S', '00:00:59.999'],
    ['P1Y', '1 years'],
    ['-P2M', '-2 mons'],
    ['-PT0.001S', '-00:00:00.001'],
  ])('when %s is written for Postgres, then it is %s', (iso, pg) => {
    expect(timeSpanToPgInterval(parseTimeSpan(iso))).toBe(pg);
  });

  it('when node-postgres returns an interval object, then it becomes a TimeSpan', () => {
    expect(pgIntervalToTimeSpan({ years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6, milliseconds: 500 })).toEqual(
      ts({ years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6.5 }),
    );
    expect(pgIntervalToTimeSpan({})).toEqual(ts({}));
    expect(pgIntervalToTimeSpan({ days: 7 })).toEqual(ts({ days: 7 }));
    expect(pgIntervalToTimeSpan({ hours: 100 })).toEqual(ts({ hours: 100 }));
    expect(pgIntervalToTimeSpan({ seconds: 1, milliseconds: 123.456 })).toEqual(ts({ seconds: 1.123 }));
  });

  it('when the interval is negative throughout, then the TimeSpan is negative', () => {
    expect(pgIntervalToTimeSpan({ years: -1, months: -2, days: -3, hours: -4, minutes: -5, seconds: -6, milliseconds: -500 })).toEqual(
      ts({ years: 1, months: 2, days: 3, hours: 4, minutes: 5, seconds: 6.5, negative: true }),
    );
    expect(formatTimeSpan(pgIntervalToTimeSpan({ milliseconds: -1 }))).toBe('-PT0.001S');
  });

  it('when the interval has mixed signs, then it is a CodecError', () => {
    expect(() => pgIntervalToTimeSpan({ months: 1, days: -1 })).toThrow(CodecError);
  });

  it('when a span goes to Postgres text and back as node-postgres parses it, then the length is kept', () => {
    // Values as postgres-interval 1.x returns them for the strings above (checked against Postgres 17).
    expect(formatTimeSpan(pgIntervalToTimeSpan({ hours: 1, minutes: 30 }))).toBe('PT1H30M');
    expect(formatTimeSpan(pgIntervalToTimeSpan({ seconds: 59, milliseconds: 999 }))).toBe('PT59.999S');
  });
});
