import { isFairUseHeader, isHighLimit, minuteLimit, requestWeight } from '../../src/ratelimit/requestWeight';

const zone = 'Europe/Copenhagen';
const weightAt = (iso: string, over: Partial<Parameters<typeof requestWeight>[0]> = {}) =>
  requestWeight({ dailyLimit: 20000, fairUse: false, now: new Date(iso), zone, offHoursWeight: 4, ...over });

describe('isHighLimit', () => {
  it('when the daily limit is 10000, then the service is not high-limit', () => {
    expect(isHighLimit(10000)).toBe(false);
  });
  it('when the daily limit is 10001, then the service is high-limit', () => {
    expect(isHighLimit(10001)).toBe(true);
  });
});

describe('requestWeight', () => {
  it('when a high-limit service is called at 08:00 local time (summer), then it weighs 8', () => {
    expect(weightAt('2024-06-03T06:00:00Z')).toBe(8); // 08:00 CEST
  });
  it('when it is called at 07:59:59 local time, then it weighs the off-hours weight', () => {
    expect(weightAt('2024-06-03T05:59:59Z')).toBe(4);
  });
  it('when it is called at 20:59:59 local time, then it weighs 8', () => {
    expect(weightAt('2024-06-03T18:59:59Z')).toBe(8);
  });
  it('when it is called at 21:00 local time, then it weighs the off-hours weight', () => {
    expect(weightAt('2024-06-03T19:00:00Z')).toBe(4);
  });
  it('when it is winter time, then production hours follow the local clock (UTC+1)', () => {
    expect(weightAt('2024-01-15T07:00:00Z')).toBe(8); // 08:00 CET
    expect(weightAt('2024-01-15T06:59:59Z')).toBe(4);
    expect(weightAt('2024-01-15T20:00:00Z')).toBe(4); // 21:00 CET
  });
  it('when another platform zone is configured, then its local hour decides', () => {
    expect(weightAt('2024-06-03T06:00:00Z', { zone: 'UTC' })).toBe(4);
    expect(weightAt('2024-06-03T08:00:00Z', { zone: 'UTC' })).toBe(8);
  });
  it('when OFF_HOURS_WEIGHT is 1, then an off-hours request weighs 1 and a production one still 8', () => {
    expect(weightAt('2024-06-03T22:00:00Z', { offHoursWeight: 1 })).toBe(1);
    expect(weightAt('2024-06-03T10:00:00Z', { offHoursWeight: 1 })).toBe(8);
  });
  it('when the service is not high-limit, then every request weighs 1', () => {
    expect(weightAt('2024-06-03T10:00:00Z', { dailyLimit: 10000 })).toBe(1);
    expect(weightAt('2024-06-03T22:00:00Z', { dailyLimit: 500 })).toBe(1);
  });
  it('when the caller uses fair use, then a high-limit request weighs 1 in and out of production hours', () => {
    expect(weightAt('2024-06-03T10:00:00Z', { fairUse: true })).toBe(1);
    expect(weightAt('2024-06-03T22:00:00Z', { fairUse: true })).toBe(1);
  });
});

describe('minuteLimit', () => {
  it('when ceil(daily / 1440) is below 240, then the floor of 240 applies', () => {
    expect(minuteLimit(1)).toBe(240);
    expect(minuteLimit(10000)).toBe(240);
    expect(minuteLimit(240 * 1440)).toBe(240);
  });
  it('when ceil(daily / 1440) is above 240, then it is the limit', () => {
    expect(minuteLimit(240 * 1440 + 1)).toBe(241);
    expect(minuteLimit(1440 * 300)).toBe(300);
    expect(minuteLimit(1440 * 300 + 1)).toBe(301);
  });
});

describe('isFairUseHeader', () => {
  it('when the header says Minute rated in any case with surrounding blanks, then fair use applies', () => {
    expect(isFairUseHeader('Minute rated')).toBe(true);
    expect(isFairUseHeader('minute RATED')).toBe(true);
    expect(isFairUseHeader('  Minute rated ')).toBe(true);
  });
  it('when the header is missing or says something else, then fair use does not apply', () => {
    expect(isFairUseHeader(undefined)).toBe(false);
    expect(isFairUseHeader('')).toBe(false);
    expect(isFairUseHeader('Minute')).toBe(false);
    expect(isFairUseHeader('Minute rated please')).toBe(false);
  });
});
