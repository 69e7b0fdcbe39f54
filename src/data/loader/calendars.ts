import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';

/** The loader's reads and upserts of calendars and their events. */

/** Adds the calendar or updates the one with its code. */
export async function upsertCalendar(
  trx: Knex.Transaction,
  calendar: { code: string; name: string | null; project: string },
): Promise<void> {
  await trx('calendars').insert(calendar).onConflict('code').merge(['name', 'project']);
}

export async function findCalendarId(trx: Knex.Transaction, code: string): Promise<number | undefined> {
  const row = await trx('calendars').where({ code }).first<{ id: number } | undefined>('id');
  return row?.id;
}

/** The columns of a loaded calendar event besides its unique id. */
export interface CalendarEventRow {
  calendar_id: number;
  lead_unique_id: string;
  title: string;
  notes: string;
  start_time: Date;
  end_time: Date;
  source: string;
  external_id: string;
}

/** Adds the event or updates the one with its unique id (a new version for cached copies). */
export async function upsertCalendarEvent(trx: Knex.Transaction, event: CalendarEventRow, uniqueId: string | undefined): Promise<void> {
  await trx('calendar_events')
    .insert({ unique_id: uniqueId ?? randomUUID(), ...event })
    .onConflict('unique_id')
    .merge({ ...event, version: trx.raw('calendar_events.version + 1') });
}
