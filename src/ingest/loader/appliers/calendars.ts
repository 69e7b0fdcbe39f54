import { findCalendarId, upsertCalendar, upsertCalendarEvent } from '../../../data/loader/calendars';
import { RecordError } from '../recordError';
import type { Applier } from './applier';

export const applyCalendar: Applier<'calendar'> = async (r, ctx) => {
  await upsertCalendar(ctx.trx, { code: r.code, name: r.name ?? null, project: r.project });
};

export const applyCalendarEvent: Applier<'calendarEvent'> = async (r, ctx) => {
  const calendarId = await findCalendarId(ctx.trx, r.calendarCode);
  if (calendarId === undefined) throw new RecordError(`unknown calendar ${JSON.stringify(r.calendarCode)}`);
  if (r.start.getTime() > r.end.getTime()) throw new RecordError('start is after end');
  await upsertCalendarEvent(
    ctx.trx,
    {
      calendar_id: calendarId,
      lead_unique_id: r.leadUniqueId,
      title: r.title,
      notes: r.notes,
      start_time: r.start,
      end_time: r.end,
      source: r.source,
      external_id: r.externalId,
    },
    r.uniqueId,
  );
};
