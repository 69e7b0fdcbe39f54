import type { DateTime } from 'luxon';

/**
 * The days calls are generated for, in the platform zone: `days` whole local days ending at
 * local midnight. Per day, 08:00 local (DST-correct) as seconds from the window start, whether
 * it is a weekend day, and its date (pool names, recording folders).
 */
export interface CallWindow {
  days: number;
  startMs: number;
  endMs: number;
  day8Sec: Float64Array;
  weekend: Uint8Array;
  dayName: string[];
}

/** The window of `days` days ending at the start of `endDay` (a date in the platform zone). */
export function callWindow(endDay: DateTime, days: number): CallWindow {
  const end = endDay.startOf('day');
  const start = end.minus({ days });
  const startMs = start.toMillis();
  const day8Sec = new Float64Array(days);
  const weekend = new Uint8Array(days);
  const dayName: string[] = [];
  for (let d = 0; d < days; d++) {
    const day = start.plus({ days: d });
    day8Sec[d] = (day.set({ hour: 8 }).toMillis() - startMs) / 1000;
    weekend[d] = day.weekday >= 6 ? 1 : 0;
    dayName.push(day.toISODate()!);
  }
  return { days, startMs, endMs: end.toMillis(), day8Sec, weekend, dayName };
}
