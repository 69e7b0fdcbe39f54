import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { projectSelectedSql } from './projectRepository';
import { leadVisible } from './leadRepository';
import { ProjectScope, projectVisibleSql } from './projectScope';
import type { CalendarEvent } from '../domain/calendarEventSerializer';
import { recordCalendarEvent } from './hookEvents';

export type { CalendarEvent };

/**
 * Calendar events (docs/decisions.md, Calendar events). A calendar belongs to a project; an event is visible when
 * its calendar's project matches one of the account's patterns, decided in SQL.
 *
 * Interval rule: an event covers [start, end). It is returned for [from, to) when the two
 * overlap — `start < to AND end > from` — and a zero-length event (start = end) counts as the
 * instant `start`, returned when `from <= start < to`. Together: `start < to AND (end > from
 * OR start >= from)`.
 */

/** What a client writes: every field but the unique id. */
export type CalendarEventInput = Omit<CalendarEvent, 'uniqueId'>;

export interface Interval {
  from: Date;
  to: Date;
}

interface EventRow {
  unique_id: string;
  calendar_code: string;
  lead_unique_id: string;
  title: string;
  notes: string;
  start_time: Date;
  end_time: Date;
  source: string;
  external_id: string;
}

function toEvent(row: EventRow): CalendarEvent {
  return {
    uniqueId: row.unique_id,
    calendarCode: row.calendar_code,
    leadUniqueId: row.lead_unique_id,
    title: row.title,
    notes: row.notes,
    start: row.start_time,
    end: row.end_time,
    source: row.source,
    externalId: row.external_id,
  };
}

const EVENT_COLUMNS = `e.unique_id, c.code as calendar_code, e.lead_unique_id, e.title, e.notes,
  e.start_time, e.end_time, e.source, e.external_id`;

const OVERLAPS = `e.start_time < ? and (e.end_time > ? or e.start_time >= ?)`;
const overlapBindings = (i: Interval) => [i.to, i.from, i.from];
/** projectVisibleSql types its bindings loosely; they are a text[] value. */
const sqlBindings = (values: unknown[]) => values as Knex.RawBinding[];

export type CalendarAccess = { kind: 'unknown' } | { kind: 'invisible' } | { kind: 'visible'; id: number; project: string };

/** Whether a calendar exists and lies in the account's projects (writes: 400 vs 403). */
export async function calendarAccess(db: Knex, code: string, scope: ProjectScope): Promise<CalendarAccess> {
  const visible = projectVisibleSql('project', scope);
  const row = await db('calendars')
    .where({ code })
    .first<{ id: number; project: string; visible: boolean } | undefined>(
      'id',
      'project',
      db.raw(`${visible.sql} as visible`, sqlBindings(visible.bindings)),
    );
  if (!row) return { kind: 'unknown' };
  return row.visible ? { kind: 'visible', id: row.id, project: row.project } : { kind: 'invisible' };
}

/** Events of one calendar overlapping the interval; undefined when the calendar is unknown or invisible. */
export async function listCalendarEvents(
  db: Knex,
  calendarCode: string,
  interval: Interval,
  scope: ProjectScope,
): Promise<CalendarEvent[] | undefined> {
  const calendar = await calendarAccess(db, calendarCode, scope);
  if (calendar.kind !== 'visible') return undefined;
  const { rows } = await db.raw<{ rows: EventRow[] }>(
    `select ${EVENT_COLUMNS}
       from calendar_events e join calendars c on c.id = e.calendar_id
      where e.calendar_id = ? and ${OVERLAPS}
      order by e.start_time, e.unique_id`,
    [calendar.id, ...overlapBindings(interval)],
  );
  return rows.map(toEvent);
}

/**
 * Events of every visible calendar overlapping the interval, optionally only calendars whose
 * project matches `projectPattern` (`*`, `?`; anchored, case-insensitive) — an intersection
 * with the account's patterns, never a widening.
 */
export async function listEvents(db: Knex, interval: Interval, scope: ProjectScope, projectPattern?: string): Promise<CalendarEvent[]> {
  const visible = projectVisibleSql('c.project', scope);
  const bindings = sqlBindings([...visible.bindings, ...overlapBindings(interval)]);
  let projectFilter = '';
  if (projectPattern !== undefined) {
    const selected = projectSelectedSql('c.project', [projectPattern]);
    projectFilter = `and ${selected.sql}`;
    bindings.push(...selected.bindings);
  }
  const { rows } = await db.raw<{ rows: EventRow[] }>(
    `select ${EVENT_COLUMNS}
       from calendar_events e join calendars c on c.id = e.calendar_id
      where ${visible.sql} and ${OVERLAPS} ${projectFilter}
      order by e.start_time, e.unique_id`,
    bindings,
  );
  return rows.map(toEvent);
}

