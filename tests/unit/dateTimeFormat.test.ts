import { dateTimeFormatter, formatDateTime } from '../../src/domain/datetime';
import { preferredDateTimeFormat } from '../../src/http/preferDateTime';

const CPH = 'Europe/Copenhagen';
const at = (iso: string) => Date.parse(iso);

describe('formatDateTime in the Local format', () => {
  it('when an instant is written, then it is platform wall time with seven fraction digits and no offset', () => {
    expect(formatDateTime(at('2026-05-06T08:16:41Z'), CPH, 'Local')).toBe('2026-05-06T10:16:41.0000000');
    expect(formatDateTime(at('2026-01-06T09:16:41Z'), CPH, 'Local')).toBe('2026-01-06T10:16:41.0000000');
    expect(formatDateTime(new Date('2026-05-06T08:16:41Z'), CPH)).toBe('2026-05-06T10:16:41.000+02:00');
  });

  it('when the instant has milliseconds, then they are the first three of the seven digits', () => {
    expect(formatDateTime(at('2026-05-06T08:16:41.007Z'), CPH, 'Local')).toBe('2026-05-06T10:16:41.0070000');
    expect(formatDateTime(at('2026-05-06T08:16:41.120Z'), CPH, 'Local')).toBe('2026-05-06T10:16:41.1200000');
    expect(formatDateTime(at('2026-05-06T08:16:41.999Z'), CPH, 'Local')).toBe('2026-05-06T10:16:41.9990000');
  });

  it('when summer time starts (02:00 → 03:00), then the wall time jumps from 01:59:59.999 to 03:00', () => {
    expect(formatDateTime(at('2026-03-29T00:59:59.999Z'), CPH, 'Local')).toBe('2026-03-29T01:59:59.9990000');
    expect(formatDateTime(at('2026-03-29T01:00:00Z'), CPH, 'Local')).toBe('2026-03-29T03:00:00.0000000');
    expect(formatDateTime(at('2026-03-29T01:00:00Z'), CPH, 'Offset')).toBe('2026-03-29T03:00:00.000+02:00');
  });

  it('when summer time ends (03:00 → 02:00), then both instants of 02:30 read 02:30, which Offset tells apart', () => {
    expect(formatDateTime(at('2026-10-25T00:30:00Z'), CPH, 'Local')).toBe('2026-10-25T02:30:00.0000000');
    expect(formatDateTime(at('2026-10-25T01:30:00Z'), CPH, 'Local')).toBe('2026-10-25T02:30:00.0000000');
    expect(formatDateTime(at('2026-10-25T00:30:00Z'), CPH)).toBe('2026-10-25T02:30:00.000+02:00');
    expect(formatDateTime(at('2026-10-25T01:30:00Z'), CPH)).toBe('2026-10-25T02:30:00.000+01:00');
  });
});

describe('dateTimeFormatter (the per-request formatter of the exports)', () => {
  it('when instants run across both DST changes, in order or shuffled, then each format writes what formatDateTime writes', () => {
    const instants: number[] = [];
    for (const [from, to] of [
      ['2026-03-28T00:00:00Z', '2026-03-30T00:00:00Z'],
      ['2026-10-24T00:00:00Z', '2026-10-26T00:00:00Z'],
    ]) {
      for (let ms = at(from!); ms < at(to!); ms += 433_017) instants.push(ms);
    }
    instants.push(
      at('1969-12-31T23:59:59.999Z'),
      at('2026-10-25T00:59:59.999Z'),
      at('2026-10-25T01:00:00Z'),
      at('2026-03-29T00:59:59.999Z'),
    );
    const shuffled = [...instants].sort((a, b) => ((a * 7919) % 1000) - ((b * 7919) % 1000));
    for (const format of ['Offset', 'Local'] as const) {
      for (const list of [instants, shuffled]) {
        const write = dateTimeFormatter(CPH, format);
        expect(list.map(write)).toEqual(list.map((ms) => formatDateTime(ms, CPH, format)));
      }
    }
  });

  it('when a value has a fraction of a millisecond, then it still matches formatDateTime', () => {
    const write = dateTimeFormatter(CPH, 'Local');
    expect(write(at('2026-05-06T08:16:41Z') + 0.5)).toBe(formatDateTime(at('2026-05-06T08:16:41Z') + 0.5, CPH, 'Local'));
    expect(write(at('2026-05-06T08:16:41.250Z'))).toBe('2026-05-06T10:16:41.2500000');
  });

  it('when a fraction follows a whole millisecond of the same day, then it is truncated as formatDateTime does', () => {
    // A lead's hook snapshot: an upload time in whole milliseconds, then times with microseconds.
    for (const format of ['Offset', 'Local'] as const) {
      const write = dateTimeFormatter(CPH, format);
      const whole = at('2026-05-06T08:16:41.250Z');
      expect(write(whole)).toBe(formatDateTime(whole, CPH, format));
      for (const ms of [whole + 60_000.123, whole + 0.999, whole + 3_600_000.5]) expect(write(ms)).toBe(formatDateTime(ms, CPH, format));
      expect(write(whole + 0.999)).toBe(format === 'Offset' ? '2026-05-06T10:16:41.250+02:00' : '2026-05-06T10:16:41.2500000');
    }
  });
});

describe('preferredDateTimeFormat (Prefer, RFC 7240)', () => {
  it('when datetime=local or datetime=offset is preferred, then that format is chosen, whatever the case', () => {
    expect(preferredDateTimeFormat('datetime=local')).toBe('Local');
    expect(preferredDateTimeFormat('datetime=offset')).toBe('Offset');
    expect(preferredDateTimeFormat('DateTime=LOCAL')).toBe('Local');
  });

  it('when the value is quoted, or among other preferences, or in a second header, then it is still found', () => {
    expect(preferredDateTimeFormat('datetime="local"')).toBe('Local');
    expect(preferredDateTimeFormat('respond-async, wait=10, datetime=local')).toBe('Local');
    expect(preferredDateTimeFormat('return=minimal; foo="a,b", datetime=offset')).toBe('Offset');
    expect(preferredDateTimeFormat(['handling=lenient', 'datetime=local'])).toBe('Local');
  });

  it('when the preference is given twice, then the first one counts', () => {
    expect(preferredDateTimeFormat('datetime=local, datetime=offset')).toBe('Local');
  });

  it('when there is no such preference, an unknown value, or datetime only as a parameter of another one, then none is chosen', () => {
    expect(preferredDateTimeFormat(undefined)).toBeUndefined();
    expect(preferredDateTimeFormat('')).toBeUndefined();
    expect(preferredDateTimeFormat('return=representation')).toBeUndefined();
    expect(preferredDateTimeFormat('datetime=utc')).toBeUndefined();
    expect(preferredDateTimeFormat('datetime')).toBeUndefined();
    expect(preferredDateTimeFormat('handling=strict; datetime=local')).toBeUndefined();
  });
});
