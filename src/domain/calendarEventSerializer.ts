import { formatDateTime } from './datetime';
import type { DateTimeFormatName } from './enums';

/** A calendar event (spec 2.5) as the repositories read it. */
export interface CalendarEvent {
  uniqueId: string;
  calendarCode: string;
  leadUniqueId: string;
  title: string;
  notes: string;
  start: Date;
  end: Date;
  source: string;
  externalId: string;
}

/** A CalendarEvent on the wire (the OpenAPI document): DateTimes in platform time, in the answer's format. */
export function calendarEventToJson(event: CalendarEvent, zone: string, format: DateTimeFormatName = 'Offset') {
  return {
    uniqueId: event.uniqueId,
    calendarCode: event.calendarCode,
    leadUniqueId: event.leadUniqueId,
    title: event.title,
    notes: event.notes,
    start: formatDateTime(event.start, zone, format),
    end: formatDateTime(event.end, zone, format),
    source: event.source,
    externalId: event.externalId,
  };
}