function eventValues(calendarId: number, input: CalendarEventInput) {
  return {
    calendar_id: calendarId,
    lead_unique_id: input.leadUniqueId,
    title: input.title,
    notes: input.notes,
    start_time: input.start,
    end_time: input.end,
    source: input.source,
    external_id: input.externalId,
  };
}

export type WriteResult =
  | { kind: 'ok'; event: CalendarEvent }
  | { kind: 'not_found' }
  | { kind: 'unknown_calendar' }
  | { kind: 'forbidden_calendar' }
  | { kind: 'unknown_lead' };

/** Creates an event with its calendarEvent.created (one transaction); `time` is the change's moment. */
export async function createEvent(db: Knex, input: CalendarEventInput, scope: ProjectScope, time: Date = new Date()): Promise<WriteResult> {
  return db.transaction(async (trx) => {
    const calendar = await calendarAccess(trx, input.calendarCode, scope);
    if (calendar.kind === 'unknown') return { kind: 'unknown_calendar' } as const;
    if (calendar.kind === 'invisible') return { kind: 'forbidden_calendar' } as const;
    // The event's lead must be one the account can see: no event may point at another project's lead.
    if (!(await leadVisible(trx, input.leadUniqueId, scope))) return { kind: 'unknown_lead' } as const;
    const uniqueId = randomUUID();
    await trx('calendar_events').insert({ unique_id: uniqueId, ...eventValues(calendar.id, input) });
    const event = { uniqueId, ...input };
    await recordCalendarEvent(trx, { type: 'calendarEvent.created', event, project: calendar.project, time });
    return { kind: 'ok', event } as const;
  });
}

/**
 * Full replacement of a visible event. The row is locked first (`FOR UPDATE`), so concurrent
 * replacements of one event run one after the other and each bumps `version`: none is lost
 * half-applied, and the last one committed is what stays.
 */
export async function replaceEvent(
  db: Knex,
  uniqueId: string,
  input: CalendarEventInput,
  scope: ProjectScope,
  time: Date = new Date(),
): Promise<WriteResult> {
  return db.transaction(async (trx) => {
    const visible = projectVisibleSql('c.project', scope);
    const { rows } = await trx.raw<{ rows: { id: number }[] }>(
      `select e.id from calendar_events e join calendars c on c.id = e.calendar_id
        where e.unique_id = ? and ${visible.sql}
        for update of e`,
      sqlBindings([uniqueId, ...visible.bindings]),
    );
    if (rows.length === 0) return { kind: 'not_found' } as const;
    const calendar = await calendarAccess(trx, input.calendarCode, scope);
    if (calendar.kind === 'unknown') return { kind: 'unknown_calendar' } as const;
    if (calendar.kind === 'invisible') return { kind: 'forbidden_calendar' } as const;
    // The event's lead must be one the account can see: no event may point at another project's lead.
    if (!(await leadVisible(trx, input.leadUniqueId, scope))) return { kind: 'unknown_lead' } as const;
    await trx('calendar_events')
      .where({ id: rows[0]!.id })
      .update({ ...eventValues(calendar.id, input), version: trx.raw('version + 1') });
    const event = { uniqueId, ...input };
    await recordCalendarEvent(trx, { type: 'calendarEvent.updated', event, project: calendar.project, time });
    return { kind: 'ok', event } as const;
  });
}

/** Deletes a visible event with its calendarEvent.deleted (the event as it was); false when it is unknown or invisible. */
export async function deleteEvent(db: Knex, uniqueId: string, scope: ProjectScope, time: Date = new Date()): Promise<boolean> {
  return db.transaction(async (trx) => {
    const visible = projectVisibleSql('c.project', scope);
    const { rows } = await trx.raw<{ rows: (EventRow & { project: string })[] }>(
      `delete from calendar_events e using calendars c
        where c.id = e.calendar_id and e.unique_id = ? and ${visible.sql}
        returning ${EVENT_COLUMNS}, c.project`,
      sqlBindings([uniqueId, ...visible.bindings]),
    );
    const row = rows[0];
    if (!row) return false;
    await recordCalendarEvent(trx, { type: 'calendarEvent.deleted', event: toEvent(row), project: row.project, time });
    return true;
  });
}

/**
 * Clears the title and notes of every event of a lead (anonymization), whatever its calendar,
 * recording each as calendarEvent.updated; answers the events' unique ids.
 */
export async function clearLeadCalendarEventTexts(trx: Knex.Transaction, leadUniqueId: string, time: Date): Promise<string[]> {
  const { rows } = await trx.raw<{ rows: (EventRow & { project: string })[] }>(
    `update calendar_events e set title = '', notes = '', version = e.version + 1
       from calendars c
      where c.id = e.calendar_id and e.lead_unique_id = ?
      returning ${EVENT_COLUMNS}, c.project`,
    [leadUniqueId],
  );
  for (const row of rows) {
    await recordCalendarEvent(trx, { type: 'calendarEvent.updated', event: toEvent(row), project: row.project, time });
  }
  return rows.map((r) => r.unique_id);
}
