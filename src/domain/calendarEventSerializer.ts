import { formatDateTime } from './datetime';

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

/** The CalendarEvent on the wire: DateTimes in platform time with their offset. */
export function calendarEventToJson(event: CalendarEvent, zone: string) {
  return {
    uniqueId: event.uniqueId,
    calendarCode: event.calendarCode,
    leadUniqueId: event.leadUniqueId,
    title: event.title,
    notes: event.notes,
    start: formatDateTime(event.start, zone),
    end: formatDateTime(event.end, zone),
    source: event.source,
    externalId: event.externalId,
  };
}
