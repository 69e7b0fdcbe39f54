import { CodecError } from '../domain/datetime';
import { TimeSpan, windowEnd } from '../domain/timespan';
import { invalidParameter } from './problem';

/**
 * The end of a window given as a start and `TimeSpan` (the calls lists, the request log); a
 * negative span or one past the year 9999 is a 400 naming `TimeSpan`.
 */
export function timeSpanWindowEnd(start: Date, span: TimeSpan, zone: string): Date {
  try {
    return windowEnd(start, span, zone);
  } catch (err) {
    if (err instanceof CodecError) throw invalidParameter('TimeSpan', err.message);
    throw err;
  }
}
