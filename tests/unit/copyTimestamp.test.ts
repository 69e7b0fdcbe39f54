import { copyTimestamp } from '../../src/data/copyIn';

describe('a time as COPY reads it', () => {
  it('when the time has a fraction of a millisecond, then it is written to the microsecond', () => {
    expect(copyTimestamp(1_767_225_600_123.5)).toBe('2026-01-01T00:00:00.123500Z');
    expect(copyTimestamp(1_767_225_600_007.25)).toBe('2026-01-01T00:00:00.007250Z');
  });

  it('when the fraction rounds up to a whole millisecond, then it carries into the milliseconds', () => {
    expect(copyTimestamp(1_767_225_600_999 + 0.9996)).toBe('2026-01-01T00:00:01.000000Z');
  });

  it('when times of different seconds follow each other, then each keeps its own second', () => {
    expect(copyTimestamp(1_767_225_600_500)).toBe('2026-01-01T00:00:00.500000Z');
    expect(copyTimestamp(1_767_225_661_000.25)).toBe('2026-01-01T00:01:01.000250Z');
    expect(copyTimestamp(1_767_225_600_999.5)).toBe('2026-01-01T00:00:00.999500Z');
  });
});
