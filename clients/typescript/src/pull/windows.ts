import { DateTime, Duration } from 'luxon';

/** A half-open time window [start, end) in epoch milliseconds. */
export interface Window {
  start: number;
  end: number;
}

/**
 * An instant from the command line: ISO 8601 with an offset or `Z` as given; without one
 * (a date alone is midnight) it is wall time in `zone`, as the API reads it.
 */
export function parseInstant(text: string, zone: string): number {
  const dt = DateTime.fromISO(text, { zone, setZone: false });
  if (!dt.isValid) throw new Error(`not an ISO 8601 date or date-time: ${text}`);
  return dt.toMillis();
}

/** A window length from the command line: an ISO 8601 duration (`PT2H`, `P1D`, `PT30M`). Days are 24 hours. */
export function parseDuration(text: string): number {
  const d = Duration.fromISO(text);
  if (!d.isValid) throw new Error(`not an ISO 8601 duration: ${text}`);
  const ms = d.as('milliseconds');
  if (!(ms > 0)) throw new Error(`duration must be positive: ${text}`);
  return ms;
}

/** Consecutive windows of `step` ms covering [from, to); the last one may be shorter. */
export function planWindows(from: number, to: number, step: number): Window[] {
  const windows: Window[] = [];
  for (let start = from; start < to; start += step) windows.push({ start, end: Math.min(start + step, to) });
  return windows;
}

/** The two halves of a window, split at a whole millisecond; undefined when it is 1 ms long. */
export function halve(w: Window): [Window, Window] | undefined {
  if (w.end - w.start < 2) return undefined;
  const mid = w.start + Math.floor((w.end - w.start) / 2);
  return [
    { start: w.start, end: mid },
    { start: mid, end: w.end },
  ];
}

/** The API's DateTime input for an instant: ISO 8601 in UTC, with milliseconds. */
export function isoInstant(ms: number): string {
  return new Date(ms).toISOString();
}

/** The API's TimeSpan input for a window length: elapsed seconds, `PT7200S`, `PT0.5S`. */
export function timeSpan(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  const fraction = ms % 1000;
  return fraction === 0 ? `PT${seconds}S` : `PT${seconds}.${String(fraction).padStart(3, '0').replace(/0+$/, '')}S`;
}
