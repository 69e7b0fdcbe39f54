import { halve, isoInstant, parseDuration, parseInstant, planWindows, timeSpan } from '../src/pull/windows';
import { parseRateLimitField, periodsLeft, retryAfterSeconds, secondsUntilQuota } from '../src/pull/quota';
import { apiBaseUrl, basicAuthorization } from '../src/client';
import { exportColumns } from '../src/pull/pull';

describe('windows', () => {
  it('when --from is a date, then it is midnight in the platform zone (winter and summer offsets)', () => {
    expect(isoInstant(parseInstant('2026-01-01', 'Europe/Copenhagen'))).toBe('2025-12-31T23:00:00.000Z');
    expect(isoInstant(parseInstant('2026-07-01', 'Europe/Copenhagen'))).toBe('2026-06-30T22:00:00.000Z');
    expect(isoInstant(parseInstant('2026-07-01T10:00:00Z', 'Europe/Copenhagen'))).toBe('2026-07-01T10:00:00.000Z');
    expect(() => parseInstant('1 January', 'Europe/Copenhagen')).toThrow(/ISO 8601/);
  });

  it('when a range is planned, then the windows cover it without gap or overlap and the last one is shorter', () => {
    const from = Date.parse('2026-01-01T00:00:00Z');
    const windows = planWindows(from, from + 5 * 3600_000, parseDuration('PT2H'));
    expect(windows.map((w) => [isoInstant(w.start), timeSpan(w.end - w.start)])).toEqual([
      ['2026-01-01T00:00:00.000Z', 'PT7200S'],
      ['2026-01-01T02:00:00.000Z', 'PT7200S'],
      ['2026-01-01T04:00:00.000Z', 'PT3600S'],
    ]);
    expect(parseDuration('P1D')).toBe(86_400_000);
    expect(() => parseDuration('pt2h')).toThrow();
  });

  it('when a window is halved, then the halves meet at a whole millisecond; a 1 ms window cannot be halved', () => {
    expect(halve({ start: 0, end: 3 })).toEqual([
      { start: 0, end: 1 },
      { start: 1, end: 3 },
    ]);
    expect(halve({ start: 5, end: 6 })).toBeUndefined();
    expect(timeSpan(1)).toBe('PT0.001S');
    expect(timeSpan(1500)).toBe('PT1.5S');
  });
});

describe('quota headers', () => {
  const headers = (h: Record<string, string>) => new Headers(h);

  it('when RateLimit lists the daily and the minute period, then both are read and a used-up one sets the wait', () => {
    const periods = parseRateLimitField('"daily";r=0;t=3600, "minute";r=12;t=40');
    expect(periods).toEqual([
      { name: 'daily', remaining: 0, resetSeconds: 3600 },
      { name: 'minute', remaining: 12, resetSeconds: 40 },
    ]);
    expect(secondsUntilQuota(periods)).toBe(3600);
    expect(secondsUntilQuota(parseRateLimitField('"daily";r=5;t=3600'))).toBe(0);
  });

  it('when RateLimit is malformed, then it is ignored and X-Rate-Limit-Remaining/Reset are read instead', () => {
    expect(parseRateLimitField('daily;r=x')).toBeUndefined();
    expect(parseRateLimitField('"daily";t=5')).toBeUndefined();
    expect(periodsLeft(headers({ RateLimit: '"daily";r=-1', 'X-Rate-Limit-Remaining': '0', 'X-Rate-Limit-Reset': '17' }))).toEqual([
      { name: 'current', remaining: 0, resetSeconds: 17 },
    ]);
    expect(periodsLeft(headers({}))).toBeUndefined();
  });

  it('when Retry-After is seconds or an HTTP date, then it becomes seconds', () => {
    const now = Date.parse('2026-01-01T10:00:00Z');
    expect(retryAfterSeconds(headers({ 'Retry-After': '120' }), now)).toBe(120);
    expect(retryAfterSeconds(headers({ 'Retry-After': 'Thu, 01 Jan 2026 10:00:30 GMT' }), now)).toBe(30);
    expect(retryAfterSeconds(headers({}), now)).toBeUndefined();
  });
});

describe('client', () => {
  it('when the base URL lacks /api, then it is added; credentials are UTF-8 Basic', () => {
    expect(apiBaseUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080/api');
    expect(apiBaseUrl('http://127.0.0.1:8080/api/')).toBe('http://127.0.0.1:8080/api');
    expect(basicAuthorization('æ', 'ø')).toBe('Basic ' + Buffer.from('æ:ø', 'utf8').toString('base64'));
  });

  it('when CSV columns are taken from the document, then they are the Call and Lead properties in order', () => {
    expect(exportColumns('/calls').slice(0, 4)).toEqual(['campaign', 'user', 'organizationalUnits', 'uniqueId']);
    expect(exportColumns('/simpleleads')).toContain('uniqueId');
  });
});
