import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { projectSelectedSql } from './projectRepository';
import { leadVisible } from './leadRepository';
import { ProjectScope, projectVisibleSql } from './projectScope';
import type { CalendarEvent } from '../domain/calendarEventSerializer';
import { writeCalendarEvents } from './hookEvents';

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

/** A full replacement of an event; without `leadUniqueId` the event stays about the lead it is about. */
export type CalendarEventReplacement = Omit<CalendarEventInput, 'leadUniqueId'> & { leadUniqueId?: string | undefined };

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

type CalendarAccess = { kind: 'unknown' } | { kind: 'invisible' } | { kind: 'visible'; id: number; project: string };

/** Whether a calendar exists and lies in the account's projects (writes: 400 vs 403). */
async function calendarAccess(db: Knex, code: string, scope: ProjectScope): Promise<CalendarAccess> {
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
 * project matches one of `projectPatterns` (`*`, `?`; anchored, case-insensitive; or project unique ids) — an intersection
 * with the account's patterns, never a widening.
 */
export async function listEvents(
  db: Knex,
  interval: Interval,
  scope: ProjectScope,
  projectPatterns?: readonly string[],
): Promise<CalendarEvent[]> {
  const visible = projectVisibleSql('c.project', scope);
  const bindings = sqlBindings([...visible.bindings, ...overlapBindings(interval)]);
  let projectFilter = '';
  if (projectPatterns !== undefined) {
    const selected = projectSelectedSql('c.project', projectPatterns);
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

export type WriteResult =
  | { kind: 'ok'; event: CalendarEvent }
  | { kind: 'not_found' }
  | { kind: 'unknown_calendar' }
  | { kind: 'forbidden_calendar' }
  | { kind: 'unknown_lead' };

/**
 * The conditions a written event must meet, on `calendars c` (its calendar, by code) and the
 * event's lead: the calendar in the account's projects, and the lead one the account can see
 * (no event may point at another project's lead).
 */
function writable(calendarCode: string, leadUniqueId: string, scope: ProjectScope): { sql: string; bindings: Knex.RawBinding[] } {
  const calendar = projectVisibleSql('c.project', scope);
  // An event about no lead (an empty leadUniqueId) has only its calendar to check.
  if (leadUniqueId === '') return { sql: `c.code = ? and ${calendar.sql}`, bindings: sqlBindings([calendarCode, ...calendar.bindings]) };
  const lead = projectVisibleSql('k.project', scope);
  return {
    sql: `c.code = ? and ${calendar.sql}
          and exists (select 1 from leads l join campaigns k on k.id = l.campaign_id where l.unique_id = ? and ${lead.sql})`,
    bindings: sqlBindings([calendarCode, ...calendar.bindings, leadUniqueId, ...lead.bindings]),
  };
}

const eventBindings = (input: CalendarEventInput) => [
  input.leadUniqueId,
  input.title,
  input.notes,
  input.start,
  input.end,
  input.source,
  input.externalId,
];

/**
 * A write the statement refused although its checks then find nothing against it is tried again:
 * the calendar, the lead or the event changed between the two (a concurrent replacement moved the
 * event, say). Each such change is a commit of someone else, so a few tries suffice.
 */
const WRITE_TRIES = 5;

/** Why a write of an event to this calendar and lead did not happen; undefined when nothing stops it (any more). */
async function writeRefusal(db: Knex, input: CalendarEventInput, scope: ProjectScope): Promise<WriteResult | undefined> {
  const calendar = await calendarAccess(db, input.calendarCode, scope);
  if (calendar.kind === 'unknown') return { kind: 'unknown_calendar' };
  if (calendar.kind === 'invisible') return { kind: 'forbidden_calendar' };
  if (input.leadUniqueId !== '' && !(await leadVisible(db, input.leadUniqueId, scope))) return { kind: 'unknown_lead' };
  return undefined;
}

/**
 * Creates an event with its calendarEvent.created in one statement; `time` is the change's
 * moment. Only a refused write reads more, to say why.
 */
export async function createEvent(db: Knex, input: CalendarEventInput, scope: ProjectScope, time: Date = new Date()): Promise<WriteResult> {
  for (let attempt = 1; ; attempt++) {
    const uniqueId = randomUUID();
    const where = writable(input.calendarCode, input.leadUniqueId, scope);
    const written = await writeCalendarEvents(db, 'calendarEvent.created', time, (returning) => ({
      sql: `insert into calendar_events as e (unique_id, calendar_id, lead_unique_id, title, notes, start_time, end_time, source, external_id)
            select ?, c.id, ?, ?, ?, ?, ?, ?, ? from calendars c where ${where.sql}
            returning ${returning}`,
      bindings: [uniqueId, ...eventBindings(input), ...where.bindings],
    }));
    if (written > 0) return { kind: 'ok', event: { uniqueId, ...input } };
    const refusal = await writeRefusal(db, input, scope);
    if (refusal) return refusal;
    if (attempt === WRITE_TRIES) throw new Error(`calendar event ${uniqueId} was not written after ${attempt} tries`);
  }
}

/**
 * Full replacement of a visible event, with its calendarEvent.updated, in one statement. The
 * update locks the row, so concurrent replacements of one event run one after the other and
 * each bumps `version`: none is lost half-applied, and the last one committed is what stays.
 */
export async function replaceEvent(
  db: Knex,
  uniqueId: string,
  replacement: CalendarEventReplacement,
  scope: ProjectScope,
  time: Date = new Date(),
): Promise<WriteResult> {
  for (let attempt = 1; ; attempt++) {
    // A lead kept is not checked again (it was when it was set), and the update holds only while
    // the event still is about it: a replacement that changed it meanwhile makes this one read again.
    const kept = replacement.leadUniqueId === undefined ? await visibleEventLead(db, uniqueId, scope) : undefined;
    if (replacement.leadUniqueId === undefined && kept === undefined) return { kind: 'not_found' };
    const input = { ...replacement, leadUniqueId: replacement.leadUniqueId ?? kept! };
    const checked = kept === undefined ? input : { ...input, leadUniqueId: '' };
    const current = projectVisibleSql('o.project', scope);
    const where = writable(checked.calendarCode, checked.leadUniqueId, scope);
    const sameLead = kept === undefined ? { sql: '', bindings: [] } : { sql: 'and e.lead_unique_id = ?', bindings: [kept] };
    const written = await writeCalendarEvents(db, 'calendarEvent.updated', time, (returning) => ({
      sql: `update calendar_events as e
               set calendar_id = c.id, lead_unique_id = ?, title = ?, notes = ?, start_time = ?, end_time = ?, source = ?, external_id = ?,
                   version = e.version + 1
              from calendars c, calendars o
             where e.unique_id = ? and o.id = e.calendar_id and ${current.sql} ${sameLead.sql} and ${where.sql}
            returning ${returning}`,
      bindings: [...eventBindings(input), uniqueId, ...sqlBindings(current.bindings), ...sameLead.bindings, ...where.bindings],
    }));
    if (written > 0) return { kind: 'ok', event: { uniqueId, ...input } };
    if ((await visibleEventLead(db, uniqueId, scope)) === undefined) return { kind: 'not_found' };
    const refusal = await writeRefusal(db, checked, scope);
    if (refusal) return refusal;
    if (attempt === WRITE_TRIES) throw new Error(`calendar event ${uniqueId} was not replaced after ${attempt} tries`);
  }
}

/** The lead a visible event is about ('' for none); undefined when the event is unknown or invisible. */
async function visibleEventLead(db: Knex, uniqueId: string, scope: ProjectScope): Promise<string | undefined> {
  const visible = projectVisibleSql('c.project', scope);
  const { rows } = await db.raw<{ rows: { lead_unique_id: string }[] }>(
    `select e.lead_unique_id from calendar_events e join calendars c on c.id = e.calendar_id where e.unique_id = ? and ${visible.sql}`,
    sqlBindings([uniqueId, ...visible.bindings]),
  );
  return rows[0]?.lead_unique_id;
}

/** Deletes a visible event with its calendarEvent.deleted (the event as it was), in one statement; false when it is unknown or invisible. */
export async function deleteEvent(db: Knex, uniqueId: string, scope: ProjectScope, time: Date = new Date()): Promise<boolean> {
  const visible = projectVisibleSql('c.project', scope);
  const written = await writeCalendarEvents(db, 'calendarEvent.deleted', time, (returning) => ({
    sql: `delete from calendar_events as e using calendars c
           where c.id = e.calendar_id and e.unique_id = ? and ${visible.sql}
          returning ${returning}`,
    bindings: sqlBindings([uniqueId, ...visible.bindings]),
  }));
  return written > 0;
}

/**
 * Clears the title and notes of every event of a lead (anonymization), whatever its calendar,
 * recording each as calendarEvent.updated, in the caller's transaction.
 */
export async function clearLeadCalendarEventTexts(trx: Knex.Transaction, leadUniqueId: string, time: Date): Promise<void> {
  await writeCalendarEvents(trx, 'calendarEvent.updated', time, (returning) => ({
    sql: `update calendar_events as e set title = '', notes = '', version = e.version + 1
           where e.lead_unique_id = ?
          returning ${returning}`,
    bindings: [leadUniqueId],
  }));
}
